"""The lean payload pass (``migrate/payload.py``, a fast path) accepts only what dsh's switch accepts.

It answers for the commonest payloads of a long log (settlements, tool calls and results,
step bounds) without the switch's labels; where it is not sure the switch decides.  So
wherever it says yes the switch must pass too, at every version it is asked at: checked
here on the real payloads of the v0 logs and on each of them broken at every member,
however deep.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from dshlog.migrate._common import StageRefusal
from dshlog.migrate.payload import _Checker, _lean_passes
from conftest import CORPUS
from test_migrate_payload_once import _BROKEN, _events, _v0_logs, common_events

_LEAN_TYPES = ("assistant/message", "tool/result", "tool/call", "step/start", "step/end", "user/message", "agent/inbox/spliced")


def _switch_passes(event: dict[str, Any], version: int) -> bool:
    try:
        _Checker(version, False).check(event)
    except StageRefusal:
        return False
    return True


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every member's path below ``value`` (dict keys and list indexes)."""
    if isinstance(value, dict):
        for key, member in value.items():
            yield (*path, key)
            yield from _paths(member, (*path, key))
    elif isinstance(value, list):
        for i, member in enumerate(value[:3]):
            yield (*path, i)
            yield from _paths(member, (*path, i))


def _broken(event: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The event with one member anywhere in its data replaced, or left out, or one added."""
    for path in _paths(event["data"]):
        for value in (*_BROKEN, "__gone__", "__extra__"):
            ev = copy.deepcopy(event)
            parent = ev["data"]
            for step in path[:-1]:
                parent = parent[step]
            last = path[-1]
            if value == "__gone__":
                del parent[last]
            elif value == "__extra__":
                if isinstance(parent[last], dict):
                    parent[last]["unexpected"] = 1
                else:
                    continue
            else:
                parent[last] = value
            yield ev


def _shape(data: Any) -> str:
    """Member names, source kinds and forms, block types: what tells the lean pass's cases apart."""
    if isinstance(data, dict):
        return "{" + ",".join(sorted(f"{k}:{v!r}" if k in ("kind", "form", "type", "plugin") and isinstance(v, str) else f"{k}:{_shape(v)}"
                                     for k, v in data.items() if k not in ("text", "id", "arguments", "callId", "toolCallId"))) + "}"
    if isinstance(data, list):
        return "[" + ",".join(sorted({_shape(m) for m in data})) + "]"
    return type(data).__name__


def test_the_lean_pass_says_yes_only_where_the_switch_passes() -> None:
    seen: dict[tuple[str, str], int] = {}
    lean = 0
    for path in _v0_logs():
        for event in _events(path):
            t = event.get("type")
            if t not in _LEAN_TYPES:
                continue
            shape = (t, _shape(event.get("data")))  # a few of each shape: every source kind, block kind, member set
            if seen.get(shape, 0) >= 2:
                continue
            seen[shape] = seen.get(shape, 0) + 1
            for variant in (event, *_broken(event)):
                if _lean_passes(variant):
                    lean += 1
                    assert all(_switch_passes(variant, v) for v in (0, 1, 2)), variant
    for event in common_events():
        for variant in _broken(event):
            if _lean_passes(variant):
                lean += 1
                assert all(_switch_passes(variant, v) for v in (0, 1, 2)), variant
    assert {e["type"] for e in common_events()} == set(_LEAN_TYPES)  # each type is taken apart, by hand at least
    if CORPUS.is_dir():  # and in the real logs' own shapes (the fixtures alone hold no tool call)
        assert {shape[0] for shape in seen} == set(_LEAN_TYPES), seen
    assert lean, "the lean pass answers for the common payloads"


def test_the_lean_pass_takes_the_common_payloads() -> None:
    """Each type it knows, in its usual shape, is answered without the switch."""
    events = common_events()
    for event in events:
        assert _lean_passes(event), event["type"]
        assert _switch_passes(event, 0)
    mismatched = copy.deepcopy(events[3])
    mismatched["data"]["message"]["source"]["callId"] = "c2"
    assert not _lean_passes(mismatched) and not _switch_passes(mismatched, 0)
