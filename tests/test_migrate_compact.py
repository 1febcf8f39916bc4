"""Compact runs give the same v4 log as expanded chunks (FORMAT §4.1, §4.3 item 4).

``SessionLog.v4()`` passes each v0/v1 packed row through the chain as one
compact run; ``v4(runs=False)`` feeds the fully expanded ``assistant/chunk``
events.  The compact path exists only for speed (a fast path, ``dshlog/fastpaths.py``),
so the two must produce byte-identical v4 events and headers, or refuse with the same
error.  The whole suite runs with compact runs and without them; there the
differential suite migrates every v0/v1 file of the shared corpus and the fixtures
as dsh does, in both runs.  Here: generated logs and hand-made edge cases, both ways
in one process (the fast run's: the exact mode expands every run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, jsonl, load_bench_script
from dshlog.protocol import jsjson
from dshlog.errors import DshlogError
from dshlog.protocol.values import MAX_SAFE_INTEGER as MAX_SAFE
from dshlog.read.session import open_log



def _migrate(path: Path, compact: bool, strict: bool = True) -> tuple[Any, ...]:
    """(header bytes, v4 event bytes..., inherited cut) or the error the migration stops with."""
    try:
        with open_log(str(path), strict=strict) as log:
            if log.version > 1:
                return ("not-v0-v1",)
            view = log.v4(child_facts=[], runs=compact)
            out = [jsjson.dumps(view.header)]
            out.extend(jsjson.dumps(ev) for ev in view)
            out.append(view.inherited_cut)
            return tuple(out)
    except DshlogError as exc:
        return ("error", type(exc).__name__, exc.message, exc.seq)


def _same(path: Path, strict: bool = True) -> tuple[Any, ...]:
    compact = _migrate(path, True, strict)
    expanded = _migrate(path, False, strict)
    assert compact == expanded
    return compact


FIXTURE_FILES = sorted(p for v in ("v0", "v1") for p in (FIXTURES / v).rglob("*") if p.is_file() and ".jsonl" in p.name)

#: runs=True against runs=False: the exact mode would expand both
pytestmark = pytest.mark.fast_paths


def test_fixtures_and_corpus_hold_packed_rows() -> None:
    """The differential suite's migrations of the fixtures take compact runs only if the fixtures use packed rows."""
    assert any(b'-chunks"' in p.read_bytes() for p in FIXTURE_FILES)


@pytest.fixture(scope="module")
def gen():
    return load_bench_script("generate")


@pytest.mark.parametrize("seed,rare", [(1, 1.0), (2, 5.0), (11, 8.0)])
def test_generated_v0_log_migrates_the_same_with_compact_runs(tmp_path: Path, gen: Any, seed: int, rare: float) -> None:
    paths = gen.generate(tmp_path, "400K", 0, seed=seed, zstd=seed == 2, rare=rare)
    for key in ("plain", "zstd") if seed == 2 else ("plain",):
        result = _same(paths[key])
        assert result[0] != "error", result
        assert len(result) > 100


# ---------------------------------------------------------------------- hand-made edge cases

HEADER = {"type": "session", "version": 1, "id": "s", "createdAt": 1, "cwd": "/p", "delegationDepth": 0}


def _ev(seq: int, type_: str, data: dict, time: int | None = None, **extra: Any) -> dict:
    e = {"type": type_, "seq": seq, "time": 1000 + seq if time is None else time, "data": data}
    e.update(extra)
    return e


def _chunk(seq: int, chunk: dict, turn: int = 1, step: int = 1, time: int | None = None) -> dict:
    return _ev(seq, "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}, time)


def _packed(kind: str, seq0: int, n: int, turn: int = 1, step: int = 1, index: int = 0, time0: int | None = None,
            dt: list[int] | None = None, **tool: Any) -> dict:
    key = "args" if kind == "tool-call-chunks" else "texts"
    data: dict[str, Any] = {"turn": turn, "step": step, "index": index}
    data.update(tool)
    data["dt"] = [1] * (n - 1) if dt is None else dt
    data[key] = [f"m{seq0 + k}" for k in range(n)]
    return {"type": kind, "seq0": seq0, "time0": 1000 + seq0 if time0 is None else time0, "data": data}


def _turn(seq: int) -> list[dict]:
    return [_ev(seq, "turn/start", {"turn": 1}), _ev(seq + 1, "step/start", {"turn": 1, "step": 1})]


def _message(seq: int, sources: list[int], turn: int = 1, step: int = 1) -> dict:
    msg = {"id": f"m{seq}", "role": "assistant", "content": [{"type": "text", "text": "x"}],
           "source": {"kind": "model", "provider": "p", "model": "m"}}  # a model source dsh's payload rules accept
    return _ev(seq, "assistant/message", {"turn": turn, "step": step, "message": msg}, surfaceOp="append",
               sourceEventSeqs=sources)


def _write(tmp_path: Path, rows: list[dict], header: dict | None = None) -> Path:
    p = tmp_path / "session.v1.jsonl"
    p.write_bytes(jsonl(header or HEADER, *rows))
    return p


CASES: dict[str, tuple[dict, list[dict]]] = {
    # a plain delta, then a packed run of the same kind and block: one merged record
    "merge-after-plain": (HEADER, [*_turn(0), _chunk(2, {"type": "text-delta", "index": 0, "text": "a"}),
                                   _packed("text-chunks", 3, 4), _message(7, [2, 3, 4, 5, 6]),
                                   _ev(8, "step/end", {"turn": 1, "step": 1})]),
    # two adjacent runs, then a different block, reasoning and a tool call with and without name
    "runs-of-every-kind": (HEADER, [*_turn(0), _packed("reasoning-chunks", 2, 3), _packed("reasoning-chunks", 5, 3),
                                    _packed("text-chunks", 8, 3, index=1),
                                    _packed("tool-call-chunks", 11, 3, index=2, id="c1", name="bash"),
                                    _packed("tool-call-chunks", 14, 3, index=2, id="c1", name="bash"),
                                    _packed("tool-call-chunks", 17, 3, index=2, id="c1"),
                                    _chunk(20, {"type": "finish", "reason": {"kind": "stop"}}),
                                    _ev(21, "step/end", {"turn": 1, "step": 1})]),
    # an unrepresentable gap before a run: a new record, not a merge
    "unsafe-gap": (HEADER, [*_turn(0), _chunk(2, {"type": "text-delta", "index": 0, "text": "a"}, time=MAX_SAFE),
                            _packed("text-chunks", 3, 3, time0=-MAX_SAFE),
                            _ev(6, "step/end", {"turn": 1, "step": 1})]),
    # tool runs that canonical packing keeps as raw chunk records
    "tool-empty-id-and-name": (HEADER, [*_turn(0), _packed("tool-call-chunks", 2, 3, id=""),
                                        _packed("tool-call-chunks", 5, 3, id="c", name=""),
                                        _ev(8, "step/end", {"turn": 1, "step": 1})]),
    # a run for another step settles the pending attempt; events between runs are placed as for chunks
    "attempt-grouping": (HEADER, [*_turn(0), _packed("text-chunks", 2, 3), _ev(5, "plan/mode", {"active": True}),
                                  _packed("text-chunks", 6, 3), _packed("text-chunks", 9, 3, step=2),
                                  _ev(12, "todo/write", {"todos": []}), _message(13, [9, 10, 11], step=2),
                                  _ev(14, "step/end", {"turn": 1, "step": 2})]),
    # a message citing only part of a run's attempt is refused
    "partial-provenance": (HEADER, [*_turn(0), _packed("text-chunks", 2, 4), _message(6, [2, 3, 4])]),
    # a reference into a run is a reference to a consumed chunk
    "reference-into-run": (HEADER, [*_turn(0), _packed("text-chunks", 2, 4), _ev(6, "step/end", {"turn": 1, "step": 1}),
                                    _ev(7, "session/title", {"title": "t", "messageSeqs": [4], "source": {"kind": "user"}})]),
    # the inherited cut inside a run splits the attempt; at a run's first seq it does not
    "cut-inside-run": (dict(HEADER, seedLength=4), [*_turn(0), _packed("text-chunks", 2, 4),
                                                     _ev(6, "step/end", {"turn": 1, "step": 1})]),
    "cut-at-run-start": (dict(HEADER, seedLength=2), [*_turn(0), _packed("text-chunks", 2, 4),
                                                       _ev(6, "step/end", {"turn": 1, "step": 1})]),
    "cut-after-run": (dict(HEADER, seedLength=6), [*_turn(0), _packed("text-chunks", 2, 4),
                                                    _ev(6, "step/end", {"turn": 1, "step": 1})]),
    # a malformed packed row: the reader refuses it (strict) or skips it with a note (lenient)
    "bad-dt": (HEADER, [*_turn(0), _packed("text-chunks", 2, 3, dt=[1]), _ev(5, "step/end", {"turn": 1, "step": 1})]),
    "seq-gap-at-run": (HEADER, [*_turn(0), _packed("text-chunks", 3, 3), _ev(6, "step/end", {"turn": 1, "step": 1})]),
}


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_case_migrates_the_same_with_compact_runs(tmp_path: Path, name: str, strict: bool) -> None:
    header, rows = CASES[name]
    _same(_write(tmp_path, rows, header), strict)


def test_edge_cases_exercise_merges_and_refusals(tmp_path: Path) -> None:
    """Spot checks that the cases above mean what their names say."""
    merged = _migrate(_write(tmp_path, CASES["merge-after-plain"][1]), True)
    assert b'"texts":["a","m3","m4","m5","m6"]' in b"".join(x for x in merged if isinstance(x, bytes))
    runs = _migrate(_write(tmp_path, CASES["runs-of-every-kind"][1]), True)
    joined = b"".join(x for x in runs if isinstance(x, bytes))
    assert b'"texts":["m2","m3","m4","m5","m6","m7"]' in joined
    assert b'"name":"bash","args":["m11","m12","m13","m14","m15","m16"]' in joined
    assert b'"id":"c1","args":["m17","m18","m19"]' in joined
    for case, text in (("partial-provenance", "are not one complete ordered attempt"),
                       ("reference-into-run", "targets consumed assistant/chunk 4"),
                       ("cut-inside-run", "splits one Assistant attempt")):
        header, rows = CASES[case]
        result = _migrate(_write(tmp_path, rows, header), True)
        assert result[0] == "error" and text in result[2], (case, result)
    for case in ("cut-at-run-start", "cut-after-run"):
        header, rows = CASES[case]
        result = _migrate(_write(tmp_path, rows, header), True)
        assert result[0] != "error", (case, result)


# ---------------------------------------------------------------------- the compact reader itself

GOOD_ROWS = [
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [3, -2], "texts": ["a", "b", "c"]}},
    {"type": "reasoning-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 2, "index": 1, "dt": [], "texts": ["a"]}},
    {"type": "tool-call-chunks", "seq0": 0, "time0": 5, "data": {"turn": 2, "step": 1, "index": 0, "id": "c", "name": "bash", "dt": [1], "args": ["{", "}"]}},
    {"type": "tool-call-chunks", "seq0": 0, "time0": 5, "data": {"turn": 2, "step": 1, "index": 0, "id": "c", "dt": [1], "args": ["{", "}"]}},
]
BAD_ROWS = [
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b", "c"]}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [1.0], "texts": ["a", "b"]}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [True], "texts": ["a", "b"]}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [MAX_SAFE + 1], "texts": ["a", "b"]}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": []}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [0], "texts": ["a", 1]}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": {"turn": -1, "step": 1, "index": 0, "dt": [], "texts": ["a"]}},
    {"type": "text-chunks", "seq0": 0, "time0": 5, "data": []},
    {"type": "text-chunks", "seq0": 0, "time0": 1.5, "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"]}},
    {"type": "tool-call-chunks", "seq0": 0, "time0": 5, "data": {"turn": 1, "step": 1, "index": 0, "id": "c", "dt": [], "texts": ["a"]}},
]


def _decode(row: dict, compact: bool, strict: bool, projection: bool = False) -> tuple[Any, ...]:
    from dshlog.errors import Location
    from dshlog.protocol.packed import PackedRun
    from dshlog.read.rows import RowDecoder

    if projection:
        row = {"type": row["type"], "data": row["data"]}
    dec = RowDecoder(1, "x", strict=strict, compact=compact)
    try:
        out = dec.decode(row, Location(line=2))
    except DshlogError as exc:
        return ("error", exc.message)
    events = [e for r in out for e in (r.expand() if isinstance(r, PackedRun) else [r])]
    return events, dec.next_seq, [(n.code, n.message) for n in dec.notes]


@pytest.mark.parametrize("projection", [False, True], ids=["on-disk", "projection"])
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("row", GOOD_ROWS + BAD_ROWS, ids=[f"good{i}" for i in range(len(GOOD_ROWS))] + [f"bad{i}" for i in range(len(BAD_ROWS))])
def test_compact_reader_checks_packed_rows_like_the_expanding_one(row: dict, strict: bool, projection: bool) -> None:
    expanded = _decode(row, False, strict, projection)
    assert _decode(row, True, strict, projection) == expanded
    if row in GOOD_ROWS:
        assert expanded[1] == len(expanded[0]) > 0  # a run counts as N events for seq density
