"""Acceptance: the model view and requests of dsh's own four-turn run (golden/EXPECTED.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from dshlog.errors import UsageError
from dshlog.output.text import message_text
from dshlog.model.requests import RequestBuilder, iter_requests, rebuild
from dshlog.check.surface import SurfaceError, SurfaceFold, fold


def _shared() -> Path:
    env = os.environ.get("DSHLOG_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"


LOOP = _shared() / "golden" / "loop-events.json"


@pytest.fixture(scope="module")
def log() -> list[dict]:
    if not LOOP.is_file():
        pytest.skip(f"golden log not found at {LOOP} (set DSHLOG_SHARED to the shared folder)")
    events = json.loads(LOOP.read_text(encoding="utf-8"))
    assert len(events) == 41
    return events


def _bytes(value: object) -> bytes:
    return orjson.dumps(value)


# ---------------------------------------------------------------- surface


def test_surface_nodes_and_roles(log: list[dict]) -> None:
    state = fold(log)
    assert state.nodes == [4, 5, 8, 10, 13, 20, 22, 29, 30, 37, 38]
    assert [m["role"] for m in state.messages()] == [
        "system", "user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant", "user",
        "assistant",
    ]
    assert state.replacements == [] and state.replace_generation == 0
    # Derived messages are the stored objects themselves.
    by_seq = {4: log[4]["data"]["message"], 5: log[5]["data"], 10: log[10]["data"]["message"]}
    msgs = state.messages()
    assert msgs[0] is by_seq[4] and msgs[1] is by_seq[5] and msgs[3] is by_seq[10]


def test_attempt_never_enters_surface(log: list[dict]) -> None:
    assert 21 not in fold(log).nodes
    assert fold(log, until_seq=21).nodes == [4, 5, 8, 10, 13, 20]


def test_seed_previews_match_dsh_demo(log: list[dict]) -> None:
    # dsh's demo printed `<role> ` + first 50 chars of JSON.stringify(text).
    expected = [
        'system "You are an AI agent powered by DeepSeek Harness.\\',
        'user "go"',
        'assistant "calling echo[tool-call echo]"',
        'tool "echo: one"',
        'assistant "done"',
        'user "again"',
        'assistant "ok"',
        'user "讲讲三点"',
        'assistant "第一点是"',
        'user "第二点展开讲讲"',
        'assistant "第二点是……"',
    ]
    got = [f'{m["role"]} {json.dumps(message_text(m), ensure_ascii=False)[:50]}' for m in fold(log).messages()]
    assert got == expected


SUMMARY = "SUMMARY: user said go; echo returned one; assistant said done"


def _seeded(log: list[dict]) -> SurfaceFold:
    state = SurfaceFold()
    for event in log:
        state.apply(event)
    # Session.create appends the ordinary end-seed marker after a seed.
    state.apply({"type": "session/end-seed", "seq": 41, "time": log[-1]["time"], "data": {}})
    return state


def _summary_event() -> dict:
    return {
        "type": "user/message",
        "seq": 42,
        "time": 1792499042300,
        "data": {
            "content": [{"type": "text", "text": SUMMARY}],
            "source": {"kind": "compact-checkpoint"},
            "role": "user",
            "id": "summary-42",
        },
        "sourceEventSeqs": [5, 8, 10, 13],
        "surfaceOp": {"op": "replace", "startSeq": 5, "endSeq": 13},
    }


def test_constructed_replace(log: list[dict]) -> None:
    state = _seeded(log)
    assert state.nodes == [4, 5, 8, 10, 13, 20, 22, 29, 30, 37, 38]
    state.apply(_summary_event())
    assert state.nodes == [4, 42, 20, 22, 29, 30, 37, 38]
    assert state.next_seq == 43
    assert state.replacements == [{"seq": 42, "start": 5, "end": 13, "shadowedSeqs": [5, 8, 10, 13]}]
    second = state.messages()[1]
    assert f'{second["role"]} {json.dumps(message_text(second))[:50]}' == (
        'user "SUMMARY: user said go; echo returned one; assista'
    )
    # The whole-log fold agrees with the incremental one.
    whole = log + [{"type": "session/end-seed", "seq": 41, "time": log[-1]["time"], "data": {}}, _summary_event()]
    assert fold(whole).nodes == [4, 42, 20, 22, 29, 30, 37, 38]


def _user_replace(seq: int, start: int, end: int, sources: list[int] | None) -> dict:
    event = {
        "type": "user/message",
        "seq": seq,
        "time": 0,
        "data": {"content": [{"type": "text", "text": "x"}], "source": {"kind": "user"}, "role": "user", "id": f"u{seq}"},
    }
    if sources is not None:
        event["sourceEventSeqs"] = sources
    event["surfaceOp"] = {"op": "replace", "startSeq": start, "endSeq": end}
    return event


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (
            _user_replace(43, 4, 4, [4]),
            "surface replace: node 0 holds the system prompt and may be rewritten only by a system/message over "
            "exactly that node",
        ),
        (
            _user_replace(43, 20, 22, None),
            "surface replace: sourceEventSeqs must include every shadowed surface node; missing 20, 22",
        ),
        (
            _user_replace(43, 20, 22, [42]),
            "surface replace: sourceEventSeqs must include every shadowed surface node; missing 20, 22",
        ),
    ],
)
def test_seed_refusals(log: list[dict], event: dict, text: str) -> None:
    state = _seeded(log)
    state.apply(_summary_event())
    before = (list(state.nodes), state.replace_generation, state.next_seq, len(state.replacements))
    with pytest.raises(SurfaceError) as info:
        state.apply(event)
    assert info.value.message == text
    assert (list(state.nodes), state.replace_generation, state.next_seq, len(state.replacements)) == before


# ---------------------------------------------------------------- requests

SETTLEMENTS = [(8, "assistant/message", 2), (13, "assistant/message", 4), (21, "assistant/attempt", 6),
               (22, "assistant/message", 6), (30, "assistant/message", 8), (38, "assistant/message", 10)]


def test_six_requests(log: list[dict]) -> None:
    infos = list(iter_requests(log))
    assert [(i.seq, i.kind, i.message_count) for i in infos] == SETTLEMENTS
    assert [i.number for i in infos] == [1, 2, 3, 4, 5, 6]
    assert [i.extends for i in infos] == [None, True, True, True, True, True]
    assert all(i.reason is None for i in infos)
    assert infos[0].header_reason == "initial" and all(i.header_seq == 6 for i in infos)
    assert (infos[0].input_tokens, infos[0].output_tokens) == (10, 5)
    assert infos[4].interrupted is True


def test_requests_rebuild_from_prefix_equal_whole_log(log: list[dict]) -> None:
    for number, (seq, _kind, count) in enumerate(SETTLEMENTS, start=1):
        whole = rebuild(log, number, session_id="s1")
        builder = RequestBuilder(session_id="s1")
        for event in log[:seq]:
            builder.apply(event)
        prefix = builder.build()
        assert _bytes(prefix) == _bytes(whole)
        assert len(whole["messages"]) == count
        assert list(whole) == ["provider", "model", "messages", "toolHistory", "tools", "sessionId"]
        assert whole["tools"] is log[6]["data"]["header"]["tools"]
        assert whole["toolHistory"] == {"tools": log[6]["data"]["header"]["tools"], "updates": []}
        assert list(whole["toolHistory"]) == ["tools", "updates"]


def test_requests_three_and_four_identical_and_last_carries_prefix(log: list[dict]) -> None:
    r3, r4, r6 = rebuild(log, 3), rebuild(log, 4), rebuild(log, 6)
    assert _bytes(r3) == _bytes(r4)
    assert "第一点是" in _bytes(r6["messages"]).decode()
    assert r6["messages"][8] is log[30]["data"]["message"]
    assert "sessionId" not in r6


def test_each_request_extends_previous_byte_for_byte(log: list[dict]) -> None:
    previous = None
    for number in range(1, 7):
        msgs = rebuild(log, number)["messages"]
        if previous is not None:
            assert [_bytes(m) for m in msgs[: len(previous)]] == [_bytes(m) for m in previous]
        previous = msgs


def test_request_out_of_range(log: list[dict]) -> None:
    with pytest.raises(UsageError) as info:
        rebuild(log, 7)
    assert info.value.message == "request 7 does not exist: the log holds 6 requests"
    with pytest.raises(UsageError):
        rebuild(log, 0)
