"""The rule families of check/: one rule, one text, whichever consumer applies it.

The fold stops at the first problem (a raising reporter), ``validate`` collects
them all; the reader and ``validate`` share the envelope rule.  Plus the
families that have no consumer-level test of their own, and regressions for
inputs that used to crash ``validate``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import GOLDEN, run_env
from dshlog.check.keys import fact_key, value_digest, value_key
from dshlog.check.data import check_event_data
from dshlog.check.envelope import check_envelope, well_formed
from dshlog.check.lifecycle import Lifecycle
from dshlog.check.ownership import Ownership
from dshlog.check.problems import Problem, Raise, Severity
from dshlog.check.ptc import Dispatches
from dshlog.check.retries import Retries
from dshlog.check.shapes import check_message_shape
from dshlog.check.surface import SurfaceError, fold
from dshlog.check.titles import Titles
from dshlog.check.validate import validate_events
from dshlog.errors import CorruptLog, Location
from dshlog.ops.validate import validate_log
from dshlog.read.session import open_log

HEADER = {"type": "session", "version": 4, "id": "s1", "createdAt": 1, "cwd": "/home/ann/p", "isSeeded": False, "delegationDepth": 0}


class Found(list):
    """A collecting reporter for one rule call."""

    report = list.append


def loop() -> list[dict]:
    return json.loads((GOLDEN / "loop-events.json").read_text())


def renumber(events: list[dict]) -> list[dict]:
    return [{**e, "seq": i} for i, e in enumerate(events)]


def write_log(path: Path, events: list[dict], header: dict = HEADER) -> Path:
    # json.dumps escapes lone surrogates as \ud800, which is valid JSON
    path.write_text("".join(json.dumps(row) + "\n" for row in [header, *events]))
    return path


def messages(found: list[Problem]) -> list[str]:
    return [p.message for p in found]


# --------------------------------------------------------------------------- problems


def test_raise_reporter_refuses_with_the_callers_error_type() -> None:
    loc = Location(line=3)
    with pytest.raises(SurfaceError) as info:
        Raise(SurfaceError, path="x.jsonl").report(Problem("surface", "no", seq=4, loc=loc))
    assert (info.value.message, info.value.seq, info.value.loc, info.value.path) == ("no", 4, loc, "x.jsonl")


def test_problem_where_and_equality() -> None:
    assert Problem("io", "gone", path="a.jsonl").where() == "a.jsonl"  # nothing finer known
    assert Problem("io", "gone", seq=2, loc=Location(line=3), path="a.jsonl").where() == "line 3, seq 2"
    assert Problem("m", "t", value="{{cwd}}") == Problem("m", "t")  # the value is evidence, not identity
    assert Problem("m", "t").as_dict() == {"code": "m", "severity": "error", "where": "", "message": "t"}


# --------------------------------------------------------------------------- envelope

_ENVELOPE_VALUES = st.one_of(
    st.integers(-3, 3), st.sampled_from([2**53, -(2**53), 1.0, 1.5, True, None, "x", [], {}])
)


@st.composite
def _envelope(draw: Any) -> dict:
    event: dict[str, Any] = {}
    for key in ("type", "seq", "time", "data", "ignorable", "surfaceOp", "extra"):
        if draw(st.booleans()) or key in ("type", "seq", "time", "data") and draw(st.booleans()):
            event[key] = draw(st.sampled_from(["user/message", 7]) if key == "type" else _ENVELOPE_VALUES)
    return event


@pytest.mark.fast_paths  # the envelope's quick proof beside its rule, compared in one process
@settings(max_examples=400, deadline=None)
@given(_envelope(), st.integers(0, 2))
def test_envelope_proof_agrees_with_the_rule(event: dict, seq: int) -> None:
    """``well_formed`` only ever vouches for an envelope the rule finds clean."""
    found = Found()
    check_envelope(event, seq, found)
    if well_formed(event, seq):
        assert found == []


def test_reader_and_validator_share_the_envelope_rule(tmp_path: Path) -> None:
    """One defect, one text: the lenient reader's note is the validator's problem, listed once."""
    events = loop()
    events[3] = {**events[3], "extra": 1}
    path = write_log(tmp_path / "session.v4.jsonl", events)
    with open_log(str(path), strict=False) as log:
        list(log.stored())
        notes = [n.message for n in log.notes if n.code == "envelope"]
    rules = [p.message for p in validate_events(HEADER, loop()[:3] + [{**loop()[3], "extra": 1}]) if p.code == "envelope"]
    assert notes == rules == [
        "seed event at index 3 has an invalid event envelope: unexpected key 'extra' (dsh refuses unexpected envelope keys)"
    ]
    listed = [p for p in validate_log(str(path)).problems if p.code == "envelope"]
    assert [p.message for p in listed] == notes and listed[0].where().endswith("seq 3")
    with pytest.raises(CorruptLog, match="unexpected envelope key"):
        with open_log(str(path)) as log:
            list(log.stored())


def test_fold_envelope_texts_are_the_rule_texts() -> None:
    event = {"type": "plan/mode", "seq": 0, "time": 0}
    with pytest.raises(CorruptLog) as info:
        fold([event])
    found = Found()
    check_envelope(event, 0, found)
    assert info.value.message in messages(found)


# --------------------------------------------------------------------------- data and message shapes


def test_shared_data_rules_stop_in_the_fold_and_collect_in_validate() -> None:
    dev = {
        "type": "developer/message", "seq": 0, "time": 0, "surfaceOp": "append",
        "data": {"turn": 1, "step": 1, "headerSeq": 0, "message": {
            "role": "developer", "id": "d", "source": {"kind": "tool-update"},
            "content": [{"type": "tool-removal", "toolName": ""}, {"type": "tool-addition", "toolName": "x", "tool": {}}],
        }},
    }
    found = Found()
    check_event_data(dev, "subject", found)
    assert messages(found) == [
        "subject tool-removal requires a nonempty toolName",
        "subject tool-addition must omit inline tool definitions",
    ]
    with pytest.raises(SurfaceError) as info:
        check_event_data(dev, "subject", Raise(SurfaceError))
    assert info.value.message == found[0].message


def test_header_system_is_reported_once_by_validate() -> None:
    events = loop()
    events[6] = copy.deepcopy(events[6])
    events[6]["data"]["header"]["system"] = ""
    found = [p for p in validate_events(HEADER, events) if p.seq == 6]
    assert [(p.code, p.message) for p in found] == [("retired", "format v4 request/header rejects retired header.system")]
    with pytest.raises(SurfaceError, match="must omit header.system; use system/message"):
        fold(events)


def test_tool_change_blocks_outside_developer_are_reported_once() -> None:
    events = loop()
    events[5] = copy.deepcopy(events[5])
    events[5]["data"]["content"].append({"type": "tool-addition", "toolName": "echo"})
    found = [p.message for p in validate_events(HEADER, events) if p.seq == 5]
    assert found == ['session event "user/message" at seq 5 tool-change blocks require developer role']


def test_tool_result_role_has_one_text() -> None:
    events = loop()
    events[10] = copy.deepcopy(events[10])
    events[10]["data"]["message"]["role"] = "user"
    text = "format v4 tool/result at seq 10 requires a tool-role message"
    with pytest.raises(CorruptLog) as info:
        fold(events)
    assert info.value.message == text
    assert text in [p.message for p in validate_events(HEADER, events)]


def test_system_message_shape_has_one_text() -> None:
    events = loop()
    events[4] = copy.deepcopy(events[4])
    events[4]["data"]["message"].update(role="user", content="x")
    with pytest.raises(CorruptLog) as info:
        fold(events)
    found = [p.message for p in validate_events(HEADER, events) if p.seq == 4]
    assert info.value.message == 'seed system/message at index 4 message must have role "system"'
    assert found == [info.value.message, "seed system/message at index 4 message has invalid content"]


def test_message_shape_is_first_problem_only_even_when_collecting() -> None:
    event = {"type": "user/message", "seq": 0, "time": 0, "data": {"role": "x", "source": 1, "content": 2}}
    found = Found()
    check_message_shape(event, 0, found)
    assert messages(found) == ["seed user/message at index 0 lacks an identified message"]


# --------------------------------------------------------------------------- identity keys


def test_identity_keys_take_values_orjson_refuses() -> None:
    assert value_digest({"a": "\ud800", "b": 1}) == value_digest({"b": 1, "a": "\ud800"})
    assert value_digest("\ud800") != value_digest("\udc00")
    assert value_digest(2**70) == value_digest(2**70) != value_digest(2**70 + 1)
    assert value_key(["\ud800"]) == value_key(["\ud800"]) != value_key(["\udc00"])
    assert fact_key(1, {"k": "\ud800"}) == fact_key(1, {"k": "\ud800"}) != fact_key(1, {"k": "x"})
    assert value_digest({"a": [1, "x"]}) == value_digest({"a": [1, "x"]})  # the fast path is unchanged


# --------------------------------------------------------------------------- relationship families


def test_dispatches_pair_each_start_once() -> None:
    found = Found()
    d = Dispatches()
    start = {"rootCallId": "r", "parentCallId": "r", "subCallId": "s", "name": "n", "arguments": "\ud800"}
    d.check("tool/ptc-dispatch-start", start, 1, found)
    d.check("tool/ptc-dispatch", start, 2, found)
    d.check("tool/ptc-dispatch", start, 3, found)
    d.check("tool/ptc-dispatch-start", {**start, "subCallId": "t", "parentCallId": "zz"}, 4, found)
    assert [(p.seq, p.message) for p in found] == [
        (3, "PTC dispatch has no unique start"),
        (4, "PTC parentCallId does not belong to rootCallId"),
    ]


def test_retries_number_each_policy_chain() -> None:
    found = Found()
    r = Retries()
    retry = {"retryId": "a", "turn": 1, "step": 1, "provider": "p", "policyKey": {"k": "\ud800"}, "retry": 1}
    r.check("llm/retry", retry, 5, 1, 1, "p", found)
    r.check("llm/retry-started", {"retryId": "a", "retry": 1, "turn": 1, "step": 1}, 6, 1, 1, "p", found)
    r.check("llm/retry", {**retry, "retry": 3}, 7, 1, 1, "p", found)
    r.check("llm/retry", {**retry, "retry": 4, "retryId": "b"}, 8, 1, 1, "p", found)  # the chain is at 3 now
    assert [(p.seq, p.message) for p in found] == [
        (7, "llm/retry skips its policy attempt sequence"),
        (8, "llm/retry must keep one retryId per policy chain"),
    ]


def test_titles_cite_earlier_human_messages() -> None:
    found = Found()
    t = Titles()
    t.user_message({"source": {"kind": "user"}}, 2)
    t.user_message({"source": {"kind": "agent"}}, 3)
    t.check("session/title", {"messageSeqs": [2], "source": {"kind": "dsh-session-title-llm"}}, 4, found)
    t.check("session/title", {"messageSeqs": [3], "source": {"kind": "dsh-session-title-llm"}}, 5, found)
    t.check("session/title-llm-request", {"messageSeqs": [2], "messages": ["x"]}, 6, found)
    assert [(p.seq, p.message) for p in found] == [
        (5, "session/title messageSeqs must cite distinct earlier human user/message events"),
        (6, "session/title-llm-request messages do not represent messageSeqs"),
    ]


def test_ownership_waits_for_the_cut() -> None:
    found = Found()
    own = Ownership({**HEADER, "isSeeded": True, "parentSession": "p"}, None, found)
    fact = {"version": 0, "childId": "c", "childCreatedAt": 1, "mode": "continuable", "label": "L"}
    own.check("subagent/catalog", fact, 0, found)
    own.check("session-log-deepseek/delivery-accepted", {"sessionId": "parent", "sessionFormatVersion": 4, "throughSeq": 0}, 1, found)
    own.check("session/end-seed", {"inherited": True}, 2, found)
    own.check("subagent/catalog", fact, 3, found)
    own.check("subagent/catalog", fact, 4, found)
    assert found == []  # inherited or not yet judged
    own.finish(5, found)
    assert [(p.code, p.seq, p.message) for p in found] == [("catalog", 4, "duplicate catalog child c")]


def test_lifecycle_tail_is_information() -> None:
    found = Found()
    life = Lifecycle()
    life.check("turn/start", {}, {"turn": 1}, 0, (0, None), False, found)
    life.check("compaction/start", {}, {"compactionId": "x", "turn": 1}, 1, (0, None), False, found)
    life.check("turn/end", {}, {"turn": 1, "reason": {"kind": "completed"}}, 2, (0, None), False, found)
    assert found == []  # a crossing is reported only once nothing can forgive it
    life.finish(found)
    assert [(p.code, p.severity, p.message) for p in found] == [
        ("lifecycle", Severity.ERROR, "turn/end crosses an open compaction"),
        ("open-tail", Severity.INFO, "open tail: compaction x (seq 1)"),
    ]


# --------------------------------------------------------------------------- inputs that crashed validate


def _with_turn_2_extras(extras: list[dict]) -> list[dict]:
    events = loop()
    at = 20  # inside turn 2, step 1 (after its step/start)
    return renumber(events[:at] + [{"type": t, "seq": 0, "time": 0, "data": d} for t, d in extras] + events[at:])


def test_validate_takes_lone_surrogates_in_ptc_arguments_and_policy_keys(tmp_path: Path) -> None:
    start = {"rootCallId": "c1", "parentCallId": "c1", "subCallId": "s", "name": "n", "arguments": "\ud800"}
    retry = {"retryId": "r1", "turn": 2, "step": 1, "provider": "mock", "mode": "normal", "policyKey": {"k": "\udc00"},
             "retry": 1, "delayMs": 1, "failure": {"message": "busy", "code": "RATE_LIMIT"}}
    events = _with_turn_2_extras([
        ("tool/ptc-dispatch-start", start),
        ("tool/ptc-dispatch", {**start, "isError": False, "content": []}),
        ("llm/retry", retry),
        ("llm/retry-started", {"retryId": "r1", "turn": 2, "step": 1, "retry": 1}),
    ])
    path = write_log(tmp_path / "session.v4.jsonl", events)
    code, out, err = run_env("validate", str(path))
    assert code == 0, (out, err)
    mismatched = copy.deepcopy(events)
    mismatched[21]["data"]["arguments"] = "\udbff"
    code, out, _ = run_env("validate", str(write_log(tmp_path / "bad.v4.jsonl", mismatched)))
    assert code == 4 and b"PTC dispatch does not match its start" in out


@pytest.mark.parametrize(
    ("mutate", "text"),
    [
        (lambda ev: ev[6]["data"].update(reason={"a": 1}), "request/header at seq 6 has an invalid reason {'a': 1}"),
        (lambda ev: ev[4]["data"]["message"]["content"].append({"type": "image", "attachment": {
            "attachmentId": "a", "mediaType": ["image/png"], "bytes": 1, "width": 1, "height": 1}}),
         "format v4 system image requires a supported mediaType"),
        (lambda ev: ev.insert(22, {"type": "session/title-llm-request", "seq": 22, "time": 0,
                                   "data": {"messageSeqs": [20], "messages": ["x"]}}),
         "session/title-llm-request messages do not represent messageSeqs"),
        (lambda ev: ev[5].update(data=5), "user/message requires an object"),
        (lambda ev: ev.append({"type": "developer/message", "seq": 41, "time": 0, "data": 5, "surfaceOp": "append"}),
         "developer/message requires an object"),
    ],
)
def test_validate_reports_what_used_to_crash_it(tmp_path: Path, mutate: Any, text: str) -> None:
    events = loop()
    mutate(events)
    # and an image/offload of seq 5, whose message the fold only holds unchecked when its data is no object
    offload = {"type": "image/offload", "seq": 0, "time": 0, "data": {"targets": [{"seq": 5, "imageIndexes": [0]}]}}
    events = renumber(events + [offload])
    path = write_log(tmp_path / "session.v4.jsonl", events)
    code, out, err = run_env("validate", str(path))
    assert code == 4, (out, err)
    assert text.encode() in out


def test_closer_counter_is_a_whole_decimal() -> None:
    """``interrupted-tool-result-c2-11\\n`` is not dsh's id: its counter must match JS ``/^(0|[1-9]\\d*)$/``."""
    events = json.loads((GOLDEN / "crash-persisted.json").read_text()) + json.loads((GOLDEN / "crash-closers.json").read_text())
    assert [p for p in validate_events(HEADER, events) if p.severity == "error"] == []
    events[11] = copy.deepcopy(events[11])
    events[11]["data"]["message"]["id"] += "\n"
    found = [p.message for p in validate_events(HEADER, events) if p.severity == "error"]
    assert found == ["tool/result c2 is not the exact TOOL_NOT_STARTED repair"]
