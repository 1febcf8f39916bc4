"""Event vocabularies and physical header rules of every released log version.

The format's closed inventories (v0/v1, v2, v3) decide what a migration may
accept; the v4 set is the vocabulary a current reader interprets.  Keeping them
in one place means the reader, the migrator and the validator can never drift
apart about which names exist where.  Names are protocol facts (FORMAT §7,
SEMANTICS §1.2).
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

# --------------------------------------------------------------------------------------
# Event types

#: Types shared unchanged by every released inventory from v0 through v4.
_COMMON: Final[frozenset[str]] = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "model/selection",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session-log-deepseek/delivery-accepted",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "subagent/model-selection-policy",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)

#: The old names of the nested code-mode dispatch events (renamed by v2→v3).
CODE_DISPATCH_TYPES: Final[frozenset[str]] = frozenset({"tool/code-dispatch-start", "tool/code-dispatch"})
#: Their v3+ names.
PTC_DISPATCH_TYPES: Final[frozenset[str]] = frozenset({"tool/ptc-dispatch-start", "tool/ptc-dispatch"})

#: Frozen v0/v1 inventory (streaming deltas are top-level ``assistant/chunk`` events).
V0_TYPES: Final[frozenset[str]] = _COMMON | CODE_DISPATCH_TYPES | {"assistant/chunk"}
V1_TYPES: Final[frozenset[str]] = V0_TYPES

#: Released v2 inventory: chunks folded into settlements, plus the two rating events
#: that v2→v3 admits specially.
V2_TYPES: Final[frozenset[str]] = (
    _COMMON | CODE_DISPATCH_TYPES | {"assistant/attempt", "feedback/message-put", "feedback/message-delete"}
)

#: ``RELEASED_V3_EVENT_TYPES``: the fixed set v3→v4 interprets (everything else is
#: namespaced when ignorable, refused otherwise).
V3_TYPES: Final[frozenset[str]] = (
    (V2_TYPES - CODE_DISPATCH_TYPES)
    | PTC_DISPATCH_TYPES
    | {
        "deliverables/presented",
        "image/offload",
        "subagent/catalog",
        "system/message",
        "workspace/changes",
    }
)

#: The v4 reader's installed vocabulary (October build) plus the late-October additions.
V4_TYPES: Final[frozenset[str]] = V3_TYPES | {
    "developer/message",
    "job/registered",
    "job/settled",
    "working-directory/change",
}

TYPES_BY_VERSION: Final[dict[int, frozenset[str]]] = {
    0: V0_TYPES,
    1: V1_TYPES,
    2: V2_TYPES,
    3: V3_TYPES,
    4: V4_TYPES,
}

#: The message event types that may carry ``surfaceOp``/``sourceEventSeqs``.
SURFACE_TYPES_V0: Final[frozenset[str]] = frozenset({"user/message", "assistant/message", "tool/result"})
SURFACE_TYPES_V3: Final[frozenset[str]] = SURFACE_TYPES_V0 | {"system/message"}
SURFACE_TYPES_V4: Final[frozenset[str]] = SURFACE_TYPES_V3 | {"developer/message"}

SURFACE_TYPES: Final[dict[int, frozenset[str]]] = {
    0: SURFACE_TYPES_V0,
    1: SURFACE_TYPES_V0,
    2: SURFACE_TYPES_V0,
    3: SURFACE_TYPES_V3,
    4: SURFACE_TYPES_V4,
}

#: Pre-rename names that only the v0→v1 normaliser accepts, mapped to their new names.
LEGACY_RENAMES: Final[dict[str, str]] = {
    "compact/start": "compaction/start",
    "compact/summary": "compaction/summary",
    "compact/end": "compaction/end",
    "compact/prune": "compaction/prune",
    "steering/message": "user/message",
}

#: Pre-release names that every edge refuses outright.
REFUSED_LEGACY_TYPES: Final[frozenset[str]] = frozenset({"mode/set", "request/header-delta"})

#: Prefix the v3→v4 edge puts in front of unknown ignorable historical types.
PLUGIN_PREFIX: Final[str] = "plugin:"

CURRENT_VERSION: Final[int] = 4


def types_for(version: int) -> frozenset[str]:
    """The known set of ``version``; later versions than the reader's use the current set."""
    if version in TYPES_BY_VERSION:
        return TYPES_BY_VERSION[version]
    return V4_TYPES if version > CURRENT_VERSION else V0_TYPES


def surface_types_for(version: int) -> frozenset[str]:
    """The surface-eligible types of ``version`` (current set for anything newer)."""
    if version in SURFACE_TYPES:
        return SURFACE_TYPES[version]
    return SURFACE_TYPES_V4 if version > CURRENT_VERSION else SURFACE_TYPES_V0


def is_known(type_: str, version: int = CURRENT_VERSION) -> bool:
    """Whether a reader of ``version`` interprets events of ``type_``.

    Legacy names (``compact/*``, ``steering/message``) count as known in v0/v1
    because the v0→v1 normaliser accepts and renames them.
    """
    if type_ in types_for(version):
        return True
    return version <= 1 and type_ in LEGACY_RENAMES


# --------------------------------------------------------------------------------------
# Physical header (FORMAT §2.1)

#: Canonical key order of a physical header, per version (``?`` = optional).
_ORDER_V0: Final[tuple[str, ...]] = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd?",
    "parentSession?",
    "seedLength?",
    "origin?",
    "delegationDepth",
    "agentPreset?",
)
_ORDER_V2: Final[tuple[str, ...]] = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd?",
    "parentSession?",
    "isSeeded",
    "origin?",
    "delegationDepth",
    "agentPreset?",
)


def header_key_order(version: int) -> tuple[str, ...]:
    """Header keys in the order dsh writes them; optional ones end in ``?``."""
    return _ORDER_V0 if version <= 1 else _ORDER_V2


def header_required_keys(version: int) -> frozenset[str]:
    return frozenset(k for k in header_key_order(version) if not k.endswith("?"))


def header_optional_keys(version: int) -> frozenset[str]:
    return frozenset(k[:-1] for k in header_key_order(version) if k.endswith("?"))


RETIRED_HEADER_KEYS: Final[frozenset[str]] = frozenset({"sandboxMode", "approvalPolicy"})

MAX_SAFE_INTEGER: Final[int] = 2**53 - 1

_WINDOWS_DRIVE_ABS = re.compile(r"^[A-Za-z]:[\\/]")
_WINDOWS_UNC = re.compile(r"^[\\/]{2}[^\\/]+[\\/]+[^\\/]+")

CwdPlatform = Literal["any", "posix", "windows"]


def is_safe_integer(value: Any) -> bool:
    """``Number.isSafeInteger`` over JSON values parsed by Python (``-0.0`` excluded)."""
    if type(value) is int:  # the overwhelmingly common case, decided first
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
            return False
        if value == 0 and str(value).startswith("-"):
            return False  # -0 is not losslessly serialisable
        return abs(value) <= MAX_SAFE_INTEGER
    return False


def is_count(value: Any) -> bool:
    """A non-negative safe integer (dsh's ``sessionFormatCount``)."""
    return is_safe_integer(value) and value >= 0


def is_absolute_cwd(value: str, platform: CwdPlatform = "any") -> bool:
    """Absolute in the POSIX or Windows sense.

    dsh asks Node's ``path.isAbsolute`` of the platform it runs on, so a log
    written on Windows looks relative on Linux and the other way round.  By
    default both forms are accepted (FORMAT §8 item 5); ``platform`` narrows it.
    """
    posix = value.startswith("/")
    windows = bool(_WINDOWS_DRIVE_ABS.match(value) or _WINDOWS_UNC.match(value)) or value.startswith("\\")
    if platform == "posix":
        return posix
    if platform == "windows":
        return windows or posix  # Node's win32 isAbsolute also accepts a leading '/'
    return posix or windows


def validate_header(
    header: Any,
    version: int | None = None,
    *,
    cwd_platform: CwdPlatform = "any",
    check_order: bool = False,
) -> list[str]:
    """Problem texts for a physical header of ``version`` (default: its own ``version``).

    Reports every deviation instead of stopping at the first, using dsh's texts
    (``format vN header lacks required field X`` etc.).  Key order is not a
    validity rule for dsh; ``check_order`` adds a note when it differs from the
    writer's order (useful for byte-exact tooling).
    """
    if not isinstance(header, dict):
        return ["Session header must be a JSON object"]
    problems: list[str] = []
    stored = header.get("version")
    if version is None:
        if not is_count(stored):
            return ["Session header version must be a non-negative safe integer"]
        version = int(stored)
    tag = f"format v{version} header"
    if header.get("type") != "session":
        problems.append(f'{tag} type must be "session"')
    if stored != version:
        problems.append(f"expected format v{version} header (found version {stored!r})")

    if RETIRED_HEADER_KEYS & header.keys():
        problems.append("session header uses retired policy baseline fields")
    required = header_required_keys(version)
    allowed = required | header_optional_keys(version)
    for key in header_key_order(version):
        name = key.rstrip("?")
        if name != "type" and name in required and name not in header:
            problems.append(f"{tag} lacks required field {name}")
    for key in header:
        if key not in allowed and key not in RETIRED_HEADER_KEYS:
            problems.append(f"{tag} has unexpected field {key}")

    if "id" in header and not isinstance(header["id"], str):
        problems.append(f"{tag} id must be a string")
    for key in ("createdAt", "delegationDepth", "seedLength"):
        if key in header and key in allowed and not is_count(header[key]):
            problems.append(f"{tag} {key} must be a non-negative safe integer")
    if "isSeeded" in header and "isSeeded" in allowed and not isinstance(header["isSeeded"], bool):
        problems.append(f"{tag} isSeeded must be boolean")
    if "cwd" in header:
        cwd = header["cwd"]
        if not isinstance(cwd, str) or not is_absolute_cwd(cwd, cwd_platform):
            problems.append(f"{tag} cwd must be absolute")
    for key in ("parentSession", "agentPreset"):
        if key in header and not isinstance(header[key], str):
            problems.append(f"{tag} {key} must be a string")
    if "origin" in header and header["origin"] != "subagent":
        problems.append(f'{tag} origin must be "subagent"')

    if check_order:
        canonical = [k.rstrip("?") for k in header_key_order(version)]
        present = [k for k in header if k in canonical]
        if present != [k for k in canonical if k in header]:
            problems.append(f"{tag} keys are not in writer order ({', '.join(canonical)})")
    return problems
