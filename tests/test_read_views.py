"""The session views of read/session.py: stored(), stored_runs(), v4()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, jsonl, v4_header
from dshlog.protocol.packed import PackedRun
from dshlog.read.session import open_log

TEXT_TURN_V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


def test_the_v4_header_needs_no_body(tmp_path: Path) -> None:
    """A broken body does not stop the header of the v4 view."""
    p = tmp_path / "session.jsonl"
    p.write_bytes(TEXT_TURN_V0.read_bytes().splitlines(keepends=True)[0] + b"{not json\n")
    with open_log(p, strict=True) as log:
        header = log.v4().header
    assert header is not None and header["version"] == 4 and header["id"] == json.loads(p.read_bytes().splitlines()[0])["id"]


def test_a_v4_log_is_its_stored_events_with_their_bytes() -> None:
    with open_log(LOOP) as log:
        records = list(log.v4().records())
    lines = LOOP.read_bytes().splitlines()[1:]
    assert [raw for _ev, raw in records] == lines


@pytest.mark.fast_paths
def test_stored_runs_keep_packed_rows_whole_and_count_the_same() -> None:
    with open_log(TEXT_TURN_V0) as log:
        runs = list(log.stored_runs())
    with open_log(TEXT_TURN_V0) as log:
        expanded = list(log.stored())
    assert any(isinstance(r, PackedRun) for r in runs)
    assert sum(r.count if isinstance(r, PackedRun) else 1 for r in runs) == len(expanded)


def test_a_wrapped_stream_migrates_under_its_own_session_id(tmp_path: Path) -> None:
    """A header-less wrapped stream's synthetic header carries the stream's session id.

    The id decides the v2->v3 synthetic system-message id, so it must be known before the
    migration starts (it is learnt from the first wrapped line).
    """
    rows = [json.loads(x) for x in TEXT_TURN_V0.read_bytes().splitlines()[1:]]
    wrapped = [{"type": "session_event", "sessionId": "stream-7", "event": r} for r in rows]
    p = tmp_path / "stream.jsonl"
    p.write_bytes(jsonl(*wrapped))
    with open_log(p, strict=False) as log:
        view = log.v4()
        events = list(view)
        assert log.session_id == "stream-7"
    # the same body under a real header with that id migrates to the same events
    header = json.loads(TEXT_TURN_V0.read_bytes().splitlines()[0])
    header["id"] = "stream-7"
    q = tmp_path / "s" / "session.jsonl"
    q.parent.mkdir()
    q.write_bytes(jsonl(header, *rows))
    with open_log(q, strict=False) as log:
        assert list(log.v4(child_facts=[])) == events


def test_inherited_cut_is_known_after_iteration(tmp_path: Path) -> None:
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(jsonl(v4_header(), {"type": "session/end-seed", "seq": 0, "time": 1, "data": {}}))
    with open_log(p) as log:
        view = log.v4()
        assert list(view) and view.inherited_cut is None  # a v4 log has no migration cut
    with open_log(TEXT_TURN_V0) as log:
        view = log.v4(child_facts=[])
        list(view)
        assert view.inherited_cut == 0
