"""Headers and row shapes of every version, projections, and bad input."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, ev, jsonl, v4_header
from dshlog.errors import CorruptLog, UnsupportedVersion
from dshlog.protocol.packed import expand_packed, expand_seq_refs
from dshlog.read.session import open_log


def write(tmp_path, data: bytes, name: str = "session.v4.jsonl"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def events(path, **kw):
    with open_log(path, **kw) as s:
        return list(r.event for r in s.stored()), s


V0_HEADER = {"type": "session", "version": 0, "id": "s", "createdAt": 1, "cwd": "/p", "delegationDepth": 0}


def test_v0_packed_rows_expand_with_seq_and_time():
    evs, s = events(FIXTURES / "v0" / "text-turn" / "session.jsonl")
    assert s.version == 0 and len(evs) == 43
    assert [e["seq"] for e in evs] == list(range(43))
    chunks = [e for e in evs if e["type"] == "assistant/chunk" and e["data"]["chunk"]["type"] == "reasoning-delta"]
    assert len(chunks) == 20
    assert chunks[0]["data"]["chunk"] == {"type": "reasoning-delta", "index": 0, "text": "The"}
    times = [c["time"] for c in chunks]
    assert times == list(range(times[0], times[0] + 20))  # dt of 1 each


def test_tool_call_chunks_carry_id_and_name_on_every_member():
    row = {"type": "tool-call-chunks", "seq0": 5, "time0": 100, "data": {"turn": 1, "step": 2, "index": 1, "id": "c1", "name": "bash", "dt": [3, -1], "args": ["{", "\"a\"", "}"]}}
    out = expand_packed(row, 5, 100)
    assert [e["seq"] for e in out] == [5, 6, 7] and [e["time"] for e in out] == [100, 103, 102]
    assert out[1]["data"] == {"turn": 1, "step": 2, "chunk": {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "bash", "argumentsDelta": "\"a\""}}


def test_packed_row_with_wrong_dt_length_is_corrupt(tmp_path):
    row = {"type": "text-chunks", "seq0": 0, "time0": 1, "data": {"turn": 1, "step": 1, "index": 0, "dt": [0], "texts": ["a", "b", "c"]}}
    p = write(tmp_path, jsonl(V0_HEADER, row), "session.jsonl")
    with pytest.raises(CorruptLog, match="dt must hold 2"):
        events(p)


def test_range_encoded_source_event_seqs():
    assert expand_seq_refs([[12, 15]], 20) == [12, 13, 14, 15]
    assert expand_seq_refs([3, [5, 7], 9], 10) == [3, 5, 6, 7, 9]
    with pytest.raises(ValueError):
        expand_seq_refs([[5, 3]], 10)
    with pytest.raises(ValueError):
        expand_seq_refs([9, [2, 4]], 10)  # ranges demand a strictly increasing list


def test_v1_ranges_are_expanded_but_raw_line_kept(tmp_path):
    h = dict(V0_HEADER, version=1)
    rows = [ev(i, "plan/mode", {"active": True}) for i in range(4)]
    rows.append(ev(4, "user/message", {"content": [], "source": {"kind": "user"}, "role": "user", "id": "m"}, surfaceOp="append", sourceEventSeqs=[[0, 3]]))
    p = write(tmp_path, jsonl(h, *rows), "session.v1.jsonl")
    with open_log(p) as s:
        recs = list(s.stored())
    assert recs[4].event["sourceEventSeqs"] == [0, 1, 2, 3]
    assert b"[[0,3]]" in recs[4].raw


@pytest.mark.parametrize(
    "header,version",
    [
        (V0_HEADER, 0),
        (dict(V0_HEADER, version=1, seedLength=0), 1),
        ({"type": "session", "version": 2, "id": "s", "createdAt": 1, "isSeeded": False, "delegationDepth": 0}, 2),
        ({"type": "session", "version": 3, "id": "s", "createdAt": 1, "isSeeded": False, "delegationDepth": 0, "agentPreset": "ptc"}, 3),
        (v4_header(), 4),
    ],
)
def test_header_per_version(tmp_path, header, version):
    name = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    p = write(tmp_path, jsonl(header, ev(0, "plan/mode", {"active": True})), name)
    evs, s = events(p)
    assert s.version == version and s.header == header and len(evs) == 1


def test_projection_rows_get_seq_by_position(tmp_path):
    rows = [{"type": "plan/mode", "data": {"active": True}}, {"type": "turn/start", "data": {"turn": 1}}]
    p = write(tmp_path, jsonl(v4_header(), *rows))
    evs, s = events(p)
    assert s.projection
    assert evs == [{"type": "plan/mode", "seq": 0, "time": 0, "data": {"active": True}}, {"type": "turn/start", "seq": 1, "time": 0, "data": {"turn": 1}}]
    assert list(evs[0]) == ["type", "seq", "time", "data"]
    assert s.notes.counts.get("projection") == 1


def test_envelope_keys_in_any_order(tmp_path):
    p = write(tmp_path, jsonl(v4_header(), {"type": "turn/start", "data": {"turn": 1}, "seq": 0, "time": 5}))
    evs, _ = events(p)
    assert evs[0]["seq"] == 0 and evs[0]["time"] == 5


def test_mixed_projection_and_envelope_is_corrupt(tmp_path):
    p = write(tmp_path, jsonl(v4_header(), {"type": "plan/mode", "data": {}}, ev(1, "plan/mode", {})))
    with pytest.raises(CorruptLog, match="unlike the rows before"):
        events(p)


def test_empty_file(tmp_path):
    with pytest.raises(CorruptLog, match="empty or header-less"):
        events(write(tmp_path, b""))


def test_no_header_line(tmp_path):
    with pytest.raises(CorruptLog, match="empty or header-less"):
        events(write(tmp_path, b'{"type":"session","version":4'))


def test_unknown_future_version_is_unsupported_not_corrupt(tmp_path):
    p = write(tmp_path, jsonl(dict(v4_header(), version=9)), "session.v9.jsonl")
    with pytest.raises(UnsupportedVersion, match="uses log format v9, but this harness reads only v4"):
        events(p)
    # lenient readers still show the rows and say why
    evs, s = events(p, strict=False)
    assert "unsupported-version" in s.notes.counts


def test_non_json_line_in_the_middle(tmp_path):
    data = jsonl(v4_header(), ev(0, "plan/mode", {})) + b"{not json\n" + jsonl(ev(1, "plan/mode", {}))
    p = write(tmp_path, data)
    # dsh's sentence counts event rows (the header is not one); the location names the physical line
    with pytest.raises(CorruptLog, match="unparsable committed event at line 2$") as ei:
        events(p)
    assert ei.value.loc.line == 3
    evs, s = events(p, strict=False)
    assert len(evs) == 2 and s.notes.counts["unparsable"] == 1


def test_invalid_utf8(tmp_path):
    data = jsonl(v4_header()) + b'{"type":"plan/mode","seq":0,"time":1,"data":{"x":"\xff\xfe"}}\n'
    with pytest.raises(CorruptLog, match="line 2"):
        events(write(tmp_path, data))


def test_duplicate_seq(tmp_path):
    p = write(tmp_path, jsonl(v4_header(), ev(0, "plan/mode", {}), ev(0, "plan/mode", {})))
    with pytest.raises(CorruptLog, match=r"seq gap in committed region at line 3 \(expected 1, got 0\)"):
        events(p)


def test_missing_seq(tmp_path):
    p = write(tmp_path, jsonl(v4_header(), ev(0, "plan/mode", {}), ev(2, "plan/mode", {})))
    with pytest.raises(CorruptLog, match=r"expected 1, got 2"):
        events(p)


def test_unexpected_envelope_key(tmp_path):
    p = write(tmp_path, jsonl(v4_header(), dict(ev(0, "plan/mode", {}), extra=1)))
    with pytest.raises(CorruptLog, match="unexpected envelope key"):
        events(p)


def test_june_prerelease_version_1_is_read_as_v0(tmp_path):
    h = {"type": "session", "version": 1, "id": "s", "createdAt": 0, "cwd": "/p"}
    p = write(tmp_path, jsonl(h, {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {"kind": "message"}}}), "session.v1.jsonl")
    # dsh refuses the header (no delegationDepth) before it reads a row; a lenient reader still shows the log
    with pytest.raises(CorruptLog, match='released v1 physical header lacks required member "delegationDepth"'):
        events(p)
    _, s = events(p, strict=False)
    assert s.version == 0 and "prerelease" in s.notes.counts


def test_file_name_version_must_match_header(tmp_path):
    p = write(tmp_path, jsonl(v4_header()), "session.v3.jsonl")
    with pytest.raises(CorruptLog, match="filename identifies v3, but its header identifies v4"):
        events(p)
