"""Masking secrets in text that is about to be shared.

Session logs hold whatever the agent saw: environment dumps, config files, curl
commands with ``Authorization`` headers.  An export meant for a bug report or a
colleague must not carry those along, so ``export --redact`` passes every string
(user and model text, tool arguments and results, titles, header facts) through
:func:`redact`.

Design rules:

* **One regex pass, leftmost match wins.**  All patterns are alternatives of a
  single compiled expression, so overlapping patterns cannot fight and the
  result does not depend on the order of separate passes.
* **Idempotent.**  A mask (``[REDACTED:kind]``) contains no character any
  pattern can consume as part of a secret, and ``key=`` values already masked
  are skipped, so ``redact(redact(s)) == redact(s)``.
* **Err on the side of masking.**  Long high-entropy tokens are masked even when
  no known prefix identifies them; hex digests and UUIDs (lowercase hex only)
  and paths are left alone because they are common and rarely secret.
"""

from __future__ import annotations

import math
import re
from collections import Counter

MASK = "[REDACTED:{}]"

# Words after which a ``=``/``:`` value is a secret whatever it looks like.
_KEYWORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|"
    r"secret[_-]?access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token|token|private[_-]?key"
)

_ALTERNATIVES = [
    # PEM private keys, whole block
    r"(?P<pem>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z))",
    # JSON Web Tokens: base64url header "{"... . payload . signature
    r"(?P<jwt>eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)",
    # Authorization: Bearer <token>
    r"(?P<bearer_head>(?i:bearer)[ \t]+)(?P<bearer>[A-Za-z0-9\-._~+/]{12,}=*)",
    # key=value, key: value, "key": "value" (the key stays visible)
    r"(?P<kv_key>(?<![A-Za-z])(?i:" + _KEYWORDS + r")[\"']?[ \t]*[:=][ \t]*[\"']?)(?!\[REDACTED)(?P<kv_value>[^\s\"'&,;<>]+)",
    # provider keys with known prefixes
    r"(?P<key>(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,})",
    # e-mail addresses; the local part is at most 64 characters (RFC 5321), which also keeps the
    # scan for an "@" from every position of a long word run linear instead of quadratic
    r"(?P<email>[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})",
    # candidates for the entropy test
    r"(?P<blob>[A-Za-z0-9+/_=-]{32,})",
]
_PATTERN = re.compile("|".join(_ALTERNATIVES))
# Inside a long token that is not itself random, known secrets may still hide ("xsk-...").
_SPECIFIC = re.compile("|".join(_ALTERNATIVES[:-1]))

_HEXISH = re.compile(r"[0-9a-f-]+")


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def looks_random(token: str) -> bool:
    """Whether a long token is probably a credential rather than a word, path, digest or id."""
    if _HEXISH.fullmatch(token):
        return False  # git/sha digests, UUIDs: common in logs, rarely secret
    if token.count("/") > len(token) // 16 + 1:
        return False  # a path
    classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes >= 3 and entropy(token) >= 4.0


def _replace(m: re.Match[str]) -> str:
    kind = m.lastgroup
    if kind == "bearer":
        return m.group("bearer_head") + MASK.format("token")
    if kind == "kv_value":
        return m.group("kv_key") + MASK.format("secret")
    if kind == "blob":
        token = m.group("blob")
        return MASK.format("token") if looks_random(token) else _SPECIFIC.sub(_replace, token)
    return MASK.format({"pem": "private-key", "jwt": "jwt", "key": "api-key", "email": "email"}[kind or "key"])


def redact(text: str) -> str:
    """``text`` with every secret-looking substring replaced by ``[REDACTED:<kind>]``."""
    if not text:
        return text
    return _PATTERN.sub(_replace, text)
