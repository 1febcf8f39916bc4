"""Surface fold and message derivation (SEMANTICS §2, §3; dsh spec cases §9 items 1-15, 33)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dshlog.errors import CorruptLog, UnsupportedVersion
from dshlog.check.surface import derive_messages
from dshlog.model.requests import RequestBuilder
from dshlog.check.surface import SurfaceError, SurfaceFold, fold

# ---------------------------------------------------------------- event builders


def ev(seq: int, etype: str, data: Any, **extra: Any) -> dict:
    event = {"type": etype, "seq": seq, "time": 0, "data": data}
    for key in ("sourceEventSeqs", "surfaceOp", "ignorable"):
        if key in extra:
            event[key] = extra.pop(key)
    assert not extra
    return event


def _op(op: Any, sources: Any) -> dict:
    extra: dict[str, Any] = {}
    if sources is not None:
        extra["sourceEventSeqs"] = sources
    if op is not None:
        extra["surfaceOp"] = op
    return extra


def rep(start: int, end: int) -> dict:
    return {"op": "replace", "startSeq": start, "endSeq": end}


def user(seq: int, text: str = "hi", op: Any = "append", sources: Any = None, content: Any = None) -> dict:
    data = {
        "content": content if content is not None else [{"type": "text", "text": text}],
        "source": {"kind": "user"},
        "role": "user",
        "id": f"u{seq}",
    }
    return ev(seq, "user/message", data, **_op(op, sources))


def system(seq: int, text: str | None = "prompt", op: Any = "append", sources: Any = None) -> dict:
    message = {
        "role": "system",
        "content": [] if text is None else [{"type": "text", "text": text}],
        "source": {"kind": "system-prompt"},
        "id": f"s{seq}",
    }
    return ev(seq, "system/message", {"turn": 1, "step": 1, "message": message}, **_op(op, sources))


def assistant(seq: int, text: str | None = "ok", calls: list[str] = (), op: Any = "append", sources: Any = None) -> dict:
    content: list[dict] = [] if text is None else [{"type": "text", "text": text}]
    content += [{"type": "tool-call", "id": c, "name": "echo", "arguments": "{}"} for c in calls]
    message = {"role": "assistant", "content": content, "source": {"kind": "model", "provider": "p", "model": "m"},
               "id": f"a{seq}"}
    return ev(seq, "assistant/message", {"turn": 1, "step": 1, "message": message, "stream": []}, **_op(op, sources))


def tool(seq: int, call: str = "c1", text: str = "out", op: Any = "append", sources: Any = None,
         meta: Any = None, is_error: bool = False, msg_id: str | None = None) -> dict:
    message = {"role": "tool", "source": {"kind": "tool", "callId": call}, "toolCallId": call,
               "content": [{"type": "text", "text": text}], "isError": is_error, "id": msg_id or f"t{call}"}
    data: dict[str, Any] = {"turn": 1, "step": 1, "message": message}
    if meta is not None:
        data["meta"] = meta
    return ev(seq, "tool/result", data, **_op(op, sources))


def developer(seq: int, blocks: list[dict], header_seq: int | None = None, op: Any = "append",
              sources: Any = None, role: str = "developer") -> dict:
    message = {"role": role, "content": blocks, "source": {"kind": "tool-update"}, "id": f"d{seq}"}
    data: dict[str, Any] = {"turn": 1, "step": 1, "message": message}
    if header_seq is not None:
        data["headerSeq"] = header_seq
    return ev(seq, "developer/message", data, **_op(op, sources))


def attempt(seq: int) -> dict:
    return ev(seq, "assistant/attempt", {"turn": 1, "step": 1, "stream": []})


def header(seq: int, tools: list[dict] | None = None, reason: str = "initial", **more: Any) -> dict:
    h: dict[str, Any] = {"config": {"provider": "p", "model": "m"}}
    if tools:
        h["tools"] = tools
    data: dict[str, Any] = {"header": h, "reason": reason}
    data.update(more)
    return ev(seq, "request/header", data)


def boundary(seq: int, etype: str = "turn/start") -> dict:
    data = {"turn": 1} if etype.startswith("turn/") else {"turn": 1, "step": 1}
    return ev(seq, etype, data)


ECHO = {"name": "echo", "description": "echo back", "parameters": {"type": "object"}}


def refused(events: list[dict], candidate: dict, exc: type = SurfaceError) -> str:
    """Fold ``events``, then check that ``candidate`` is refused atomically; return the text."""
    state = fold(events)
    snapshot = (list(state.nodes), state.replace_generation, state.content_generation, state.next_seq,
                copy.deepcopy(state.replacements), dict(state.projected))
    with pytest.raises(exc) as info:
        state.apply(candidate)
    assert (list(state.nodes), state.replace_generation, state.content_generation, state.next_seq,
            state.replacements, dict(state.projected)) == snapshot
    return info.value.message


# ---------------------------------------------------------------- §9.1 / §9.2 source references


def test_absent_sources_and_full_citation_are_fine() -> None:
    state = fold([user(0), user(1), user(2, op=rep(0, 1), sources=[1, 0])])
    assert state.nodes == [2]
    assert state.replacements == [{"seq": 2, "start": 0, "end": 1, "shadowedSeqs": [0, 1]}]


@pytest.mark.parametrize(
    ("candidate", "text"),
    [
        (ev(1, "turn/start", {"turn": 1}, sourceEventSeqs=[0]),
         'session event "turn/start" is not surface-eligible and cannot carry sourceEventSeqs'),
        (assistant(1, sources=[]), "assistant/message embeds its source stream and cannot carry sourceEventSeqs"),
        (assistant(1, sources=[0]), "assistant/message embeds its source stream and cannot carry sourceEventSeqs"),
        (user(1, sources="0"), "sourceEventSeqs on event at seq 1 must be an array when present"),
        (user(1, sources=None) | {"sourceEventSeqs": None}, "sourceEventSeqs on event at seq 1 must be an array when present"),
        (user(1, sources=[]), "sourceEventSeqs must not be empty"),
        (user(1, sources=[0, 0]), "sourceEventSeqs must not contain duplicates"),
        (user(1, sources=[0, 5, 0]), "sourceEventSeqs must not contain duplicates"),
        (user(1, sources=[-1]), 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'),
        (user(1, sources=[0.5]), 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'),
        (user(1, sources=["0"]), 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'),
        (user(1, sources=[True]), 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'),
        (user(1, sources=[5, -1]), 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'),
        (user(1, sources=[2**53]), 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'),
        (user(1, sources=[1]), "sourceEventSeqs must reference earlier events: 1 >= current seq 1"),
        (user(1, sources=[0, 7, 3]), "sourceEventSeqs must reference earlier events: 7 >= current seq 1"),
    ],
)
def test_source_reference_errors(candidate: dict, text: str) -> None:
    assert refused([user(0)], candidate) == text


def test_integral_float_source_is_a_seq() -> None:
    assert fold([user(0), tool(1, sources=[0.0])]).nodes == [0, 1]


# ---------------------------------------------------------------- §9.3 / §9.4 / §9.6 / §9.7 ranges and ops


def test_non_contiguous_seq() -> None:
    assert refused([user(0)], user(2)) == "session event seq 2 is not contiguous; expected 1"
    assert refused([], user(1)) == "session event seq 1 is not contiguous; expected 0"


def test_replace_missing_citation() -> None:
    assert refused([user(0), user(1)], user(2, op=rep(0, 1), sources=[0])) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 1"
    )


def test_positional_ranges() -> None:
    events = [user(0), user(1), user(2, op=rep(0, 0), sources=[0])]
    assert fold(events).nodes == [2, 1]
    state = fold(events + [user(3, op=rep(2, 1), sources=[2, 1])])
    assert state.nodes == [3]
    assert state.replacements == [
        {"seq": 2, "start": 0, "end": 0, "shadowedSeqs": [0]},
        {"seq": 3, "start": 2, "end": 1, "shadowedSeqs": [2, 1]},
    ]
    assert state.replace_generation == 2 and state.content_generation == 2
    assert refused(events, user(3, op=rep(1, 2), sources=[1, 2])) == (
        "surface replace: start seq 1 (index 1) is after end seq 2 (index 0)"
    )
    assert refused(events, user(3, op=rep(0, 1), sources=[0, 1])) == "surface replace: start seq 0 not found in surface"
    assert refused(events, user(3, op=rep(2, 0), sources=[0, 2])) == "surface replace: end seq 0 not found in surface"


def test_replace_must_reference_earlier_events() -> None:
    assert refused([user(0)], user(1, op=rep(0, 1), sources=[0])) == (
        "surface replace at seq 1: startSeq and endSeq must reference earlier events"
    )


@pytest.mark.parametrize(
    "op",
    [
        {"op": "replace", "startSeq": -0.0, "endSeq": 0},
        {"op": "replace", "startSeq": 0, "endSeq": 0, "extra": 1},
        {"op": "replace", "start": 0, "end": 0},
        {"op": "Replace", "startSeq": 0, "endSeq": 0},
        {"op": "replace", "startSeq": "0", "endSeq": 0},
        {"op": "replace", "startSeq": 0.5, "endSeq": 0},
        {"op": "replace", "startSeq": True, "endSeq": 0},
        {},
    ],
)
def test_invalid_replace_op(op: dict) -> None:
    assert refused([user(0)], user(1, op=op, sources=[0])) == (
        'session event "user/message" carries an invalid replace surfaceOp'
    )


@pytest.mark.parametrize("op", [None, [], "prepend", 5, ["replace", 0, 0]])
def test_invalid_surface_op(op: Any) -> None:
    candidate = user(1, op="append")
    candidate["surfaceOp"] = op
    assert refused([user(0)], candidate) == 'session event "user/message" carries an invalid surfaceOp'


# ---------------------------------------------------------------- §9.5 tool-result rewrites


def test_tool_result_rewrites() -> None:
    base = [user(0), tool(1, "c1", meta={"cwd": "/w", "list": [1, 2]}), tool(2, "c2")]
    ok = tool(3, "c1", text="shorter", op=rep(1, 1), sources=[1], meta={"list": [1, 2], "cwd": "/w"})
    state = fold(base + [ok])
    assert state.nodes == [0, 3, 2]
    assert state.messages()[1]["content"] == [{"type": "text", "text": "shorter"}]
    assert refused(base, tool(3, "c1", op=rep(1, 2), sources=[1, 2])) == (
        "tool/result surface replacement must rewrite exactly one current node"
    )
    assert refused(base, tool(3, "c1", op=rep(0, 0), sources=[0])) == (
        "tool/result surface replacement must target a current tool/result"
    )
    changes = [
        tool(3, "cX", op=rep(1, 1), sources=[1], meta={"cwd": "/w", "list": [1, 2]}),
        tool(3, "c1", op=rep(1, 1), sources=[1], meta={"cwd": "/w", "list": [2, 1]}),
        tool(3, "c1", op=rep(1, 1), sources=[1], meta={"cwd": "/w", "list": [1, 2]}, is_error=True),
        tool(3, "c1", op=rep(1, 1), sources=[1], meta={"cwd": "/w", "list": [1, 2]}, msg_id="other"),
        tool(3, "c1", op=rep(1, 1), sources=[1]),
    ]
    for candidate in changes:
        assert refused(base, candidate) == "tool/result surface replacement may change only content"


def test_tool_result_rewrite_true_is_not_one() -> None:
    base = [tool(0, "c1", meta={"flag": True})]
    assert refused(base, tool(1, "c1", op=rep(0, 0), sources=[0], meta={"flag": 1})) == (
        "tool/result surface replacement may change only content"
    )


# ---------------------------------------------------------------- §9.8 / §9.9 atomicity and markers


def test_failed_candidate_leaves_state_untouched_then_valid_one_applies() -> None:
    state = fold([user(0), user(1)])
    with pytest.raises(SurfaceError):
        state.apply(user(2, op=rep(0, 1), sources=[0]))
    assert state.nodes == [0, 1] and state.next_seq == 2 and state.replacements == []
    state.apply(user(2, op=rep(0, 1), sources=[0, 1]))
    assert state.nodes == [2]


def test_marker_rules() -> None:
    markerless = user(0)
    del markerless["surfaceOp"]
    assert refused([], markerless) == 'session event "user/message" is surface-eligible and requires a surfaceOp marker'
    assert refused([], ev(0, "turn/start", {"turn": 1}, surfaceOp="append")) == (
        'session event "turn/start" is not surface-eligible and cannot carry surfaceOp'
    )
    assert refused([], ev(0, "assistant/attempt", {"turn": 1, "step": 1, "stream": []}, surfaceOp="append")) == (
        'session event "assistant/attempt" is not surface-eligible and cannot carry surfaceOp'
    )


def test_unknown_types() -> None:
    # Unknown ignorable: opaque metadata is never interpreted.
    noise = ev(1, "plugin/thing", {"x": 1}, surfaceOp={"weird": True}, sourceEventSeqs="any", ignorable=True)
    state = fold([user(0), noise, user(2)])
    assert state.nodes == [0, 2] and state.unknown_types == {"plugin/thing": 1}
    # Unknown required type: refused by default, log-only on request.
    with pytest.raises(UnsupportedVersion) as info:
        fold([user(0), ev(1, "plugin/thing", {})])
    assert info.value.message == 'format v4 contains unknown event type "plugin/thing" at seq 1'
    assert fold([user(0), ev(1, "plugin/thing", {})], strict_unknown=False).nodes == [0]
    lax = SurfaceFold(strict_unknown=False)
    lax.apply(user(0))
    with pytest.raises(SurfaceError) as info2:
        lax.apply(ev(1, "plugin/thing", {}, surfaceOp="append"))
    assert info2.value.message == 'session event "plugin/thing" is not surface-eligible and cannot carry surfaceOp'
    # A *known* log-only type marked ignorable is still checked.
    assert refused([], ev(0, "turn/start", {"turn": 1}, surfaceOp="append", ignorable=True)) == (
        'session event "turn/start" is not surface-eligible and cannot carry surfaceOp'
    )


# ---------------------------------------------------------------- §9.10 - §9.13 derivation


def test_boundaries_only_and_attempts() -> None:
    events = [boundary(0), boundary(1, "step/start"), attempt(2), boundary(3, "step/end"), boundary(4, "turn/end")]
    state = fold(events)
    assert state.nodes == [] and state.messages() == []
    assert derive_messages([user(0), attempt(1), assistant(2)]) == [user(0)["data"], assistant(2)["data"]["message"]]


def test_middle_single_and_range_replace() -> None:
    base = [user(0), user(1), user(2)]
    state = fold(base + [user(3, op=rep(1, 1), sources=[1])])
    assert state.nodes == [0, 3, 2]
    state.apply(user(4, op=rep(3, 2), sources=[3, 2]))
    assert state.nodes == [0, 4]
    assert [m["id"] for m in state.messages()] == ["u0", "u4"]
    assert state.shadowed_count == 3


def test_empty_assistant_stays_node_but_derives_nothing() -> None:
    state = fold([user(0), assistant(1, text=None)])
    assert state.nodes == [0, 1]
    assert [m["role"] for m in state.messages()] == ["user"]
    assert [n["empty"] for n in state.node_info()] == [False, True]


def test_empty_tool_result_still_derives() -> None:
    t = tool(1)
    t["data"]["message"]["content"] = []
    assert fold([user(0), t]).messages()[1] is t["data"]["message"]


def test_system_head_rules() -> None:
    base = [system(0), user(1)]
    assert [m["role"] for m in fold(base).messages()] == ["system", "user"]
    emptied = fold(base + [system(2, text=None, op=rep(0, 0), sources=[0])])
    assert emptied.nodes == [2, 1] and [m["role"] for m in emptied.messages()] == ["user"]
    assert fold(base + [system(2, "new", op=rep(0, 0), sources=[0])]).messages()[0]["id"] == "s2"
    head = "surface replace: node 0 holds the system prompt and may be rewritten only by a system/message over exactly that node"
    assert refused(base, user(2, op=rep(0, 0), sources=[0])) == head
    assert refused(base, system(2, op=rep(0, 1), sources=[0, 1])) == head
    # Later system nodes are not protected; a non-system head is not protected.
    later = [system(0), user(1), system(2), user(3)]
    assert fold(later + [user(4, op=rep(1, 3), sources=[1, 2, 3])]).nodes == [0, 4]
    assert fold([user(0), system(1), user(2, op=rep(0, 1), sources=[0, 1])]).nodes == [2]
    # A replacement that does not start at node 0 may swallow later system nodes.
    assert [m["role"] for m in fold(later).messages()] == ["system", "user", "system", "user"]


def test_seeded_system_message_shape() -> None:
    wrong_role = system(0)
    wrong_role["data"]["message"]["role"] = "user"
    with pytest.raises(CorruptLog) as info:
        fold([wrong_role])
    assert info.value.message == 'seed system/message at index 0 message must have role "system"'
    wrong_source = system(0)
    wrong_source["data"]["message"]["source"] = {"kind": "user"}
    with pytest.raises(CorruptLog) as info:
        fold([wrong_source])
    assert info.value.message == "seed system/message at index 0 message must have system-prompt source"


@pytest.mark.parametrize(
    ("mutate", "text"),
    [
        (lambda e: e["data"].pop("id"), "seed user/message at index 0 lacks an identified message"),
        (lambda e: e["data"].update(role="assistant"), 'seed user/message at index 0 message must have role "user"'),
        (lambda e: e["data"].update(source="user"), "seed user/message at index 0 message has invalid source"),
        (lambda e: e["data"].update(content="hi"), "seed user/message at index 0 message has invalid content"),
    ],
)
def test_user_message_shape(mutate: Any, text: str) -> None:
    event = user(0)
    mutate(event)
    with pytest.raises(CorruptLog) as info:
        fold([event])
    assert info.value.message == text


def test_tool_and_assistant_shape() -> None:
    bad = tool(0)
    bad["data"]["message"]["toolCallId"] = "other"
    with pytest.raises(CorruptLog, match="message has mismatched tool call ids"):
        fold([bad])
    bad = assistant(0)
    bad["data"]["message"]["source"] = {"kind": "model", "provider": "", "model": "m"}
    with pytest.raises(CorruptLog, match="seed assistant/message at index 0 message must have model source"):
        fold([bad])
    bad = tool(0)
    bad["data"]["error"] = {"name": "E", "code": "X"}
    with pytest.raises(SurfaceError) as info:
        fold([bad])
    assert info.value.message == 'session event "tool/result" at seq 0 error requires message.isError === true'


# ---------------------------------------------------------------- §9.15 developer messages


def test_developer_messages() -> None:
    base = [header(0, [ECHO]), user(1)]
    add = developer(2, [{"type": "tool-addition", "toolName": "echo"}], header_seq=0)
    state = fold(base + [add])
    assert [m["role"] for m in state.messages()] == ["user", "developer"]
    assert fold(base + [developer(2, [])]).messages() == [base[1]["data"]]  # empty developer derives nothing
    restored = fold(base + [add, developer(3, [{"type": "tool-removal", "toolName": "echo"}], op=rep(2, 2), sources=[2])])
    assert restored.messages()[1]["id"] == "d3"


@pytest.mark.parametrize(
    ("candidate", "text"),
    [
        (developer(2, [], role="user"),
         'session event "developer/message" at seq 2 developer/message and developer role must occur together'),
        (developer(2, [{"type": "tool-addition", "toolName": ""}], header_seq=0),
         'session event "developer/message" at seq 2 tool-addition requires a nonempty toolName'),
        (developer(2, [{"type": "tool-addition", "toolName": "echo", "tool": ECHO}], header_seq=0),
         'session event "developer/message" at seq 2 tool-addition must omit inline tool definitions'),
        (developer(2, [{"type": "tool-addition", "toolName": "echo"}]),
         'session event "developer/message" at seq 2 requires headerSeq exactly when tool additions are present'),
        (developer(2, [{"type": "tool-removal", "toolName": "echo"}], header_seq=0),
         'session event "developer/message" at seq 2 requires headerSeq exactly when tool additions are present'),
        (developer(2, [{"type": "tool-addition", "toolName": "echo"}], header_seq=1),
         "developer/message headerSeq must reference an earlier request/header"),
        (developer(2, [{"type": "tool-addition", "toolName": "fetch"}], header_seq=0),
         'developer/message tool-addition "fetch" must name exactly one tool in headerSeq 0'),
    ],
)
def test_developer_errors(candidate: dict, text: str) -> None:
    assert refused([header(0, [ECHO]), user(1)], candidate) == text


def test_developer_header_definitions() -> None:
    incomplete = {"name": "echo", "parameters": {}}
    assert refused([header(0, [incomplete]), user(1)],
                   developer(2, [{"type": "tool-addition", "toolName": "echo"}], header_seq=0)) == (
        'developer/message tool-addition "echo" requires a complete tool definition in headerSeq 0'
    )
    deferred = dict(ECHO, deferLoading=False)
    assert refused([header(0, [deferred]), user(1)],
                   developer(2, [{"type": "tool-addition", "toolName": "echo"}], header_seq=0)) == (
        "developer/message referenced tool deferLoading must be true when present"
    )


def test_tool_change_blocks_outside_developer() -> None:
    bad = user(0, content=[{"type": "tool-addition", "toolName": "echo"}])
    assert refused([], bad) == 'session event "user/message" at seq 0 tool-change blocks require developer role'


def test_request_header_data_rules() -> None:
    h = header(0)
    h["data"]["header"]["system"] = ""
    assert refused([], h) == 'session event "request/header" at seq 0 must omit header.system; use system/message'
    h = header(0)
    h["data"]["header"]["tools"] = []
    assert refused([], h) == 'session event "request/header" at seq 0 must omit empty tools'
    h = header(0)
    h["data"]["header"]["adapterDefaults"] = {}
    assert refused([], h) == 'session event "request/header" at seq 0 must omit empty adapterDefaults'


# ---------------------------------------------------------------- image/offload projection


def _image(att: str, **more: Any) -> dict:
    return {"type": "image", "attachment": {"attachmentId": att}, **more}


def test_image_offload_projection() -> None:
    u = user(0, content=[_image("a"), {"type": "text", "text": "t"}, _image("b"), _image("c")])
    off = ev(1, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0, 2]}]})
    state = fold([u, off])
    projected = state.messages()[0]
    assert projected is not u["data"] and state.content_generation == 1 and state.replace_generation == 0
    assert projected["content"][0] == {"type": "image", "attachment": {"attachmentId": "a"}, "offloaded": True}
    assert projected["content"][1] is u["data"]["content"][1]
    assert "offloaded" not in projected["content"][2] and projected["content"][3]["offloaded"] is True
    assert list(projected) == list(u["data"]) and projected["id"] == "u0"
    assert "offloaded" not in u["data"]["content"][0]  # input untouched
    # A later offload counts already-offloaded images and refuses them twice.
    again = ev(2, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0]}]})
    assert refused([u, off], again) == "image/offload: image index 0 is already offloaded"
    more = ev(2, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [1]}]})
    assert fold([u, off, more]).messages()[0]["content"][2]["offloaded"] is True


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ({"targets": []}, "image/offload: data must contain a nonempty targets array"),
        ({"targets": [{"seq": 0, "imageIndexes": [0]}], "x": 1}, "image/offload: data must contain a nonempty targets array"),
        ({"targets": [{"seq": 0}]}, "image/offload: each target must contain a seq and nonempty imageIndexes"),
        ({"targets": [{"seq": 0, "imageIndexes": []}]}, "image/offload: each target must contain a seq and nonempty imageIndexes"),
        ({"targets": [{"seq": 0, "imageIndexes": [0]}, {"seq": 0, "imageIndexes": [1]}]}, "image/offload: duplicate target seq 0"),
        ({"targets": [{"seq": 5, "imageIndexes": [0]}]}, "image/offload: target seq 5 is not a current surface node"),
        ({"targets": [{"seq": 1, "imageIndexes": [0]}]}, "image/offload: target seq 1 must be user/message or tool/result"),
        ({"targets": [{"seq": 0, "imageIndexes": [1, 1]}]}, "image/offload: imageIndexes must be strictly increasing non-negative safe integers"),
        ({"targets": [{"seq": 0, "imageIndexes": [3]}]}, "image/offload: image index 3 does not exist"),
    ],
)
def test_image_offload_errors(data: dict, text: str) -> None:
    u = user(0, content=[_image("a"), _image("b")])
    assert refused([u, assistant(1)], ev(2, "image/offload", data)) == text


# ---------------------------------------------------------------- §9.33 properties (hypothesis)


@st.composite
def v4_logs(draw: st.DrawFn) -> tuple[list[dict], list[list[int]]]:
    """A valid v4 log plus, for every prefix length k, the nodes an independent
    simple model says the surface holds after k events."""
    events: list[dict] = []
    model: list[int] = []
    kinds: dict[int, str] = {}
    history: list[list[int]] = [[]]
    pending: list[str] = []
    tool_payload: dict[int, dict] = {}
    n_actions = draw(st.integers(min_value=0, max_value=40))
    if draw(st.booleans()):
        events.append(system(0))
        model.append(0)
        kinds[0] = "system/message"
        history.append(list(model))
    for _ in range(n_actions):
        seq = len(events)
        action = draw(st.sampled_from(
            ["noise", "user", "assistant", "empty", "calls", "result", "attempt", "compact", "head", "rewrite", "header"]
        ))
        event: dict | None = None
        if action == "noise":
            etype = draw(st.sampled_from(["turn/start", "step/start", "step/end", "session/title", "request/context"]))
            event = ev(seq, etype, {"turn": 1, "step": 1}) if etype.startswith(("turn", "step")) else ev(seq, etype, {"x": seq})
        elif action == "header":
            event = header(seq, [ECHO], reason=draw(st.sampled_from(["initial", "change", "series"])))
        elif action == "attempt":
            event = attempt(seq)
        elif action == "user":
            event = user(seq, text=f"u{seq}")
        elif action == "assistant":
            event = assistant(seq, text=f"a{seq}")
        elif action == "empty":
            event = assistant(seq, text=None)
        elif action == "calls":
            calls = [f"c{seq}_{i}" for i in range(draw(st.integers(1, 2)))]
            pending.extend(calls)
            event = assistant(seq, text=None if draw(st.booleans()) else "t", calls=calls)
        elif action == "result" and pending:
            call = pending.pop(0)
            event = tool(seq, call, text=f"r{seq}", msg_id=f"t{seq}")
            tool_payload[seq] = event["data"]
        elif action == "compact" and model:
            lo = 1 if kinds[model[0]] == "system/message" else 0
            if lo < len(model):
                a = draw(st.integers(lo, len(model) - 1))
                b = draw(st.integers(a, len(model) - 1))
                shadowed = model[a : b + 1]
                extra = draw(st.lists(st.integers(0, seq - 1), max_size=2))
                sources = list(dict.fromkeys(draw(st.permutations(shadowed)) + extra))
                event = user(seq, text=f"summary{seq}", op=rep(model[a], model[b]), sources=sources)
        elif action == "head" and model and kinds[model[0]] == "system/message":
            empty = draw(st.booleans())
            event = system(seq, text=None if empty else f"p{seq}", op=rep(model[0], model[0]), sources=[model[0]])
        elif action == "rewrite":
            candidates = [s for s in model if kinds[s] == "tool/result"]
            if candidates:
                target = draw(st.sampled_from(candidates))
                event = copy.deepcopy({"type": "tool/result", "seq": seq, "time": 0, "data": tool_payload[target]})
                event["data"]["message"]["content"] = [{"type": "text", "text": f"short{seq}"}]
                event["sourceEventSeqs"] = [target]
                event["surfaceOp"] = rep(target, target)
                tool_payload[seq] = event["data"]
        if event is None:
            event = ev(seq, "session/title", {"title": "t"})
        events.append(event)
        op = event.get("surfaceOp")
        if op == "append":
            model.append(seq)
            kinds[seq] = event["type"]
        elif isinstance(op, dict):
            a, b = model.index(op["startSeq"]), model.index(op["endSeq"])
            model[a : b + 1] = [seq]
            kinds[seq] = event["type"]
        history.append(list(model))
    return events, history


def _expected_messages(events: list[dict], nodes: list[int]) -> list[dict]:
    out = []
    for s in nodes:
        e = events[s]
        m = e["data"] if e["type"] == "user/message" else e["data"]["message"]
        if e["type"] in ("system/message", "assistant/message", "developer/message") and not m["content"]:
            continue
        out.append(m)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v4_logs())
def test_prefix_surfaces_match_incremental_fold(case: tuple[list[dict], list[list[int]]]) -> None:
    events, history = case
    frozen = orjson.dumps(events)
    incremental = SurfaceFold()
    seen = [list(incremental.nodes)]
    seen_messages: list[list[dict]] = [incremental.messages()]
    for event in events:
        incremental.apply(event)
        seen.append(list(incremental.nodes))
        seen_messages.append(incremental.messages())
    assert seen == history  # the fold agrees with the independent model at every point
    for k in range(len(events) + 1):
        fresh = fold(events[:k])
        assert fresh.nodes == seen[k]
        assert [id(m) for m in fresh.messages()] == [id(m) for m in seen_messages[k]]
        assert [id(m) for m in seen_messages[k]] == [id(m) for m in _expected_messages(events, history[k])]
        if k:
            assert fold(iter(events), until_seq=k - 1).nodes == seen[k]
    # Derivation is deterministic and never mutates its input.
    assert orjson.dumps(derive_messages(events)) == orjson.dumps(derive_messages(events))
    assert orjson.dumps(events) == frozen
    assert {m["role"] for m in derive_messages(events)} <= {"system", "user", "assistant", "tool"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v4_logs())
def test_rebuilt_messages_are_stored_objects_of_nonempty_nodes(case: tuple[list[dict], list[list[int]]]) -> None:
    events, history = case
    builder = RequestBuilder()
    for k, event in enumerate(events):
        if builder.is_settlement(event):
            messages = builder.build(require_header=False)["messages"]
            expected = _expected_messages(events, history[k])
            assert len(messages) == len(expected)
            assert all(got is want for got, want in zip(messages, expected))
        builder.apply(event)
