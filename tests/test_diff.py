"""``dshlog diff``: what changed between two requests, and where the byte prefix broke."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, GOLDEN, jsonl, run_env, v4_header
from dshlog.model.diff import diff_requests, requests_at
from dshlog.errors import UsageError
from dshlog.model.requests import rebuild

LOOP = GOLDEN / "loop-events.json"
LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


def golden() -> list[dict]:
    return json.loads(LOOP.read_text(encoding="utf-8"))


def diff_json(*args: str) -> dict:
    code, out, err = run_env("diff", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_requests_3_and_4_are_identical() -> None:
    d = diff_json(str(LOOP), "--request", "3", "--request", "4")
    assert d["identical"] is True and d["prefixIntact"] is True and d["prefixBrokenAt"] is None
    assert d["messages"] == {"before": 6, "after": 6, "added": [], "removed": [], "replaced": []}
    code, out, _ = run_env("diff", str(LOOP), "-r", "3", "-r", "4")
    assert code == 0 and b"identical" in out


def test_request_6_adds_two_messages_to_5() -> None:
    d = diff_json(str(LOOP), "--request", "5", "--request", "6")
    assert d["identical"] is False
    assert d["prefixIntact"] is True and d["commonPrefix"] == 8
    added = d["messages"]["added"]
    assert [(m["index"], m["role"], m["id"]) for m in added] == [
        (8, "assistant", "1efaba76-8071-4560-b571-b30599162a95"),
        (9, "user", "1d99f704-030c-4cd1-a9fc-94ae294efabd"),
    ]
    assert added[0]["preview"] == "第一点是"
    assert d["messages"]["removed"] == [] and d["messages"]["replaced"] == []
    assert d["config"] == {"added": [], "removed": [], "changed": [], "values": {}}
    assert d["tools"] == {"added": [], "removed": [], "changed": []}
    code, out, _ = run_env("diff", str(LOOP), "-r", "5", "-r", "6")
    text = out.decode()
    assert "prefix intact" in text and text.count("+ added") == 2


def test_two_files_same_request() -> None:
    d = diff_json(str(LOOP), str(LOOP_V4), "--request", "6")
    # same conversation; only the v4 file knows its session id
    assert d["prefixIntact"] and d["messages"]["added"] == [] and d["sessionIdChanged"] is True
    assert d["identical"] is False


def compacted() -> list[dict]:
    """Golden log + the seed's replace at 42 (5..13) + one more turn that settles request 7."""
    events = golden()
    t = events[-1]["time"]
    events.append({"type": "session/end-seed", "seq": 41, "time": t, "data": {}})
    summary = copy.deepcopy(events[5])
    summary.update(seq=42, time=t, surfaceOp={"op": "replace", "startSeq": 5, "endSeq": 13}, sourceEventSeqs=[5, 8, 10, 13])
    summary["data"]["content"] = [{"type": "text", "text": "SUMMARY: user said go; echo returned one; assistant said done"}]
    summary["data"]["id"] = "summary-42"
    events.append(summary)
    events.append({"type": "turn/start", "seq": 43, "time": t, "data": {"turn": 5}})
    events.append({"type": "step/start", "seq": 44, "time": t, "data": {"turn": 5, "step": 1}})
    answer = copy.deepcopy(events[38])
    answer.update(seq=45, time=t)
    answer["data"].update(turn=5, step=1)
    answer["data"]["message"]["id"] = "answer-45"
    events.append(answer)
    return events


def test_compaction_breaks_the_prefix(tmp_path) -> None:
    events = compacted()
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(jsonl(v4_header(id="c-1"), *events))
    d = diff_json(str(f), "-r", "6", "-r", "7")
    assert d["prefixIntact"] is False and d["prefixBrokenAt"] == 1 and d["commonPrefix"] == 1
    replaced = d["messages"]["replaced"]
    assert len(replaced) == 1
    assert replaced[0]["before"]["index"] == 1 and replaced[0]["after"]["id"] == "summary-42" and replaced[0]["sameId"] is False
    removed_ids = [m["id"] for m in d["messages"]["removed"]]
    assert len(removed_ids) == 3  # assistant 8, tool 10, assistant 13 went into the summary
    # the turn-4 answer reached the model for the first time in request 7
    assert [(m["index"], m["id"]) for m in d["messages"]["added"]] == [(7, "afc335c5-b171-42f9-8f19-f4b311e6e9d8")]
    assert replaced[0]["before"]["id"] == "562b50f5-c251-49ec-9700-af7e939e29c5"  # the user's "go"
    assert d["messages"]["before"] == 10 and d["messages"]["after"] == 8
    code, out, _ = run_env("diff", str(f), "-r", "6", "-r", "7")
    assert b"prefix broken at message 1" in out


def test_config_and_tool_changes() -> None:
    base = rebuild(golden(), 1)
    other = copy.deepcopy(base)
    other["model"] = "other"
    other["temperature"] = 0.5
    other["tools"] = other["tools"] + [{"name": "grep", "description": "d", "parameters": {}}]
    other["tools"][0] = {**other["tools"][0], "description": "changed"}
    d = diff_requests(base, other)
    assert d["config"]["changed"] == ["model"] and d["config"]["added"] == ["temperature"]
    assert d["config"]["values"]["model"] == {"before": "mock", "after": "other"}
    assert d["tools"] == {"added": ["grep"], "removed": [], "changed": ["echo"]}
    assert d["prefixIntact"] is True and d["identical"] is False


def test_same_id_rewrite_is_a_replacement() -> None:
    a = rebuild(golden(), 6)
    b = copy.deepcopy(a)
    b["messages"][3]["content"] = [{"type": "text", "text": "echo: [offloaded]"}]
    d = diff_requests(a, b)
    assert d["prefixBrokenAt"] == 3
    assert [(r["before"]["index"], r["sameId"]) for r in d["messages"]["replaced"]] == [(3, True)]
    assert d["messages"]["added"] == [] and d["messages"]["removed"] == []


def test_requests_at_reads_once_and_checks_numbers() -> None:
    built = requests_at(iter(golden()), [4, 2])
    assert sorted(built) == [2, 4] and len(built[2]["messages"]) == 4 and len(built[4]["messages"]) == 6
    with pytest.raises(UsageError, match="request 7 does not exist: the log holds 6 requests"):
        requests_at(golden(), [1, 7])
    with pytest.raises(UsageError):
        requests_at(golden(), [0])


@pytest.mark.parametrize(
    "args",
    [
        ["-r", "3"],  # one file needs two requests
        ["-r", "1", "-r", "2", "-r", "3"],
    ],
)
def test_usage_errors(args) -> None:
    code, out, err = run_env("diff", str(LOOP), *args)
    assert code == 2 and out == b"" and err.startswith(b"dshlog: usage")


def test_missing_request_is_a_usage_error() -> None:
    code, _, err = run_env("diff", str(LOOP), "-r", "1", "-r", "9")
    assert code == 2 and b"request 9 does not exist" in err
