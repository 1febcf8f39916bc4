"""Byte-exact JSON.stringify and lossless parsing (dshlog.jsjson).

The acceptance data are files written by JavaScript: the golden seeds (pretty form) and
the corpus session logs (compact form).  Where Node.js is installed, random values are
also checked against the real ``JSON.stringify`` and ``Number#toString``.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import random
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshlog.protocol import jsjson
from dshlog.protocol.jsjson import (
    dumps,
    dumps_pretty,
    format_number,
    has_negative_zero,
    loads,
)

from conftest import CORPUS, GOLDEN  # the seed's golden logs ship in fixtures/golden
NODE = shutil.which("node")


# --------------------------------------------------------------------------------------
# Reference implementations (independent of the module under test)
# --------------------------------------------------------------------------------------


def _shortest_digits(x: float) -> tuple[str, int]:
    """Shortest round-trip digits of x > 0 and the decimal exponent of the first digit.

    Built from correctly rounded ``%e`` output rather than ``repr``: at each precision
    the rounded value and its two neighbours are tried, and among those that read back
    as x the one closest to x wins (ties: even last digit), as ECMAScript requires.
    """
    exact = Decimal(x)
    for precision in range(1, 18):
        mantissa, exp = f"{x:.{precision - 1}e}".split("e")
        base = int(mantissa.replace(".", ""))
        e = int(exp)
        found: list[tuple[Decimal, int, int, int]] = []
        for digits in (base - 1, base, base + 1):
            if digits <= 0:
                continue
            d_exp = e
            text = str(digits)
            if len(text) != precision:  # 999 + 1 -> 1000, 100 - 1 -> 99: renormalise
                d_exp = e + len(text) - precision
            value = Decimal(digits).scaleb(e - precision + 1)
            if float(value) == x:
                found.append((abs(value - exact), digits % 2, digits, d_exp))
        if found:
            _, _, digits, d_exp = min(found)
            text = str(digits).rstrip("0")
            return text, d_exp
    raise AssertionError(f"no shortest form for {x!r}")


def reference_number(x: float) -> str:
    """ECMAScript Number::toString written from the spec's thresholds."""
    if x == 0:
        return "0"
    if x < 0:
        return "-" + reference_number(-x)
    digits, e = _shortest_digits(x)  # x ~= d.ddd * 10**e
    if -7 < e < 21:  # 1e-6 <= x < 1e21: plain decimal notation
        text = format(Decimal(digits).scaleb(e - len(digits) + 1), "f")
        return text
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def _join_pairs(s: str) -> str:
    """A surrogate pair held as two code points is one character in JS."""
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def reference_string(s: str) -> bytes:
    """JSON.stringify(s) derived from the stdlib: same escapes, lone surrogates as \\udxxx."""
    text = json.dumps(_join_pairs(s), ensure_ascii=False)
    text = "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text.encode("utf-8")


def _normalise(v: Any) -> Any:
    """What JS holds: surrogate pairs joined, tuples as lists, every number a double.

    (An integral double >= 2**53 prints as digits that Python reads back as an exact int
    while JS reads back the same double; comparing as doubles is the JS view.)
    """
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        return _join_pairs(v)
    if isinstance(v, dict):
        return {_join_pairs(k): _normalise(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_normalise(x) for x in v]
    return v


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

_special_chars = st.sampled_from(
    ["\ud800", "\udbff", "\udc00", "\udfff", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", '"', "\\", "/", "\b", "\t"]
)
js_text = st.text(st.one_of(st.characters(), _special_chars), max_size=20)
js_keys = st.one_of(js_text, st.integers(0, 2**33).map(str), st.sampled_from(["0", "01", "-1", "1.5", "4294967294"]))
js_floats = st.floats(allow_nan=False, allow_infinity=False)
js_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    js_floats,
    js_text,
)
js_values = st.recursive(
    js_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(js_keys, inner, max_size=5)),
    max_leaves=25,
)


# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (-7, "-7"),
        (2**70, str(2**70)),
        (1.0, "1"),
        (-1.0, "-1"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e21, "1.5e+21"),
        (1.5e-7, "1.5e-7"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (0.0000015, "0.0000015"),
        (123.456, "123.456"),
        (0.1, "0.1"),
        (1 / 3, "0.3333333333333333"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2.0**53, "9007199254740992"),
        (123e-20, "1.23e-18"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
)
def test_format_number_examples(value: float, expected: str) -> None:
    assert format_number(value) == expected


def test_format_number_rejects_non_numbers() -> None:
    with pytest.raises(TypeError):
        format_number(True)
    with pytest.raises(TypeError):
        format_number("1")  # type: ignore[arg-type]  # the wrong type is the test


@settings(max_examples=2000)
@given(js_floats)
def test_format_number_matches_reference(x: float) -> None:
    assert format_number(x) == reference_number(x)


@given(st.integers(min_value=-(2**53), max_value=2**53).map(float))
def test_integral_floats_print_like_ints(x: float) -> None:
    assert format_number(x) == str(int(x))


# --------------------------------------------------------------------------------------
# dumps / dumps_pretty
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, b"null"),
        (True, b"true"),
        (False, b"false"),
        ({"b": 1, "a": [1, 2, {}], "c": []}, b'{"b":1,"a":[1,2,{}],"c":[]}'),
        ([1.0, 1e16, 1e21, 1.5e-7, 0.000001, 123.456], b"[1,10000000000000000,1e+21,1.5e-7,0.000001,123.456]"),
        ([math.nan, math.inf, -math.inf, -0.0], b"[null,null,null,0]"),
        ({"x": -0.0, "y": -2.0}, b'{"x":0,"y":-2}'),
        (2**70, str(2**70).encode()),
        ([-(2**64), 2**64 - 1], b"[-18446744073709551616,18446744073709551615]"),
        ("é€😀", '"é€😀"'.encode()),
        ('"\\/\b\f\n\r\t', b'"\\"\\\\/\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x1f\x7f", b'"\\u0000\\u0001\\u001f\x7f"'),
        ("\u2028\u2029", '"\u2028\u2029"'.encode()),
        ("a\ud800b\udfff", b'"a\\ud800b\\udfff"'),
        ("\ud83d\ude00", '"😀"'.encode()),  # a pair held as two code points is one character
        ("\udbff\ud800", b'"\\udbff\\ud800"'),
        ((1, "a"), b'[1,"a"]'),
        # JS puts array-index keys first, ascending; others keep insertion order.
        ({"b": 1, "10": 2, "2": 3, "01": 4, "4294967295": 5, "4294967294": 6},
         b'{"2":3,"10":2,"4294967294":6,"b":1,"01":4,"4294967295":5}'),
        ({"x\"1": 1, "a": '"1":'}, b'{"x\\"1":1,"a":"\\"1\\":"}'),
        # float-looking text inside strings is left alone
        (["1.0", "1e+16", "x\\", 1.0, 'q"1.0', -0.0], b'["1.0","1e+16","x\\\\",1,"q\\"1.0",0]'),
        (1.0, b"1"),
        ("1.0", b'"1.0"'),
    ],
)
def test_dumps_examples(value: Any, expected: bytes) -> None:
    assert dumps(value) == expected
    assert jsjson._PyWriter("").write(value) == expected


def test_dumps_pretty_examples() -> None:
    assert dumps_pretty({}) == b"{}"
    assert dumps_pretty([]) == b"[]"
    assert dumps_pretty({"a": [], "b": {}, "c": [1, {"d": None}]}) == (
        b'{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    {\n      "d": null\n    }\n  ]\n}'
    )
    assert dumps_pretty([1.0, "x\ud800"]) == b'[\n  1,\n  "x\\ud800"\n]'
    assert dumps_pretty({"b": 1, "0": 2}) == b'{\n  "0": 2,\n  "b": 1\n}'
    assert dumps_pretty(1e16) == b"10000000000000000"
    assert dumps_pretty([[]], indent=4) == b"[\n    []\n]"
    assert dumps_pretty([[1]], indent=12) == b"[\n          [\n                    1\n          ]\n]"
    assert dumps_pretty({"a": [1]}, indent=0) == b'{"a":[1]}'
    assert dumps_pretty({"a": [1]}, indent=-3) == b'{"a":[1]}'


def test_dumps_refuses_non_json_values() -> None:
    import datetime

    for bad in ({1: 2}, {"a": object()}, datetime.datetime(2026, 1, 1), {"a": {1, 2}}):
        with pytest.raises(TypeError):
            dumps(bad)
        with pytest.raises(TypeError):
            dumps_pretty(bad)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises((ValueError, TypeError)):
        dumps(loop)


@settings(max_examples=500)
@given(js_values)
def test_dumps_round_trips_and_is_deterministic(value: Any) -> None:
    out = dumps(value)
    assert out == dumps(copy.deepcopy(value))
    assert _normalise(loads(out)) == _normalise(value)
    assert dumps(loads(out)) == out
    # the fast path (orjson + fixes) and the pure-Python writer agree byte for byte
    assert out == jsjson._PyWriter("").write(value)
    pretty = dumps_pretty(value)
    assert pretty == jsjson._PyWriter("  ").write(value)
    assert loads(pretty) == loads(out)


@settings(max_examples=1000)
@given(js_text)
def test_string_escapes_match_reference(s: str) -> None:
    assert dumps(s) == reference_string(s)
    assert dumps({s: s}) == b"{" + reference_string(s) + b":" + reference_string(s) + b"}"


@settings(max_examples=500)
@given(st.lists(js_floats, max_size=8))
def test_floats_in_containers(xs: list[float]) -> None:
    expected = "[" + ",".join(reference_number(x) for x in xs) + "]"
    assert dumps(xs) == expected.encode()
    assert dumps_pretty(xs) == (("[\n" + ",\n".join("  " + reference_number(x) for x in xs) + "\n]") if xs else "[]").encode()


# --------------------------------------------------------------------------------------
# loads / has_negative_zero
# --------------------------------------------------------------------------------------


def test_loads_basics() -> None:
    assert loads(b'{"b":1,"a":[true,null,1.5,"x"]}') == {"b": 1, "a": [True, None, 1.5, "x"]}
    assert list(loads('{"b":1,"a":2}')) == ["b", "a"]
    assert loads(b'"\\ud800x"') == "\ud800x"  # lone surrogates: stdlib fallback
    assert loads('["\\udc00", 1, "\\ud83d\\ude00"]') == ["\udc00", 1, "😀"]
    assert loads(b"[123456789012345678901234567890]") == [1.2345678901234568e29]
    assert loads(b'["\\ud800", 123456789012345678901234567890]') == ["\ud800", 1.2345678901234568e29]
    assert loads(b"18446744073709551615") == 2**64 - 1
    assert type(loads(b"1.0")) is float and dumps(loads(b"1.0")) == b"1"
    assert loads(bytearray(b"[1]")) == [1]


@pytest.mark.parametrize(
    "bad",
    [b"", b"NaN", b"[Infinity]", b"[1,]", b"{'a':1}", b"1e400", b'["\\ud800", NaN]', b'"\\ud800', b'"\xff"',
     b'["\\ud800", 1e999]', b"[1] x", b'"a\nb"'],
)
def test_loads_rejects_invalid_json(bad: bytes) -> None:
    with pytest.raises(ValueError, match="^invalid JSON"):
        loads(bad)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"[-0]", True),
        (b"-0", True),
        (b'{"a": -0.0}', True),
        (b"[-0e5]", True),
        (b"[-0E+5]", True),
        (b"[-1e-400]", True),
        (b"[-1.5E-400]", True),
        (b"[-0." + b"0" * 400 + b"1]", True),
        (b'["\\\\", -0]', True),
        (b"[0, 0.0, -0.5, -10, -1e-300, 1e-400]", False),
        (b'["-0", "2026-09-08", "a\\"-0"]', False),
        (b'{"-0": "-0.0"}', False),
        (b'["562b50f5-0c51-49ec-9700-af7e939e29c5"]', False),
        ('[ -0 ]', True),
    ],
)
def test_has_negative_zero(raw: bytes | str, expected: bool) -> None:
    assert has_negative_zero(raw) is expected


@pytest.mark.parametrize("c", [True, False], ids=["c-scan", "python-checks"])
@pytest.mark.parametrize("raw", [b"[-0]", b"[-1e-400]", b'{"a":[-1.5E-400]}', b"[-0." + b"0" * 400 + b"1]"])
def test_lossless_refuses_every_negative_zero(raw: bytes, c: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``-0.0`` by underflow is refused as ``-0`` is (the look before the exact check missed ``-1e-400``)."""
    if not c:
        monkeypatch.setattr(jsjson, "_c_scan", None)
    with pytest.raises(jsjson.JsonError) as exc:
        loads(raw, lossless=True)
    assert exc.value.kind == "lossless"


@settings(max_examples=300)
@given(js_values)
def test_has_negative_zero_is_exact_on_js_output(value: Any) -> None:
    out = dumps(value)
    assert not has_negative_zero(out)  # JSON.stringify never writes -0
    if isinstance(value, list):
        assert has_negative_zero(dumps(value)[:-1] + (b",-0]" if value else b"-0]"))


# --------------------------------------------------------------------------------------
# Files written by JavaScript
# --------------------------------------------------------------------------------------

_golden_files = sorted(GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []


@pytest.mark.skipif(not _golden_files, reason=f"{GOLDEN} is absent")
@pytest.mark.parametrize("path", _golden_files, ids=lambda p: p.name)
def test_golden_files_reproduce_exactly(path: Path) -> None:
    raw = path.read_bytes()
    assert raw.endswith(b"\n")  # JSON.stringify(value, null, 2) + "\n"
    for value in (json.loads(raw), loads(raw)):
        assert dumps_pretty(value) + b"\n" == raw
    for event in json.loads(raw):
        compact = dumps(event)
        assert compact == json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
        assert dumps(loads(compact)) == compact
        assert dumps_pretty(event) == json.dumps(event, ensure_ascii=False, indent=2).encode()


_corpus_files = sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []


def _mismatches(path: Path) -> list[tuple[int, str]]:
    """Lines of a JS-written file that do not survive loads + dumps, with the reason.

    The only lines allowed to differ are ones written by another program: the stdlib's
    default ``json.dumps`` layout (", " and ": " separators) reproduces them exactly.
    """
    problems: list[tuple[int, str]] = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not line:
            continue
        try:
            value = loads(line)
        except ValueError:
            continue  # torn or deliberately broken rows are someone else's test
        if dumps(value) == line:
            continue
        if json.dumps(value, ensure_ascii=False).encode() == line:
            continue  # not written by JSON.stringify (spaced separators)
        problems.append((number, f"{line[:120]!r} -> {dumps(value)[:120]!r}"))
    return problems


@pytest.mark.skipif(not _corpus_files, reason=f"shared corpus not found at {CORPUS} (set DSHLOG_SHARED)")
@pytest.mark.parametrize("path", _corpus_files, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_lines_round_trip(path: Path) -> None:
    assert _mismatches(path) == []


@pytest.mark.skipif(not _corpus_files, reason=f"shared corpus not found at {CORPUS} (set DSHLOG_SHARED)")
def test_corpus_has_no_negative_zero() -> None:
    for path in _corpus_files:
        for line in path.read_bytes().split(b"\n"):
            assert not has_negative_zero(line), (path, line[:200])


# --------------------------------------------------------------------------------------
# Against the real JavaScript engine (when Node.js is installed)
# --------------------------------------------------------------------------------------

_NODE_SCRIPT = r"""
const lines = require('fs').readFileSync(0, 'utf8').split('\n').filter(Boolean);
const b64 = (s) => Buffer.from(s, 'utf8').toString('base64');
for (const line of lines) {
  const [kind, text] = [line[0], line.slice(2)];
  if (kind === 'n') { process.stdout.write(b64(String(Number(text))) + '\n'); continue; }
  const v = JSON.parse(text);
  process.stdout.write(b64(JSON.stringify(v)) + ' ' + b64(JSON.stringify(v, null, 2)) + '\n');
}
"""


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**53) + 1, 2**53 - 1)
    if kind == 2:
        return _random_float(rng)
    if kind in (3, 4, 5):
        alphabet = ["a", "é", "😀", "\ud800", "\udc00", "\x00", "\x1f", "\x7f", "\u2028", '"', "\\", "/", "\n", "1", "."]
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind in (6, 7):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["a", "b", "0", "1", "10", "01", "4294967294", "4294967295", "-1", "x y", "\ud800"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


def _random_float(rng: random.Random) -> float:
    choice = rng.randrange(4)
    if choice == 0:
        return float(rng.randint(-(10**22), 10**22))
    if choice == 1:
        return rng.uniform(-1, 1) * 10.0 ** rng.randint(-330, 308)
    if choice == 2:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 8))
    return rng.choice([0.0, -0.0, 5e-324, 1e-7, 1e-6, 1e21, 1e16, 9007199254740993.0, 0.1 + 0.2])


def _run_node(lines: list[str]) -> list[str]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", _NODE_SCRIPT], input="\n".join(lines).encode(), capture_output=True, check=True, timeout=120
    )
    return done.stdout.decode().splitlines()


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_numbers_against_node() -> None:
    rng = random.Random(20261130)
    xs = [_random_float(rng) for _ in range(20000)]
    xs = [x for x in xs if math.isfinite(x)]
    got = _run_node([f"n {x!r}" for x in xs])
    for x, b64 in zip(xs, got, strict=True):
        assert format_number(x) == base64.b64decode(b64).decode(), x


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_values_against_node() -> None:
    rng = random.Random(4242)
    values = [_random_value(rng) for _ in range(3000)]
    values = [v for v in values if isinstance(v, (list, dict))] + [1.0, -0.0, "\ud800", {"2": 1, "1": 2}]
    # stdlib text with ASCII escapes carries lone surrogates and exact doubles to JS
    got = _run_node([f"v {json.dumps(v, ensure_ascii=True, allow_nan=False)}" for v in values])
    for value, row in zip(values, got, strict=True):
        compact, pretty = (base64.b64decode(part) for part in row.split(" "))
        assert dumps(value) == compact, value
        assert dumps_pretty(value) == pretty, value


@settings(max_examples=200)
@given(st.lists(st.one_of(js_floats, st.text()), max_size=8))
def test_broad_float_patterns_agree(items: list[Any]) -> None:
    """The version-proof float patterns (used if orjson's layout ever changes) agree."""
    saved = jsjson._FLOAT_PATTERNS
    try:
        jsjson._FLOAT_PATTERNS = jsjson._BROAD_FLOAT_PATTERNS
        broad = jsjson._fix_floats(jsjson.orjson.dumps(items))
    finally:
        jsjson._FLOAT_PATTERNS = saved
    assert broad == dumps(items) == jsjson._PyWriter("").write(items)


def test_installed_orjson_uses_the_narrow_float_patterns() -> None:
    """The fast patterns are the ones in use (a silent fall-back to the broad ones would
    make every dump with a fraction take the slow post-fix path)."""
    assert jsjson._FLOAT_PATTERNS is jsjson._NARROW_FLOAT_PATTERNS


@pytest.mark.parametrize(
    "value, text",
    [
        ([-6, 1e-6, -6.5, 2e16, -1.5e-6, "e-6 e+16 -6", {"a-6": 1e20}], b'[-6,0.000001,-6.5,20000000000000000,-0.0000015,"e-6 e+16 -6",{"a-6":100000000000000000000}]'),
        ([1e21, 1e-7, 6, "+16"], b'[1e+21,1e-7,6,"+16"]'),
    ],
)
def test_exponent_patterns_anchor_on_the_sign(value: Any, text: bytes) -> None:
    assert dumps(value) == text


# --------------------------------------------------------------------------------------
# Documents written in pieces
# --------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    doc=st.dictionaries(st.sampled_from(["messages", "config", "2", "0", "x\ty", "\ud800"]), js_values, max_size=5),
    pretty=st.booleans(),
    lazy=st.booleans(),
    encoded=st.booleans(),
)
def test_document_pieces_are_the_whole_document(doc: dict[str, Any], pretty: bool, lazy: bool, encoded: bool) -> None:
    """Pieces join to ``dumps``/``dumps_pretty`` of the document, its arrays given whole, as
    iterables, or as their items' own texts (what ``rebuild`` writes from its spill)."""
    whole = dumps_pretty if pretty else dumps

    def items(values: list[Any]) -> jsjson.Items:
        if encoded:
            return jsjson.Items((whole(v) for v in values), encoded=True)
        return jsjson.Items(iter(values))

    given_doc = {k: items(v) if lazy and isinstance(v, list) else v for k, v in doc.items()}
    assert b"".join(jsjson.document_pieces(given_doc, pretty=pretty)) == whole(doc)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(values=st.lists(js_values, max_size=5), pretty=st.booleans(), encoded=st.booleans())
def test_an_array_in_pieces_is_the_whole_array(values: list[Any], pretty: bool, encoded: bool) -> None:
    """A top-level array (``rebuild --messages-only``) written item by item."""
    whole = dumps_pretty if pretty else dumps
    items = jsjson.Items((whole(v) for v in values) if encoded else iter(values), encoded=encoded)
    assert b"".join(jsjson.document_pieces(items, pretty=pretty)) == whole(values)
