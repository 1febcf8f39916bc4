"""Positioned reads: the browser's index of a log, events parsed on demand, search over bytes."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, ev, jsonl, v4_header

from dshlog.read.pages import DAMAGED, open_index
from dshlog.read.session import open_log

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
V0_TEXT_TURN = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def _events(path) -> list[dict]:
    with open_log(str(path)) as log:
        return list(log.v4())


def test_index_matches_the_log() -> None:
    events = _events(LOOP_V4)
    with open_index(str(LOOP_V4)) as ix:
        assert not ix.converted and ix.header is not None and ix.header["id"] == "loop-0001"
        assert len(ix) == len(events)
        assert [ix.event(i) for i in range(len(ix))] == events
        assert list(ix.seqs) == [e["seq"] for e in events]
        assert [ix.type_of(i) for i in range(len(ix))] == [e["type"] for e in events]
        starts = [i for i, e in enumerate(events) if e["type"] == "turn/start"]
        assert [i for i, _ in ix.turns] == starts and [n for _, n in ix.turns] == [1, 2, 3, 4]
        # every event knows its turn ordinal; the range of a turn is its events
        for k in range(1, 5):
            a, b = ix.turn_range(k)
            assert events[a]["type"] == "turn/start" and all(ix.turn_of[i] == k for i in range(a, b))
        assert ix.turn_range(0) == (0, starts[0])
        assert ix.index_of_seq(events[7]["seq"]) == 7 and ix.index_of_seq(10**9) is None
        assert ix.raw(3) == LOOP_V4.read_bytes().split(b"\n")[4]


def test_search_forward_backward_and_around() -> None:
    with open_index(str(LOOP_V4)) as ix:
        hits = [i for i in range(len(ix)) if b"echo" in ix.raw(i).lower()]
        assert len(hits) >= 2
        assert ix.find("echo", -1) == hits[0]
        assert ix.find("echo", hits[0]) == hits[1]
        assert ix.find("echo", hits[-1]) == hits[0]  # wraps to the top
        assert ix.find("echo", hits[1], backward=True) == hits[0]
        assert ix.find("echo", hits[0], backward=True) == hits[-1]  # wraps to the bottom
        assert ix.find("ECHO", -1) is None  # a capital letter asks for exactly that
        assert ix.find("RATE_LIMIT", -1) is not None and ix.find("no such text anywhere", 0) is None
        assert ix.find("loop-0001", -1) is None  # the header is not an event


def test_other_formats_are_converted_once_and_removed(tmp_path) -> None:
    events = _events(V0_TEXT_TURN)
    ix = open_index(str(V0_TEXT_TURN), tmpdir=str(tmp_path))
    assert ix.converted and ix.stored_version == 0 and ix.path.parent == tmp_path
    assert [ix.event(i) for i in range(len(ix))] == events
    ix.close()
    assert list(tmp_path.iterdir()) == []


def test_a_line_in_another_key_order_and_a_damaged_line(tmp_path) -> None:
    f = tmp_path / "session.v4.jsonl"
    odd = json.dumps({"seq": 1, "type": "turn/start", "time": 5, "data": {"turn": 1}}).encode()
    f.write_bytes(jsonl(v4_header(), ev(0, "session/title", {"title": "t"})) + odd + b"\n{oops\n" + jsonl(ev(3, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})))
    with open_index(str(f)) as ix:
        assert len(ix) == 4
        assert [ix.type_of(i) for i in range(4)] == ["session/title", "turn/start", DAMAGED, "turn/end"]
        assert ix.turns == [(1, 1)] and list(ix.seqs)[:2] == [0, 1]
        assert ix.event(2)["type"] == DAMAGED and "oops" in ix.event(2)["raw"]


def test_empty_file_is_refused(tmp_path) -> None:
    from dshlog.errors import CorruptLog

    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(b"")
    with pytest.raises(CorruptLog):
        open_index(str(f))


@pytest.mark.parametrize("window", [4096, 8192, 1 << 20])
def test_search_in_windows_finds_what_one_pass_finds(monkeypatch, window: int) -> None:
    """Search gives the scanned pages back window by window; a match across a window's edge still counts."""
    import dshlog.read.pages as pages

    monkeypatch.setattr(pages, "_WINDOW", window)
    with open_index(str(LOOP_V4)) as ix:
        data = LOOP_V4.read_bytes()
        body = ix.offsets[0]
        for needle in ("echo", "RATE_LIMIT", "turn/end", "go", "assistant/message", "é"):
            keys = {needle} if needle != needle.lower() else {needle, needle.capitalize(), needle.upper()}
            starts = sorted({i for k in keys for i in range(len(data)) if data.startswith(k.encode(), i) and i >= body})
            lines = [ix.at_offset(i) for i in starts]
            for start in range(-1, len(ix)):
                after = [n for n, i in zip(lines, starts) if i >= (ix.ends[start] if start >= 0 else body)]
                expected = after[0] if after else (lines[0] if lines else None)
                assert ix.find(needle, start) == expected, (needle, start)
                before = [n for n, i in zip(lines, starts) if start >= 0 and i < ix.offsets[start]]
                expected = before[-1] if before else (lines[-1] if lines else None)
                if start >= 0:
                    assert ix.find(needle, start, backward=True) == expected, (needle, start)


def test_the_index_does_not_keep_the_file_resident(tmp_path) -> None:
    """Scanning and searching a log leaves its pages to the page cache, not in the process (peak: one window)."""
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "session.v4.jsonl"
    line = {"content": [{"type": "text", "text": "x" * 4000}], "source": {"kind": "user"}, "role": "user", "id": "m"}
    with path.open("wb") as fh:
        fh.write(jsonl(v4_header()))
        for seq in range(24_000):  # about 100 MB
            fh.write(json.dumps(ev(seq, "user/message", line, surfaceOp="append"), separators=(",", ":")).encode() + b"\n")
    probe = textwrap.dedent(f"""
        from dshlog.read.pages import open_index
        def status(key):
            return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1]) // 1024
        before = status("VmRSS:")
        ix = open_index({str(path)!r})
        assert len(ix) == 24_000 and ix.find("no such text", 0) is None
        print(status("VmRSS:") - before, status("VmHWM:") - before)
    """)
    grown, peak = map(int, subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split())
    assert grown < 16, f"{grown} MB still resident after the scan and a search of a 100 MB log"
    assert peak < 60, f"{peak} MB peak while scanning a 100 MB log"
