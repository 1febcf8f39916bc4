"""`events`, `info` and `validate` through the command line."""

from __future__ import annotations

import json

from conftest import FIXTURES, GOLDEN, ev, jsonl, run_env, run_process, v4_header
from dshlog.errors import ExitCode

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
LOOP_ZSTD = FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd"
TEXT_TURN = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def test_events_json_reproduces_a_strict_v4_log():
    body = b"".join(LOOP.read_bytes().splitlines(keepends=True)[1:])
    for src in (LOOP, LOOP_ZSTD):
        code, out, err = run_env("events", str(src), "--json")
        assert code == 0 and out == body, err


def test_events_json_of_array_is_dsh_compact_json():
    code, out, _ = run_env("events", str(GOLDEN / "loop-events.json"), "--json")
    assert out == b"".join(LOOP.read_bytes().splitlines(keepends=True)[1:])


def test_events_filters():
    _, out, _ = run_env("events", str(LOOP), "--type", "tool/*")
    assert [line.split()[:2] for line in out.splitlines()] == [[b"9", b"tool/call"], [b"10", b"tool/result"]]
    _, out, _ = run_env("events", str(LOOP), "--turn", "2")
    assert [int(line.split()[0]) for line in out.splitlines()] == list(range(17, 25))
    _, out, _ = run_env("events", str(LOOP), "--from", "30", "--to", "32")
    assert out.splitlines() == [b'30 assistant/message append "\xe7\xac\xac\xe4\xb8\x80\xe7\x82\xb9\xe6\x98\xaf" interrupted', b"31 step/end turn 3 step 1", b"32 turn/end reason=aborted"]


def test_events_of_v0_show_stored_rows_or_v4():
    _, out, _ = run_env("events", str(TEXT_TURN))
    assert len(out.splitlines()) == 43 and b"reasoning-delta" in out
    _, out, _ = run_env("events", str(TEXT_TURN), "--v4")
    assert len(out.splitlines()) == 17 and b"system/message replace 7..7" in out


def test_events_from_stdin():
    out = run_process("events", "-", "--json", stdin=LOOP_ZSTD.read_bytes(), check=True)  # a real pipe, never seekable
    assert out.stdout == b"".join(LOOP.read_bytes().splitlines(keepends=True)[1:])


def test_info_json_shape():
    code, out, _ = run_env("info", str(LOOP_ZSTD), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["shape"] == 1
    assert doc["container"] == "jsonl.zstd" and doc["version"] == 4 and doc["frames"] > 1
    assert doc["header"]["id"] == "loop-0001"
    s = doc["summary"]
    assert (s["events"], s["turns"], s["steps"], s["modelCalls"], s["attempts"], s["interrupted"]) == (41, 4, 5, 6, 1, 1)
    assert s["tokens"] == {"inputTokens": 40, "outputTokens": 17}
    assert s["byType"]["assistant/message"] == 5
    assert doc["decodedBytes"] == LOOP.stat().st_size


def test_validate_exit_codes(tmp_path):
    good = str(LOOP)
    code, _, _ = run_env("validate", good)
    assert code == 0
    unknown = tmp_path / "u" / "session.v4.jsonl"
    unknown.parent.mkdir()
    unknown.write_bytes(jsonl(v4_header(), ev(0, "mystery/event", {})))
    code, out, _ = run_env("validate", str(unknown))
    assert code == ExitCode.UNSUPPORTED and b'unknown event type "mystery/event"' in out
    ignorable = tmp_path / "i" / "session.v4.jsonl"
    ignorable.parent.mkdir()
    ignorable.write_bytes(jsonl(v4_header(), dict(ev(0, "mystery/event", {}), ignorable=True)))
    code, _, _ = run_env("validate", str(ignorable))
    assert code == 0
    broken = tmp_path / "b" / "session.v4.jsonl"
    broken.parent.mkdir()
    broken.write_bytes(jsonl(v4_header(), ev(0, "turn/start", {"turn": 1})) + b"{nope\n" + jsonl(ev(2, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}), ev(2, "plan/mode", {"active": True})))
    code, out, _ = run_env("validate", str(broken), "--json")
    assert code == ExitCode.CORRUPT
    problems = json.loads(out)["files"][0]["problems"]
    # every problem is reported, each with its location
    assert any("unparsable committed event at line 2" in p["message"] and "line 3" in p["where"] for p in problems)
    assert any(p["code"] == "seq-gap" for p in problems)
    code, _, _ = run_env("validate", str(tmp_path / "missing.jsonl"))
    assert code == ExitCode.IO
    # several files: the worst status wins
    code, _, _ = run_env("validate", good, str(unknown))
    assert code == ExitCode.UNSUPPORTED


def test_reading_commands_never_write(tmp_path):
    import shutil

    d = tmp_path / "s"
    d.mkdir()
    shutil.copyfile(TEXT_TURN, d / "session.jsonl")
    for cmd in (["events"], ["info"], ["validate"], ["surface"], ["requests"], ["rebuild", "-r", "1"], ["repair"], ["show"], ["stats"]):
        code, _, err = run_env(*cmd, str(d), cache_dir=tmp_path / "cache")  # with a cache, as a person's run has one
        assert code == 0, (cmd, err)
    assert [p.name for p in d.iterdir()] == ["session.jsonl"]


def test_damaged_message_shapes_never_crash_the_summaries(tmp_path):
    """Found by the fuzzer: a message whose content is a number crashed `info` (exit 1)."""
    p = tmp_path / "session.v4.jsonl"
    msg = {"role": "assistant", "content": 1.5, "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a"}
    tool = {"role": "tool", "content": 7, "source": {"kind": "tool", "callId": "c"}, "toolCallId": "c", "id": "t", "isError": True}
    p.write_bytes(jsonl(v4_header(), ev(0, "assistant/message", {"turn": 1, "step": 1, "message": msg, "stream": []}, surfaceOp="append"),
                        ev(1, "tool/result", {"turn": 1, "step": 1, "message": tool}, surfaceOp="append"),
                        ev(2, "todo/write", {"todos": 3})))
    for cmd in (["info"], ["stats"], ["events"], ["show"], ["export", "-f", "md"], ["validate"]):
        code, _, err = run_env(*cmd, str(p))
        assert code != 1 and b"internal error" not in err, (cmd, err)
