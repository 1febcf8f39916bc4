"""Secret masking (``dshlog.output.redact``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dshlog.output.redact import entropy, looks_random, redact

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize(
    "text, secret",
    [
        ("key sk-abcdefghijklmnop1234567890 ok", "sk-abcdefghijklmnop1234567890"),
        ("DEEPSEEK_API_KEY=sk-proj-Zx8Kq2Lw9Pv4Rt7Ys1Mn", "sk-proj-Zx8Kq2Lw9Pv4Rt7Ys1Mn"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
        ("curl -H 'Authorization: Bearer abcDEF123456789xyz.-_~'", "abcDEF123456789xyz"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcDEF_123-xyz", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcDEF_123-xyz"),
        ("login with password=hunter2hunter2 now", "hunter2hunter2"),
        ('{"password": "s3cr3t!pw", "user": "ann"}', "s3cr3t!pw"),
        ("client_secret: abc123def", "abc123def"),
        ("write to ann.lee+dsh@example.co.uk please", "ann.lee+dsh@example.co.uk"),
        ("blob Zx8Kq2Lw9Pv4Rt7Ys1Mn6Bc3Df5Gh0Jk end", "Zx8Kq2Lw9Pv4Rt7Ys1Mn6Bc3Df5Gh0Jk"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----", "MIIEow"),
    ],
)
def test_known_secrets_are_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "commit 9bb79c633ba03f01aa9bb79c633ba03f01aa12",
        "id 562b50f5-c251-49ec-9700-af7e939e29c5",
        "/usr/lib/python3/dist-packages/SomeThing2/Foo/Bar/baz.py",
        '{"inputTokens":10,"outputTokens":5,"max_tokens":32}',
        "the token authentication flow and the password policy",
        "echo: one",
        "第一点是",
    ],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact(text) == text


def test_key_stays_visible() -> None:
    assert redact("password=hunter2x") == "password=[REDACTED:secret]"
    assert redact("Authorization: Bearer abcdefghijklmnop") == "Authorization: Bearer [REDACTED:token]"


def test_entropy_helpers() -> None:
    assert entropy("") == 0.0
    assert entropy("aaaa") == 0.0
    assert entropy("ab") == 1.0
    assert looks_random("Zx8Kq2Lw9Pv4Rt7Ys1Mn6Bc3Df5Gh0Jk")
    assert not looks_random("abcdefabcdefabcdefabcdefabcdefab")


# --------------------------------------------------------------------------- properties

_filler = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


def _token(alphabet: str, n: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=n, max_size=n)


_secrets = st.one_of(
    _token(ALNUM, 32).map(lambda s: "sk-" + s),
    _token(ALNUM, 36).map(lambda s: "ghp_" + s),
    _token("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 16).map(lambda s: "AKIA" + s),
    st.tuples(_token(ALNUM, 12), _token(ALNUM, 20), _token(ALNUM, 16)).map(lambda t: f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}"),
    st.tuples(_token("abcdefghijklmnopqrstuvwxyz0123456789", 12), st.sampled_from(["example.com", "mail.example.org"])).map(lambda t: f"{t[0]}@{t[1]}"),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(before=_filler, secret=_secrets, after=_filler)
def test_planted_secret_never_survives(before: str, secret: str, after: str) -> None:
    assume(secret not in before and secret not in after)
    out = redact(f"{before} {secret} {after}")
    assert secret not in out


@settings(max_examples=300)
@given(before=_filler, value=_token(ALNUM + "!#%*", 14), after=_filler, key=st.sampled_from(["password", "PASSWORD", "api_key", "secret", "token"]), sep=st.sampled_from(["=", ": ", '": "']))
def test_planted_password_value_never_survives(before: str, value: str, after: str, key: str, sep: str) -> None:
    assume(value not in before and value not in after)
    out = redact(f"{before} {key}{sep}{value} {after}")
    assert value not in out


@settings(max_examples=500)
@given(st.one_of(_filler, st.lists(st.one_of(_filler, _secrets), max_size=6).map(" ".join)))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
