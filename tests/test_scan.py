"""The reader's byte checks in C (``dshlog/protocol/_scan.c``) decide what the Python checks decide.

``jsjson.loads`` and ``jsjson.plain_text`` ask the optional extension where it is built and
their Python checks where it is not.  Both must give the same values and the same refusals
on every text; the flags themselves must be exact where they are clear (a clear flag skips
the Python check) and hold wherever the Python check would find something.
"""

from __future__ import annotations

import glob
import json
import math
import re
import shutil
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshlog.protocol import jsjson
from dshlog.protocol.jsjson import MAX_DEPTH, JsonError, has_negative_zero, loads, plain_text, plain_values, same_values

from conftest import CORPUS

ROOT = Path(__file__).resolve().parent.parent
scan_c = jsjson._c_scan
needs_c = pytest.mark.skipif(scan_c is None, reason="the optional C extension dshlog.protocol._scan is not built here")

# ------------------------------------------------------------------ JSON texts, written token by token

_numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-0", "-0.0", "-0e5", "-0E-3", "0", "0.0", "-1e-400", "1e400", "-1e400", "1e308", "1e309",
                     "-1e-320", "1E+999", "-0." + "0" * 330 + "1", "0." + "0" * 330 + "1", "1" + "0" * 320,
                     "-" + "9" * 250, "1e0000000000309", "-1.5e-3", "12e-0000400", "5e-324", "-5e-324", "-2e-324"]),
)
# json.dumps escapes quotes, backslashes and controls, and writes a lone surrogate as an escape (the stdlib path)
_string_chars = st.text(alphabet=st.sampled_from(list('ab"\\[]{}-0e9 ,:\n\t\u00e9\u2028\ud800')), max_size=12)

#: the C pass beside its Python twin, compared in one process: the fast run's (conftest)
pytestmark = pytest.mark.fast_paths


def _string(s: str) -> str:
    return json.dumps(s)


_ws = st.sampled_from(["", " ", "\n", "\t", "\r\n  "])


def _texts() -> st.SearchStrategy[str]:
    scalars = st.one_of(_numbers, _string_chars.map(_string), st.sampled_from(["true", "false", "null"]))

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        arrays = st.tuples(st.lists(children, max_size=4), _ws).map(lambda t: "[" + t[1] + ("," + t[1]).join(t[0]) + "]")
        objects = st.tuples(st.lists(st.tuples(_string_chars.map(_string), children), max_size=4), _ws).map(
            lambda t: "{" + t[1] + ",".join(f"{k}{t[1]}:{t[1]}{v}" for k, v in t[0]) + "}")
        return st.one_of(arrays, objects)

    return st.recursive(scalars, extend, max_leaves=20)


def _deep(depth: int, inner: str = "1") -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(["[", '{"k":', '["x",', '{"[":']), min_size=depth, max_size=depth).map(
        lambda opens: "".join(opens) + inner + "".join("]" if o.startswith("[") else "}" for o in reversed(opens)))


texts = st.one_of(_texts(), st.integers(min_value=MAX_DEPTH - 2, max_value=MAX_DEPTH + 2).flatmap(_deep))


# ------------------------------------------------------------------ references, independent of both paths

def _depth(v: Any) -> int:
    stack = [(v, 1)] if isinstance(v, (list, dict)) else []
    most = 0
    while stack:
        x, d = stack.pop()
        most = max(most, d)
        stack.extend((y, d + 1) for y in (x.values() if isinstance(x, dict) else x) if isinstance(y, (list, dict)))
    return most


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*')


def _number_tokens(text: str) -> Iterator[str]:
    for m in _TOKEN.finditer(text):
        if not m.group().startswith('"'):
            yield m.group()


def _outcome(text: bytes, *, c: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        if not c:
            m.setattr(jsjson, "_c_scan", None)
        try:
            value = loads(text)
        except JsonError as exc:
            return ("refused", exc.kind)
        lossless: Any
        try:
            lossless = loads(text, lossless=True)
        except JsonError as exc:
            lossless = ("refused", exc.kind)
        return (repr(value), repr(lossless))


# ------------------------------------------------------------------ the flags

@needs_c
@settings(max_examples=3000, deadline=None)
@given(texts)
def test_flags_hold_where_the_text_has_it(text: str) -> None:
    raw = text.encode()
    assert scan_c is not None
    flags = scan_c(raw, MAX_DEPTH)
    value = json.loads(text)
    assert bool(flags & jsjson._DEEP) == (_depth(value) > MAX_DEPTH)  # exact: a clear flag skips the walk
    if has_negative_zero(raw):
        assert flags & jsjson._NEG_ZERO, text
    if any(not math.isfinite(float(t)) for t in _number_tokens(text)):
        assert flags & jsjson._BIG_NUMBER, text
    if any(not -(2**63) <= int(t) < 2**64 for t in _number_tokens(text) if re.fullmatch(r"-?\d+", t)):
        assert flags & jsjson._WIDE_INT, text


@needs_c
@pytest.mark.parametrize(("text", "flag"), [
    ("[-0]", "_NEG_ZERO"), ('{"a":-0.0}', "_NEG_ZERO"), ("[-1e-400]", "_NEG_ZERO"), ("[1e400]", "_BIG_NUMBER"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "_DEEP"), ("[18446744073709551616]", "_WIDE_INT"),
    ('{"a":-9223372036854775809}', "_WIDE_INT"),
])
def test_each_flag_fires(text: str, flag: str) -> None:
    assert scan_c is not None
    assert scan_c(text.encode(), MAX_DEPTH) & getattr(jsjson, flag)


@needs_c
@pytest.mark.parametrize("text", ['["-0","2026-01-02",-5,10,"\\"-0\\""]', '{"[[[":"{{{","e400":"1e400"}', '"\\\\"', "[1e99]",
                                  "[" * MAX_DEPTH + "]" * MAX_DEPTH, '["' + "[" * (MAX_DEPTH + 5) + '"]',
                                  "[999999999999999999,-999999999999999999]", "[12345678901234567890.5,1234567890123456789e2]",
                                  '["12345678901234567890"]'])
def test_strings_and_what_is_in_range_raise_no_flag(text: str) -> None:
    assert scan_c is not None
    assert scan_c(text.encode(), MAX_DEPTH) == 0


@needs_c
def test_any_buffer_is_read_without_a_copy() -> None:
    assert scan_c is not None
    raw = b'xx[-0]'
    assert scan_c(memoryview(raw)[2:], MAX_DEPTH) == scan_c(bytearray(raw[2:]), MAX_DEPTH) == jsjson._NEG_ZERO
    with pytest.raises(TypeError):
        scan_c("[-0]", MAX_DEPTH)  # type: ignore[arg-type]  # a str has no buffer: the caller keeps the Python checks


# ------------------------------------------------------------------ both paths decide the same

@needs_c
@settings(max_examples=2000, deadline=None)
@given(texts)
def test_loads_agrees_with_and_without_c(text: str) -> None:
    """Values and refusals, plain and lossless.  ``plain_text`` may differ (the C pass looks at number
    tokens only, the Python checks at digit runs anywhere); its exactness is the next test's."""
    mp = pytest.MonkeyPatch()
    try:
        raw = text.encode()
        assert _outcome(raw, c=True, monkeypatch=mp) == _outcome(raw, c=False, monkeypatch=mp)
    finally:
        mp.undo()


@needs_c
@settings(max_examples=2000, deadline=None)
@given(texts)
def test_plain_text_is_exact_with_c(text: str) -> None:
    """``True`` only where ``loads`` admits the text (msgspec accepts it first, as the lazy reader asks)."""
    raw = text.encode()
    try:
        msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return
    if plain_text(raw):
        loads(raw)  # raises if the C answer were wrong


@needs_c
@settings(max_examples=3000, deadline=None)
@given(texts, st.sampled_from([b"", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80"]))
def test_plain_values_is_exact(text: str, raw_bytes: bytes) -> None:
    """``True`` only where ``plain_text`` holds and msgspec's values of the text are the ones ``loads`` reads."""
    raw = b'{"k":' + text.encode() + b',"s":"' + raw_bytes + b'"}'
    try:
        decoded = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return
    if plain_values(raw):
        assert plain_text(raw)
        assert same_values(decoded, raw)
        assert repr(decoded) == repr(loads(raw)), raw  # raises JsonError if loads refused it


@needs_c
@pytest.mark.parametrize("raw", [b'{"a":-0}', b'{"a":18446744073709551616}', b'{"a":1e400}', b'{"a":"\xff"}',
                                 b'{"a":' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}"])
def test_plain_values_says_no_where_msgspec_and_loads_differ(raw: bytes) -> None:
    assert not plain_values(raw)


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_utf8_edges = st.sampled_from([b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80", b"\xe0\x80\x80",
                               b"\xe0\xa0\x80", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf",
                               b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\x80", b"\xe4\xb8", b"\xf0\x9f\x98"])


@needs_c
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=6), st.text(max_size=6).map(lambda t: t.encode("utf-8", "surrogatepass")),
                          _utf8_edges), max_size=8).map(b"".join))
def test_valid_utf8_is_the_codec(raw: bytes) -> None:
    """The C check answers what ``bytes.decode("utf-8")`` does: overlong forms, surrogates, beyond U+10FFFF, cut sequences."""
    assert jsjson._c_valid_utf8(raw) == _decodes(raw), raw


def test_plain_values_without_c_says_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsjson, "_c_scan", None)
    assert not plain_values(b'{"a":1}')


def _lines() -> list[bytes]:
    files = sorted(glob.glob(str(ROOT / "fixtures" / "**" / "*.jsonl"), recursive=True))
    if CORPUS is not None:
        files += sorted(str(p) for p in Path(CORPUS).rglob("*.jsonl"))
    out: list[bytes] = []
    for f in files:
        out.extend(line for line in Path(f).read_bytes().split(b"\n") if line.strip())
    return out


@needs_c
def test_every_stored_line_reads_the_same_with_and_without_c(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _lines()
    assert len(lines) > 100
    for raw in lines:
        assert _outcome(raw, c=True, monkeypatch=monkeypatch) == _outcome(raw, c=False, monkeypatch=monkeypatch), raw[:200]


def test_the_extension_is_built_where_a_compiler_is() -> None:
    """An install on a machine with a C compiler builds the accelerator; a silent fallback would only be slow."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc}) here: the Python checks run, as documented")
    assert scan_c is not None, "dshlog.protocol._scan was not built: reinstall (pip install -e .) with a C compiler"
