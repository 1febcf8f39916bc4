"""Each rescue transformation on a constructed log, judged by dshlog's strict reader (dsh's view).

Every case builds the smallest log that dsh refuses for one reason, checks that the
transformation alone resolves it (the strict reader accepts the result), that it
says where and why, and that nothing of the content is lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dshlog.model.rescue import BY_NAME, Stored, message_texts, plan
from dshlog.ops.rescue import judge, rescue_session

HEADER = {"type": "session", "version": 0, "id": "s-1", "createdAt": 1, "cwd": "/w", "delegationDepth": 0}
USER = {"content": [{"type": "text", "text": "hello there"}], "source": {"kind": "user"}, "role": "user", "id": "u-1"}


def ev(type_: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": type_, "data": data, **extra}


def log(events: list[dict[str, Any]], header: dict[str, Any] | None = None, version: int = 0, proof: str = "") -> Stored:
    rows = [{**e, "seq": i, "time": 10 + i} for i, e in enumerate(events)]
    rows = [{k: r[k] for k in ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs") if k in r} for r in rows]
    return Stored(dict(header or HEADER), tuple(rows), version, version_proof=proof)


def turn(*body: dict[str, Any], t: int = 1) -> list[dict[str, Any]]:
    return [ev("turn/start", {"turn": t}), *body, ev("turn/end", {"turn": t, "reason": {"kind": "completed"}})]


def step(*body: dict[str, Any], t: int = 1, s: int = 1) -> list[dict[str, Any]]:
    return [ev("step/start", {"turn": t, "step": s}), *body, ev("step/end", {"turn": t, "step": s})]


GOOD = turn(*step(ev("user/message", USER, surfaceOp="append")))


def resolves(name: str, s: Stored) -> Stored:
    """``name`` applies to ``s``, which dsh refuses, and dsh accepts the result."""
    assert judge(s) is not None, "the constructed log should be refused"
    applied = BY_NAME[name].apply(s)
    assert applied is not None, f"{name} does not apply"
    out, changes = applied
    assert changes and all(c.transformation == name and c.why for c in changes)
    refusal = judge(out)
    assert refusal is None, refusal
    assert message_texts(s.events) == message_texts(out.events) or set(message_texts(s.events)) <= set(message_texts(out.events))
    return out


def test_the_good_log_is_accepted() -> None:
    assert judge(log(GOOD)) is None


def test_header_version_from_the_body() -> None:
    h = {k: v for k, v in HEADER.items() if k != "version"}
    out = resolves("header-version", log(GOOD, h, proof="header lacks version; reading as v0"))
    assert list(out.header)[:2] == ["type", "version"] and out.header["version"] == 0


def test_header_version_of_a_prerelease_writer() -> None:
    # the header says 1, the reader proved a v0 body; the v1 codec refuses the v0 row shapes
    s = log(turn(*step(ev("user/message", USER, surfaceOp="append")), t=1), {**HEADER, "version": 1},
            proof="header version 1 written by the June 2026 pre-release writer; read as v0")
    s = Stored(s.header, tuple({**e, "data": {**e["data"], "trigger": {"kind": "message"}}} if e["type"] == "turn/start" else e
                               for e in s.events), 0, version_proof=s.version_proof)
    out = resolves("header-version", s)
    assert out.header["version"] == 0
    assert BY_NAME["header-version"].apply(log(GOOD)) is None, "a header that states its version is left alone"


@pytest.mark.parametrize("parent, depth", [(False, 0), (True, 1)])
def test_header_delegation_depth(parent: bool, depth: int) -> None:
    h = {k: v for k, v in HEADER.items() if k != "delegationDepth"}
    if parent:
        h["parentSession"] = "p-1"
    out = resolves("header-delegation-depth", log(GOOD, h))
    assert out.header["delegationDepth"] == depth


def test_descriptor_v3() -> None:
    d = {"version": 2, "mode": "one-shot", "provider": "spawn"}
    s = log(turn(ev("subagent/descriptor", d), *step(ev("user/message", USER, surfaceOp="append"))))
    out = resolves("descriptor-v3", s)
    assert out.events[1]["data"] == {**d, "version": 3}


def test_descriptor_v3_gives_a_continuable_descriptor_its_label() -> None:
    d = {"version": 2, "mode": "continuable", "provider": "spawn"}
    out = resolves("descriptor-v3", log(turn(ev("subagent/descriptor", d), *step(ev("user/message", USER, surfaceOp="append")))))
    assert out.events[1]["data"]["label"] == "subagent"


def test_tool_definitions() -> None:
    header = {"config": {"provider": "p", "model": "m"}, "system": "", "tools": ["read", "bash"]}
    s = log(turn(*step(ev("request/header", {"header": header, "reason": "initial"}), ev("user/message", USER, surfaceOp="append"))))
    out = resolves("tool-definitions", s)
    assert out.events[2]["data"]["header"]["tools"] == [{"name": "read", "description": "", "parameters": {}},
                                                        {"name": "bash", "description": "", "parameters": {}}]


def test_hook_dialect() -> None:
    hook = {"turn": 1, "point": "Stop", "dialect": "claude", "handlerId": "claude:Stop:1"}
    out = resolves("hook-dialect", log(turn(*step(ev("user/message", USER, surfaceOp="append")), ev("hook/invoked", hook))))
    assert out.events[4]["data"]["dialect"] == "claude-code" and out.events[4]["data"]["handlerId"] == "claude:Stop:1"


def test_surface_marker() -> None:
    out = resolves("surface-marker", log(turn(*step(ev("user/message", USER)))))
    assert out.events[2]["surfaceOp"] == "append"


def test_open_step_early_moves_the_turns_step_up() -> None:
    # the early v0 order: the user message (and a title citing it) before the step opens
    title = {"title": "hello", "messageSeqs": [1], "source": {"kind": "fallback"}}
    s = log(turn(ev("user/message", USER, surfaceOp="append"), ev("session/title", title), *step()))
    out = resolves("open-step-early", s)
    assert [e["type"] for e in out.events][:4] == ["turn/start", "step/start", "user/message", "session/title"]
    assert out.events[3]["data"]["messageSeqs"] == [2], "the title follows the message it cites"
    assert out.origins[:4] == (0, 3, 1, 2)


def test_open_step_early_inserts_a_step_in_a_turn_without_one() -> None:
    s = log(turn(ev("user/message", USER, surfaceOp="append"), ev("sandbox/mode", {"mode": "read-only"})))
    out = resolves("open-step-early", s)
    assert [e["type"] for e in out.events] == ["turn/start", "step/start", "user/message", "sandbox/mode", "step/end", "turn/end"]
    assert out.events[1]["data"] == {"turn": 1, "step": 1} and out.origins[1] is None


def test_open_step_early_for_a_prompt_set_outside_a_step() -> None:
    header = {"config": {"provider": "p", "model": "m"}, "system": "be brief", "tools": []}
    s = log([ev("turn/start", {"turn": 1}), ev("request/header", {"header": header, "reason": "initial"}),
             *step(ev("user/message", USER, surfaceOp="append")), ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}})],
            {**HEADER, "version": 2, "isSeeded": False}, version=2)
    out = resolves("open-step-early", s)
    assert [e["type"] for e in out.events][:3] == ["turn/start", "step/start", "request/header"]


def test_compaction_start() -> None:
    checkpoint = {"content": [{"type": "text", "text": "Earlier context was compacted."}],
                  "source": {"kind": "plugin", "plugin": "compact", "compactionId": "c-1"}, "role": "user", "id": "u-2"}
    s = log(turn(*step(ev("user/message", USER, surfaceOp="append"),
                       ev("user/message", checkpoint, surfaceOp={"op": "replace", "start": 2, "end": 2}, sourceEventSeqs=[2]))))
    out = resolves("compaction-start", s)
    types = [e["type"] for e in out.events]
    assert types[3:6] == ["compaction/start", "user/message", "compaction/end"]
    assert out.events[4]["surfaceOp"] == {"op": "replace", "start": 2, "end": 2}
    assert out.events[3]["data"] == {"compactionId": "c-1", "turn": 1}


def test_plan_chains_transformations_and_names_unallowed_ones() -> None:
    h = {k: v for k, v in HEADER.items() if k != "delegationDepth"}
    s = log(turn(ev("user/message", USER, surfaceOp="append"), *step()), h)
    p = plan(s, judge, allowed={"header-delegation-depth"})
    assert [st.transformation for st in p.steps] == ["header-delegation-depth", "open-step-early"]
    assert p.rescuable and p.needs == ["open-step-early"]
    assert "delegationDepth" in p.steps[0].refusal.message


def test_a_log_no_transformation_resolves_says_why(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}\n'
                    b'{"type":"x-unknown/kind","seq":0,"time":1,"data":{}}\n')
    before = src.read_bytes()
    out = rescue_session(src, all_=True, publish=True)
    assert out.status == "cannot" and out.why_not is not None and "x-unknown/kind" in out.why_not
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"] and src.read_bytes() == before


def test_publish_writes_the_successor_and_its_record(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w"}\n'
                    b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
                    b'{"type":"user/message","seq":1,"time":2,"data":{"content":[{"type":"text","text":"hi"}],'
                    b'"source":{"kind":"user"},"role":"user","id":"u"},"surfaceOp":"append"}\n'
                    b'{"type":"step/start","seq":2,"time":3,"data":{"turn":1,"step":1}}\n'
                    b'{"type":"step/end","seq":3,"time":4,"data":{"turn":1,"step":1}}\n'
                    b'{"type":"turn/end","seq":4,"time":5,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    before = src.read_bytes()
    dry = rescue_session(src)
    assert dry.status == "needs-allow" and dry.plan is not None and dry.plan.needs == ["header-delegation-depth", "open-step-early"]
    assert rescue_session(src, allow=["header-delegation-depth"], publish=True).exit_code == 5
    out = rescue_session(src, all_=True, publish=True)
    assert out.status == "rescued" and out.texts_kept == 1, out.as_dict()
    assert (tmp_path / "session.v4.jsonl").is_file() and (tmp_path / "session.v4.jsonl.rescue.json").is_file()
    assert src.read_bytes() == before
    again = rescue_session(src, all_=True, publish=True)
    assert again.status == "failed" and again.exit_code == 5, "never overwrites"
