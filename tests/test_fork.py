"""Fork seeds (dsh ``buildForkSeed`` + ``SessionStore.fork`` boundary checks) and child headers."""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Iterator

import orjson
import pytest

from conftest import load_golden, spec_closer_texts

from dshlog.errors import CorruptLog, UsageError
from dshlog.model.fork import ForkPlan, at_turn, build_fork_seed, child_header, fork_seed
from dshlog.protocol.jsjson import js_string

SID = "parent"


def js(obj: Any) -> bytes:
    return orjson.dumps(obj)


def ev(seq: int, type_: str, data: Any, **extra: Any) -> dict:
    return {"type": type_, "seq": seq, "time": 100 + seq, "data": data, **extra}


def assistant(seq: int, turn: int, step: int, *calls: str) -> dict:
    content = [{"type": "tool-call", "id": c, "name": "t", "arguments": "{}"} for c in calls]
    if not calls:
        content = [{"type": "text", "text": "hi"}]
    msg = {"role": "assistant", "content": content,
           "source": {"kind": "model", "provider": "mock", "model": "mock"}, "id": f"a{seq}"}
    return ev(seq, "assistant/message", {"turn": turn, "step": step, "message": msg, "stream": []},
              surfaceOp="append")


# --- golden forks (EXPECTED.md "Fork seeds") -----------------------------------------------------


def test_fork_a_loop_log_at_turn_end() -> None:
    loop = load_golden("loop-events.json")
    seed = fork_seed(loop, 15, session_id=SID)
    assert len(seed) == 17
    assert [js(e) for e in seed[:16]] == [js(e) for e in loop[:16]]
    assert js(seed[16]) == js({"type": "session/end-seed", "seq": 16, "time": loop[15]["time"],
                               "data": {"inherited": True}})
    assert js(seed[16]["data"]) == b'{"inherited":true}'


def test_fork_b_crash_log_inside_open_turn() -> None:
    crash = load_golden("crash-persisted.json")
    texts = spec_closer_texts()
    seed = fork_seed(crash, 9, session_id=SID)
    assert len(seed) == 15
    assert [js(e) for e in seed[:10]] == [js(e) for e in crash]
    tail = seed[10:]
    assert [(e["seq"], e["type"]) for e in tail] == [
        (10, "session/end-seed"), (11, "tool/result"), (12, "tool/result"), (13, "step/end"), (14, "turn/end")]
    assert all(e["time"] == crash[9]["time"] for e in tail)
    assert js(tail[0]["data"]) == b'{"inherited":true}'
    c1, c2 = tail[1], tail[2]
    assert c1["data"]["message"]["id"] == "forked-tool-result-c1-11"
    assert c1["data"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN" and c1["sourceEventSeqs"] == [9]
    assert c1["data"]["message"]["content"][0]["text"] == texts[("forked", True)]
    assert c2["data"]["message"]["id"] == "forked-tool-result-c2-12"
    assert c2["data"]["error"]["code"] == "TOOL_NOT_STARTED" and "sourceEventSeqs" not in c2
    assert c2["data"]["message"]["content"][0]["text"] == texts[("forked", False)]
    assert js(tail[3]["data"]) == b'{"turn":1,"step":1}'
    assert js(tail[4]["data"]) == b'{"turn":1,"reason":{"kind":"forked"}}'


def test_fork_b_closers_mirror_crash_closers_except_wording() -> None:
    """Same structure as dsh's interrupted closers, shifted one seq by the marker."""
    crash = load_golden("crash-persisted.json")
    golden = load_golden("crash-closers.json")
    texts = spec_closer_texts()
    forked = fork_seed(crash, 9, session_id=SID)[11:]
    for got, want in zip(forked, golden):
        want = copy.deepcopy(want)
        want["seq"] += 1
        if want["type"] == "tool/result":
            msg = want["data"]["message"]
            msg["id"] = msg["id"].replace("interrupted-", "forked-")[: -len(str(want["seq"] - 1))] + str(want["seq"])
            started = "sourceEventSeqs" in want
            msg["content"][0]["text"] = texts[("forked", started)]
        if want["type"] == "turn/end":
            want["data"]["reason"]["kind"] = "forked"
        assert js(got) == js(want)


def test_child_messages_start_with_parent_messages() -> None:
    from dshlog.check.surface import derive_messages
    loop = load_golden("loop-events.json")
    crash = load_golden("crash-persisted.json")
    child_a = derive_messages(fork_seed(loop, 15, session_id=SID))
    assert [js(m) for m in child_a] == [js(m) for m in derive_messages(loop[:16])]
    assert len(child_a) == 5
    parent_b = derive_messages(crash)
    child_b = derive_messages(fork_seed(crash, 9, session_id=SID))
    assert len(parent_b) == 3 and len(child_b) == 5
    assert [js(m) for m in child_b[:3]] == [js(m) for m in parent_b]
    assert [m["role"] for m in child_b[3:]] == ["tool", "tool"]


# --- streaming ---------------------------------------------------------------------------------


def test_prefix_is_yielded_verbatim_and_stream_not_read_past_boundary() -> None:
    loop = load_golden("loop-events.json")
    before = copy.deepcopy(loop)
    pulled = 0

    def stream() -> Iterator[dict]:
        nonlocal pulled
        for e in loop:
            pulled += 1
            yield e

    plan: list[ForkPlan] = []
    out = list(build_fork_seed(stream(), 15, session_id=SID, plan=plan))
    assert pulled == 16
    assert all(a is b for a, b in zip(out[:16], loop))  # same objects: callers can copy raw rows
    assert loop == before
    assert plan == [ForkPlan(15, 16, 0)] and plan[0].total == 17


def test_generator_is_lazy() -> None:
    loop = load_golden("loop-events.json")
    gen = build_fork_seed(iter(loop), 3, session_id=SID)
    assert next(gen) is loop[0]


# --- SEMANTICS.md §9 items 26-32 (pure functions) ----------------------------------------------


def test_26_empty_source_forks_an_empty_child() -> None:
    plan: list[ForkPlan] = []
    seed = list(build_fork_seed([], None, session_id=SID, now_ms=1234, plan=plan))
    assert [js(e) for e in seed] == [b'{"type":"session/end-seed","seq":0,"time":1234,"data":{"inherited":true}}']
    assert plan[0].inherited == 0


def test_27_default_boundary_is_the_last_event() -> None:
    loop = load_golden("loop-events.json")
    tail = loop + [ev(41, "session/title", {"title": "t", "messageSeqs": [], "source": "user"})]
    plan: list[ForkPlan] = []
    seed = list(build_fork_seed(tail, session_id=SID, plan=plan))
    assert seed[:42] == tail and all(a is b for a, b in zip(seed, tail))
    assert seed[42]["seq"] == 42 and seed[42]["time"] == tail[41]["time"] and len(seed) == 43
    assert plan[0].inherited == len(tail)


def test_28_fork_at_earlier_turn_while_source_has_open_tail() -> None:
    loop = load_golden("loop-events.json")[:16]
    open_tail = loop + [ev(16, "turn/start", {"turn": 2}), ev(17, "step/start", {"turn": 2, "step": 1})]
    b = at_turn(open_tail, 1)
    assert b == 15
    seed = fork_seed(open_tail, b, session_id=SID)
    assert len(seed) == 17 and seed[-1]["type"] == "session/end-seed"


def test_29_every_turn_end_reason_is_a_valid_boundary() -> None:
    loop = load_golden("loop-events.json")
    ends = [e["seq"] for e in loop if e["type"] == "turn/end"]
    assert ends == [15, 24, 32, 40]
    for b in ends:
        seed = fork_seed(loop, b, session_id=SID)
        assert len(seed) == b + 2  # prefix + marker, no closers


@pytest.mark.parametrize(
    ("events", "at", "message"),
    [
        ([], 0, 'fork boundary 0 does not exist in session "parent" (last seq: none)'),
        ("loop", -1, 'fork boundary for session "parent" must be a non-negative safe integer, got -1'),
        ("loop", 1.5, 'fork boundary for session "parent" must be a non-negative safe integer, got 1.5'),
        ("loop", 2**53, 'fork boundary for session "parent" must be a non-negative safe integer, got 9007199254740992'),
        ("loop", float("nan"), 'fork boundary for session "parent" must be a non-negative safe integer, got NaN'),
        ("loop", True, 'fork boundary for session "parent" must be a non-negative safe integer, got true'),
        ("loop", 41, 'fork boundary 41 does not exist in session "parent" (last seq: 40)'),
        ("corrupt", 2, 'fork boundary 2 does not match a contiguous event seq in session "parent"'),
    ],
)
def test_30_invalid_boundaries(events: Any, at: Any, message: str) -> None:
    if events == "loop":
        events = load_golden("loop-events.json")
    elif events == "corrupt":
        events = copy.deepcopy(load_golden("loop-events.json"))
        events[2]["seq"] = 99
    with pytest.raises(UsageError) as info:
        fork_seed(events, at, session_id=SID)
    assert info.value.message == message


def test_30_float_integer_boundary_is_accepted() -> None:
    loop = load_golden("loop-events.json")
    assert len(fork_seed(loop, 15.0, session_id=SID)) == 17


def test_default_boundary_on_corrupt_tail() -> None:
    loop = copy.deepcopy(load_golden("loop-events.json"))
    loop[40]["seq"] = 99
    with pytest.raises(UsageError, match=r"fork boundary 99 does not exist .*\(last seq: 99\)"):
        fork_seed(loop, session_id=SID)
    loop[40]["seq"] = 3
    with pytest.raises(CorruptLog):
        fork_seed(loop, session_id=SID)


def test_31_cuts_inside_an_open_turn() -> None:
    loop = load_golden("loop-events.json")
    crash = load_golden("crash-persisted.json")
    types = lambda seed, b: [e["type"] for e in seed[b + 2:]]  # noqa: E731
    # empty open turn (cut right at turn/start)
    seed = fork_seed(loop, 17, session_id=SID)
    assert types(seed, 17) == ["turn/end"] and seed[-1]["data"] == {"turn": 2, "reason": {"kind": "forked"}}
    # after a closed step, turn still open
    seed = fork_seed(loop, 11, session_id=SID)
    assert types(seed, 11) == ["turn/end"]
    # after an unrecorded call: a not-started result becomes the last message
    seed = fork_seed(crash, 8, session_id=SID)
    results = [e for e in seed[10:] if e["type"] == "tool/result"]
    assert [r["data"]["message"]["id"] for r in results] == ["forked-tool-result-c1-10", "forked-tool-result-c2-11"]
    assert all(r["data"]["error"]["code"] == "TOOL_NOT_STARTED" for r in results)
    # after an assistant/attempt: step/end + turn/end only
    seed = fork_seed(loop, 21, session_id=SID)
    assert types(seed, 21) == ["step/end", "turn/end"]
    # closed step with an unanswered call is preserved as is
    events = [ev(0, "turn/start", {"turn": 1}), ev(1, "step/start", {"turn": 1, "step": 1}),
              assistant(2, 1, 1, "x"), ev(3, "step/end", {"turn": 1, "step": 1}),
              ev(4, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "m", "code": "E"}}})]
    assert fork_seed(events, 3, session_id=SID)[5:] == [
        {"type": "turn/end", "seq": 5, "time": 103, "data": {"turn": 1, "reason": {"kind": "forked"}}}]
    assert len(fork_seed(events, 4, session_id=SID)) == 6
    # an open plugin bracket is left alone, before the marker
    events = [ev(0, "tool-workflow/run-start", {"id": "w"}), ev(1, "turn/start", {"turn": 1})]
    seed = fork_seed(events, 1, session_id=SID)
    assert [e["type"] for e in seed] == ["tool-workflow/run-start", "turn/start", "session/end-seed", "turn/end"]


def test_31_messages_of_cut_after_unrecorded_call() -> None:
    from dshlog.check.surface import derive_messages
    crash = load_golden("crash-persisted.json")
    derived = derive_messages(fork_seed(crash, 8, session_id=SID))
    assert derived[-1]["role"] == "tool" and derived[-1]["isError"] is True


def test_32_cut_before_or_after_a_replace() -> None:
    """The prefix decides which surface the child sees: original before, compacted after."""
    from dshlog.check.surface import derive_messages
    loop = load_golden("loop-events.json")
    summary = {"content": [{"type": "text", "text": "SUMMARY"}], "source": {"kind": "compact-checkpoint"},
               "role": "user", "id": "s1"}
    replaced = loop + [ev(41, "user/message", summary, surfaceOp={"op": "replace", "startSeq": 5, "endSeq": 13},
                          sourceEventSeqs=[5, 8, 10, 13])]
    before = derive_messages(fork_seed(replaced, 40, session_id=SID))
    after = derive_messages(fork_seed(replaced, 41, session_id=SID))
    assert len(before) == 11
    assert [m["id"] for m in after][:2] == [loop[4]["data"]["message"]["id"], "s1"]


# --- at_turn -----------------------------------------------------------------------------------


def test_at_turn() -> None:
    loop = load_golden("loop-events.json")
    assert [at_turn(loop, n) for n in (1, 2, 3, 4)] == [15, 24, 32, 40]
    with pytest.raises(UsageError, match="turn 1 .*never ended"):
        at_turn(load_golden("crash-persisted.json"), 1, session_id="s")
    with pytest.raises(UsageError, match="turn 5 does not exist"):
        at_turn(loop, 5)
    with pytest.raises(UsageError):
        at_turn(loop, 0)


# --- child header --------------------------------------------------------------------------------

PARENT = {"type": "session", "version": 4, "id": "p-1", "createdAt": 5, "cwd": "/home/ann/p",
          "isSeeded": False, "delegationDepth": 0, "agentPreset": "ptc"}


def test_user_fork_child_header() -> None:
    header = child_header(PARENT, new_id="c-1", created_at=9)
    assert js(header) == (b'{"type":"session","version":4,"id":"c-1","createdAt":9,"cwd":"/home/ann/p",'
                          b'"parentSession":"p-1","isSeeded":true,"delegationDepth":0}')


def test_user_fork_of_a_subagent_session_is_not_a_subagent() -> None:
    sub = {"type": "session", "version": 4, "id": "s", "createdAt": 1, "parentSession": "p-1",
           "isSeeded": True, "origin": "subagent", "delegationDepth": 1}
    header = child_header(sub, new_id="c", created_at=2, agent_preset="ptc")
    assert js(header) == (b'{"type":"session","version":4,"id":"c","createdAt":2,"parentSession":"s",'
                          b'"isSeeded":true,"delegationDepth":0,"agentPreset":"ptc"}')


def test_subagent_child_header_key_order() -> None:
    header = child_header({**PARENT, "delegationDepth": 1}, new_id="c", created_at=3, subagent=True)
    assert list(header) == ["type", "version", "id", "createdAt", "cwd", "parentSession", "isSeeded", "origin",
                            "delegationDepth"]
    assert header["origin"] == "subagent" and header["delegationDepth"] == 2


def test_child_header_rejects_bad_input() -> None:
    with pytest.raises(UsageError):
        child_header(PARENT, new_id="", created_at=1)
    with pytest.raises(UsageError, match='session "p-1" already exists'):
        child_header(PARENT, new_id="p-1", created_at=1)
    with pytest.raises(UsageError):
        child_header(PARENT, new_id="c", created_at=-1)


def test_js_string() -> None:
    assert [js_string(v) for v in (1e-7, 1e21, -0.0, float("inf"), 2.5, None)] == [
        "1e-7", "1e+21", "0", "Infinity", "2.5", "null"]


@pytest.mark.parametrize("name", ["loop-events.json", "crash-persisted.json"])
def test_every_cut_gives_a_balanced_contiguous_seed(name: str) -> None:
    from dshlog.model.repair import open_turn_closers, scan_tail

    events = load_golden(name)
    for b in range(len(events)):
        seed = fork_seed(events, b, session_id=SID)
        marker = seed[b + 1]
        assert seed[: b + 1] == events[: b + 1]
        assert marker == {"type": "session/end-seed", "seq": b + 1, "time": events[b]["time"],
                          "data": {"inherited": True}}
        assert seed[b + 2:] == open_turn_closers(events[: b + 1] + [marker], "forked")
        assert [e["seq"] for e in seed] == list(range(len(seed)))
        assert scan_tail(seed).balanced and scan_tail(seed).pending == ()
