"""Transcript items (``dshlog.model.transcript``) and the ``show`` command."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, GOLDEN, corpus_files, corpus_ids, ev, jsonl, requires_corpus, run_env, v4_header
from dshlog.model import transcript as tr
from dshlog.output.plain import item_lines
from dshlog.read.session import open_log

LOOP = GOLDEN / "loop-events.json"
LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


def golden_events() -> list[dict]:
    return json.loads(LOOP.read_text(encoding="utf-8"))


def items_of(events: list[dict], **kw) -> list[tr.Item]:
    return list(tr.transcript(events, **kw))


def by_turn(items: list[tr.Item]) -> dict:
    turns: dict = {}
    current = None
    for it in items:
        if isinstance(it, tr.TurnStart):
            current = it.turn
        turns.setdefault(current, []).append(it)
    return turns


def test_turns_and_outcomes() -> None:
    items = items_of(golden_events())
    starts = [i.turn for i in items if isinstance(i, tr.TurnStart)]
    ends = [(i.turn, i.outcome, i.label) for i in items if isinstance(i, tr.TurnEnd)]
    assert starts == [1, 2, 3, 4]
    assert ends == [(1, "completed", "completed"), (2, "completed", "completed"), (3, "aborted", "aborted by user"), (4, "completed", "completed")]


def test_tool_call_echo_with_result() -> None:
    turn1 = by_turn(items_of(golden_events()))[1]
    kinds = [type(i).__name__ for i in turn1]
    assert kinds[:6] == ["TurnStart", "SystemPrompt", "UserText", "AssistantText", "ToolCall", "ToolResult"]
    call = next(i for i in turn1 if isinstance(i, tr.ToolCall))
    result = next(i for i in turn1 if isinstance(i, tr.ToolResult))
    assert (call.seq, call.call_id, call.name) == (8, "c1", "echo")
    assert json.loads(call.arguments) == {"text": "one"}
    assert (result.seq, result.call_id, result.name, result.output, result.is_error) == (10, "c1", "echo", "echo: one", False)
    system = turn1[1]
    assert system.change == "set" and system.text.startswith("You are an AI agent powered by DeepSeek Harness.")


def test_turn2_retry_is_marked() -> None:
    turn2 = by_turn(items_of(golden_events()))[2]
    failure = next(i for i in turn2 if isinstance(i, tr.Failure))
    assert (failure.seq, failure.outcome, failure.code, failure.message) == (21, "error", "RATE_LIMIT", "busy")
    retry_at = next(n for n, i in enumerate(turn2) if isinstance(i, tr.Retry))
    retry = turn2[retry_at]
    assert (retry.seq, retry.number, retry.logged) == (22, 1, False)
    # the retry mark sits between the failure and the answer that the retry produced
    answer = turn2[retry_at + 1]
    assert isinstance(answer, tr.AssistantText) and answer.text == "ok" and answer.seq == 22
    assert turn2.index(failure) < retry_at
    # no other turn claims a retry
    assert [i.seq for i in items_of(golden_events()) if isinstance(i, tr.Retry)] == [22]


def test_turn3_cancellation_keeps_interrupted_text() -> None:
    turn3 = by_turn(items_of(golden_events()))[3]
    texts = [i for i in turn3 if isinstance(i, tr.AssistantText)]
    assert len(texts) == 1 and texts[0].text == "第一点是" and texts[0].interrupted is True
    # the half-written tool call c2 exists only in the raw stream: never shown as a call
    assert not [i for i in turn3 if isinstance(i, tr.ToolCall)]
    assert turn3[-1].outcome == "aborted" and turn3[-1].label == "aborted by user"


def test_usage_per_step() -> None:
    usage = [(i.turn, i.step, i.tokens) for i in items_of(golden_events()) if isinstance(i, tr.StepUsage)]
    assert usage == [
        (1, 1, {"inputTokens": 10, "outputTokens": 5}),
        (1, 2, {"inputTokens": 10, "outputTokens": 4}),
        (2, 1, {"inputTokens": 10, "outputTokens": 2}),
        (4, 1, {"inputTokens": 10, "outputTokens": 6}),
    ]


def replace_demo() -> list[dict]:
    """The seed's replace demo: end-seed at 41, a summary at 42 replacing nodes 5..13."""
    events = golden_events()
    t = events[-1]["time"]
    events.append({"type": "session/end-seed", "seq": 41, "time": t, "data": {}})
    summary = copy.deepcopy(events[5])
    summary["seq"], summary["time"] = 42, t
    summary["data"]["content"] = [{"type": "text", "text": "SUMMARY: user said go; echo returned one; assistant said done"}]
    summary["data"]["source"] = {"kind": "compact-checkpoint"}
    summary["data"]["id"] = "summary-42"
    summary["surfaceOp"] = {"op": "replace", "startSeq": 5, "endSeq": 13}
    summary["sourceEventSeqs"] = [5, 8, 10, 13]
    events.append(summary)
    return events


def test_compaction_names_the_replaced_seqs() -> None:
    items = items_of(replace_demo())
    rep = [i for i in items if isinstance(i, tr.Replacement)]
    assert len(rep) == 1
    assert (rep[0].seq, rep[0].reason, rep[0].replaced, rep[0].start, rep[0].end) == (42, "compaction", [5, 8, 10, 13], 5, 13)
    assert rep[0].text.startswith("SUMMARY: user said go")
    assert "replaces seqs 5, 8, 10, 13" in item_lines(rep[0])[0]


def test_system_prompt_replacement_and_logged_retry() -> None:
    sysmsg = lambda seq, text, **kw: ev(  # noqa: E731
        seq, "system/message", {"turn": 1, "step": 1, "message": {"role": "system", "content": [{"type": "text", "text": text}] if text else [], "source": {"kind": "system-prompt"}, "id": f"s{seq}"}}, **kw
    )
    stream_err = [{"type": "chunk", "time": 1, "chunk": {"type": "finish", "reason": {"kind": "error", "failure": {"message": "empty", "code": "EMPTY_RESPONSE"}}}}]
    events = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        sysmsg(2, "", surfaceOp="append"),
        sysmsg(3, "new prompt", surfaceOp={"op": "replace", "startSeq": 2, "endSeq": 2}, sourceEventSeqs=[2]),
        ev(4, "assistant/attempt", {"turn": 1, "step": 1, "stream": stream_err}),
        ev(5, "llm/retry", {"turn": 1, "step": 1, "retry": 1, "maxRetries": 2, "delayMs": 5, "failure": {"message": "empty", "code": "EMPTY_RESPONSE"}}),
        ev(6, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "reasoning", "text": "think"}, {"type": "text", "text": "hi"}], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a6"}, "stream": []}, surfaceOp="append"),
    ]
    items = items_of(events)
    prompts = [(i.seq, i.change, i.text) for i in items if isinstance(i, tr.SystemPrompt)]
    assert prompts == [(2, "set", ""), (3, "replaced", "new prompt")]
    retries = [i for i in items if isinstance(i, tr.Retry)]
    assert len(retries) == 1 and retries[0].logged and (retries[0].number, retries[0].max_retries, retries[0].code) == (1, 2, "EMPTY_RESPONSE")
    assert [i.text for i in items if isinstance(i, tr.Reasoning)] == ["think"]
    # no turn/end: the open tail is said, not hidden
    assert isinstance(items[-1], tr.TurnEnd) and items[-1].outcome == "open"
    # folded by default, unfolded on request
    reasoning = next(i for i in items if isinstance(i, tr.Reasoning))
    assert "think" not in "\n".join(item_lines(reasoning))
    assert "think" in "\n".join(item_lines(reasoning, reasoning=True))


def long_output_log(lines: int) -> list[dict]:
    out = "\n".join(f"line {n}" for n in range(lines))
    return [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "tool-call", "id": "k", "name": "bash", "arguments": '{"command":"seq"}'}], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a"}, "stream": []}, surfaceOp="append"),
        ev(2, "tool/call", {"turn": 1, "step": 1, "callId": "k", "name": "bash", "arguments": '{"command":"seq"}'}),
        ev(3, "tool/result", {"turn": 1, "step": 1, "message": {"role": "tool", "source": {"kind": "tool", "callId": "k"}, "toolCallId": "k", "content": [{"type": "text", "text": out}], "isError": False, "id": "r"}}, surfaceOp="append"),
        ev(4, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "boom", "code": "X"}}}),
    ]


def test_long_tool_output_is_trimmed_with_a_count() -> None:
    items = items_of(long_output_log(100))
    res = next(i for i in items if isinstance(i, tr.ToolResult))
    assert res.output.split("\n") == [f"line {n}" for n in range(tr.TOOL_LINES)]
    assert res.cut_lines == 100 - tr.TOOL_LINES
    assert res.cut_chars == len("\n".join(f"line {n}" for n in range(100))) - len(res.output)
    assert f"{100 - tr.TOOL_LINES} more lines" in "\n".join(item_lines(res))
    full = next(i for i in items_of(long_output_log(100), full=True) if isinstance(i, tr.ToolResult))
    assert full.cut_chars == 0 and full.output.count("\n") == 99
    assert items[-1].label == "error: boom (X)"


def test_trim_counts() -> None:
    assert tr.trim("a\nb\nc", 2, None) == ("a\nb", 1, 2)
    assert tr.trim("abc", None, None) == ("abc", 0, 0)
    kept, lines, chars = tr.trim("x" * 50, None, 10)
    assert kept == "x" * 10 and lines == 1 and chars == 40


def test_projection_without_seq_is_shown_by_position() -> None:
    events = [{"type": "turn/start", "data": {"turn": 1}}, {"type": "user/message", "data": {"content": [{"type": "text", "text": "hi"}], "role": "user", "id": "u", "source": {"kind": "user"}}, "surfaceOp": "append"}]
    items = items_of(events)
    user = next(i for i in items if isinstance(i, tr.UserText))
    assert user.seq == 1 and user.text == "hi"


def test_migrated_v0_log_reads() -> None:
    with open_log(FIXTURES / "v0" / "text-turn" / "session.jsonl") as log:
        items = list(tr.transcript(log.v4()))
    assert any(isinstance(i, tr.UserText) and "READY" in i.text for i in items)
    assert any(isinstance(i, tr.AssistantText) and i.text == "READY" for i in items)


# --------------------------------------------------------------------------- the command


def test_show_piped_is_plain_text() -> None:
    code, out, err = run_env("show", str(LOOP_V4))
    text = out.decode()
    assert code == 0, err
    assert "\x1b[" not in text
    for needle in ("=== turn 1", "echo: one", "第一点是", "[interrupted", "turn 3 aborted by user", "retry 1", "RATE_LIMIT"):
        assert needle in text


def test_show_force_color_uses_rich() -> None:
    code, out, err = run_env("show", "--no-pager", str(LOOP_V4), colour="always")
    assert code == 0, err
    assert b"\x1b[" in out and "第一点是".encode() in out


def test_show_reasoning_flag(tmp_path) -> None:
    events = [  # an assistant message inside its step: dsh's restore refuses one outside
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        ev(2, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "reasoning", "text": "deep thought"}, {"type": "text", "text": "42"}], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a"}, "stream": []}, surfaceOp="append"),
        ev(3, "step/end", {"turn": 1, "step": 1}),
        ev(4, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(jsonl(v4_header(), *events))
    _, folded, _ = run_env("show", str(f))
    _, unfolded, _ = run_env("show", "--reasoning", str(f))
    assert b"deep thought" not in folded and b"--reasoning" in folded
    assert b"deep thought" in unfolded


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=corpus_ids())
def test_show_on_corpus(path) -> None:
    """Every corpus file either shows or is refused with a clean one-line error (no internal error)."""
    code, out, err = run_env("show", str(path))
    assert code in (0, 2, 3, 4, 5, 6), err.decode(errors="replace")
    assert b"internal error" not in err and b"Traceback" not in err
