"""JSON text exactly as ECMAScript writes it, and the one reader with dsh's admission rules.

dsh writes every record with ``JSON.stringify``.  Repaired, forked or migrated logs are
only trustworthy if the bytes we emit are the bytes dsh itself would have emitted, so
every part of dshlog that writes JSON for dsh or for users goes through :func:`dumps`
or :func:`dumps_pretty`.

How the output is made fast
---------------------------
``orjson`` already agrees with ``JSON.stringify`` on almost everything: compact
separators, raw UTF-8, the same string escapes (lowercase ``\\u00xx``, ``/`` and
U+2028/U+2029 left alone), insertion order, ``null`` for NaN/Infinity, and
``OPT_INDENT_2`` is byte-identical to ``JSON.stringify(v, null, 2)`` (including ``[]``
and ``{}`` for empty containers).  The remaining differences are repaired on the output
bytes, never by walking the Python value:

* **floats** -- orjson differs from JS in exactly three shapes (``1.0``/``-0.0``,
  ``1e+16``..``e+20``, ``1e-6``).  Literal-prefix regexes find them in C; a candidate
  counts only if an even number of real quotes precede it (outside strings), and only
  those tokens go through :func:`format_number`.  The layout assumption is probed at
  import; if a future orjson disagrees, every fraction/exponent becomes a candidate.
* **integer-like keys** -- JS orders "array index" keys (``"0"`` .. ``"4294967294"``)
  first, ascending, before the other keys.  An all-digit key is recognised exactly in
  the output and then the pure-Python writer runs.
* **what orjson refuses** -- lone surrogates (from parsed ``\\ud800`` escapes), ints
  beyond 64 bits, other indents: the pure-Python writer handles these.

Measured (CPython 3.11, orjson 3.13; 8.0 MB list of 30 000 corpus events)::

    orjson.dumps, whole list                          8 ms
    dumps, whole list, no float candidates           39 ms
    dumps, whole list, as is (132 candidates)        57 ms
    dumps, whole list, 2 floats per event           121 ms
    pure-Python writer, whole list                  500 ms
    orjson OPT_INDENT_2 / dumps_pretty, whole list  10 ms / 80 ms
    orjson.dumps / dumps, one call per event         21 ms / 60 ms
    orjson.loads / loads, one call per line         ~110 ms / ~110 ms
    has_negative_zero, one call per line             30 ms

Reading
-------
:func:`loads` is the project's one JSON reader (nothing else parses JSON text).  It
uses ``orjson.loads``; when that refuses lone surrogate escapes (which JS accepts) or
integers beyond 64 bits, the stdlib parser takes over, with NaN/Infinity literals
rejected and big integers turned into doubles, as orjson and JS do.  Numbers written
as ``1.0`` stay floats (JS cannot tell them from ``1``; :mod:`dshlog.protocol.values`
treats them as integers and :func:`dumps` prints ``1``).  ``-0`` reads as ``-0.0``,
as in JS (orjson would say ``0``; :func:`has_negative_zero` finds the token in the
text), so the value rules refuse it wherever dsh does.  Every refusal is a
:class:`JsonError` with a kind.

What a parser does not decide (a ``-0`` token, nesting beyond :data:`MAX_DEPTH`, for the
lazy reader also a number that overflows) is looked for in the text: by one C pass over
the bytes outside strings (``_scan.c``, an optional extension built at install), or,
where it is not built, by substring searches and counts over the whole line.  The pass
is exact where it says "no"; a "maybe" goes to the same exact Python check.  On the
120 MB bench log it takes 62 ms where the searches and counts took 210 ms (``loads``)
and 226 ms (``plain_text``).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import msgspec
import orjson

from ..fastpaths import fast
from .values import MAX_SAFE_INTEGER


def _valid_utf8(data: bytes | bytearray | memoryview, /) -> bool:
    """Whether ``data`` is UTF-8, by the codec itself (the exact body of ``_scan.valid_utf8``)."""
    try:
        bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# The reader's byte checks in one C pass (``_scan.c``), where the optional extension is built
# and the fast paths run (``fastpaths``); else the Python checks below decide the same
# (tests/test_scan.py runs both).
_c_scan: Callable[[bytes | bytearray | memoryview, int], int] | None
try:
    from ._scan import BIG_NUMBER as _BIG_NUMBER
    from ._scan import DEEP as _DEEP
    from ._scan import NEG_ZERO as _NEG_ZERO
    from ._scan import WIDE_INT as _WIDE_INT
    from ._scan import scan as _c_scan
    from ._scan import valid_utf8 as _c_valid_utf8
except ImportError:  # pragma: no cover - built wherever a C compiler was at install
    _c_scan = None
    _BIG_NUMBER = _DEEP = _NEG_ZERO = _WIDE_INT = 0
    _c_valid_utf8 = _valid_utf8

__all__ = [
    "UNDEFINED",
    "Items",
    "JsonError",
    "dumps",
    "dumps_pretty",
    "document_pieces",
    "pretty_pieces",
    "iter_array",
    "top_level_keys",
    "format_number",
    "has_negative_zero",
    "js_string",
    "json_equal",
    "key_bytes",
    "loads",
    "loads_or_none",
    "plain_text",
    "plain_values",
    "same_values",
    "stringify",
    "struct_decoder",
]

_T = TypeVar("_T")

# Datetimes and dataclasses are not JSON values for dsh: make orjson refuse them so the
# fallback raises TypeError instead of silently inventing a representation.
_ORJSON_OPTS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_ORJSON_PRETTY_OPTS = _ORJSON_OPTS | orjson.OPT_INDENT_2

# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------


def format_number(x: int | float) -> str:
    """ECMAScript ``Number::toString(x)`` (radix 10).

    Python ints are printed exactly (dsh data keeps integers within the safe range, and
    printing them as is keeps big ints lossless).  Floats follow the spec: shortest
    round-trip digits (the same digits Python's ``repr`` picks), fixed notation for
    1e-6 <= |x| < 1e21 without a trailing ``.0``, otherwise ``d.ddde+N`` / ``de-N``.
    ``-0.0`` gives ``"0"``; NaN and the infinities give ``"NaN"``/``"Infinity"``/
    ``"-Infinity"`` (the JSON writers print ``null`` for them, as JS does).
    """
    if isinstance(x, bool):
        raise TypeError("format_number expects an int or float, not bool")
    if isinstance(x, int):
        return int.__repr__(x)
    if not isinstance(x, float):
        raise TypeError(f"format_number expects an int or float, not {type(x).__name__}")
    if x != x:
        return "NaN"
    if x == 0.0:
        return "0"
    if x < 0.0:
        return "-" + _format_positive(-x)
    return _format_positive(x)


def _format_positive(x: float) -> str:
    """Number::toString for a finite x > 0."""
    if x == math.inf:
        return "Infinity"
    r = float.__repr__(x)
    if "e" not in r:
        # repr uses fixed notation exactly for 1e-4 <= x < 1e16, where JS does too.
        return r[:-2] if r.endswith(".0") else r
    mantissa, _, exp_text = r.partition("e")
    int_part, _, frac = mantissa.partition(".")
    digits = (int_part + frac).rstrip("0")
    # n: position of the decimal point relative to the first significant digit
    # (value = 0.d1d2... * 10**n); repr's mantissa always starts with a non-zero digit.
    n = len(int_part) + int(exp_text)
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = digits[0] if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{sign}{abs(e)}"


class _Undefined:
    """JavaScript's ``undefined``: an absent key, distinct from JSON ``null``."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


#: Stands for a field JavaScript would read as ``undefined`` (``obj.missing``).
UNDEFINED: Any = _Undefined()


def js_string(value: Any) -> str:
    """``String(value)``, as a JavaScript template literal renders a value inside dsh's texts.

    Strings are verbatim; numbers follow :func:`format_number` (``1.0`` -> ``1``,
    ``1e-7``, ``1e+21``); ``null``/``undefined``/booleans by name; arrays join their
    elements with commas (``null``/``undefined`` elements as empty strings) and
    objects are ``[object Object]``, as ``Array.prototype.toString`` and
    ``Object.prototype.toString`` give them.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return format_number(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None or v is UNDEFINED else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    raise TypeError(f"js_string expects a JSON value, not {type(value).__name__}")


def key_bytes(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact JSON bytes that stand for a value as an identity key (deduplication, digests).

    Not dsh's writer: equal values give equal bytes and that is all a key needs, so
    orjson writes it as is (with ``sort_keys`` for key-order-insensitive identity).
    Raises ``TypeError`` for a value that is not plain JSON (e.g. a 70-bit integer).
    """
    return orjson.dumps(value, option=_KEY_SORTED if sort_keys else 0)


_KEY_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def stringify(value: Any) -> str:
    """``JSON.stringify(value)`` as text, for quoting a value inside one of dsh's messages."""
    return dumps(value).decode("utf-8")  # no lone surrogate survives the writer's escapes


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality as dsh's ``isDeepEqualJson``/``deepEqualJson``.

    Object key order is irrelevant, array order matters, numbers compare as doubles
    (``1 == 1.0``) and ``true`` is not ``1`` (unlike Python ``==``).
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or len(a) != len(b):
            return False
        return all(k in b and json_equal(v, b[k]) for k, v in a.items())
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------------------
# Writing: orjson fast path + post-fixes
# --------------------------------------------------------------------------------------

# Where orjson's float text differs from ECMAScript's.  orjson writes the shortest
# round-trip digits like JS, fixed notation for 1e-5 <= |x| < 1e16 and exponent form
# otherwise, so exactly three shapes differ: integral values with ``.0`` (``1.0``,
# ``-0.0``), 1e16 <= |x| < 1e21 (``1e+16`` .. ``9.9e+20``; JS writes all digits) and
# 1e-6 <= |x| < 1e-5 (``1e-6``; JS writes ``0.000001``).  Each pattern starts with a
# literal, which the regex engine finds with memchr, so the exponent patterns start at
# the sign rather than at ``e``, the commonest letter of prose (scanning from ``e`` made
# them three times slower).  Outside strings a ``+`` occurs only in an exponent and a
# ``-6`` only in an exponent or the integer -6, which is reformatted to itself; matches
# inside strings are weeded out later.  _probe_orjson() checks all this at import.
_NARROW_FLOAT_PATTERNS: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"\.0(?![0-9])"),
    re.compile(rb"\+(?:1[6-9]|20)(?![0-9])"),
    re.compile(rb"-6(?![0-9])"),
)
# Version-proof fallback: any fraction or exponent.
_BROAD_FLOAT_PATTERNS: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"\.[0-9]"),
    re.compile(rb"e[-+]?[0-9]"),
)
# A key made only of digits; the opening quote is real unless preceded by a backslash.
_INDEX_KEY_COMPACT = re.compile(rb'"(?:0|[1-9][0-9]{0,9})":')
_INDEX_KEY_PRETTY = re.compile(rb'"(?:0|[1-9][0-9]{0,9})": ')
_NUMBER_CHARS = frozenset(b"0123456789.eE+-")


def _neutralize_escapes(text: bytes) -> bytes:
    """Same-length copy of JSON text in which every remaining ``"`` delimits a string.

    Escapes are backslash pairs read left to right, and ``bytes.replace`` is left to
    right and non-overlapping, so replacing ``\\\\`` first and then ``\\"`` removes
    exactly the escaped quotes.
    """
    if b"\\" not in text:
        return text
    return text.replace(b"\\\\", b"__").replace(b'\\"', b"__")


def _number_spans(text: bytes, candidates: list[int]) -> list[tuple[int, int]]:
    """Spans of the number tokens outside strings that contain a candidate position.

    A candidate is outside strings when an even number of (unescaped) quotes precede
    it; the quotes are counted incrementally, so the whole text is read once, in C.
    """
    neutral = _neutralize_escapes(text)
    size = len(neutral)
    spans: list[tuple[int, int]] = []
    quotes = 0
    counted_to = 0
    token_end = -1
    for pos in candidates:
        if pos < token_end:
            continue  # second candidate inside the same token (``1.5e-7``)
        quotes += neutral.count(b'"', counted_to, pos)
        counted_to = pos
        if quotes & 1:
            continue
        start = pos
        while start > 0 and neutral[start - 1] in _NUMBER_CHARS:
            start -= 1
        end = pos + 1
        while end < size and neutral[end] in _NUMBER_CHARS:
            end += 1
        spans.append((start, end))
        token_end = end
    return spans


def _float_candidates(out: bytes) -> list[int]:
    """Positions that may belong to a float token JS would print differently."""
    found: list[int] = []
    hits = 0
    for pattern in _FLOAT_PATTERNS:
        if pattern.search(out) is not None:
            found.extend(m.start() for m in pattern.finditer(out))
            hits += 1
    if hits > 1:
        found.sort()
    return found


def _fix_floats(out: bytes) -> bytes:
    """Rewrite the float tokens of orjson output that JS prints differently."""
    candidates = _float_candidates(out)
    if not candidates:
        return out
    pieces: list[bytes] = []
    done = 0
    for start, end in _number_spans(out, candidates):
        token = out[start:end]
        fixed = format_number(float(token)).encode("ascii")
        if fixed != token:
            pieces.append(out[done:start])
            pieces.append(fixed)
            done = end
    if not pieces:
        return out
    pieces.append(out[done:])
    return b"".join(pieces)


def _probe_orjson() -> tuple[re.Pattern[bytes], ...]:
    """The float patterns to use with the installed orjson.

    The narrow patterns rely on orjson's float layout; verify it on values around every
    layout threshold and fall back to the broad patterns if any probe disagrees.
    """
    probes: list[float] = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    for exp in range(-12, 26):
        base = 10.0**exp
        probes += [base, -base, base * 1.5, base * 9.999999, base * 1.0000000000000002]
    probes += [float(MAX_SAFE_INTEGER + 1), float(MAX_SAFE_INTEGER + 3), 123.456, 0.1, 1 / 3]
    for x in probes:
        text = orjson.dumps(x)
        flagged = any(p.search(text) is not None for p in _NARROW_FLOAT_PATTERNS)
        if (text != format_number(x).encode("ascii")) != flagged:
            return _BROAD_FLOAT_PATTERNS
    return _NARROW_FLOAT_PATTERNS


_FLOAT_PATTERNS = _probe_orjson()


def _has_index_key(out: bytes, pattern: re.Pattern[bytes]) -> bool:
    """Whether orjson output holds an all-digit object key (JS would move it first).

    A match whose quote follows a backslash is an escaped quote inside a string.  A real
    quote after an escaped backslash would be a closing quote, and a closing quote is
    never followed by a digit, so the check is exact.
    """
    for m in pattern.finditer(out):
        if m.start() == 0 or out[m.start() - 1] != 0x5C:  # backslash
            return True
    return False


_orjson_dumps = orjson.dumps
_index_key_compact = _INDEX_KEY_COMPACT.search
_index_key_pretty = _INDEX_KEY_PRETTY.search
_float_searches = tuple(p.search for p in _FLOAT_PATTERNS)


def dumps(obj: Any) -> bytes:
    """``JSON.stringify(obj)`` as UTF-8 bytes (compact)."""
    try:
        out = _orjson_dumps(obj, option=_ORJSON_OPTS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _PyWriter("").write(obj)
    if _index_key_compact(out) is not None and _has_index_key(out, _INDEX_KEY_COMPACT):
        return _PyWriter("").write(obj)
    for search in _float_searches:
        if search(out) is not None:
            return _fix_floats(out)
    return out


def dumps_pretty(obj: Any, indent: int = 2) -> bytes:
    """``JSON.stringify(obj, null, indent)`` as UTF-8 bytes (no trailing newline).

    As in JS the indent is clamped to 10 spaces and an indent below 1 means compact.
    """
    if isinstance(indent, bool) or not isinstance(indent, int):
        raise TypeError("indent must be an int")
    if indent != 2:
        gap = " " * min(10, indent) if indent >= 1 else ""
        return _PyWriter(gap).write(obj) if gap else dumps(obj)
    try:
        out = _orjson_dumps(obj, option=_ORJSON_PRETTY_OPTS)
    except TypeError:
        return _PyWriter("  ").write(obj)
    if _index_key_pretty(out) is not None and _has_index_key(out, _INDEX_KEY_PRETTY):
        return _PyWriter("  ").write(obj)
    for search in _float_searches:
        if search(out) is not None:
            return _fix_floats(out)
    return out


class Items:
    """A JSON array given as an iterable, for :func:`pretty_pieces` and :func:`document_pieces` to write item by item.

    A document of many thousand rows (``surface --json`` of a log that never
    compacts) then never exists whole: each item is made, written and dropped.
    With ``encoded``, each item is already its own JSON text in the document's
    form (:func:`dumps` for a compact document, :func:`dumps_pretty` for a pretty
    one), so a writer that kept the items as text (``rebuild``'s messages, spilled
    as they were folded) never parses them again.
    """

    __slots__ = ("encoded", "items")

    def __init__(self, items: Iterable[Any], *, encoded: bool = False) -> None:
        self.items = items
        self.encoded = encoded


def pretty_pieces(doc: dict[str, Any]) -> Iterator[bytes]:
    """``JSON.stringify(doc, null, 2)`` in pieces whose concatenation is :func:`dumps_pretty`'s bytes.

    ``doc``'s values may be :class:`Items`, written as the arrays they yield.  A
    nested value's pretty text is its own with every newline indented one level
    further, which is exact because no JSON string holds a raw newline.
    """
    return document_pieces(doc, pretty=True)


def document_pieces(doc: dict[str, Any] | Items, *, pretty: bool) -> Iterator[bytes]:
    """``JSON.stringify(doc)`` (``pretty``: ``JSON.stringify(doc, null, 2)``) in pieces.

    The concatenation is :func:`dumps`'s (or :func:`dumps_pretty`'s) bytes of the
    document with every :class:`Items` written as the array it yields; ``doc`` is
    an object whose values may be :class:`Items`, or an :class:`Items` itself.
    A compact document's pieces are its members' own texts joined by commas,
    which is all ``JSON.stringify`` does without a gap.
    """
    if isinstance(doc, Items):
        yield from _items_pieces(doc, pretty, b"")
        return
    keys = _js_key_order(doc)
    if not keys:
        yield b"{}"
        return
    yield b"{"
    for i, key in enumerate(keys):
        if pretty:
            yield (b",\n  " if i else b"\n  ") + dumps(key) + b": "
        else:
            yield (b"," if i else b"") + dumps(key) + b":"
        value = doc[key]
        if isinstance(value, Items):
            yield from _items_pieces(value, pretty, b"  ")
        elif pretty:
            yield dumps_pretty(value).replace(b"\n", b"\n  ")
        else:
            yield dumps(value)
    yield b"\n}" if pretty else b"}"


def _items_pieces(items: Items, pretty: bool, indent: bytes) -> Iterator[bytes]:
    """The array ``items`` stands for, nested ``indent`` deep in a pretty document."""
    encode = (lambda item: item) if items.encoded else dumps_pretty if pretty else dumps
    if pretty:
        inner = b"\n  " + indent
        opening, separator = b"[" + inner, b"," + inner
    else:
        inner, opening, separator = b"", b"[", b","
    first = True
    for item in items.items:
        text = encode(item)
        yield (opening if first else separator) + (text.replace(b"\n", inner) if pretty else text)
        first = False
    yield b"[]" if first else b"\n" + indent + b"]" if pretty else b"]"


# --------------------------------------------------------------------------------------
# Writing: pure-Python fallback
# --------------------------------------------------------------------------------------

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
# A surrogate pair held as two code points is one character to JS (UTF-16), so it is
# joined; anything else that needs escaping is a single code point.
_NEEDS_ESCAPE = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\x00-\x1f\"\\\\\ud800-\udfff]")


def _escape_match(m: re.Match[str]) -> str:
    s = m.group()
    if len(s) == 2:
        return chr(0x10000 + ((ord(s[0]) - 0xD800) << 10) + (ord(s[1]) - 0xDC00))
    short = _SHORT_ESCAPES.get(s)
    return short if short is not None else f"\\u{ord(s):04x}"


def _quote(s: str) -> str:
    """A JSON string literal with exactly JSON.stringify's escapes."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_match, s) + '"'


def _array_index(key: str) -> int | None:
    """The index if ``key`` is a canonical array index (0 .. 2**32-2), else None."""
    if not key.isdigit() or not key.isascii() or (len(key) > 1 and key[0] == "0") or len(key) > 10:
        return None
    n = int(key)
    return n if n <= 2**32 - 2 else None


def _js_key_order(d: dict[Any, Any]) -> list[Any]:
    """Keys in JS own-property order: array indices ascending, then insertion order."""
    indexed: list[tuple[int, str]] = []
    others: list[str] = []
    for key in d:
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
        idx = _array_index(key)
        if idx is None:
            others.append(key)
        else:
            indexed.append((idx, key))
    if not indexed:
        return others
    indexed.sort()
    return [key for _, key in indexed] + others


_WRITER_RECURSION = 12000


class _PyWriter:
    """SerializeJSONProperty/Object/Array of ECMA-262 for plain Python JSON values."""

    __slots__ = ("gap", "parts", "stack")

    def __init__(self, gap: str) -> None:
        self.gap = gap
        self.parts: list[str] = []
        self.stack: set[int] = set()

    def write(self, obj: Any) -> bytes:
        # Parsed logs nest at most ~1024 levels (the parsers' own limits); JS serialises those,
        # so allow this recursive writer the depth it needs for them.
        limit = sys.getrecursionlimit()
        if limit < _WRITER_RECURSION:
            sys.setrecursionlimit(_WRITER_RECURSION)
        try:
            self._value(obj, "\n")
        finally:
            if limit < _WRITER_RECURSION:
                sys.setrecursionlimit(limit)
        # No surrogates survive _quote, so strict UTF-8 encoding cannot fail.
        return "".join(self.parts).encode("utf-8")

    def _value(self, v: Any, newline: str) -> None:
        parts = self.parts
        if v is None:
            parts.append("null")
        elif v is True:
            parts.append("true")
        elif v is False:
            parts.append("false")
        elif isinstance(v, str):
            parts.append(_quote(v))
        elif isinstance(v, int):
            parts.append(int.__repr__(v))
        elif isinstance(v, float):
            parts.append(format_number(v) if math.isfinite(v) else "null")
        elif isinstance(v, dict):
            self._object(v, newline)
        elif isinstance(v, (list, tuple)):
            self._array(v, newline)
        else:
            raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")

    def _enter(self, v: object) -> None:
        if id(v) in self.stack:
            raise ValueError("Converting circular structure to JSON")
        self.stack.add(id(v))

    def _object(self, d: dict[Any, Any], newline: str) -> None:
        parts = self.parts
        keys = _js_key_order(d)
        if not keys:
            parts.append("{}")
            return
        self._enter(d)
        gap = self.gap
        inner = newline + gap
        parts.append("{" + inner if gap else "{")
        sep = "," + inner if gap else ","
        colon = ": " if gap else ":"
        first = True
        for key in keys:
            if not first:
                parts.append(sep)
            first = False
            parts.append(_quote(key) + colon)
            self._value(d[key], inner)
        parts.append(newline + "}" if gap else "}")
        self.stack.discard(id(d))

    def _array(self, a: list[Any] | tuple[Any, ...], newline: str) -> None:
        parts = self.parts
        if not a:
            parts.append("[]")
            return
        self._enter(a)
        gap = self.gap
        inner = newline + gap
        parts.append("[" + inner if gap else "[")
        sep = "," + inner if gap else ","
        first = True
        for item in a:
            if not first:
                parts.append(sep)
            first = False
            self._value(item, inner)
        parts.append(newline + "]" if gap else "]")
        self.stack.discard(id(a))


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------

_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1

#: Deepest nesting the reader admits (arrays and objects, the outermost counts 1).
#: JavaScript has no such limit, but every walker of a parsed value in this project
#: (deep equality, ``String(value)``, the writers, ``repr`` in a message, the renderers)
#: may recurse once or twice per level, and Python's recursion limit is 1000 frames;
#: orjson writes at most 254 levels.  200 leaves every walker room and the writers
#: room to wrap a value in a few more levels; dsh's own logs nest about 13 deep.  A
#: value nested deeper is refused (``kind="depth"``) as a resource limit, never
#: half way through a walk.  Lines are checked cheaply: only a text with more than
#: ``MAX_DEPTH`` opening brackets can be that deep, and only those are walked.
MAX_DEPTH = 200


class JsonError(ValueError):
    """JSON text the one reader does not admit.

    ``kind`` says why: ``"syntax"`` (``JSON.parse`` refuses it), ``"utf-8"`` (the bytes
    are not UTF-8), ``"lossless"`` (valid JSON whose value dsh's lossless-JSON check
    refuses: a number that overflows to Infinity, or ``-0``), ``"depth"`` (nested
    deeper than :data:`MAX_DEPTH`).  ``detail`` is the parser's own words.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"invalid JSON: {detail}")
        self.kind = kind
        self.detail = detail


class _Infinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise JsonError("syntax", f"{name} is not a JSON value")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Infinite(text)
    return value


def _parse_int(text: str) -> int | float:
    if text == "-0":
        return -0.0  # JSON.parse reads -0 as the double -0, which every count and integer rule refuses
    # Mirror orjson: integers outside the 64-bit range become doubles (as in JS).
    value = int(text)
    if _INT64_MIN <= value <= _UINT64_MAX:
        return value
    return _parse_float(text)


def _loads_stdlib(data: bytes | bytearray | memoryview | str) -> Any:
    """Slow path: the stdlib parser accepts lone surrogate escapes, which JS allows."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError("utf-8", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float, parse_int=_parse_int)
    except _Infinite as exc:
        raise JsonError("lossless", f"number {exc} is infinity when parsed as double") from None
    except RecursionError:
        raise JsonError("depth", f"nested deeper than {MAX_DEPTH} levels") from None
    except JsonError:
        raise
    except ValueError as exc:
        raise JsonError("syntax", str(exc)) from None


def loads(data: bytes | bytearray | memoryview | str, *, lossless: bool = False) -> Any:
    """Parse JSON text like ``JSON.parse``: the one JSON reader of the project.

    Key order is kept, a duplicate key keeps its first position and its last value,
    lone surrogate escapes are kept, integers beyond 64 bits become doubles (as every
    number is a double in JavaScript).  A number that overflows to Infinity is
    refused (``kind="lossless"``): dsh's lossless-JSON check refuses it after
    ``JSON.parse``.  ``-0`` reads as the double ``-0.0``, as ``JSON.parse`` reads it
    (orjson would give the integer ``0``, so a text holding a ``-0`` token is read
    by the stdlib path), and every count and integer rule of
    :mod:`dshlog.protocol.values` refuses that.  With ``lossless=True`` a ``-0``
    anywhere is refused here already.  Values nested deeper than :data:`MAX_DEPTH`
    are refused (``kind="depth"``).  Raises :class:`JsonError`.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        text = str(exc)
        if text.startswith("depth limit exceeded"):
            raise JsonError("depth", f"nested deeper than {MAX_DEPTH} levels") from None
        if text.startswith("number is infinity"):
            raise JsonError("lossless", "a number is infinity when parsed as double") from None
        if "surrogate" not in text and "out of range" not in text:
            if "not valid UTF-8" in text:
                raise JsonError("utf-8", text) from None
            raise JsonError("syntax", text) from None
        value = _loads_stdlib(data)
    if _c_scan is not None and not isinstance(data, str) and fast():
        flags = _c_scan(data, MAX_DEPTH)
        if flags & _NEG_ZERO and has_negative_zero(_as_bytes(data)):
            if lossless:
                raise JsonError("lossless", "-0 is not losslessly serialisable")
            value = _loads_stdlib(data)
        if flags & _DEEP:
            raise JsonError("depth", f"nested deeper than {MAX_DEPTH} levels")
        return value
    if _may_hold_negative_zero(data) and has_negative_zero(_as_bytes(data)):
        if lossless:
            raise JsonError("lossless", "-0 is not losslessly serialisable")
        value = _loads_stdlib(data)  # orjson reads the integer -0 as 0; JS (and the stdlib path here) as -0.0
    if _may_be_deep(data) and _too_deep(value):
        raise JsonError("depth", f"nested deeper than {MAX_DEPTH} levels")
    return value


def loads_or_none(data: bytes | bytearray | memoryview | str) -> Any:
    """:func:`loads`, with ``None`` for text it refuses.

    For a reader that never stops at a damaged line (the store's listing): what
    does not parse is no value, exactly where :func:`loads` would raise, so the
    listing and the reading commands judge a line alike.  (A ``null`` line is
    ``None`` too; such a reader asks only for objects.)
    """
    try:
        return loads(data)
    except JsonError:
        return None


# --------------------------------------------------------------------------------------
# The lazy reader: typed C decoding where it certainly reads what loads reads
# --------------------------------------------------------------------------------------

# plain_text's one pass: digits and "+" become "0", "{" becomes "[" and "E" "e", so the
# scans below are substring searches (C) on the copy, not regexes with a class to start.
_PLAIN_TABLE = bytes.maketrans(b"123456789+{E", b"0000000000[e")
# A number overflows a double only with an exponent of three digits (or "+" and two), or
# with 210 digits before its point or more: 10**209 * 10**99 < 1.79e308.
_LONG_DIGITS = b"0" * 210
_WIDE_EXPONENT = b"e000"
# What may precede a number token's first character (or its "-") in JSON text.
_BEFORE_NUMBER = frozenset(b":,[ \t\r\n")


def struct_decoder(cls: type[_T]) -> Callable[[bytes | msgspec.Raw], _T | None]:
    """A C decoder of JSON text into the ``msgspec.Struct`` ``cls``; ``None`` where it refuses the text.

    For the lazy reader only (``read/lazy.py``): what it decodes is trusted only
    together with :func:`plain_text`, and a refusal means "read this one with
    :func:`loads`", never an error of the log (the exact reader words those).
    """
    decode = msgspec.json.Decoder(cls).decode

    def run(raw: bytes | msgspec.Raw) -> _T | None:
        try:
            return decode(raw)
        except (msgspec.DecodeError, RecursionError):  # also a value of another type (ValidationError); deep nesting
            return None

    return run


def plain_text(raw: bytes) -> bool:
    """Whether :func:`loads` certainly admits ``raw``, JSON text msgspec accepted.

    msgspec checks the grammar of what it decodes and of what it skips (a ``Raw``
    field), escapes and lone surrogate escapes included (it refuses those, this
    reader admits them), so what is left is what loads refuses and msgspec's skip
    does not look at: invalid UTF-8 (a skipped string is not validated), a number
    that overflows a double (loads refuses Infinity) and nesting beyond
    :data:`MAX_DEPTH`.  One translated copy of the line and a few substring searches;
    an exponent candidate inside a string (``"call_5e137"``) is weeded out by what
    precedes it.  ``False`` only costs a parse (the row goes to :func:`loads`);
    ``True`` must be exact.  Values msgspec decodes need :func:`same_values` too.
    """
    if _c_scan is not None and fast():
        return (raw.isascii() or _c_valid_utf8(raw)) and not _c_scan(raw, MAX_DEPTH) & (_DEEP | _BIG_NUMBER)
    if not raw.isascii() and not _valid_utf8(raw):
        return False
    t = raw.translate(_PLAIN_TABLE)
    if len(t) > 2 * MAX_DEPTH and t.count(b"[") > MAX_DEPTH:
        return False
    if _LONG_DIGITS in t:
        return False
    i = t.find(_WIDE_EXPONENT)
    while i >= 0:
        if _number_token_at(t, i):
            return False
        i = t.find(_WIDE_EXPONENT, i + 1)
    return True


def plain_values(raw: bytes) -> bool:
    """Whether :func:`plain_text` holds for ``raw`` and :func:`same_values` for every value msgspec decodes from it.

    A quick answer, certain when ``True``, from the C pass alone: valid UTF-8, and no
    token that nests too deep, may overflow a double, may read as ``-0.0`` or may not
    fit 64 bits; those are all that :func:`plain_text` and :func:`same_values` look
    for.  ``False`` (or no C pass built) only means "ask them".  The lazy reader asks
    this first, so a common row costs one pass over its bytes, not a walk over its values.
    """
    if _c_scan is None or not fast() or _c_scan(raw, MAX_DEPTH) & (_DEEP | _BIG_NUMBER | _NEG_ZERO | _WIDE_INT):
        return False
    return raw.isascii() or _c_valid_utf8(raw)


def _number_token_at(t: bytes, e: int) -> bool:
    """Whether the ``e`` at ``e`` of a translated text can be a number token's exponent.

    Walks back over the mantissa (``0`` and ``.`` in the copy, at least one) and a
    sign: a token starts after ``[``, ``:``, ``,`` or whitespace; anything else (a
    letter, ``_``, ``-`` inside an id) means the characters are part of a string.
    """
    j = e - 1
    if j < 0 or t[j] != 0x30:  # "0": a mantissa ends with a digit
        return False
    while j >= 0 and t[j] in b"0.":
        j -= 1
    if j >= 0 and t[j] == 0x2D:  # "-"
        j -= 1
    return j < 0 or t[j] in _BEFORE_NUMBER


def same_values(value: Any, raw: bytes) -> bool:
    """Whether what msgspec decoded from ``raw`` (``plain_text``) is what :func:`loads` reads there.

    ``value``: builtins msgspec made of a part of ``raw``.  They differ only in
    integers beyond 64 bits (loads reads doubles), non-finite doubles (loads refuses
    them) and ``-0`` (loads reads ``-0.0``, msgspec ``0``); a zero is trusted only
    when the text has no ``-0`` token at all.  Strings agree (msgspec refuses lone
    surrogate escapes), and so do duplicate keys (last value, first position).
    """
    zero = False
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is dict:
            push(v.values())
        elif t is list:
            push(v)
        elif t is int:
            if v == 0:
                zero = True
            elif not _INT64_MIN <= v <= _UINT64_MAX:
                return False
        elif t is float:
            if v == 0.0:
                zero = True
            elif not math.isfinite(v):
                return False
    return not (zero and _may_hold_negative_zero(raw) and has_negative_zero(raw))


def _as_bytes(data: bytes | bytearray | memoryview | str) -> bytes | str:
    return data if isinstance(data, (bytes, str)) else bytes(data)


def _may_hold_negative_zero(data: bytes | bytearray | memoryview | str) -> bool:
    """A C-speed look for what a ``-0.0`` token needs: the text ``-0`` (``-0``, ``-0.5``, a date in a
    string) or a negative exponent (``-1e-400`` underflows to ``-0.0``)."""
    if isinstance(data, str):
        return "-0" in data or "e-" in data or "E-" in data
    if isinstance(data, memoryview):
        data = data.tobytes()
    return b"-0" in data or b"e-" in data or b"E-" in data


def _may_be_deep(data: bytes | bytearray | memoryview | str) -> bool:
    """Whether ``data`` holds enough opening brackets to nest deeper than :data:`MAX_DEPTH` (a C-speed count)."""
    if len(data) <= 2 * MAX_DEPTH:  # a value that deep takes more bytes than that
        return False
    if isinstance(data, str):
        return data.count("[") + data.count("{") > MAX_DEPTH
    if isinstance(data, memoryview):  # a slice of a document's buffer: count the slice, not the buffer
        data = data.tobytes()
    return data.count(b"[") + data.count(b"{") > MAX_DEPTH


def _too_deep(value: Any) -> bool:
    """Whether a parsed value nests deeper than :data:`MAX_DEPTH`; iterative, containers only."""
    if not isinstance(value, (list, dict)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        v, d = pop()
        if d > MAX_DEPTH:
            return True
        for x in v.values() if isinstance(v, dict) else v:
            if isinstance(x, (list, dict)):
                push((x, d + 1))
    return False


# --------------------------------------------------------------------------------------
# Reading a JSON document as a stream of values
# --------------------------------------------------------------------------------------

# Inside a container: a maximal run of anything but brackets, whole strings included (so a
# bracket inside a string never ends the run), matched in one call; possessive, no backtracking.
_RUN = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+', re.S)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_SCALAR_END = re.compile(rb'[\s,:\]}]')
_SPACE = b" \t\r\n"
_READ_SIZE = 1 << 20


class _Scanner:
    """A JSON document read in chunks: just enough structure to cut it into values."""

    __slots__ = ("_read", "buf", "pos", "eof", "base")

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self.buf = bytearray()
        self.pos = 0
        self.eof = False
        self.base = 0  # document offset of buf[0]

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self._read(_READ_SIZE)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def peek(self) -> int | None:
        """The next byte that is not white space (``None`` at the end), without taking it."""
        buf = self.buf
        while True:
            while self.pos < len(buf) and buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(buf):
                return buf[self.pos]
            if not self._more():
                return None

    def take(self, expected: bytes) -> int:
        """Take the next non-space byte, which must be one of ``expected``."""
        c = self.peek()
        if c is None or c not in expected:
            where = self.base + self.pos
            found = "the end of the document" if c is None else repr(chr(c))
            raise JsonError("syntax", f"expected {' or '.join(repr(chr(e)) for e in expected)} at byte {where}, found {found}")
        self.pos += 1
        return c

    def value(self) -> Any:
        """Parse the whole value that starts here (object, array, string or scalar) with :func:`loads`."""
        c = self.peek()
        if c is None:
            raise JsonError("syntax", "unexpected end of the document")
        buf = self.buf
        start = self.pos
        if c not in (0x5B, 0x7B, 0x22):  # a scalar ends at the next structural byte
            while True:
                m = _SCALAR_END.search(buf, start)
                if m is not None:
                    return self._finish(start, m.start())
                if not self._more():
                    return self._finish(start, len(buf))
        if c == 0x22:
            while True:
                m = _STRING.match(buf, start)
                if m is not None:
                    return self._finish(start, m.end())
                if not self._more():
                    raise JsonError("syntax", "unterminated string in the document")
        depth = 0
        i = start
        while True:
            i = _RUN.match(buf, i).end()  # type: ignore[union-attr] # it matches the empty run too
            if i == len(buf):
                if not self._more():
                    raise JsonError("syntax", "unexpected end of the document")
                continue
            c = buf[i]
            if c == 0x22:  # a string cut short by the end of the buffer
                if not self._more():
                    raise JsonError("syntax", "unterminated string in the document")
                continue
            i += 1
            if c in (0x5B, 0x7B):
                depth += 1
                if depth > MAX_DEPTH:
                    raise JsonError("depth", f"nested deeper than {MAX_DEPTH} levels")
            else:
                depth -= 1
                if depth == 0:
                    return self._finish(start, i)

    def _finish(self, start: int, end: int) -> Any:
        value = loads(memoryview(self.buf)[start:end])
        self._consume(end)
        return value

    def _consume(self, end: int) -> None:
        """Drop what has been read: memory holds one value at a time."""
        del self.buf[:end]
        self.base += end
        self.pos = 0


def iter_array(read: Callable[[int], bytes], path: tuple[str, ...] = ()) -> Iterator[Any]:
    """The elements of the array at ``path`` in a JSON document, each parsed by :func:`loads`.

    ``path`` is the chain of object keys from the top (``()``: the document is the
    array; ``("events",)``: the array under the top-level key ``events``).  The
    document is read in chunks through ``read(n)`` and only one element is held at
    a time, so memory stays bounded by the largest element.  Every other value on
    the way is parsed and dropped, so the whole document passes the one reader and
    its admission rules.  A document without that array yields nothing.  A key that
    occurs twice is walked twice (``JSON.parse`` would keep the last).  Raises
    :class:`JsonError`.
    """
    sc = _Scanner(read)
    yield from _walk(sc, path)
    if sc.peek() is not None:
        raise JsonError("syntax", f"unexpected data after the document at byte {sc.base + sc.pos}")


def _walk(sc: _Scanner, path: tuple[str, ...]) -> Iterator[Any]:
    c = sc.peek()
    if not path and c == 0x5B:  # the array
        sc.take(b"[")
        if sc.peek() == 0x5D:
            sc.take(b"]")
            return
        while True:
            yield sc.value()
            if sc.take(b",]") == 0x5D:
                return
    if not path or c != 0x7B:
        sc.value()  # not the shape looked for: checked, then dropped
        return
    sc.take(b"{")
    if sc.peek() == 0x7D:
        sc.take(b"}")
        return
    while True:
        if sc.peek() != 0x22:
            sc.take(b'"')  # words the error
        key = sc.value()
        sc.take(b":")
        if key == path[0]:
            yield from _walk(sc, path[1:])
        else:
            sc.value()
        if sc.take(b",}") == 0x7D:
            return


def top_level_keys(read: Callable[[int], bytes]) -> Iterator[str]:
    """The keys of a JSON document's top-level object, in order, each value parsed and dropped."""
    sc = _Scanner(read)
    if sc.peek() != 0x7B:
        sc.value()
        return
    sc.take(b"{")
    if sc.peek() == 0x7D:
        return
    while True:
        if sc.peek() != 0x22:
            sc.take(b'"')
        key = sc.value()
        sc.take(b":")
        yield key
        sc.value()
        if sc.take(b",}") == 0x7D:
            return


# --------------------------------------------------------------------------------------
# Negative zero
# --------------------------------------------------------------------------------------

# Candidates for a number that JS parses to -0, as literal-prefix patterns (fast scans):
# "-0" not followed by a digit (``-0``, ``-0.0``, ``-0e5``, ``-0.000…1`` underflows) and
# negative exponents with three or more digits, the only way a mantissa >= 1 can
# underflow (JSON.parse("-1e-400")).  Matches inside strings (UUIDs, dates) are weeded out later.
_NEG_ZERO_PATTERNS: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"-0(?![0-9])"),
    re.compile(rb"e-[0-9]{3}"),
    re.compile(rb"E-[0-9]{3}"),
)


def has_negative_zero(raw: bytes | str) -> bool:
    """True if the JSON text holds a number token that JS parses to ``-0``.

    dsh refuses such values ("not losslessly JSON-serializable"), but both parsers here
    turn ``-0`` into ``0``, so the check reads the text.  Candidates are found with
    literal-prefix regexes; each is kept only if it lies outside strings (quote parity
    after neutralising escapes) and its whole number token evaluates to -0.0.  This
    covers ``-0``, ``-0.0``, ``-0e5`` and underflows like ``-1e-400``; exact for
    well-formed JSON (for malformed text the answer is unspecified).
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    candidates: list[int] = []
    hits = 0
    for pattern in _NEG_ZERO_PATTERNS:
        if pattern.search(raw) is not None:
            candidates.extend(m.start() for m in pattern.finditer(raw))
            hits += 1
    if not candidates:
        return False
    if hits > 1:
        candidates.sort()
    for start, end in _number_spans(raw, candidates):
        token = raw[start:end]
        if token.startswith(b"-") and float(token) == 0.0:
            return True
    return False
