"""Unit cases per migration edge (FORMAT §4.2–§4.5); expected values are the spec's."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshlog.errors import MigrationRefused
from dshlog.migrate import header_only, migrate_stream
from dshlog.migrate._common import CONSUMED, SeqMap
from dshlog.migrate.streams import expand, pack
from dshlog.migrate.v3_v4 import V3ToV4

SID = "s1"


def hdr(version: int, **extra: Any) -> dict[str, Any]:
    h: dict[str, Any] = {"type": "session", "version": version, "id": SID, "createdAt": 1000, "cwd": "/w"}
    if version >= 2:
        h["isSeeded"] = extra.pop("isSeeded", False)
    h.update(extra)
    h.setdefault("delegationDepth", 0)
    return h


def evs(*specs: Any, t0: int = 100) -> list[dict[str, Any]]:
    """(type, data[, extra envelope]) tuples -> events with dense seq and time t0+seq."""
    out = []
    for i, spec in enumerate(specs):
        ev = {"type": spec[0], "seq": i, "time": t0 + i, "data": spec[1]}
        if len(spec) > 2:
            ev.update(spec[2])
        out.append(ev)
    return out


def run(version: int, events: list[dict[str, Any]], facts: list[dict[str, Any]] | None = None,
        **hextra: Any) -> list[dict[str, Any]]:
    before = copy.deepcopy(events)
    _, it = migrate_stream(hdr(version, **hextra), iter(events), child_facts=[] if facts is None else facts)
    out = list(it)
    assert events == before  # never mutates input
    return out


def refused(version: int, events: list[dict[str, Any]], facts: list[dict[str, Any]] | None = None,
            **hextra: Any) -> str:
    with pytest.raises(MigrationRefused) as info:
        run(version, events, facts, **hextra)
    return info.value.message


def types(out: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in out]


TURN = ("turn/start", {"turn": 1})
#: A request config dsh's payload rules accept (provider and model are required).
CONFIG = {"provider": "p", "model": "m"}
STEP = ("step/start", {"turn": 1, "step": 1})
STEP_END = ("step/end", {"turn": 1, "step": 1})
TURN_END = ("turn/end", {"turn": 1, "reason": {"kind": "completed"}})


def user(text: str = "hi", mid: str = "u1", **src: Any) -> tuple[Any, ...]:
    return ("user/message", {"role": "user", "id": mid, "content": [{"type": "text", "text": text}],
                             "source": src or {"kind": "user"}}, {"surfaceOp": "append"})


def chunk(c: dict[str, Any], turn: int = 1, step: int = 1) -> tuple[Any, ...]:
    return ("assistant/chunk", {"turn": turn, "step": step, "chunk": c})


def amsg(sources: Any = None, turn: int = 1, step: int = 1) -> tuple[Any, ...]:
    env: dict[str, Any] = {}
    if sources is not None:
        env["sourceEventSeqs"] = sources
    env["surfaceOp"] = "append"
    return ("assistant/message", {"turn": turn, "step": step, "message": {
        "id": "a1", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
        "source": {"kind": "model", "provider": "p", "model": "m"}}}, env)


# ---------------------------------------------------------------- v0 -> v1
class TestV0ToV1:
    def test_compact_renames_and_ids(self) -> None:
        out = run(0, evs(TURN, ("compact/start", {"turn": 1}), ("compact/summary", {
            "summary": [], "shadowedRange": {"start": 0, "end": 0}, "shadowedSeqs": [0], "shadowedTokenCount": 1,
            "provider": "p", "model": "m"}), ("compact/end", {"turn": 1})))
        assert types(out) == ["turn/start", "compaction/start", "compaction/summary", "compaction/end"]
        cid = f"legacy-compaction:{SID}:1"
        assert [e["data"].get("compactionId") for e in out[1:]] == [cid, cid, cid]

    @pytest.mark.parametrize("legacy", ["mode/set", "request/header-delta"])
    def test_refused_legacy_types(self, legacy: str) -> None:
        msg = refused(0, evs(TURN, (legacy, {})))
        # dsh throws this as SessionFormatUnsupportedMigrationError: the chain passes it unchanged
        assert msg == f'session "{SID}" contains unsupported legacy {legacy} event at seq 1'

    def test_unknown_type_refused_even_when_ignorable(self) -> None:
        msg = refused(0, evs(TURN, ("notice/banner", {}, {"ignorable": True})))
        assert msg.endswith('format v0 contains unknown historical event type "notice/banner" at seq 1; '
                            "migration refuses unknown historical events even when ignorable")

    def test_unexpected_payload_member(self) -> None:
        msg = refused(0, evs(("permission/preset", {"preset": "x", "origin": "y"})))
        assert msg.endswith('permission/preset 0 data has unexpected member "origin"')

    def test_turn_start_trigger_and_end_reasons(self) -> None:
        out = run(0, evs(("turn/start", {"turn": 1, "trigger": {"kind": "user"}}),
                         ("turn/end", {"turn": 1, "reason": {"kind": "aborted"}}),
                         ("turn/start", {"turn": 2}),
                         ("turn/end", {"turn": 2, "reason": {"kind": "disposed"}}),
                         ("turn/start", {"turn": 3}),
                         ("turn/end", {"turn": 3, "reason": {"kind": "error", "step": 1,
                                                             "failure": {"message": "m", "code": "C"}}}),
                         ("turn/start", {"turn": 4}),
                         ("turn/end", {"turn": 4, "reason": {"kind": "error", "step": 1, "message": "boom"}})))
        assert out[0]["data"] == {"turn": 1}
        assert out[1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "legacy"}}
        assert out[3]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
        assert out[5]["data"]["reason"] == {"kind": "error", "error": {"message": "m", "code": "C"}}
        assert out[7]["data"]["reason"] == {"kind": "error", "error": {"message": "boom", "code": "UNKNOWN"}}

    def test_message_prefix_and_steering(self) -> None:
        out = run(0, evs(TURN, STEP, ("request/header", {"header": {"config": CONFIG, "messagePrefix": []},
                                                           "reason": "initial"}),
                         ("steering/message", {"turn": 1, "content": [], "source": {"kind": "user"}},
                          {"surfaceOp": "append"})))
        assert out[2]["type"] == "system/message"  # v2->v3 head after the first step/start
        assert out[3]["data"]["header"] == {"config": CONFIG}
        assert out[4]["type"] == "user/message"
        assert out[4]["data"]["source"] == {"kind": "user"}
        assert out[4]["data"]["id"] == f"legacy-message:{SID}:3" and out[4]["data"]["role"] == "user"

    def test_retry_chain_ids(self) -> None:
        retry = {"turn": 1, "step": 1, "provider": "p", "mode": "always", "policyKey": "k", "retry": 1, "delayMs": 1,
                 "failure": {"message": "overloaded", "code": "E"}}
        out = run(0, evs(TURN, STEP, ("llm/retry", retry), ("llm/retry", {**retry, "retry": 2})))
        ids = [e["data"]["retryId"] for e in out if e["type"] == "llm/retry"]
        assert ids == [f"legacy-retry:{SID}:2"] * 2

    def test_legacy_message_wrappers(self) -> None:
        out = run(0, evs(TURN, STEP,
                         ("assistant/message", {"turn": 1, "step": 1, "content": [], "provenance": {"provider": "p", "model": "m"}},
                          {"sourceEventSeqs": [], "surfaceOp": "append"}),
                         ("tool/result", {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False},
                          {"surfaceOp": "append"})))
        assert out[3]["data"]["stream"] == []
        assert out[3]["data"]["message"] == {"id": f"legacy-message:{SID}:2", "role": "assistant", "content": [],
                                             "source": {"provider": "p", "model": "m", "kind": "model"}}
        # v3->v4 then lifts the user-role wrapper into a tool message
        assert out[4]["data"]["message"] == {"role": "tool", "source": {"kind": "tool", "callId": "c"},
                                             "toolCallId": "c", "content": [], "isError": False,
                                             "id": f"legacy-message:{SID}:3"}


# ---------------------------------------------------------------- v1 -> v2
class TestV1ToV2:
    def test_attempt_at_last_chunk_position(self) -> None:
        out = run(1, evs(TURN, STEP, chunk({"type": "text-delta", "index": 0, "text": "a"}),
                         ("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "n", "arguments": "{}"}),
                         chunk({"type": "text-delta", "index": 0, "text": "b"}),
                         ("hook/invoked", {"turn": 1, "point": "p", "dialect": "codex", "handlerId": "h"}),
                         STEP_END))
        # v1 indices: event between chunks first, attempt at its last chunk, then the later event
        assert types(out)[2:6] == ["system/message", "tool/call", "assistant/attempt", "hook/invoked"]
        att = out[4]
        assert att["time"] == 104 and att["data"] == {"turn": 1, "step": 1, "stream": [
            {"type": "text-chunks", "time0": 102, "index": 0, "dt": [2], "texts": ["a", "b"]}]}

    def test_message_settlement_and_key_order(self) -> None:
        out = run(1, evs(TURN, STEP, chunk({"type": "text-delta", "index": 0, "text": "o"}),
                         chunk({"type": "finish", "reason": {"kind": "stop"}}),
                         ("request/context", {"provider": "p", "model": "m"}),
                         amsg([2, 3]), STEP_END))
        assert types(out) == ["turn/start", "step/start", "system/message", "request/context",
                              "assistant/message", "step/end"]
        m = out[4]
        assert list(m) == ["type", "seq", "time", "data", "surfaceOp"]
        assert list(m["data"]) == ["turn", "step", "message", "stream"]
        assert m["data"]["stream"] == [
            {"type": "text-chunks", "time0": 102, "index": 0, "dt": [], "texts": ["o"]},
            {"type": "chunk", "time": 103, "chunk": {"type": "finish", "reason": {"kind": "stop"}}}]

    def test_provenance_refusals(self) -> None:
        base = [TURN, STEP, chunk({"type": "text-delta", "index": 0, "text": "o"})]
        assert refused(1, evs(*base, amsg([1]))).endswith(
            "assistant/message 3 chunk references are not one complete ordered attempt")
        assert refused(1, evs(*base, amsg())).endswith(
            "assistant/message 3 does not cite its complete v1 chunk attempt")
        out = run(1, evs(*base, amsg([])))
        assert types(out)[3:5] == ["assistant/attempt", "assistant/message"]
        assert out[4]["data"]["stream"] == []

    def test_reference_to_consumed_chunk_refused(self) -> None:
        msg = refused(1, evs(TURN, STEP, chunk({"type": "text-delta", "index": 0, "text": "o"}),
                             ("session/title", {"title": "t", "messageSeqs": [2], "source": {"kind": "user"}})))
        assert msg.endswith("session/title 3 messageSeqs targets consumed assistant/chunk 2")

    def test_replace_remapped_and_respelled(self) -> None:
        out = run(1, evs(TURN, STEP, user("a", "u1"), chunk({"type": "text-delta", "index": 0, "text": "o"}),
                         STEP_END, ("user/message", {"role": "user", "id": "u2", "content": [], "source": {
                             "kind": "user"}}, {"surfaceOp": {"op": "replace", "start": 2, "end": 2},
                                                "sourceEventSeqs": [2]})))
        last = out[-1]
        # v1 seq 2 -> v2 seq 2 -> v3 seq 3 (head inserted after step/start)
        assert last["surfaceOp"] == {"op": "replace", "startSeq": 3, "endSeq": 3}
        assert last["sourceEventSeqs"] == [3]
        # v1->v2 rebuilds envelopes as ..., sourceEventSeqs, surfaceOp (later edges keep positions)
        assert list(last) == ["type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp"]

    def test_restart_repair(self) -> None:
        splice = ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [
            {"id": "x", "role": "user", "content": [], "source": {"kind": "user"}}]})
        out = run(1, evs(TURN, splice, ("turn/start", {"turn": 2})))
        assert types(out) == ["turn/start", "agent/inbox/spliced", "turn/end", "turn/start"]
        assert out[2] == {"type": "turn/end", "seq": 2, "time": 102,
                          "data": {"turn": 1, "reason": {"kind": "interrupted"}}}
        assert refused(1, evs(TURN, ("turn/start", {"turn": 2}))).endswith(
            "turn/start 1 does not close the prior turn")

    def test_goal_split(self) -> None:
        goal = {"id": "g1", "revision": 1, "objective": "o", "phase": "active", "maxGoalRounds": 3}
        change = {"kind": "goal/change", "version": 1, "operation": "create", "goal": goal, "roundsStarted": 0,
                  "createdAt": 1, "updatedAt": 1}
        text = '<goal_state>{"goal":' + json.dumps(goal, separators=(",", ":")) + ',"roundsStarted":0,"createdAt":1,"updatedAt":1}</goal_state>'
        out = run(1, evs(TURN, STEP, user(text, "u1", kind="goal", goalId="g1", revision=1, round=0, change=change)))
        assert types(out)[3:] == ["goal/change", "user/message"]
        assert out[3]["data"] == change and out[3]["time"] == 102
        assert out[4]["data"]["source"] == {"kind": "goal"}  # plugin "goal" keeps its name in v4

    def test_inherited_cut_marker_inserted(self) -> None:
        _, it = migrate_stream(hdr(1, parentSession="p", seedLength=1), iter(evs(
            ("permission/preset", {"preset": "a"}), ("permission/preset", {"preset": "b"}))), child_facts=[])
        out = list(it)
        assert types(out) == ["permission/preset", "session/end-seed", "permission/preset"]
        assert out[1] == {"type": "session/end-seed", "seq": 1, "time": 101, "data": {"inherited": True}}
        assert it.inherited_cut == 1

    def test_inherited_end_seed_tagged_and_appended(self) -> None:
        _, it = migrate_stream(hdr(1, seedLength=1), iter(evs(("permission/preset", {"preset": "a"}),
                                                              ("session/end-seed", {}))), child_facts=[])
        out = list(it)
        assert out[1]["data"] == {"inherited": True} and it.inherited_cut == 1
        h, it = migrate_stream(hdr(1, seedLength=1), iter(evs(("permission/preset", {"preset": "a"}))),
                               child_facts=[])
        out = list(it)
        assert h["isSeeded"] is True and "seedLength" not in h
        assert out[-1] == {"type": "session/end-seed", "seq": 1, "time": 100, "data": {"inherited": True}}

    def test_cut_splitting_attempt_refused(self) -> None:
        msg = refused(1, evs(TURN, STEP, chunk({"type": "text-delta", "index": 0, "text": "a"}),
                             chunk({"type": "text-delta", "index": 0, "text": "b"})), seedLength=3)
        assert msg.endswith("inherited Session cut 3 splits one Assistant attempt")


# ---------------------------------------------------------------- v2 -> v3
class TestV2ToV3:
    def test_prompt_changes(self) -> None:
        rh = lambda s: ("request/header", {"header": {"config": CONFIG, "system": s, "tools": [], "adapterDefaults": {}},  # noqa: E731
                                           "reason": "initial"})
        out = run(2, evs(TURN, STEP, rh("P"), rh("P"), rh("")))
        assert types(out) == ["turn/start", "step/start", "system/message", "system/message", "request/header",
                              "request/header", "system/message", "request/header"]
        assert out[3]["data"]["message"]["content"] == [{"type": "text", "text": "P"}]
        assert out[3]["surfaceOp"] == {"op": "replace", "startSeq": 2, "endSeq": 2}
        assert out[6]["surfaceOp"] == {"op": "replace", "startSeq": 3, "endSeq": 3}
        assert out[6]["data"]["message"]["content"] == []
        assert out[4]["data"]["header"] == {"config": CONFIG}

    def test_refusals(self) -> None:
        assert refused(2, evs(TURN, user())).endswith(
            "format v2 surface before first step cannot acquire a system head without changing chronology")
        assert refused(2, evs(TURN, ("request/header", {"header": {"config": CONFIG, "system": "x"}, "reason": "initial"}))).endswith(
            "format v2 changed request prompt outside an open step cannot retain source chronology")
        assert refused(2, evs(TURN, ("tool/ptc-dispatch", {}))).endswith(
            "format v2 to v3 cannot safely transform unclassified event tool/ptc-dispatch")

    def test_ptc_and_preset(self) -> None:
        h = header_only(hdr(2, agentPreset="code"))
        assert h["agentPreset"] == "ptc" and h["version"] == 4
        out = run(2, evs(("agent-preset/selected", {"agentPreset": "code"}),
                         ("tool/code-dispatch-start", {"rootCallId": "r", "parentCallId": "p", "subCallId": "s",
                                                       "name": "n", "arguments": {}})))
        assert out[0]["data"] == {"agentPreset": "ptc"}
        assert out[1]["type"] == "tool/ptc-dispatch-start"


# ---------------------------------------------------------------- v3 -> v4
def sysmsg(plugin: str = "@deepseek-ai/dsh-system-prompt") -> tuple[Any, ...]:
    return ("system/message", {"turn": 1, "step": 1, "message": {"id": "s", "role": "system", "content": [],
                                                                 "source": {"kind": "plugin", "plugin": plugin}}},
            {"surfaceOp": "append"})


class TestV3ToV4:
    @pytest.mark.parametrize(("plugin", "kind"), [
        ("compact", "compact-checkpoint"), ("tools-code-mode", "ptc-mode"), ("tools-ptc", "ptc-mode"),
        ("dsh-compaction-basic", "compact-basic"), ("@deepseek-ai/dsh-system-prompt", "runtime-context"),
        ("goal", "goal"), ("dsh-session-title-llm", "dsh-session-title-llm"), ("weird", "plugin:weird")])
    def test_source_renames(self, plugin: str, kind: str) -> None:
        out = run(3, evs(TURN, STEP, user(kind="plugin", plugin=plugin, form="f")))
        assert out[2]["data"]["source"] == {"kind": kind, "form": "f"}
        assert list(out[2]["data"]["source"]) == ["kind", "form"]

    def test_system_role_and_two_key_source(self) -> None:
        out = run(3, evs(TURN, STEP, sysmsg()))
        assert out[2]["data"]["message"]["source"] == {"kind": "system-prompt"}

    def test_tool_result_lift_key_order(self) -> None:
        msg = {"id": "m", "role": "user", "extra": 1, "content": [
            {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": "r"}], "isError": True,
             "note": "n"}], "source": {"kind": "tool", "callId": "c"}}
        out = run(3, evs(TURN, STEP, ("tool/result", {"turn": 1, "step": 1, "message": msg},
                                      {"surfaceOp": "append"})))
        new = out[2]["data"]["message"]
        assert list(new) == ["role", "source", "toolCallId", "content", "isError", "id", "plugin:message:extra",
                             "plugin:result:note"]
        assert new["role"] == "tool" and new["toolCallId"] == "c" and new["content"] == [{"type": "text",
                                                                                           "text": "r"}]

    def test_tool_result_refusals(self) -> None:
        bad = {"id": "m", "role": "user", "content": [], "source": {"kind": "tool", "callId": "c"}}
        assert refused(3, evs(("tool/result", {"turn": 1, "step": 1, "message": bad},
                               {"surfaceOp": "append"}))).endswith(
            "format v3 tool/result at seq 0 requires exactly one tool-result wrapper matching its tool source")
        nested = {**bad, "content": [{"type": "tool-result", "toolCallId": "c", "content": [
            {"type": "tool-result", "toolCallId": "d", "content": []}]}]}
        assert refused(3, evs(("tool/result", {"turn": 1, "step": 1, "message": nested},
                               {"surfaceOp": "append"}))).endswith(
            "format v3 tool/result at seq 0 contains a nested tool-result unsupported by this converter")

    def test_unknown_events(self) -> None:
        out = run(3, evs(("x/y", {"a": 1}, {"ignorable": True}), ("plugin:z", {}, {"ignorable": True})))
        assert out[0] == {"type": "plugin:x/y", "seq": 0, "time": 100, "data": {"a": 1}, "ignorable": True}
        assert out[1]["type"] == "plugin:plugin:z"
        # dsh throws this as SessionFormatUnsupportedMigrationError: the chain passes it unchanged
        assert refused(3, evs(("developer/message", {}))) == 'format v3 contains unknown event type "developer/message" at seq 0'

    def test_interrupted_turn_and_remap(self) -> None:
        splice = ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [
            {"id": "x", "role": "user", "content": [{"type": "widget"}], "source": {"kind": "user"}}]})
        out = run(3, evs(TURN, STEP, user(), STEP_END, splice, ("turn/start", {"turn": 2}),
                         ("session/title", {"title": "t", "messageSeqs": [2], "source": {"kind": "x"}})))
        assert types(out)[5:7] == ["turn/end", "turn/start"]
        assert out[5]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}} and out[5]["time"] == 105
        assert out[7]["seq"] == 7 and out[7]["data"]["messageSeqs"] == [2]
        assert out[4]["data"]["inserted"][0]["content"] == [{"type": "plugin:widget"}]

    def test_stream_tags_and_defer_loading(self) -> None:
        stream = [{"type": "chunk", "time": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "odd"}},
                  {"type": "chunk", "time": 1, "chunk": {"type": "block-end", "index": 0, "block": {"type": "odd"}}}]
        out = run(3, evs(TURN, STEP, ("assistant/attempt", {"turn": 1, "step": 1, "stream": stream})))
        s = out[2]["data"]["stream"]
        assert s[0]["chunk"]["blockType"] == "plugin:odd" and s[1]["chunk"]["block"]["type"] == "plugin:odd"
        with pytest.raises(MigrationRefused):
            run(3, evs(TURN, STEP, ("request/header", {"header": {"tools": [{"name": "t", "deferLoading": True}]},
                                                       "reason": "initial"})))

    def test_catalog_facts(self) -> None:
        facts = [
            {"childId": "b", "childCreatedAt": 5, "descriptorCount": 1, "sourcePath": "/r/b",
             "descriptor": {"version": 3, "mode": "one-shot", "provider": "spawn", "label": "L"}},
            {"childId": "a", "childCreatedAt": 5, "descriptorCount": 0, "descriptor": None},
            {"childId": "c", "childCreatedAt": 1, "descriptorCount": 2, "descriptor": {"version": 3}},
        ]
        out = run(3, evs(TURN), facts)
        assert [e["data"] for e in out[1:]] == [
            {"version": 1, "childId": "c", "childCreatedAt": 1, "mode": "unknown"},
            {"version": 1, "childId": "a", "childCreatedAt": 5, "mode": "unknown"},
            {"version": 0, "childId": "b", "childCreatedAt": 5, "mode": "one-shot", "label": "L"}]
        assert [e["seq"] for e in out] == [0, 1, 2, 3] and all(e["time"] == 100 for e in out[1:])
        # empty list: existing entries kept and validated, nothing appended
        cat = ("subagent/catalog", {"version": 0, "childId": "b", "childCreatedAt": 5, "mode": "one-shot"})
        assert types(run(3, evs(cat), [])) == ["subagent/catalog"]
        # with no events, appended entries carry the header's createdAt
        assert run(3, [], facts[1:2])[0]["time"] == 1000
        assert refused(3, evs(cat, cat)).endswith("duplicate catalog child b")
        assert refused(3, evs(cat), [{**facts[0], "childCreatedAt": 6}]).endswith(
            "Session b (raw log: /r/b) conflicts with its parent catalog")

    def test_facts_required(self) -> None:
        with pytest.raises(MigrationRefused) as info:
            migrate_stream(hdr(3), iter([]), child_facts=None)
        assert info.value.message.endswith(
            "V3 catalog migration requires explicit historical child facts, including an empty array for a parent "
            "without children")
        with pytest.raises(MigrationRefused):
            V3ToV4(hdr(3), child_facts=None)

    def test_seeded_marker_rules(self) -> None:
        assert refused(3, evs(("session/end-seed", {"inherited": True}))).endswith(
            "unseeded format v3 Session contains an inherited end-seed marker")
        _, it = migrate_stream(hdr(3, isSeeded=True, parentSession="p"), iter(evs(
            ("permission/preset", {"preset": "a"}), ("session/end-seed", {"inherited": True}))), child_facts=[])
        list(it)
        assert it.inherited_cut == 1


# ---------------------------------------------------------------- chain-wide
def test_header_only_and_newer_version() -> None:
    h = header_only({"type": "session", "version": 0, "id": SID, "createdAt": 1, "cwd": "/w", "seedLength": 3,
                     "parentSession": "p", "delegationDepth": 1})
    assert h == {"type": "session", "version": 4, "id": SID, "createdAt": 1, "cwd": "/w", "parentSession": "p",
                 "isSeeded": True, "delegationDepth": 1}
    assert list(h) == ["type", "version", "id", "createdAt", "cwd", "parentSession", "isSeeded", "delegationDepth"]
    from dshlog.errors import UnsupportedVersion
    with pytest.raises(UnsupportedVersion) as info:
        header_only({**h, "version": 5})
    assert info.value.message == (f'session "{SID}" uses log format v5, but this harness reads only v4: the log was '
                                  "written by a newer harness — upgrade the harness to open it")


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), max_size=60))
def test_seqmap_matches_dict(steps: list[tuple[bool, int]]) -> None:
    """For any monotonic renumbering with insertions/consumption, the run map equals a plain dict."""
    m, ref, tgt = SeqMap(), {}, 0
    for src, (consumed, inserted) in enumerate(steps):
        tgt += inserted
        if consumed:
            m.record(src, CONSUMED)
            ref[src] = CONSUMED
        else:
            m.record(src, tgt)
            ref[src] = tgt
            tgt += 1
    assert all(m.get(s) == v for s, v in ref.items())
    assert m.get(len(steps)) is None


_delta = st.one_of(
    st.builds(lambda i, s: {"type": "text-delta", "index": i, "text": s}, st.integers(0, 2), st.text(max_size=3)),
    st.builds(lambda i, s: {"type": "reasoning-delta", "index": i, "text": s}, st.integers(0, 2), st.text(max_size=3)),
    st.builds(lambda i, d, s: {"type": "tool-call-delta", "index": i, "id": d, "argumentsDelta": s},
              st.integers(0, 1), st.sampled_from(["c1", "c2"]), st.text(max_size=3)),
    st.just({"type": "usage", "usage": {}}),
)


@given(st.lists(st.tuples(st.integers(-10**6, 10**6), _delta), max_size=40))
def test_stream_packing_is_lossless_and_canonical(chunks: list[tuple[int, dict[str, Any]]]) -> None:
    records = pack(chunks)
    assert expand(records) == chunks
    for a, b in zip(records, records[1:]):  # canonical: no two mergeable neighbours
        if a["type"] in ("text-chunks", "reasoning-chunks") and a["type"] == b["type"]:
            assert a["index"] != b["index"]
        if a["type"] == b["type"] == "tool-call-chunks":
            assert (a["index"], a["id"]) != (b["index"], b["id"])


def test_discover_child_facts(tmp_path: Any) -> None:
    """Children anywhere in the root, highest generation, own descriptors only (FORMAT §4.5.7)."""
    import json
    from pathlib import Path

    from dshlog.read.children import discover_child_facts

    def write(project: str, sid: str, name: str, header: dict[str, Any], events: list[dict[str, Any]]) -> Path:
        d = tmp_path / project / sid
        d.mkdir(parents=True, exist_ok=True)
        p = d / name
        p.write_text("".join(json.dumps(x) + "\n" for x in [header, *events]))
        return p

    desc = ("subagent/descriptor", {"version": 3, "mode": "continuable", "provider": "spawn", "label": "L"})
    child = {"parentSession": "P", "origin": "subagent"}
    write("--a--", "c1", "session.jsonl", hdr(0, **child), [])  # lower generation, ignored
    p1 = write("--a--", "c1", "session.v4.jsonl", {**hdr(4, **child), "id": "c1", "createdAt": 7}, evs(desc))
    write("--b--", "c2", "session.v3.jsonl", {**hdr(3, isSeeded=True, **child), "id": "c2"},
          evs(desc, ("session/end-seed", {"inherited": True})))  # descriptor is inherited, not own
    write("--b--", "c3", "session.v4.jsonl", {**hdr(4), "id": "c3", "parentSession": "P"}, [])  # not a subagent
    (tmp_path / "--b--" / "bad").mkdir()
    (tmp_path / "--b--" / "bad" / "session.v2.jsonl").write_text("{not json\n")

    def open_header(p: Path) -> dict[str, Any]:
        return json.loads(p.read_text().split("\n")[0])

    def open_events(p: Path) -> list[dict[str, Any]]:
        return [json.loads(x) for x in p.read_text().split("\n")[1:] if x]

    facts = discover_child_facts(tmp_path, "P", open_header=open_header, open_events=open_events)
    by_id = {f["childId"]: f for f in facts}
    assert set(by_id) == {"c1", "c2"}
    assert by_id["c1"] == {"childId": "c1", "childCreatedAt": 7, "descriptorCount": 1, "descriptor": desc[1],
                           "sourcePath": str(p1)}
    assert by_id["c2"]["descriptorCount"] == 0 and by_id["c2"]["descriptor"] is None


def test_child_discovery_reads_each_header_once_while_nothing_changes(tmp_path: Any) -> None:
    """A batch over a root of N old parents asks every parent's children: each header is opened once, not N times.

    What a directory's header said is trusted only while the directory and its
    generation are unchanged: a child that appears later, a header completed
    later and a new generation are all seen.
    """
    import json
    import os
    from pathlib import Path

    from dshlog.read.children import discover_child_facts

    opened: list[Path] = []

    def open_header(p: Path) -> dict[str, Any]:
        opened.append(p)
        return json.loads(p.read_text().split("\n")[0])

    def open_events(p: Path) -> list[dict[str, Any]]:
        return [json.loads(x) for x in p.read_text().split("\n")[1:] if x]

    def write(sid: str, header: dict[str, Any], name: str = "session.v4.jsonl") -> Path:
        d = tmp_path / "--p--" / sid
        d.mkdir(parents=True, exist_ok=True)
        p = d / name
        p.write_text(json.dumps(header) + "\n")
        return p

    for k in range(30):
        write(f"s{k:02d}", {**hdr(4), "id": f"s{k:02d}"})
    write("c1", {**hdr(4, parentSession="s01", origin="subagent"), "id": "c1"})

    def children(parent: str) -> list[str]:
        return [f["childId"] for f in discover_child_facts(tmp_path, parent, open_header=open_header, open_events=open_events)]

    assert children("s01") == ["c1"]
    first = len(opened)
    assert first == 31 + 1  # every header once, the child's again to make its fact
    for k in range(30):
        children(f"s{k:02d}")
    assert len(opened) - first == 1  # only s01's child is read again, for its fact

    # a child that appears later is found; so is a header written after the first look
    write("c2", {**hdr(4, parentSession="s02", origin="subagent"), "id": "c2"})
    assert children("s02") == ["c2"]
    torn = tmp_path / "--p--" / "c3" / "session.v4.jsonl"
    torn.parent.mkdir()
    torn.write_text('{"type":"session"')
    assert children("s03") == []
    with torn.open("w") as fh:  # the same file, completed: its directory does not change
        fh.write(json.dumps({**hdr(4, parentSession="s03", origin="subagent"), "id": "c3"}) + "\n")
    assert children("s03") == ["c3"]
    # a new generation is a new file in the directory: read again
    old = tmp_path / "--p--" / "s04" / "session.v4.jsonl"
    st_old = old.stat()
    write("s04", {**hdr(4, parentSession="s05", origin="subagent"), "id": "s04"}, name="session.v4.jsonl.tmp")
    os.replace(old.parent / "session.v4.jsonl.tmp", old)
    os.utime(old.parent, ns=(st_old.st_atime_ns, st_old.st_mtime_ns + 1_000_000))  # the rename's mtime, made visible
    assert children("s05") == ["s04"]


# --------------------------------------------------------------------------- SeqStrings

_ids = st.one_of(
    st.uuids().map(str),  # packed as 16 bytes
    st.uuids().map(lambda u: str(u).upper()),  # not canonical: kept as text
    st.text(max_size=40),
    st.sampled_from(["", "\ud800", "legacy-message:s:1", "x" * 36]),
)


@given(
    st.lists(st.tuples(st.integers(-5, 200), _ids), max_size=60),
    st.lists(st.one_of(st.integers(-5, 205), st.booleans(), st.sampled_from([1.0, 2.5, float("inf"), None, "3"])), max_size=20),
)
def test_seq_strings_is_a_dict(items: list[tuple[int, str]], probes: list[Any]) -> None:
    """The packed seq -> message id map answers exactly as a dict would."""
    from dshlog.migrate._common import SeqStrings

    packed, plain = SeqStrings(), {}
    for seq, value in items:
        packed[seq] = value
        plain[seq] = value
    for seq, _ in items:
        assert packed.get(seq) == plain.get(seq)
    for probe in probes:
        assert packed.get(probe) == plain.get(probe), probe
    assert packed.get(7, "none") == plain.get(7, "none")
    with pytest.raises(TypeError):
        plain.get([1])  # type: ignore[call-overload]  # the wrong key type is the test
    with pytest.raises(TypeError):
        packed.get([1])
