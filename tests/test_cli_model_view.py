"""`surface`, `rebuild` and `requests` through the command line, against the seed's expectations."""

from __future__ import annotations

import json

import orjson

from conftest import FIXTURES, GOLDEN, run_env
from dshlog.protocol.jsjson import dumps_pretty

LOOP = str(GOLDEN / "loop-events.json")
LOOP_V4 = str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")
LOOP_ZSTD = str(FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd")


def test_surface_json_matches_seed():
    code, out, err = run_env("surface", LOOP, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [n["seq"] for n in doc["nodes"]] == [4, 5, 8, 10, 13, 20, 22, 29, 30, 37, 38]
    assert doc["roles"] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert doc["replacements"] == []


def test_surface_at_prefix():
    code, out, _ = run_env("surface", LOOP, "--at", "15", "--json", "--messages")
    doc = json.loads(out)
    assert [n["seq"] for n in doc["nodes"]] == [4, 5, 8, 10, 13]
    assert len(doc["messages"]) == 5
    code, out, err = run_env("surface", LOOP, "--at", "99")
    assert code == 2 and b"seq 99 does not exist" in err


def test_surface_text():
    code, out, _ = run_env("surface", LOOP_ZSTD)
    assert code == 0
    assert b"nodes: [4, 5, 8, 10, 13, 20, 22, 29, 30, 37, 38]" in out
    assert "第一点是".encode() in out


def test_rebuild_is_dsh_json_and_counts_match():
    loop = json.loads((GOLDEN / "loop-events.json").read_text())
    counts = []
    for n in range(1, 7):
        code, out, err = run_env("rebuild", LOOP_V4, "--request", str(n))
        assert code == 0, err
        req = json.loads(out)
        counts.append(len(req["messages"]))
        assert list(req) == ["provider", "model", "messages", "toolHistory", "tools", "sessionId"]
        assert req["sessionId"] == "loop-0001"
        # dsh's 2-space JSON.stringify form, byte for byte
        assert out == dumps_pretty(req) + b"\n"
        # every message is the stored object of its node, byte for byte
        stored = {e["seq"]: e for e in loop}
        for m in req["messages"]:
            assert any(orjson.dumps(m) in (orjson.dumps(e["data"]), orjson.dumps(e["data"].get("message"))) for e in stored.values())
    assert counts == [2, 4, 6, 6, 8, 10]


def test_rebuild_messages_only_and_out_of_range():
    code, out, _ = run_env("rebuild", LOOP, "-r", "6", "--messages-only", "--compact")
    msgs = json.loads(out)
    assert len(msgs) == 10 and "第一点是" in json.dumps(msgs, ensure_ascii=False)
    assert out.count(b"\n") == 1
    code, out, err = run_env("rebuild", LOOP, "-r", "7")
    assert code == 2
    assert b"request 7 does not exist: the log holds 6 requests" in err
    assert b"Traceback" not in err


def test_requests_table_and_json():
    code, out, _ = run_env("requests", LOOP, "--json")
    assert code == 0
    doc = json.loads(out)
    rows = doc["requests"]
    assert [r["messages"] for r in rows] == [2, 4, 6, 6, 8, 10]
    assert [r["settlementSeq"] for r in rows] == [8, 13, 21, 22, 30, 38]
    assert [r["settlement"] for r in rows] == ["assistant/message"] * 2 + ["assistant/attempt"] + ["assistant/message"] * 3
    assert [r["extends"] for r in rows] == [None, True, True, True, True, True]
    assert rows[0]["inputTokens"] == 10 and rows[0]["outputTokens"] == 5
    code, out, _ = run_env("requests", LOOP)
    assert out.splitlines()[0].split(b"\t")[:5] == [b"#", b"seq", b"settled as", b"turn.step", b"msgs"]


def test_requests_reports_why_the_prefix_broke(tmp_path):
    """A compaction replace between requests breaks prefix reuse, and the table says so."""
    loop = json.loads((GOLDEN / "loop-events.json").read_text())
    log = loop[:16]  # turn 1 complete
    t = log[-1]["time"]
    # a checkpoint replace inside its compaction transaction (dsh's restore refuses one without it)
    summary = {"content": [{"type": "text", "text": "SUMMARY: user said go; echo returned one"}], "source": {"kind": "compact-checkpoint", "compactionId": "c-1"}, "role": "user", "id": "sum-1"}
    shadow = {"shadowedRange": {"start": 5, "end": 13}, "shadowedSeqs": [5, 8, 10, 13], "shadowedTokenCount": 10}
    extra = [
        {"type": "turn/start", "seq": 16, "time": t, "data": {"turn": 2}},
        {"type": "step/start", "seq": 17, "time": t, "data": {"turn": 2, "step": 1}},
        {"type": "compaction/start", "seq": 18, "time": t, "data": {"compactionId": "c-1", "turn": 2}},
        {"type": "compaction/summary", "seq": 19, "time": t, "data": {"compactionId": "c-1", "summary": [{"type": "text", "text": "SUMMARY"}], **shadow, "provider": "mock", "model": "mock"}},
        {"type": "user/message", "seq": 20, "time": t, "data": summary, "surfaceOp": {"op": "replace", "startSeq": 5, "endSeq": 13}, "sourceEventSeqs": [5, 8, 10, 13]},
        {"type": "compaction/end", "seq": 21, "time": t, "data": {"compactionId": "c-1", "turn": 2}},
        {"type": "request/header", "seq": 22, "time": t, "data": {"header": loop[6]["data"]["header"], "reason": "series"}},
        {"type": "assistant/message", "seq": 23, "time": t, "data": {"turn": 2, "step": 1, "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "source": {"kind": "model", "provider": "mock", "model": "mock"}, "id": "a-9"}, "stream": []}, "surfaceOp": "append"},
    ]
    p = tmp_path / "log.json"
    p.write_text(json.dumps(log + extra))
    code, out, err = run_env("requests", str(p), "--json")
    assert code == 0, err
    rows = json.loads(out)["requests"]
    assert rows[-1]["extends"] is False and rows[-1]["reason"] == "compaction replace"
    assert rows[-1]["messages"] == 2


def test_old_versions_are_migrated_in_memory(tmp_path):
    src = FIXTURES / "v0" / "text-turn" / "session.jsonl"
    before = src.read_bytes()
    code, out, err = run_env("surface", str(src), "--json", cache_dir=tmp_path / "cache")  # with a cache, as a person's run has one
    assert code == 0, err
    doc = json.loads(out)
    assert [n["type"] for n in doc["nodes"]] == ["system/message", "user/message", "user/message", "assistant/message"]
    assert doc["roles"] == ["system", "user", "user", "assistant"]
    assert src.read_bytes() == before
    assert sorted(p.name for p in src.parent.iterdir()) == ["session.jsonl"]  # read-only: no lock, no successor
    code, out, err = run_env("rebuild", str(src), "-r", "1")
    req = json.loads(out)
    assert req["messages"][0]["content"] == [{"type": "text", "text": "You are a careful assistant."}]
    assert "system" not in req
