"""The lazy row reader (``read/lazy.py``): where it reads, and what its checks admit.

``info``, ``stats``, ``events --json`` and ``tail`` read a v4 JSONL body through
the lazy reader, which admits a well-formed row in C without parsing its payload
and hands every other row to the exact reader.  The whole suite runs with the lazy
reader and without it (``DSHLOG_PATHS``, ``dshlog/fastpaths.py``): the fixtures'
answers are the README's and the command tests' in both runs, and the fuzzer compares
the two modes of those commands on every fixture, a sample of the corpus and every
mutation class.  The corpus' v4 files are test-snapshot projections, which the gate
leaves to the exact reader whole; so what is left here runs the commands both ways
where nothing else reaches the gate's rules: a generated log and the corpus' v4
payloads with their envelope restored (most of their rows taken by the gate, which
is checked), and a row at each rule of the gate.  Below that, a property of the one JSON owner: whatever text the gate's
checks admit, :func:`~dshlog.protocol.jsjson.loads` admits too, with the values
msgspec decoded (in the exact run, through the checks' Python bodies).
"""

from __future__ import annotations

import functools
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, corpus_files, load_bench_script, run_env
from dshlog.read.source import Source
from dshlog import fastpaths
from dshlog.protocol.events import RowHead
from dshlog.protocol.jsjson import JsonError, loads, plain_text, same_values, struct_decoder
from dshlog.read.session import SessionLog

FUZZ = load_bench_script("fuzz")
WORK = Path(tempfile.mkdtemp(prefix="dshlog-test-lazy-"))

#: The commands whose reading goes through the lazy reader, and two that stay exact
#: (the plain listing and a filter), which must not notice it either.
COMMANDS: list[list[str]] = [
    ["info"], ["info", "--json"], ["stats"], ["stats", "--json"], ["events", "--json"],
    ["tail"], ["tail", "--json", "-n", "4"], ["events"], ["events", "--json", "--type", "tool/*"],
]


@pytest.fixture(autouse=True, scope="module")
def _clean_work() -> Any:
    """The generated log lives only as long as this module."""
    yield
    shutil.rmtree(WORK, ignore_errors=True)


def _both(path: Path, argv: list[str]) -> tuple[tuple[int, bytes, bytes], tuple[int, bytes, bytes]]:
    """(lazy, exact) outcomes of ``dshlog ARGV PATH``: every fast path, then the exact bodies alone."""
    return run_env(*argv, str(path), paths="fast"), run_env(*argv, str(path), paths="exact")


def _assert_same(path: Path, what: str = "") -> None:
    for argv in COMMANDS:
        fast, exact = _both(path, argv)
        assert fast == exact, f"{what or path}: dshlog {' '.join(argv)}: lazy {fast[0]} {fast[2][:300]!r} / exact {exact[0]} {exact[2][:300]!r}"


def _is_v4_jsonl(data: bytes) -> bool:
    return data[:200].startswith(b'{"type":"session","version":4')


@pytest.fixture(scope="module")
def generated() -> tuple[Path, Path]:
    """A generated v4 log of about 400 KB, plain and zstd (every event type of a busy session)."""
    gen = load_bench_script("generate")
    out = gen.generate(WORK / "gen", "400K", 4, zstd=True)
    return out["plain"], out["zstd"]


# --------------------------------------------------------------------------- logs the gate reads

@pytest.mark.fast_paths
def test_the_generated_log_reads_the_same_and_lazily(generated: tuple[Path, Path]) -> None:
    for path in generated:
        _assert_same(path)
        with fastpaths.using("fast"), SessionLog(Source(str(path)), strict=False) as log:  # and the gate took the rows
            gate = log._gate()
            assert gate is not None
            rows = [obj for _events, obj, _raw, _loc in log._rows(runs=False, gate=gate)]
        lazy_rows = sum(1 for obj in rows if not isinstance(obj, dict))
        assert lazy_rows > 0.9 * len(rows), (path, lazy_rows, len(rows))


# --------------------------------------------------------------------------- the corpus' payloads, enveloped

CORPUS_AND_FIXTURES = corpus_files() + sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".zstd"))


def _enveloped(data: bytes) -> bytes | None:
    """A test-snapshot projection with its envelope restored (seq by position, a rising time), or ``None``.

    Nearly every v4 file of the corpus is a projection, which the lazy reader leaves to
    the exact reader whole; with seqs and times its real payloads go through the gate.
    """
    lines = data.splitlines()
    rows = []
    for i, line in enumerate(lines[1:]):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict) or "seq" in obj or "time" in obj:
            return None
        rows.append(orjson.dumps({"type": obj.get("type"), "seq": i, "time": 1790000000000 + i, **obj}))
    return b"\n".join([lines[0], *rows]) + b"\n" if rows else None


@functools.cache
def _seeds_of(generated: tuple[Path, Path]) -> tuple[tuple[str, bytes, bool], ...]:
    out = []
    for p in [*CORPUS_AND_FIXTURES, *generated]:
        data, zstd = FUZZ.decoded(p)
        if _is_v4_jsonl(data):
            lines = data.splitlines(keepends=True)
            out.append((p.name, b"".join(lines[:120]), zstd))  # a few screens of rows
            restored = _enveloped(out[-1][1])
            if restored is not None:
                out.append((p.name, restored, zstd))
    return tuple(out)


def _seeds(generated: tuple[Path, Path]) -> list[tuple[str, bytes, bool]]:
    """The v4 seeds: (file name, plaintext, was zstd); projections also with their envelope restored."""
    return list(_seeds_of(generated))


@pytest.mark.fast_paths
def test_restored_projections_read_the_same_and_lazily(generated: tuple[Path, Path], tmp_path: Path) -> None:
    """The corpus' v4 payloads, enveloped, read the same both ways, and most of their rows lazily."""
    lazy_rows = rows = 0
    for k, (name, data, _zstd) in enumerate(_seeds(generated)):
        path = tmp_path / str(k) / name
        path.parent.mkdir()
        path.write_bytes(data)
        _assert_same(path)
        with fastpaths.using("fast"), SessionLog(Source(str(path)), strict=False) as log:
            gate = log._gate()
            if gate is None or log.projection:
                continue
            for _events, obj, _raw, _loc in log._rows(runs=False, gate=gate):
                rows += 1
                lazy_rows += not isinstance(obj, dict)
    assert rows and lazy_rows > 0.5 * rows, (lazy_rows, rows)


@pytest.mark.fast_paths
def test_hand_made_rows_read_the_same(tmp_path: Path) -> None:
    """Rows at each rule of the gate, one log each: the exact reader's notes and errors, word for word."""
    head = b'{"type":"session","version":4,"id":"s1","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
    first = b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n'
    ok = b'{"type":"step/end","seq":1,"time":6,"data":{"turn":1}}\n'
    tool = b'{"type":"tool/result","seq":1,"time":6,"data":{"message":{"role":"tool","isError":true,"toolCallId":"c","content":[{"type":"text","text":"x"}]}}}\n'
    rows = {
        "well-formed": ok,
        "extra key": b'{"type":"step/end","seq":1,"time":6,"data":{},"extra":1}\n',
        "missing data": b'{"type":"step/end","seq":1,"time":6}\n',
        "seq gap": b'{"type":"step/end","seq":2,"time":6,"data":{}}\n',
        "seq as 1.0": b'{"type":"step/end","seq":1.0,"time":6,"data":{}}\n',
        "time -0": b'{"type":"step/end","seq":1,"time":-0,"data":{}}\n',
        "time 0": b'{"type":"step/end","seq":1,"time":0,"data":{}}\n',
        "time unsafe": b'{"type":"step/end","seq":1,"time":9007199254740992,"data":{}}\n',
        "ignorable false": b'{"type":"step/end","seq":1,"time":6,"data":{},"ignorable":false}\n',
        "ignorable 1": b'{"type":"step/end","seq":1,"time":6,"data":{},"ignorable":1}\n',
        "ranges": b'{"type":"tool/result","seq":1,"time":6,"data":{},"sourceEventSeqs":[[0,0]]}\n',
        "duplicate seq": b'{"type":"step/end","seq":5,"seq":1,"time":6,"data":{}}\n',
        "duplicate data": b'{"type":"tool/result","seq":1,"time":6,"data":{"isError":true},"data":{"callId":"c","isError":true}}\n',
        "infinity in data": b'{"type":"step/end","seq":1,"time":6,"data":{"x":1e400}}\n',
        "long mantissa": b'{"type":"step/end","seq":1,"time":6,"data":{"x":' + b"9" * 320 + b"}}\n",
        "exponent in a string": b'{"type":"step/end","seq":1,"time":6,"data":{"x":"call_5e137 1e400"}}\n',
        "big int in a view": b'{"type":"assistant/message","seq":1,"time":6,"data":{"usage":{"inputTokens":18446744073709551616}}}\n',
        "-0 in a view": b'{"type":"assistant/message","seq":1,"time":6,"data":{"usage":{"inputTokens":-0}}}\n',
        "zero in a view": b'{"type":"assistant/message","seq":1,"time":6,"data":{"usage":{"inputTokens":0},"at":"2026-01-02"}}\n',
        "lone surrogate": b'{"type":"step/end","seq":1,"time":6,"data":{"x":"\\ud800"}}\n',
        "invalid utf-8": b'{"type":"step/end","seq":1,"time":6,"data":{"x":"\xff"}}\n',
        "utf-8 surrogate": b'{"type":"step/end","seq":1,"time":6,"data":{"x":"\xed\xa0\x80"}}\n',
        "deep": b'{"type":"step/end","seq":1,"time":6,"data":' + b"[" * 200 + b"]" * 200 + b"}\n",
        "not deep": b'{"type":"step/end","seq":1,"time":6,"data":' + b"[" * 150 + b"]" * 150 + b"}\n",
        "deeper than msgspec": b'{"type":"step/end","seq":1,"time":6,"data":' + b"[" * 3000 + b"]" * 3000 + b"}\n",
        "message not an object": b'{"type":"tool/result","seq":1,"time":6,"data":{"message":"m"}}\n',
        "content not a list": b'{"type":"tool/result","seq":1,"time":6,"data":{"message":{"content":"c"}}}\n',
        "error tool result": tool,
        "data null": b'{"type":"tool/result","seq":1,"time":6,"data":null}\n',
        "syntax": b'{"type":"step/end","seq":1,"time":6,"data":{"x":01}}\n',
        "trailing text": b'{"type":"step/end","seq":1,"time":6,"data":{}} x\n',
        "crlf": b'{"type":"step/end","seq":1,"time":6,"data":{}}\r\n',
    }
    for name, row in rows.items():
        path = tmp_path / name.replace(" ", "-") / "session.v4.jsonl"
        path.parent.mkdir()
        path.write_bytes(head + first + row + ok.replace(b'"seq":1', b'"seq":2'))
        _assert_same(path, name)


# --------------------------------------------------------------------------- the JSON owner's property

_decode_head = struct_decoder(RowHead)

_numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr).map(lambda s: s.replace("inf", "1e999")),
    st.sampled_from(["-0", "-0.0", "0", "1e400", "-1e400", "1E+308", "1e-400", "-1e-400", "123e300", "9" * 400, "1.5e2"]),
)
_strings = st.one_of(
    st.text(max_size=8).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.sampled_from(['"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"e500"', '"call_5e137"', '"2026-01-02"', '"a\\u0000"']),
)


def _values(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(_numbers, _strings, st.sampled_from(["true", "false", "null"]))
    if depth == 0:
        return leaf
    inner = _values(depth - 1)
    return st.one_of(
        leaf,
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(_strings, inner), max_size=4).map(lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"),
    )


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types (``1`` is not ``1.0``, ``-0.0`` is not ``0``), key order included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return math.copysign(1.0, a) == math.copysign(1.0, b) and a == b
    return bool(a == b)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(value=_values(3), pad=st.sampled_from(["", " ", "\t"]), raw_bytes=st.sampled_from([b"", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80"]))
def test_what_the_gate_admits_loads_reads_alike(value: str, pad: str, raw_bytes: bytes) -> None:
    """Text msgspec accepts and :func:`plain_text` passes is text loads admits; values pass :func:`same_values` only if loads reads them."""
    text = f'{{"type":"t","seq":1,"time":1,"data":{pad}{value}{pad},"x":"'.encode() + raw_bytes + b'"}'
    row = (f'{{"type":"t","seq":1,"time":1,"data":{pad}{value}{pad}}}').encode()
    for raw in (text, row):
        if _decode_head(raw) is not None and plain_text(raw):
            loads(raw)  # raises JsonError if the gate admitted what the exact reader refuses
    try:
        decoded = msgspec.json.decode(row)
    except msgspec.DecodeError:
        return
    if plain_text(row) and same_values(decoded, row):
        assert _same(decoded, loads(row)), row


def test_the_property_can_fail() -> None:
    """Each check of the gate stands between msgspec and a different answer of loads."""
    for raw in (b'{"a":1e400}', b'{"a":"\xff"}', b'{"a":' + b"[" * 201 + b"]" * 201 + b"}", b'{"a":' + b"9" * 400 + b"}"):
        assert msgspec.json.decode(raw, type=msgspec.Raw) is not None  # msgspec's skip accepts it
        with pytest.raises(JsonError):
            loads(raw)
        assert not plain_text(raw)
    for raw in (b'{"a":-0}', b'{"a":18446744073709551616}'):
        value = msgspec.json.decode(raw)
        assert plain_text(raw) and not _same(value, loads(raw)) and not same_values(value, raw)

