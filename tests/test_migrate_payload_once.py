"""A v0 log's payload checks made once: the version-blind types (``protocol/vocabulary.py``).

The v0->v1 edge runs dsh's payload check on every event of a v0 log but its chunks, and
v2->v3 runs it again at v2.  With the fast paths the second run is left out for the
types whose check decides the same at every version and reads no seq, unless v1->v2
wrote the event itself.  These tests hold the three facts that rests on: the check of
each such type decides alike at v0, v1 and v2 (on real payloads and broken ones), v1->v2
writes only the types it is said to make, and a migration answers the same in both modes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS, FIXTURES, corpus_files
from dshlog import fastpaths
from dshlog.errors import DshlogError
from dshlog.migrate import migrate_stream, v1_v2
from dshlog.migrate._common import StageRefusal
from dshlog.migrate.payload import assert_payload_semantics
from dshlog.protocol.packed import PackedRun
from dshlog.protocol.vocabulary import RELEASED_V0_PAYLOADS, V1_V2_MADE_TYPES, VERSION_BLIND_PAYLOAD_TYPES
from dshlog.read.session import open_log

#: Values a broken payload member takes in place of its own.
_BROKEN: tuple[Any, ...] = (None, "", "x", -1, 0, 1.5, True, [], [1], {}, {"kind": "user"})


def _v0_logs() -> list[Path]:
    """The v0 logs of the fixtures and of the shared corpus (when present)."""
    fixtures = sorted((FIXTURES / "v0").rglob("*.jsonl"))
    corpus = [p for p in corpus_files() if p.suffix == ".jsonl" and p.relative_to(CORPUS).parts[0].startswith("v0")]
    return fixtures + corpus


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """A log's stored events, packed runs left out (chunks are not checked at v2)."""
    try:
        with open_log(str(path), strict=False) as log:
            for ev in log.stored_runs():
                if type(ev) is not PackedRun and isinstance(ev, dict):
                    yield ev
    except DshlogError:
        return


def _verdict(event: dict[str, Any], version: int) -> str | None:
    try:
        assert_payload_semantics(event, version)
    except StageRefusal as refusal:
        return str(refusal)
    return None


def _variants(event: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The event, then each top-level payload member broken or left out, one at a time."""
    yield event
    data = event.get("data")
    if not isinstance(data, dict):
        return
    for key in data:
        gone = copy.deepcopy(event)
        del gone["data"][key]
        yield gone
        for value in _BROKEN:
            broken = copy.deepcopy(event)
            broken["data"][key] = value
            yield broken


def common_events() -> list[dict[str, Any]]:
    """The commonest payloads of a long log, by hand, in their usual shapes (each type the lean pass knows)."""
    ok = {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "out"}]}
    events = [
        {"type": "step/start", "seq": 1, "data": {"turn": 1, "step": 1}},
        {"type": "tool/call", "seq": 2, "data": {"turn": 1, "step": 1, "callId": "c1", "name": "ls", "arguments": "{}"}},
        {"type": "assistant/message", "seq": 3, "data": {"turn": 1, "step": 1, "usage": {"inputTokens": 1, "outputTokens": 2},
                                                         "message": {"id": "m", "role": "assistant", "content": [
                                                             {"type": "reasoning", "text": "r"},
                                                             {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"}],
                                                             "source": {"kind": "model", "provider": "p", "model": "m"}}}},
        {"type": "tool/result", "seq": 4, "data": {"turn": 1, "step": 1, "message": {
            "id": "t", "role": "user", "content": [ok], "source": {"kind": "tool", "callId": "c1"}}}},
    ]
    user = {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
    snapshot = {**user, "source": {"kind": "plugin", "plugin": "p", "form": "snapshot", "sections": [{"name": "n", "text": ""}]}}
    events += [
        {"type": "user/message", "seq": 5, "data": user},
        {"type": "user/message", "seq": 6, "data": snapshot},
        {"type": "agent/inbox/spliced", "seq": 7, "data": {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": [user]}},
        {"type": "step/end", "seq": 8, "data": {"turn": 1, "step": 1}},
    ]
    return events


def test_the_version_blind_types_are_released_types() -> None:
    assert VERSION_BLIND_PAYLOAD_TYPES <= set(RELEASED_V0_PAYLOADS)
    # the types whose check reads the version or the seq stay out
    assert not VERSION_BLIND_PAYLOAD_TYPES & {
        "user/message", "agent/inbox/spliced", "session/title-llm-request", "session-log-deepseek/delivery-accepted",
        "command/done", "compaction/prune", "compaction/summary", "session/title",
    }


def test_v1_v2_writes_only_the_types_it_is_said_to_make() -> None:
    written = set(re.findall(r'"type": "([^"]+)"', Path(v1_v2.__file__).read_text(encoding="utf-8")))
    assert written and written <= V1_V2_MADE_TYPES, written - V1_V2_MADE_TYPES


def test_a_version_blind_check_decides_alike_at_every_version() -> None:
    """On every such event of the v0 logs (a few per type), whole and broken member by member."""
    seen: dict[str, int] = {}
    compared = 0
    for path in _v0_logs():
        for event in _events(path):
            t = event.get("type")
            if not isinstance(t, str) or t not in VERSION_BLIND_PAYLOAD_TYPES or seen.get(t, 0) >= 6:
                continue
            seen[t] = seen.get(t, 0) + 1
            compared += _alike_at_every_version(event)
    commonest = {"assistant/message", "tool/result", "step/start"}
    if CORPUS.is_dir():  # the real logs hold each of the commonest (the fixtures alone hold no tool result)
        assert commonest <= set(seen), seen
    hand = [e for e in common_events() if e["type"] in VERSION_BLIND_PAYLOAD_TYPES]
    assert commonest <= {e["type"] for e in hand}
    for event in hand:
        compared += _alike_at_every_version(event)
    assert compared


def _alike_at_every_version(event: dict[str, Any]) -> int:
    """Check ``event`` whole and broken member by member at v0, v1 and v2: the same verdict at each; how many were compared."""
    compared = 0
    for variant in _variants(event):
        verdicts = {v: _verdict(variant, v) for v in (0, 1, 2)}
        assert len(set(verdicts.values())) == 1, (variant, verdicts)
        compared += 1
    return compared


def _migrated(header: dict[str, Any], events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    out: list[dict[str, Any]] = []
    try:
        _, it = migrate_stream(header, iter(copy.deepcopy(events)), child_facts=[])
        for ev in it:
            out.append(ev)
    except DshlogError as err:
        return out, str(err)
    return out, None


def _log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    try:
        with open_log(str(path), strict=False) as log:
            if log.header is None or log.version != 0:
                return None
            return dict(log.header), [e for e in log.stored_runs() if isinstance(e, dict)]
    except DshlogError:
        return None


@pytest.mark.parametrize("path", _v0_logs()[:40], ids=lambda p: str(p)[-60:])
def test_a_v0_migration_answers_alike_in_both_modes(path: Path) -> None:
    """The whole log, and the log with each blind-type payload broken in turn (the first few)."""
    log = _log(path)
    if log is None:
        pytest.skip("not a readable v0 log")
    header, events = log
    cases = [events]
    for i, ev in enumerate(events):
        if ev.get("type") in VERSION_BLIND_PAYLOAD_TYPES and isinstance(ev.get("data"), dict) and ev["data"] and len(cases) < 6:
            broken = copy.deepcopy(events)
            broken[i]["data"][next(iter(ev["data"]))] = None
            cases.append(broken)
    for case in cases:
        answers = {}
        for mode in fastpaths.MODES:
            with fastpaths.using(mode):
                answers[mode] = _migrated(header, case)
        assert answers["fast"] == answers["exact"]
