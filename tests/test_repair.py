"""Open-turn closers (dsh ``openTurnClosers``): golden crash log, spec cases, properties."""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Iterator

import orjson
import pytest

from conftest import load_golden, spec_closer_texts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dshlog.errors import CorruptLog
from dshlog.model.repair import (
    CLOSER_TEXT,
    TailState,
    interrupted_turn_closers,
    open_turn_closers,
    scan_tail,
)

CAUSES = ["interrupted", "forked"]


def js(obj: Any) -> bytes:
    return orjson.dumps(obj)


class Log:
    """Tiny builder for v4 event lists with contiguous seqs."""

    def __init__(self, t0: int = 1000) -> None:
        self.events: list[dict] = []
        self.t = t0

    def add(self, type_: str, data: Any, **extra: Any) -> int:
        seq = len(self.events)
        self.t += 1
        self.events.append({"type": type_, "seq": seq, "time": self.t, "data": data, **extra})
        return seq

    def turn(self, n: int) -> int:
        return self.add("turn/start", {"turn": n})

    def end_turn(self, n: int, kind: str = "completed") -> int:
        return self.add("turn/end", {"turn": n, "reason": {"kind": kind}})

    def step(self, turn: int, step: int) -> int:
        return self.add("step/start", {"turn": turn, "step": step})

    def end_step(self, turn: int, step: int) -> int:
        return self.add("step/end", {"turn": turn, "step": step})

    def assistant(self, turn: int, step: int, *call_ids: str, text: str = "") -> int:
        content: list[dict] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool-call", "id": c, "name": "t", "arguments": "{}"} for c in call_ids]
        msg = {"role": "assistant", "content": content,
               "source": {"kind": "model", "provider": "mock", "model": "mock"}, "id": f"a{len(self.events)}"}
        return self.add("assistant/message", {"turn": turn, "step": step, "message": msg, "stream": []},
                        surfaceOp="append")

    def call(self, turn: int, step: int, call_id: str) -> int:
        return self.add("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": "t", "arguments": "{}"})

    def result(self, turn: int, step: int, call_id: str, call_seq: int | None = None) -> int:
        msg = {"role": "tool", "source": {"kind": "tool", "callId": call_id}, "toolCallId": call_id,
               "content": [{"type": "text", "text": "ok"}], "isError": False, "id": f"r{len(self.events)}"}
        extra: dict[str, Any] = {"surfaceOp": "append"}
        if call_seq is not None:
            extra["sourceEventSeqs"] = [call_seq]
        return self.add("tool/result", {"turn": turn, "step": step, "message": msg}, **extra)


# --- golden ---------------------------------------------------------------------------------


def test_crash_log_closers_match_dsh_byte_for_byte() -> None:
    persisted = load_golden("crash-persisted.json")
    expected = load_golden("crash-closers.json")
    got = open_turn_closers(persisted, "interrupted")
    assert [js(e) for e in got] == [js(e) for e in expected]
    assert [js(e) for e in interrupted_turn_closers(iter(persisted))] == [js(e) for e in expected]


def test_crash_log_tail_report() -> None:
    report = scan_tail(load_golden("crash-persisted.json"))
    assert (report.open_turn, report.open_step, report.last_seq) == (1, 1, 9)
    assert [(p.call_id, p.started, p.call_seq, p.name) for p in report.pending] == [
        ("c1", True, 9, "deploy"),
        ("c2", False, None, "echo"),
    ]
    assert not report.balanced and report.closer_count == 4


def test_balanced_golden_log_needs_nothing() -> None:
    events = load_golden("loop-events.json")
    for cause in CAUSES:
        assert open_turn_closers(events, cause) == []
    assert scan_tail(events).balanced


def test_closers_do_not_mutate_input_and_stream_once() -> None:
    persisted = load_golden("crash-persisted.json")
    before = copy.deepcopy(persisted)
    pulled = 0

    def stream() -> Iterator[dict]:
        nonlocal pulled
        for e in persisted:
            pulled += 1
            yield e

    closers = open_turn_closers(stream(), "interrupted")
    assert pulled == len(persisted)
    assert persisted == before and [js(e) for e in persisted] == [js(e) for e in before]
    closers[0]["data"]["message"]["content"][0]["text"] = "changed"  # closers share nothing with constants
    assert open_turn_closers(persisted, "interrupted")[0]["data"]["message"]["content"][0]["text"] != "changed"


# --- SEMANTICS.md §9 items 16-25, both causes -----------------------------------------------------


@pytest.mark.parametrize("cause", CAUSES)
def test_16_balanced_or_empty_log(cause: str) -> None:
    assert open_turn_closers([], cause) == []
    log = Log()
    log.turn(1)
    log.end_turn(1)
    log.add("session/title", {"title": "x", "messageSeqs": [], "source": "user"})
    assert open_turn_closers(log.events, cause) == []


@pytest.mark.parametrize("cause", CAUSES)
def test_17_open_turn_without_step(cause: str) -> None:
    log = Log()
    log.turn(1)
    (closer,) = open_turn_closers(log.events, cause)
    assert js(closer) == js({"type": "turn/end", "seq": 1, "time": log.events[-1]["time"],
                             "data": {"turn": 1, "reason": {"kind": cause}}})


@pytest.mark.parametrize("cause", CAUSES)
def test_18_open_step(cause: str) -> None:
    log = Log()
    log.turn(1)
    log.step(1, 1)
    closers = open_turn_closers(log.events, cause)
    assert [(e["type"], e["seq"]) for e in closers] == [("step/end", 2), ("turn/end", 3)]
    assert js(closers[0]["data"]) == b'{"turn":1,"step":1}'


@pytest.mark.parametrize("cause", CAUSES)
def test_19_unrecorded_call(cause: str) -> None:
    texts = spec_closer_texts()
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "call-1")
    closers = open_turn_closers(log.events, cause)
    assert [(e["type"], e["seq"]) for e in closers] == [("tool/result", 3), ("step/end", 4), ("turn/end", 5)]
    result = closers[0]
    assert list(result) == ["type", "seq", "time", "data", "surfaceOp"]
    assert list(result["data"]) == ["turn", "step", "message", "error"]
    msg = result["data"]["message"]
    assert list(msg) == ["id", "role", "toolCallId", "isError", "source", "content"]
    assert msg["id"] == f"{cause}-tool-result-call-1-3"
    assert msg["role"] == "tool" and msg["isError"] is True and msg["toolCallId"] == "call-1"
    assert msg["source"] == {"kind": "tool", "callId": "call-1"}
    assert msg["content"] == [{"type": "text", "text": texts[(cause, False)]}]
    assert result["data"]["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}


@pytest.mark.parametrize("cause", CAUSES)
def test_20_answered_call(cause: str) -> None:
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "c")
    s = log.call(1, 1, "c")
    log.result(1, 1, "c", s)
    assert [e["type"] for e in open_turn_closers(log.events, cause)] == ["step/end", "turn/end"]


@pytest.mark.parametrize("cause", CAUSES)
def test_21_unanswered_call_in_closed_step(cause: str) -> None:
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "c")
    log.call(1, 1, "c")
    log.end_step(1, 1)
    log.add("todo/write", {"todos": []})
    closers = open_turn_closers(log.events, cause)
    assert [e["type"] for e in closers] == ["turn/end"]
    assert closers[0]["time"] == log.events[-1]["time"] and closers[0]["seq"] == len(log.events)


@pytest.mark.parametrize("cause", CAUSES)
def test_22_only_open_turn_calls_in_order(cause: str) -> None:
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "old")  # never answered, but its turn ended
    log.end_turn(1, "error")
    log.turn(2)
    log.step(2, 1)
    log.assistant(2, 1, "a", "b", "c")
    sb = log.call(2, 1, "b")
    log.result(2, 1, "b", sb)
    closers = open_turn_closers(log.events, cause)
    results = [e for e in closers if e["type"] == "tool/result"]
    assert [e["data"]["message"]["toolCallId"] for e in results] == ["a", "c"]
    assert [e["data"]["turn"] for e in closers] == [2, 2, 2, 2]
    n = len(log.events)
    assert [e["data"]["message"]["id"] for e in results] == [f"{cause}-tool-result-a-{n}",
                                                               f"{cause}-tool-result-c-{n + 1}"]


@pytest.mark.parametrize("cause", CAUSES)
def test_23_recorded_call_cites_its_tool_call(cause: str) -> None:
    texts = spec_closer_texts()
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "c")
    s = log.call(1, 1, "c")
    result = open_turn_closers(log.events, cause)[0]
    assert list(result) == ["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs"]
    assert result["surfaceOp"] == "append" and result["sourceEventSeqs"] == [s]
    assert result["data"]["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert result["data"]["message"]["content"][0]["text"] == texts[(cause, True)]


@pytest.mark.parametrize("cause", CAUSES)
def test_24_orphan_tool_call_gets_no_result(cause: str) -> None:
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, text="hi")
    log.call(1, 1, "ghost")
    assert [e["type"] for e in open_turn_closers(log.events, cause)] == ["step/end", "turn/end"]


def test_25_wordings_and_codes() -> None:
    texts = spec_closer_texts()
    for cause in CAUSES:
        assert CLOSER_TEXT[cause]["started"] == texts[(cause, True)]
        assert CLOSER_TEXT[cause]["notStarted"] == texts[(cause, False)]
    errors = {}
    for cause in CAUSES:
        log = Log()
        log.turn(1)
        log.step(1, 1)
        log.assistant(1, 1, "x", "y")
        log.call(1, 1, "x")
        errors[cause] = [e["data"]["error"] for e in open_turn_closers(log.events, cause)[:2]]
    assert errors["interrupted"] == errors["forked"]
    assert [e["code"] for e in errors["forked"]] == ["TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"]


# --- scan details --------------------------------------------------------------------------------


def test_reregistered_call_keeps_position_and_loses_call_seq() -> None:
    """JS ``Map.set`` on an existing key: new entry value, original position."""
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "a", "b")
    log.call(1, 1, "a")
    log.assistant(1, 1, "b", "a")
    results = [e for e in open_turn_closers(log.events, "interrupted") if e["type"] == "tool/result"]
    assert [e["data"]["message"]["toolCallId"] for e in results] == ["a", "b"]
    assert all("sourceEventSeqs" not in e for e in results)


def test_last_tool_call_wins_and_calls_survive_step_start() -> None:
    log = Log()
    log.turn(1)
    log.step(1, 1)
    log.assistant(1, 1, "a")
    log.call(1, 1, "a")
    second = log.call(1, 1, "a")
    log.step(1, 2)  # a new step without step/end keeps pending calls
    closers = open_turn_closers(log.events, "forked")
    assert closers[0]["sourceEventSeqs"] == [second]
    assert closers[0]["data"]["step"] == 1
    assert closers[1]["data"] == {"turn": 1, "step": 2}


def test_malformed_assistant_message_is_corrupt() -> None:
    log = Log()
    log.turn(1)
    log.add("assistant/message", {"turn": 1, "step": 1})
    with pytest.raises(CorruptLog):
        open_turn_closers(log.events, "interrupted")


def test_unknown_cause_is_rejected() -> None:
    with pytest.raises(ValueError):
        TailState().closers("crashed")  # type: ignore[arg-type]  # the unknown cause is the test


def test_unknown_cause_is_a_usage_error_of_the_hierarchy() -> None:
    """The library raises only its own errors: an unknown cause is a usage error (exit 2), still a ValueError."""
    from dshlog.errors import DshlogError, ExitCode, InvalidArgument, UsageError, exit_code_of

    with pytest.raises(InvalidArgument) as caught:
        TailState().closers("crashed")  # type: ignore[arg-type]  # the unknown cause is the test
    err = caught.value
    assert isinstance(err, DshlogError) and isinstance(err, UsageError) and isinstance(err, ValueError)
    assert err.exit_code == ExitCode.USAGE and exit_code_of(err) == ExitCode.USAGE
    assert "'crashed'" in err.one_line() and "'interrupted'" in err.one_line()


# --- property: every prefix + closers is balanced --------------------------------------------------


@st.composite
def v4_logs(draw: st.DrawFn) -> list[dict]:
    log = Log(t0=draw(st.integers(0, 10**12)))
    counter = 0
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        if draw(st.booleans()):
            log.add("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": []})
        log.turn(turn)
        for step in range(1, draw(st.integers(0, 3)) + 1):
            log.step(turn, step)
            if draw(st.booleans()):
                log.add("assistant/attempt", {"turn": turn, "step": step, "stream": []})
            ids = []
            for _ in range(draw(st.integers(0, 3))):
                counter += 1
                ids.append(f"c{counter}")
            log.assistant(turn, step, *ids, text="t")
            for cid in ids:
                call_seq = log.call(turn, step, cid) if draw(st.booleans()) else None
                if call_seq is not None or draw(st.booleans()):
                    log.result(turn, step, cid, call_seq)
            log.end_step(turn, step)
        log.end_turn(turn)
    return log.events


def _check_nesting(events: list[dict]) -> None:
    turn_open = step_open = False
    for e in events:
        t = e["type"]
        if t == "turn/start":
            assert not turn_open
            turn_open = True
        elif t == "turn/end":
            assert turn_open and not step_open
            turn_open = False
        elif t == "step/start":
            assert turn_open and not step_open
            step_open = True
        elif t == "step/end":
            assert step_open
            step_open = False
    assert not turn_open and not step_open


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=v4_logs(), cause=st.sampled_from(CAUSES))
def test_every_prefix_plus_closers_is_balanced(log: list[dict], cause: str) -> None:
    for k in range(len(log) + 1):
        prefix = log[:k]
        closers = open_turn_closers(prefix, cause)
        if not prefix:
            assert closers == []
            continue
        # seqs continue the prefix contiguously, times repeat the last event's
        assert [e["seq"] for e in closers] == list(range(k, k + len(closers)))
        assert all(e["time"] == prefix[-1]["time"] for e in closers)
        full = prefix + closers
        _check_nesting(full)
        assert open_turn_closers(full, cause) == []
        # every call of a step still open at the cut is answered after repair
        open_step_at = None
        for i, e in enumerate(prefix):
            if e["type"] == "step/start":
                open_step_at = i
            elif e["type"] in ("step/end", "turn/end"):
                open_step_at = None
        if open_step_at is not None:
            calls = [b["id"] for e in prefix[open_step_at:] if e["type"] == "assistant/message"
                     for b in e["data"]["message"]["content"] if b["type"] == "tool-call"]
            answered = {e["data"]["message"]["toolCallId"] for e in full[open_step_at:] if e["type"] == "tool/result"}
            assert set(calls) <= answered
        # a closer cites the tool/call exactly when the prefix recorded one
        recorded = {e["data"]["callId"]: e["seq"] for e in prefix if e["type"] == "tool/call"}
        for e in closers:
            if e["type"] == "tool/result":
                cid = e["data"]["message"]["toolCallId"]
                if cid in recorded:
                    assert e["sourceEventSeqs"] == [recorded[cid]]
                else:
                    assert "sourceEventSeqs" not in e
