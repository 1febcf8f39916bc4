"""Validator and vocabulary: golden logs are clean, each rule family fires, corpus files hold no surprises."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dshlog.protocol import vocabulary as vocab
from dshlog.check.header import validate_header
from conftest import read_log
from dshlog.check.problems import Problem
from dshlog.check.validate import Validator, validate_events

from conftest import CORPUS, GOLDEN  # noqa: E402  (GOLDEN: the seed's logs in fixtures/golden)

CORPUS_V4 = CORPUS / "v4"

HEADER = {
    "type": "session",
    "version": 4,
    "id": "s1",
    "createdAt": 1,
    "cwd": "/home/ann/p",
    "isSeeded": False,
    "delegationDepth": 0,
}


def golden(*names: str) -> list[dict]:
    events: list[dict] = []
    for name in names:
        events += json.loads((GOLDEN / name).read_text())
    return events


def load_projection(path: Path) -> tuple[dict, list[dict]]:
    """Snapshot projections lack seq/time: the reader restores seq by position (time 0)."""
    header, events = read_log(path)
    assert header is not None
    return header, events


def problems(events: list[dict], header: dict | None = HEADER, **kw: Any) -> list[Problem]:
    return list(validate_events(header, events, **kw))


def errors(events: list[dict], header: dict | None = HEADER, **kw: Any) -> list[Problem]:
    return [p for p in problems(events, header, **kw) if p.severity == "error"]


def codes(found: list[Problem]) -> set[str]:
    return {p.code for p in found}


def has(found: list[Problem], code: str, text: str, seq: int | None | str = "any") -> bool:
    return any(p.code == code and text in p.message and (seq == "any" or p.seq == seq) for p in found)


@pytest.fixture
def loop() -> list[dict]:
    return golden("loop-events.json")


def ev(type_: str, seq: int, data: Any, **extra: Any) -> dict:
    return {"type": type_, "seq": seq, "time": 0, "data": data, **extra}


# ------------------------------------------------------------------ golden logs


def test_golden_loop_is_clean(loop: list[dict]) -> None:
    assert problems(loop) == []
    assert problems(loop, header=None) == []


def test_golden_crash_has_only_an_open_tail_note() -> None:
    found = problems(golden("crash-persisted.json"))
    assert [(p.code, p.severity) for p in found] == [("open-tail", "info")]
    assert "turn 1" in found[0].message and "c1, c2" in found[0].message


def test_golden_crash_with_closers_is_clean() -> None:
    assert problems(golden("crash-persisted.json", "crash-closers.json")) == []


def test_input_events_are_not_mutated(loop: list[dict]) -> None:
    before = copy.deepcopy(loop)
    loop[5]["extra"] = 1
    problems(loop)
    before[5]["extra"] = 1
    assert loop == before


def test_feed_and_finish_incrementally(loop: list[dict]) -> None:
    v = Validator({**HEADER, "cwd": "relative"})
    first = v.feed(loop[0])
    assert [p.code for p in first] == ["header"]
    for event in loop[1:]:
        assert v.feed(event) == []
    assert v.finish() == []
    assert v.finish() == []


# ------------------------------------------------------------------ envelope, density, vocabulary


def test_envelope_problems(loop: list[dict]) -> None:
    loop[1] = {**loop[1], "extra": True}
    loop[2] = {**loop[2], "time": 1.5}
    loop[3] = {**loop[3], "ignorable": False}
    found = errors(loop)
    assert has(found, "envelope", "unexpected key 'extra'", 1)
    assert has(found, "envelope", "time must be a safe integer", 2)
    assert has(found, "envelope", "ignorable must be true", 3)


def test_missing_data_and_bad_type(loop: list[dict]) -> None:
    loop[0] = {k: v for k, v in loop[0].items() if k != "data"}
    loop[16] = {**loop[16], "type": 7}
    found = errors(loop)
    assert has(found, "envelope", "data is missing", 0)
    assert has(found, "envelope", "type must be a string", 16)


def test_seq_gap_is_reported_and_folding_continues(loop: list[dict]) -> None:
    loop[3] = {**loop[3], "seq": 30}
    found = errors(loop)
    assert [p.code for p in found] == ["seq-gap"]
    assert found[0].message.startswith("format v4 event 3 is not dense")


def test_unknown_types(loop: list[dict]) -> None:
    loop.insert(16, ev("agent/harness", 16, {"harness": "dsh"}))
    loop.insert(17, ev("vendor/thing", 17, {}, ignorable=True))
    for i, event in enumerate(loop):
        loop[i] = {**event, "seq": i}
    found = errors(loop)
    assert [(p.code, p.message) for p in found] == [
        ("unsupported", 'format v4 contains unknown event type "agent/harness" at seq 16')
    ]


def test_retired_code_dispatch_and_header_system(loop: list[dict]) -> None:
    loop.insert(9, ev("tool/code-dispatch-start", 9, {}))
    for i, event in enumerate(loop):
        loop[i] = {**event, "seq": i}
    header = copy.deepcopy(loop[6])
    header["data"]["header"]["system"] = ""
    loop[6] = header
    found = errors(loop)
    assert has(found, "retired", "format v4 rejects retired event type tool/code-dispatch-start", 9)
    assert has(found, "retired", "format v4 request/header rejects retired header.system", 6)


def test_vocabulary_sets() -> None:
    assert "assistant/chunk" in vocab.V0_TYPES and "assistant/chunk" not in vocab.V2_TYPES
    assert "assistant/attempt" in vocab.V2_TYPES and "tool/code-dispatch" in vocab.V2_TYPES
    assert "tool/ptc-dispatch" in vocab.V3_TYPES and "tool/code-dispatch" not in vocab.V3_TYPES
    assert "developer/message" in vocab.V4_TYPES and "developer/message" not in vocab.V3_TYPES
    assert {"job/registered", "job/settled", "working-directory/change"} <= vocab.V4_TYPES
    assert len(vocab.V3_TYPES) == 58 and len(vocab.V4_TYPES) == 62
    assert vocab.SURFACE_TYPES[4] == vocab.SURFACE_TYPES_V4 and len(vocab.SURFACE_TYPES_V4) == 5
    assert vocab.is_known("compact/start", 0) and not vocab.is_known("compact/start", 2)
    assert vocab.LEGACY_RENAMES["steering/message"] == "user/message"
    assert not vocab.is_known("mode/set", 0)


# ------------------------------------------------------------------ header


def test_header_rules() -> None:
    assert validate_header(HEADER, 4) == []
    assert validate_header({**HEADER, "cwd": "C:\\Users\\x"}, 4) == []
    assert validate_header({**HEADER, "cwd": "\\\\srv\\share\\p"}, 4) == []
    assert validate_header({**HEADER, "cwd": "C:\\Users\\x"}, 4, cwd_platform="posix") == [
        "format v4 header cwd must be absolute"
    ]
    bad = {k: v for k, v in HEADER.items() if k != "isSeeded"}
    bad.update(owner="u", origin="parent", sandboxMode="x", createdAt=-1)
    found = validate_header(bad, 4)
    assert "format v4 header lacks required field isSeeded" in found
    assert "format v4 header has unexpected field owner" in found
    assert "session header uses retired policy baseline fields" in found
    assert 'format v4 header origin must be "subagent"' in found
    assert "format v4 header createdAt must be a non-negative safe integer" in found
    v0 = {"type": "session", "version": 0, "id": "x", "createdAt": 0, "seedLength": 3, "delegationDepth": 0}
    assert validate_header(v0) == []
    assert validate_header({**v0, "isSeeded": True}) == ["format v0 header has unexpected field isSeeded"]
    assert validate_header({**HEADER, "seedLength": 1}, 4) == ["format v4 header has unexpected field seedLength"]
    reordered = dict(reversed(list(HEADER.items())))
    assert validate_header(reordered, 4) == []
    assert len(validate_header(reordered, 4, check_order=True)) == 1


def test_header_problems_in_validator(loop: list[dict]) -> None:
    found = errors(loop, header={**HEADER, "owner": "x", "cwd": "rel"})
    assert has(found, "header", "unexpected field owner", None)
    assert has(found, "header", "cwd must be absolute", None)


# ------------------------------------------------------------------ message and data rules


def test_message_rules(loop: list[dict]) -> None:
    loop[5] = copy.deepcopy(loop[5])
    loop[5]["data"]["source"] = {"kind": "plugin", "plugin": "x"}
    loop[5]["data"]["content"].append({"type": "tool-result", "toolCallId": "c", "content": []})
    loop[10] = copy.deepcopy(loop[10])
    loop[10]["data"]["error"] = {"name": "E", "code": "X"}
    loop[4] = copy.deepcopy(loop[4])
    loop[4]["data"]["message"]["source"] = {"kind": "runtime-context"}
    loop[13] = copy.deepcopy(loop[13])
    loop[13]["data"]["message"]["id"] = ""
    found = errors(loop)
    assert has(found, "message", "format v4 message requires a producer-owned source kind", 5)
    assert has(found, "retired", "must not contain a released tool-result wrapper", 5)
    assert has(found, "message", "carries error metadata for a non-error tool result", 10)
    assert has(found, "message", "error requires message.isError === true", 10)
    assert has(found, "message", "must have system-prompt source", 4)
    assert has(found, "message", "lacks an identified message", 13)


def test_tool_result_shape(loop: list[dict]) -> None:
    loop[10] = copy.deepcopy(loop[10])
    msg = loop[10]["data"]["message"]
    msg["role"] = "user"
    msg["toolCallId"] = "other"
    found = errors(loop)
    assert has(found, "message", "format v4 tool/result at seq 10 requires a tool-role message", 10)
    assert has(found, "message", "requires toolCallId matching its tool source", 10)


def test_request_header_rules(loop: list[dict]) -> None:
    header = copy.deepcopy(loop[6])
    header["data"]["header"]["config"] = {"provider": "", "model": "m"}
    header["data"]["header"]["tools"] = []
    header["data"]["header"]["adapterDefaults"] = {"maxTokens": True}
    header["data"]["reason"] = "fallback"
    header["data"]["startsSeries"] = False
    loop[6] = header
    found = errors(loop)
    assert has(found, "message", "seed request/header at index 6 lacks provider/model", 6)
    assert has(found, "message", "must omit empty tools", 6)
    assert has(found, "message", "invalid reason", 6)
    assert has(found, "message", "startsSeries must be true", 6)
    assert has(found, "message", "invalid adapterDefaults", 6)


def test_stream_and_settlement_rules(loop: list[dict]) -> None:
    msg = copy.deepcopy(loop[8])
    msg["data"]["stream"].append({"type": "text-chunks", "time0": 0, "index": 0, "dt": [1, 2], "texts": ["a", "b"]})
    msg["data"]["stream"].append({"type": "chunk", "time": 0, "chunk": {"type": "usage"}, "extra": 1})
    msg["data"]["stream"].append({"type": "tool-call-chunks", "time0": 0, "index": 1, "dt": [], "id": "", "args": ["x"]})
    loop[8] = msg
    attempt = copy.deepcopy(loop[21])
    attempt["data"]["stream"] = "nope"
    loop[21] = attempt
    found = errors(loop)
    assert has(found, "stream", "dt must have one entry fewer than texts", 8)
    assert has(found, "stream", "must have exactly type, time, chunk", 8)
    assert has(found, "stream", "id must be a nonempty string", 8)
    assert has(found, "message", "seed assistant/attempt at index 21 has invalid settlement fields", 21)


def test_developer_message_rules(loop: list[dict]) -> None:
    dev = ev(
        "developer/message",
        9,
        {
            "turn": 1,
            "step": 1,
            "message": {"role": "developer", "content": [{"type": "tool-addition", "toolName": "nope"}], "source": {"kind": "tool-update"}, "id": "d1"},
            "headerSeq": 6,
        },
        surfaceOp="append",
    )
    ok = copy.deepcopy(dev)
    ok["data"]["message"]["content"][0]["toolName"] = "echo"
    for candidate, expected in ((ok, None), (dev, 'developer/message tool-addition "nope" must name exactly one tool in headerSeq 6')):
        log = copy.deepcopy(loop)
        log.insert(9, candidate)
        for i, event in enumerate(log):
            log[i] = {**event, "seq": i}
        # sourceEventSeqs of the tool result shift with the insertion
        log[11] = {**log[11], "sourceEventSeqs": [10]}
        found = errors(log)
        if expected is None:
            assert found == []
        else:
            assert has(found, "surface", expected, 9)
    wrong_role = copy.deepcopy(loop)
    wrong_role[5] = copy.deepcopy(wrong_role[5])
    wrong_role[5]["data"]["role"] = "developer"
    assert has(errors(wrong_role), "message", "developer/message and developer role must occur together", 5)


# ------------------------------------------------------------------ surface (delegated to the fold)


def test_surface_problems_are_reported(loop: list[dict]) -> None:
    pytest.importorskip("dshlog.check.surface")
    loop[5] = {k: v for k, v in loop[5].items() if k != "surfaceOp"}
    loop[7] = {**loop[7], "surfaceOp": "append"}
    found = errors(loop)
    assert has(found, "surface", 'session event "user/message" is surface-eligible and requires a surfaceOp marker', 5)
    assert has(found, "surface", 'session event "request/context" is not surface-eligible and cannot carry surfaceOp', 7)


def test_surface_replace_over_head_is_refused(loop: list[dict]) -> None:
    pytest.importorskip("dshlog.check.surface")
    loop.append(
        ev(
            "user/message",
            41,
            {"content": [{"type": "text", "text": "x"}], "source": {"kind": "user"}, "role": "user", "id": "r"},
            sourceEventSeqs=[4, 5],
            surfaceOp={"op": "replace", "startSeq": 4, "endSeq": 5},
        )
    )
    found = errors(loop)
    assert has(found, "surface", "node 0 holds the system prompt", 41)


def test_second_system_message_without_head(loop: list[dict]) -> None:
    # The first surface node is a user message: a later system/message has no protected head.
    log = copy.deepcopy(loop)
    log[4], log[5] = {**log[5], "seq": 4}, {**log[4], "seq": 5}
    found = errors(log)
    assert has(found, "lifecycle", "system/message requires a protected first surface head", 5)


# ------------------------------------------------------------------ lifecycle relationships


def test_turn_and_step_lifecycle(loop: list[dict]) -> None:
    loop[17] = copy.deepcopy(loop[17])
    loop[17]["data"]["turn"] = 5
    loop[12] = copy.deepcopy(loop[12])
    loop[12]["data"]["step"] = 3
    found = errors(loop)
    assert has(found, "lifecycle", "turn/start does not open the expected turn", 17)
    assert has(found, "lifecycle", "step/start does not match the open turn and next step", 12)


def test_unresolved_tool_call_at_step_end(loop: list[dict]) -> None:
    del loop[10]
    for i, event in enumerate(loop):
        loop[i] = {**event, "seq": i}
    found = errors(loop)
    assert has(found, "lifecycle", "step/end leaves unresolved tool call c1", 10)


def test_tool_call_must_match_advertisement(loop: list[dict]) -> None:
    loop[9] = copy.deepcopy(loop[9])
    loop[9]["data"]["arguments"] = "{}"
    found = errors(loop)
    assert has(found, "lifecycle", "tool/call c1 does not match one advertised tool call", 9)


def test_unstarted_result_must_be_exact_repair() -> None:
    log = golden("crash-persisted.json", "crash-closers.json")
    log[11] = copy.deepcopy(log[11])
    log[11]["data"]["message"]["content"][0]["text"] = "retry"
    found = errors(log)
    assert has(found, "lifecycle", "tool/result c2 is not the exact TOOL_NOT_STARTED repair", 11)


def test_retry_chain(loop: list[dict]) -> None:
    retry = {"retryId": "r1", "turn": 2, "step": 1, "provider": "mock", "mode": "normal", "policyKey": "k", "retry": 2,
             "delayMs": 1, "failure": {"message": "busy", "code": "RATE_LIMIT"}}
    loop.insert(22, ev("llm/retry", 22, retry))
    loop.insert(23, ev("llm/retry-started", 23, {"retryId": "r9", "turn": 2, "step": 1, "retry": 1}))
    for i, event in enumerate(loop):
        loop[i] = {**event, "seq": i}
    found = errors(loop)
    assert has(found, "lifecycle", "llm/retry skips its policy attempt sequence", 22)
    assert has(found, "lifecycle", "llm/retry-started pairs no prior scheduled attempt", 23)


def test_titles_commands_and_dispatches(loop: list[dict]) -> None:
    extra = [
        ev("session/title", 0, {"title": "t", "messageSeqs": [4], "source": {"kind": "dsh-session-title-llm"}}),
        ev("command/run", 0, {"commandId": "k", "name": "x", "source": "user"}),
        ev("command/run", 0, {"commandId": "k", "name": "x", "source": "user"}),
        ev("command/done", 0, {"commandId": "zz", "kind": "success"}),
        ev("tool/ptc-dispatch-start", 0, {"rootCallId": "c1", "parentCallId": "c1", "subCallId": "s", "name": "n", "arguments": "{}"}),
        ev("tool/ptc-dispatch", 0, {"rootCallId": "c1", "parentCallId": "c1", "subCallId": "s", "name": "n", "arguments": "{ }", "isError": False, "content": []}),
    ]
    log = loop[:10] + extra + loop[10:]
    for i, event in enumerate(log):
        log[i] = {**event, "seq": i}
    log[16] = {**log[16], "sourceEventSeqs": [9]}
    found = errors(log)
    assert has(found, "lifecycle", "session/title messageSeqs must cite distinct earlier human user/message events", 10)
    assert has(found, "lifecycle", "command/run repeats commandId k", 12)
    assert has(found, "lifecycle", "command/done has no prior command/run", 13)
    assert has(found, "lifecycle", "PTC dispatch does not match its start", 15)


def test_compaction_transaction(loop: list[dict]) -> None:
    comp = [
        ev("compaction/start", 0, {"compactionId": "x", "turn": 2}),
        ev("compaction/summary", 0, {"compactionId": "x", "summary": [], "shadowedRange": {"start": 5, "end": 8},
                                      "shadowedSeqs": [5, 10], "shadowedTokenCount": 1, "provider": "p", "model": "m"}),
    ]
    log = loop[:24] + comp + loop[24:]
    for i, event in enumerate(log):
        log[i] = {**event, "seq": i}
    found = errors(log)
    assert has(found, "lifecycle", "compaction/summary shadowedSeqs do not name an exact current surface span", 25)
    assert has(found, "lifecycle", "turn/end crosses an open compaction", 26)
    assert sum("crosses an open compaction" in p.message for p in found) == 1
    tail = [p for p in problems(log) if p.code == "open-tail"]
    assert tail and "compaction x" in tail[0].message


def test_inherited_orphan_compaction_may_cross_turns(loop: list[dict]) -> None:
    log = loop[:16] + [ev("compaction/start", 0, {"compactionId": "o", "turn": None})] + loop[16:]
    log.append(ev("session/end-seed", 0, {}))
    for i, event in enumerate(log):
        log[i] = {**event, "seq": i}
    assert errors(log) == []


# ------------------------------------------------------------------ ownership facts and the cut


def test_delivery_markers(loop: list[dict]) -> None:
    loop.append(ev("session-log-deepseek/delivery-accepted", 41, {"sessionId": "other", "sessionFormatVersion": 4, "throughSeq": 41}))
    loop.append(ev("session-log-deepseek/delivery-accepted", 42, {"sessionId": "other", "throughSeq": 3}))
    found = errors(loop)
    assert has(found, "delivery", "delivery throughSeq must precede its marker", 41)
    assert has(found, "delivery", "current-generation delivery marker names the wrong Session", 41)
    assert not any(p.seq == 42 for p in found)  # generation 0 markers are historical


def test_catalog_and_cut(loop: list[dict]) -> None:
    fact = {"version": 0, "childId": "c", "childCreatedAt": 1, "mode": "continuable", "label": "L"}
    loop.append(ev("subagent/catalog", 41, fact))
    loop.append(ev("subagent/catalog", 42, fact))
    loop.append(ev("subagent/catalog", 43, {"version": 0, "childId": "d", "childCreatedAt": 1, "mode": "unknown"}))
    found = errors(loop)
    assert has(found, "catalog", "duplicate catalog child c", 42)
    assert has(found, "catalog", "subagent/catalog requires a supported versioned catalog fact", 43)


def test_seeded_header_needs_marker_and_unseeded_refuses_one(loop: list[dict]) -> None:
    found = errors(loop, header={**HEADER, "isSeeded": True, "parentSession": "p"})
    assert has(found, "cut", "format v4 seeded header disagrees with its last inherited end-seed marker")
    marked = loop[:16] + [ev("session/end-seed", 16, {"inherited": True})]
    found = errors(marked)
    assert has(found, "cut", "format v4 unseeded Session contains an inherited end-seed marker", 16)
    seeded = {**HEADER, "isSeeded": True, "parentSession": "p"}
    assert errors(marked, header=seeded) == []
    assert errors(marked, header=seeded, inherited_cut=16) == []
    assert has(errors(marked, header=seeded, inherited_cut=10), "cut", "disagrees with its last inherited end-seed marker")
    assert has(errors(marked, header=seeded, inherited_cut=99), "cut", "inherited event count exceeds its events")


def test_inherited_catalog_entries_are_not_owned(loop: list[dict]) -> None:
    fact = {"version": 0, "childId": "c", "childCreatedAt": 1, "mode": "continuable", "label": "L"}
    log = loop[:16] + [ev("subagent/catalog", 16, fact), ev("session/end-seed", 17, {"inherited": True}),
                       ev("subagent/catalog", 18, fact)]
    seeded = {**HEADER, "isSeeded": True, "parentSession": "p"}
    # the cut (17) is derived from the marker: the first entry is the parent's, not a duplicate
    assert errors(log, header=seeded) == []
    assert errors(log, header=seeded, inherited_cut=17) == []
    # in an unseeded log both entries are owned
    unseeded = log[:17] + [{**log[18], "seq": 17}]
    assert has(errors(unseeded), "catalog", "duplicate catalog child c", 17)


# ------------------------------------------------------------------ many problems at once


def test_every_problem_is_reported(loop: list[dict]) -> None:
    loop[2] = {**loop[2], "bogus": 1}
    loop[7] = {**loop[7], "seq": 70}
    loop[9] = copy.deepcopy(loop[9])
    loop[9]["data"]["name"] = "other"
    loop.insert(20, ev("mystery/type", 20, {}))
    for i in range(21, len(loop)):
        loop[i] = {**loop[i], "seq": i}
    loop[25] = copy.deepcopy(loop[25])  # turn/end of turn 2, now at 25
    loop[25]["data"]["reason"] = "done"
    found = errors(loop)
    assert {"envelope", "seq-gap", "lifecycle", "unsupported", "message"} <= codes(found)
    assert len(found) >= 5


# ------------------------------------------------------------------ real files


CORPUS_FILES = sorted(CORPUS_V4.rglob("*.jsonl")) if CORPUS_V4.exists() else []

#: What the real v4 files are known to contain beyond projection artefacts.
EXPECTED_ERRORS = {
    # a fork-only event type written without ignorable:true; dsh refuses it as unsupported
    "snapshots__sdk__text-turn__session.v4.jsonl": {
        ("unsupported", 'format v4 contains unknown event type "agent/harness" at seq 0')
    },
}


@pytest.mark.skipif(not CORPUS_FILES, reason=f"shared corpus not found at {CORPUS} (set DSHLOG_SHARED)")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name[-60:]}")
def test_corpus_v4_has_no_unexpected_problems(path: Path) -> None:
    header, events = load_projection(path)
    found = problems(events, header, projection=True)
    unexpected = {(p.code, p.message) for p in found if p.severity == "error"}
    assert unexpected == EXPECTED_ERRORS.get(path.name, set())
    for p in found:
        if p.severity == "warning":
            assert p.code == "projection" and "{{" in p.message
    # without the projection flag the same placeholders are errors
    if any(p.code == "projection" for p in found):
        assert any(p.severity == "error" and p.code in ("header", "message") for p in problems(events, header))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


# ---------------------------------------------------- fast paths against the straightforward checks

_V4_SEEDS = CORPUS_FILES + sorted((Path(__file__).resolve().parents[1] / "fixtures" / "v4").rglob("*.jsonl"))
# the logs with embedded streams (where the one-pass proof decides) are drawn as often as all others
_V4_STREAMED = [p for p in _V4_SEEDS if b'"stream":[{' in p.read_bytes()]
_HOSTILE = [1.0, -1, True, None, "x", 2**53, [], {}, "", 0]


def _mutate(events: list[dict], rng: Any) -> list[dict]:
    """Copy ``events`` with a few hostile edits where the fast paths decide (streams, data rules)."""
    out = copy.deepcopy(events)
    streamed = [e for e in out if isinstance(e.get("data"), dict) and e["data"].get("stream")]
    for _ in range(rng.randint(1, 3)):
        ev = rng.choice(streamed if streamed and rng.random() < 0.7 else out)
        data = ev.get("data")
        stream = data.get("stream") if isinstance(data, dict) else None
        roll = rng.random()
        if isinstance(stream, list) and stream and roll < 0.6:
            record = rng.choice(stream)
            if not isinstance(record, dict):
                continue
            key = rng.choice(sorted(record) + ["extra"])
            if rng.random() < 0.2:
                record.pop(key, None)
            elif key in ("dt", "texts", "args") and isinstance(record.get(key), list) and record[key]:
                record[key][rng.randrange(len(record[key]))] = rng.choice(_HOSTILE)
            else:
                record[key] = rng.choice(_HOSTILE)
        elif isinstance(data, dict) and roll < 0.8:
            message = data if ev.get("type") == "user/message" else data.get("message")
            if isinstance(message, dict) and isinstance(message.get("content"), list):
                message["content"].append({"type": "tool-addition", "toolName": "x"})
            elif ev.get("type") == "tool/result":
                data["error"] = {"code": "X"}
        elif isinstance(data, dict):
            data[rng.choice(sorted(data) or ["x"])] = rng.choice(_HOSTILE)
    return out


@pytest.mark.skipif(not _V4_SEEDS, reason="no v4 logs to mutate")
@settings(max_examples=120, deadline=None, derandomize=True)
@given(path=st.sampled_from(_V4_STREAMED or [None]) | st.sampled_from(_V4_SEEDS or [None]), seed=st.integers(0, 2**32 - 1))
def test_fast_paths_report_exactly_what_the_straightforward_checks_report(path: Path, seed: int) -> None:
    """On real logs with hostile edits, validation with the one-pass stream proof and the
    fold's skipped data rules finds the same problems, in the same order, as without them."""
    import random

    from dshlog.check import streams as validate_mod
    from dshlog.check.surface import SurfaceFold

    header, events = load_projection(path)
    mutated = _mutate(events, random.Random(seed))
    fast = [(p.code, p.message, p.seq, p.severity) for p in problems(mutated, header, projection=True)]
    saved_passes, saved_flag = validate_mod._stream_passes, SurfaceFold.__dict__.get("check_data")
    try:
        validate_mod._stream_passes = lambda stream: False
        SurfaceFold.check_data = property(lambda self: True, lambda self, value: None)  # type: ignore[assignment]  # a property patched over the flag for this test
        slow = [(p.code, p.message, p.seq, p.severity) for p in problems(mutated, header, projection=True)]
    finally:
        validate_mod._stream_passes = saved_passes
        if saved_flag is None:
            del SurfaceFold.check_data
        else:
            SurfaceFold.check_data = saved_flag  # type: ignore[assignment]  # the flag restored
    assert fast == slow


@pytest.mark.parametrize("fixture, version, events", [("v0/text-turn/session.jsonl", 0, 43), ("v4/loop/session.v4.jsonl", 4, 41)])
def test_validate_reads_standard_input_from_the_run(fixture: str, version: int, events: int) -> None:
    """``validate -`` reads the run's stdin (not the process's), every time it reads the log: a v0 log is
    read three times (it crashed on a closed stdin), and a pipe is read whole (it stopped after one row)."""
    from conftest import FIXTURES, run_env

    data = (FIXTURES / fixture).read_bytes()
    code, _out, err = run_env("validate", "-", stdin=data)
    assert code == 0, err
    assert f"-: ok (v{version}, {events} events, 0 errors, 0 warnings)".encode() in _out  # a verdict is a result: stdout
