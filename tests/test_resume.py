"""A log that only grew is read from where the cache's last read of it stood (``dshlog.read.resume``).

Every answer after a resumed read (stdout, stderr, exit code) is the answer of the same
command with ``--no-cache``: an event appended, many, a torn last line completed, a line
that makes dsh refuse the log.  A log changed in any other way (a byte rewritten at the
same size, a shrink, another file under the name) is read whole.  The kept state is a
plain form of known classes only, versioned, and one that does not decode is not used.
"""

from __future__ import annotations

import enum
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import CORPUS, FIXTURES, corpus_files, requires_corpus, run_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dshlog.check.surface import SurfaceShare
from dshlog.ops import surface as surface_ops
from dshlog.read import cache as cache_module
from dshlog.read import resume
from dshlog.read.cache import CACHE_FILE, close_caches
from dshlog.read.resume import KNOWN, STATE_VERSION, StateCodec, StateError
from dshlog.read.session import SessionLog, open_log

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"

#: The commands that go on from a kept state, as a test runs them (the path is appended).
COMMANDS = [
    ("surface",),
    ("surface", "--json"),
    ("surface", "--json", "--messages"),
    ("validate",),
    ("validate", "--json"),
]


#: each test opens its cache files anew, as a new process would
pytestmark = pytest.mark.usefixtures("fresh_cache_connections")


@pytest.fixture
def resumed(monkeypatch) -> list[tuple[int, int]]:
    """Lists each read that went on from a kept state: (line, offset) where it did."""
    seen: list[tuple[int, int]] = []
    real = SessionLog.resume_at

    def spy(self: SessionLog, line: int, offset: int, *args: Any) -> bool:
        ok = real(self, line, offset, *args)
        if ok:
            seen.append((line, offset))
        return ok

    monkeypatch.setattr(SessionLog, "resume_at", spy)
    return seen


def _run(cmd: tuple[str, ...], path: Path, cache: Path | None) -> tuple[int, bytes, bytes]:
    close_caches()
    return run_env(*cmd, str(path), cache_dir=cache)


def _grown(tmp_path: Path, before: bytes, after: bytes, cmd: tuple[str, ...]) -> tuple[Any, Any]:
    """The answer of ``cmd`` on a log cached as ``before`` and then appended to, and its answer without the cache."""
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(before)
    cache = tmp_path / "cache"
    _run(cmd, p, cache)
    with open(p, "ab") as fh:
        fh.write(after)
    return _run(cmd, p, cache), _run(cmd, p, None)


def _lines(path: Path = LOOP) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.fast_paths  # the resumed read goes on where the fused line reader stopped
@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("cut", [-1, -5, 2, 20])
def test_appended_events_are_read_alone(cmd, cut, tmp_path, resumed):
    lines = _lines()
    got, cold = _grown(tmp_path, b"".join(lines[:cut]), b"".join(lines[cut:]), cmd)
    assert got == cold and cold[0] == 0
    line = (cut if cut > 0 else len(lines) + cut) + 1
    assert [where[0] for where in resumed] == [line]  # the new lines were read, not the old ones


@pytest.mark.fast_paths  # the resumed read goes on where the fused line reader stopped
@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_a_torn_line_completed_is_read_again(cmd, tmp_path, resumed):
    lines = _lines()
    whole = b"".join(lines[:-2])
    torn = lines[-2][: len(lines[-2]) // 2]
    got, cold = _grown(tmp_path, whole + torn, lines[-2][len(torn):] + lines[-1], cmd)
    assert got == cold and cold[0] == 0
    assert resumed == [(len(lines) - 1, len(whole))]  # at the start of the torn bytes


@pytest.mark.fast_paths  # the resumed read goes on where the fused line reader stopped
@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_a_torn_line_still_torn(cmd, tmp_path, resumed):
    lines = _lines()
    got, cold = _grown(tmp_path, b"".join(lines[:-3]) + lines[-3][:10], lines[-3][10:20], cmd)
    assert got == cold and (b"torn" in cold[1] + cold[2] or cmd[:2] == ("surface", "--json"))  # its JSON has no notes
    assert len(resumed) == 1


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("bad", [
    b'{"type":"made/up","seq":41,"time":1,"data":{}}\n',  # an unknown type: dsh's restore refuses it
    b'{"type":"turn/start","seq":41,"time":1,"data":{"turn":9}}\n',  # a turn out of order
    b'{"type":"turn/end","seq":44,"time":1,"data":{"turn":5}}\n',  # a seq gap committed by a turn/end
    b'{"type":"user/message","seq":41\n{"type":"turn/end","seq":42,"time":1,"data":{"turn":5}}\n',  # an unparsable row, committed
    b'not json\n',  # an unparsable last row: dsh's read ends before it
])
@pytest.mark.fast_paths  # the resumed read goes on where the fused line reader stopped
def test_a_line_that_makes_dsh_refuse(cmd, bad, tmp_path, resumed):
    got, cold = _grown(tmp_path, LOOP.read_bytes(), bad, cmd)
    assert got == cold
    assert len(resumed) == 1


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("change", ["rewrite", "rewrite-head", "rewrite-middle", "shrink", "replace"])
def test_a_log_changed_otherwise_is_read_whole(cmd, change, tmp_path, resumed, monkeypatch):
    # a stamp's digest covers only the first and last bytes: make them few, so that the byte the
    # rewrite-middle case changes lies outside them and only the check of the whole old extent sees it
    monkeypatch.setattr(cache_module, "HEAD_BYTES", 64)
    monkeypatch.setattr(cache_module, "TAIL_BYTES", 64)
    lines = _lines()
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(lines[:-4]))
    cache = tmp_path / "cache"
    _run(cmd, p, cache)
    data = bytearray(p.read_bytes())
    if change == "rewrite":  # a byte in the middle, the same size
        i = data.index(b'"echo: one"')
        data[i + 1 : i + 5] = b"ECHO"
        with open(p, "r+b") as fh:
            fh.write(data)
    elif change == "rewrite-head":  # a byte of the header, and lines appended
        i = data.index(b"/home/ann/demo")
        with open(p, "r+b") as fh:
            fh.seek(i + 6)
            fh.write(b"A")
            fh.seek(0, os.SEEK_END)
            fh.write(b"".join(lines[-4:]))
    elif change == "rewrite-middle":  # a byte far from both ends, and lines appended
        i = data.index(b'"echo: one"')
        assert 64 < i < len(data) - 64
        with open(p, "r+b") as fh:
            fh.seek(i + 1)
            fh.write(b"E")
            fh.seek(0, os.SEEK_END)
            fh.write(b"".join(lines[-4:]))
    elif change == "shrink":
        with open(p, "r+b") as fh:
            fh.truncate(len(b"".join(lines[:-6])))
    else:  # a longer log under the same name
        q = tmp_path / "other"
        q.write_bytes(b"".join(lines))
        os.replace(q, p)
    got, cold = _run(cmd, p, cache), _run(cmd, p, None)
    assert got == cold
    assert resumed == []


def test_a_state_of_another_layout_is_not_taken_back(tmp_path, resumed, monkeypatch):
    lines = _lines()
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(lines[:-2]))
    cache = tmp_path / "cache"
    _run(("surface",), p, cache)
    monkeypatch.setattr(resume, "STATE_VERSION", STATE_VERSION + 1)
    with open(p, "ab") as fh:
        fh.write(b"".join(lines[-2:]))
    assert _run(("surface",), p, cache) == _run(("surface",), p, None)
    assert resumed == []


def _states(cache: Path) -> list[int]:
    db = sqlite3.connect(cache / CACHE_FILE)
    try:
        return [n for kind, n in db.execute("SELECT kind, length(value) FROM entries") if kind.split("/")[0].endswith("-state")]
    finally:
        db.close()


@pytest.mark.fast_paths  # the resumed read goes on where the fused line reader stopped
def test_a_state_larger_than_the_cache_keeps_is_not_kept(tmp_path, monkeypatch):
    p = tmp_path / "session.v4.jsonl"
    shutil.copyfile(LOOP, p)
    cache = tmp_path / "cache"
    _run(("surface",), p, cache)
    assert len(_states(cache)) == 1
    shutil.rmtree(cache)
    monkeypatch.setattr(surface_ops, "MAX_VALUE_BYTES", 512)
    assert _run(("surface",), p, cache) == _run(("surface",), p, None)
    assert _states(cache) == []


def test_an_unwritable_cache_is_not_used(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    lines = _lines()
    p.write_bytes(b"".join(lines[:-2]))
    cache = tmp_path / "cache"
    cache.write_bytes(b"")  # a file where the directory should be
    assert _run(("surface",), p, cache) == _run(("surface",), p, None)
    with open(p, "ab") as fh:
        fh.write(b"".join(lines[-2:]))
    assert _run(("surface",), p, cache) == _run(("surface",), p, None)


# ----------------------------------------------------------------------------- the kept state's plain form


def _state_of(path: Path) -> list[Any]:
    """The parts a read of the whole log keeps (notes, decoder, restore), live."""
    log = open_log(str(path))
    view = log.v4(share=SurfaceShare(note=surface_ops.node_note, replacements=True))
    kept: list[Any] = []
    log.at_end = lambda: kept.extend([log.notes, log.decoder, view.open_rules])
    view.finish()
    log.close()
    return kept


@pytest.mark.fast_paths  # the resumed read goes on where the fused line reader stopped
def test_a_state_round_trips_exactly():
    codec = StateCodec({"node_note": surface_ops.node_note})
    state = _state_of(LOOP)
    form = codec.encode(state)
    back = codec.decode(msgspec.msgpack.decode(msgspec.msgpack.encode(form)))
    assert codec.encode(back) == form
    notes, decoder, rules = back
    assert decoder.notes is notes and rules.lifecycle.fold is rules._fold  # shared objects stay shared
    assert rules._fold.note is surface_ops.node_note


@pytest.mark.parametrize("value", [ValueError("x"), object(), print, type, {"a": lambda: 1}, "lone \udc80"])
def test_anything_but_known_classes_and_plain_values_is_not_kept(value):
    with pytest.raises((StateError, UnicodeEncodeError)):
        msgspec.msgpack.encode(StateCodec().encode([value]))


@pytest.mark.parametrize("form", [
    ["o", 0, "os", None],  # not a kept class
    ["o", 0, "Validator", None, "__class__", ["t"]],  # no dunder is set
    ["o", 0, "Problems", None, "counts", ["d", 1], "items", ["l", 2], "keep", 20, "nope", 1],  # a field it has not
    ["o", 0, "Problems", None, "counts", ["d", 1], "items", ["l", 2]],  # a field missing
    ["o", 0, "Location", None, "line", 1, "line", 1, "offset", 0, "frame", None],  # a field twice
    ["x", "system"],  # an external nobody named
    ["l", 5],  # objects numbered out of order
    ["r", 0],  # a reference to nothing
    ["z", 0],  # an unknown tag
    ["d", 0, "a"],  # a map's items not in pairs
])
def test_a_form_it_did_not_write_does_not_decode(form):
    with pytest.raises(StateError):
        StateCodec().decode(form)


#: The fields of each kept class, per state version: a change of any must bump ``STATE_VERSION`` (and add its table).
LAYOUT = {
    1: {
        "Validator": ("_data", "_finished", "_fold", "_report", "count", "header", "inherited_cut", "known", "lifecycle",
                      "ownership", "projection", "typed"),
        "_Collector": ("flagged", "pending", "projection", "seen"),
        "_Gather": (),
        "Ownership": ("_catalog_after_marker", "_catalog_ids", "_foreign_deliveries", "has_header", "has_parent",
                      "header_id", "inherited_cut", "last_marker", "seeded"),
        "Lifecycle": ("_command_seqs", "_commands", "calls", "compactions", "dispatches", "fold", "head", "next_step",
                      "next_turn", "provider", "retries", "step", "titles", "turn"),
        "_Call": ("arguments", "name", "started"),
        "Compactions": ("open",),
        "OpenCompaction": ("command", "crossings", "id", "seq", "summarized", "turn"),
        "Retries": ("_chains", "_ids", "_scheduled", "_started"),
        "Titles": ("_human",),
        "Dispatches": ("_starts",),
        "SurfaceFold": ("_derived", "_derived_digests", "_derives", "_digests", "_header_tools", "_keys", "_notes",
                        "_payloads", "_projected_digests", "_replacements", "_types", "_whole", "check_data",
                        "check_messages", "content_generation", "digests", "keep_messages", "keep_replacements",
                        "next_seq", "nodes", "note", "projected", "replace_generation", "replacement_count",
                        "shadowed_count", "strict_unknown", "surface_event_count", "unknown_types"),
        "HeaderTools": ("_seqs", "_shared", "_tools"),
        "Digests": ("_buf",),
        "Problem": ("code", "loc", "message", "path", "seq", "severity", "value"),
        "Problems": ("counts", "items", "keep"),
        "Location": ("frame", "index", "line", "offset"),
        "RowDecoder": ("compact", "dropped", "inherited_marker", "issue", "issue_loc", "next_seq", "notes", "path",
                       "projection", "recoverable", "rows", "seq_offset", "strict", "version"),
    },
}

# 2: the fold keeps the digests it derived from its messages where the lean form is not used (the exact paths)
LAYOUT[2] = {
    **LAYOUT[1],
    "SurfaceFold": ("_derived", "_derived_digests", "_derives", "_digested", "_digests", "_digests_asked", "_header_tools",
                    "_keys", "_notes", "_payloads", "_projected_digests", "_replacements", "_types", "_whole", "check_data",
                    "check_messages", "content_generation", "digests", "keep_messages", "keep_replacements", "next_seq",
                    "nodes", "note", "projected", "replace_generation", "replacement_count", "shadowed_count",
                    "strict_unknown", "surface_event_count", "unknown_types"),
}

# 3: the restore's rules count the events their fold skipped, and hold the hook of a consumer that shares the fold
LAYOUT[3] = {
    **LAYOUT[2],
    "Validator": ("_data", "_finished", "_fold", "_report", "_settling", "count", "header", "inherited_cut", "known",
                  "lifecycle", "ownership", "projection", "skipped", "typed"),
}


def test_the_kept_layout_is_the_versioned_one():
    """A kept class that gains or loses a field changes what a state holds: ``STATE_VERSION`` must be bumped."""
    now = {name: tuple(sorted(resume._layout(cls))) for name, cls in KNOWN.items() if not issubclass(cls, enum.Enum)}
    assert now == LAYOUT[STATE_VERSION], "a kept class changed: bump read/resume.py STATE_VERSION and add its layout here"
    # the live state of a read holds exactly these fields (else it could not be kept at all)
    assert all(resume._layout(KNOWN[name]) == set(fields) for name, fields in resume.known_fields(_state_of(LOOP)).items())
    assert StateCodec({"node_note": surface_ops.node_note}).encode(_state_of(LOOP))


# ----------------------------------------------------------------------------- logs cut anywhere


def _candidates() -> list[Path]:
    """Fixture and corpus logs of plain JSONL (the container a state is kept for; others are read whole)."""
    files = [p for p in FIXTURES.glob("v*/*/session*.jsonl") if p.is_file()]
    files += [p for p in corpus_files() if p.suffix == ".jsonl"]
    return sorted(files)


@requires_corpus
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_log_cut_anywhere_and_appended_reads_as_a_cold_read(data):
    source = data.draw(st.sampled_from(_candidates()), label="log")
    lines = source.read_bytes().splitlines(keepends=True)
    cut = data.draw(st.integers(0, len(lines)), label="cut")
    cmd = data.draw(st.sampled_from(COMMANDS), label="command")
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / source.name  # the generation's name takes part in dsh's decisions
        p.write_bytes(b"".join(lines[:cut]))
        cache = Path(tmp) / "cache"
        _run(cmd, p, cache)
        with open(p, "ab") as fh:
            fh.write(b"".join(lines[cut:]))
        assert _run(cmd, p, cache) == _run(cmd, p, None)


def test_the_corpus_is_where_the_tests_look():
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (set DSHLOG_SHARED)")
    assert any(p.suffix == ".jsonl" for p in corpus_files())
