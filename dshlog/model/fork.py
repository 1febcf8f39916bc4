"""Fork seeds (dsh ``SessionStore.fork`` boundary checks + ``buildForkSeed``).

A fork child inherits the parent's events ``0..at`` verbatim, then a tagged
``session/end-seed {"inherited":true}`` marker that records the cut, then the
``forked`` closers when the cut lands inside a turn.  Copying the prefix verbatim
is what makes the child's derived messages start with the parent's byte for byte.

:func:`build_fork_seed` is a generator so a caller can stream a log of any size:
inherited events are yielded as they arrive (the very input objects, so a caller
that pairs events with their raw rows can copy the original bytes), new events
follow.  Because the boundary can only be proven to exist once the stream reaches
it, a validation error may surface after some prefix events were yielded: write
into a staged temporary file and publish only on success (:mod:`dshlog.ops.fork`).
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Iterator

from ..errors import CorruptLog, UsageError
from ..protocol.jsjson import js_string
from ..protocol.values import is_count, safe_int
from ..protocol.vocabulary import CURRENT_VERSION
from .repair import TailState

FORK_VERSION = CURRENT_VERSION


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """Counts of a finished seed, for the child's header and a summary line.

    ``inherited`` is dsh's ``inheritedEventCount`` (copied source events only; the
    marker and closers are child-owned); ``closers`` counts the synthetic events.
    """

    boundary: int | None
    inherited: int
    closers: int

    @property
    def total(self) -> int:
        """Events in the child seed: inherited + marker + closers."""
        return self.inherited + 1 + self.closers


def _as_safe_index(value: Any) -> int | None:
    """``value`` as a non-negative index by ``Number.isSafeInteger`` (which, unlike dsh's
    format counts, admits ``-0``: it is the boundary 0), else None."""
    if type(value) is float and value == 0.0:
        return 0
    return safe_int(value) if is_count(value) else None


def _same_seq(seq: Any, expected: int) -> bool:
    return not isinstance(seq, bool) and isinstance(seq, (int, float)) and seq == expected


def _invalid_value(session_id: str, value: Any) -> UsageError:
    return UsageError(
        f'fork boundary for session "{session_id}" must be a non-negative safe integer, got {js_string(value)}'
    )


def _missing_boundary(session_id: str, boundary: int, last_seq: Any) -> UsageError:
    last = "none" if last_seq is None else js_string(last_seq)
    return UsageError(
        f'fork boundary {boundary} does not exist in session "{session_id}" (last seq: {last})', seq=boundary
    )


def _mismatch(session_id: str, boundary: int) -> UsageError:
    return UsageError(
        f'fork boundary {boundary} does not match a contiguous event seq in session "{session_id}"', seq=boundary
    )


def seed_marker(seq: int, time: Any) -> dict[str, Any]:
    """The tagged end-seed marker that records a fork cut (key order as dsh writes it)."""
    return {"type": "session/end-seed", "seq": seq, "time": time, "data": {"inherited": True}}


def build_fork_seed(
    events: Iterable[dict[str, Any]],
    at: Any = None,
    *,
    session_id: str,
    now_ms: int | None = None,
    plan: list[ForkPlan] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the child seed for a fork of ``events`` through seq ``at`` (inclusive).

    ``at=None`` forks through the last event; an empty source then yields only the
    marker at seq 0, timed ``now_ms`` (default: the clock), which is what dsh's
    child constructor appends for an empty seed.  Boundary errors are
    :class:`UsageError` with dsh's ``INVALID_BOUNDARY`` texts; the stream is never
    read past the boundary.  When ``plan`` is given, a :class:`ForkPlan` is
    appended to it once the seed is complete.
    """
    boundary: int | None = None
    if at is not None:
        boundary = _as_safe_index(at)
        if boundary is None:
            raise _invalid_value(session_id, at)

    state = TailState()
    count = 0
    last: dict[str, Any] | None = None
    # Only for at=None: seqs that differ from their index (empty for a valid log).
    odd: dict[int, Any] = {}
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise CorruptLog(f"event at index {index} is not an object")
        seq = event.get("seq")
        if boundary is not None and index == boundary and not _same_seq(seq, boundary):
            raise _mismatch(session_id, boundary)
        if boundary is None and not _same_seq(seq, index):
            odd[index] = seq
        state.feed(event)
        count += 1
        last = event
        yield event
        if boundary is not None and index == boundary:
            break

    if boundary is None:
        if last is None:
            marker_time = now_ms if now_ms is not None else _time.time_ns() // 1_000_000
            if plan is not None:
                plan.append(ForkPlan(None, 0, 0))
            yield seed_marker(0, marker_time)
            return
        last_seq = last.get("seq")
        boundary = _as_safe_index(last_seq)
        if boundary is None:
            raise _invalid_value(session_id, last_seq)
        if boundary >= count:
            raise _missing_boundary(session_id, boundary, last_seq)
        if not _same_seq(odd.get(boundary, boundary), boundary):
            raise _mismatch(session_id, boundary)
        if boundary != count - 1:
            # dsh would cut before the tail here, but those events were streamed already;
            # such a log never loads in dsh anyway (seqs must be contiguous from 0).
            first = min(odd)
            raise CorruptLog(
                f"event at index {first} has seq {js_string(odd[first])} (expected {first}); "
                "seqs must be contiguous from 0",
                seq=first,
            )
    elif count <= boundary:
        raise _missing_boundary(session_id, boundary, None if last is None else last.get("seq"))

    assert last is not None
    marker = seed_marker(boundary + 1, last.get("time"))
    state.feed(marker)
    yield marker
    closers = state.closers("forked")
    if plan is not None:
        plan.append(ForkPlan(boundary, boundary + 1, len(closers)))
    yield from closers


def fork_seed(events: Iterable[dict[str, Any]], at: Any = None, *, session_id: str, now_ms: int | None = None) -> list[dict[str, Any]]:
    """Whole seed as a list (for small logs and tests); same rules as :func:`build_fork_seed`."""
    return list(build_fork_seed(events, at, session_id=session_id, now_ms=now_ms))


def at_turn(events: Iterable[dict[str, Any]], n: int, *, session_id: str | None = None) -> int:
    """Seq of the ``turn/end`` that closed turn ``n`` (a fork boundary after that turn).

    Reads only as far as that event.  Raises :class:`UsageError` when turn ``n``
    never started or never ended.
    """
    where = f' in session "{session_id}"' if session_id is not None else ""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UsageError(f"turn number must be a positive integer, got {js_string(n)}")
    started = False
    for event in events:
        kind = event.get("type")
        if kind not in ("turn/start", "turn/end"):
            continue
        data = event.get("data")
        turn = data.get("turn") if isinstance(data, dict) else None
        if not _same_seq(turn, n):
            continue
        if kind == "turn/start":
            started = True
            continue
        seq = event.get("seq")
        index = _as_safe_index(seq)
        if index is None:
            raise CorruptLog(f"turn/end of turn {n} has an invalid seq {js_string(seq)}")
        return index
    if started:
        raise UsageError(f"turn {n}{where} never ended; fork with an event seq inside it instead")
    raise UsageError(f"turn {n} does not exist{where}")


def child_header(
    parent_header: dict[str, Any],
    *,
    new_id: str,
    created_at: int,
    subagent: bool = False,
    agent_preset: str | None = None,
) -> dict[str, Any]:
    """The v4 physical header line of a fork child.

    A user fork follows dsh's ``SessionStore.fork``: ``cwd`` copied when the parent
    has one, ``parentSession`` = parent id, ``isSeeded: true``, and nothing else of
    the parent's lineage: no ``origin`` (only subagent children carry
    ``origin:"subagent"``, and dsh's child discovery treats any header with it as a
    subagent of its parent) and ``delegationDepth`` 0 (the fork's meta names no
    depth, and the JSONL writer stores an absent depth as 0).  ``agentPreset`` is
    not inherited either; pass ``agent_preset`` to set one.  ``subagent=True`` builds
    the header dsh's subagent drivers write instead: ``origin:"subagent"`` and the
    parent's depth + 1.
    """
    parent_id = parent_header.get("id")
    if not isinstance(parent_id, str):
        raise CorruptLog("parent header has no string id")
    if not isinstance(new_id, str) or new_id == "":
        raise UsageError("child session id must be a non-empty string")
    if new_id == parent_id:
        raise UsageError(f'session "{new_id}" already exists')
    if type(created_at) is not int or not is_count(created_at):
        raise UsageError(f"createdAt must be a non-negative safe integer, got {js_string(created_at)}")
    header: dict[str, Any] = {"type": "session", "version": FORK_VERSION, "id": new_id, "createdAt": created_at}
    cwd = parent_header.get("cwd")
    if cwd is not None:
        header["cwd"] = cwd
    header["parentSession"] = parent_id
    header["isSeeded"] = True
    if subagent:
        depth = parent_header.get("delegationDepth", 0)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise CorruptLog(f"parent header has an invalid delegationDepth {js_string(depth)}")
        header["origin"] = "subagent"
        header["delegationDepth"] = depth + 1
    else:
        header["delegationDepth"] = 0
    if agent_preset is not None:
        header["agentPreset"] = agent_preset
    return header


__all__ = [
    "ForkPlan",
    "at_turn",
    "build_fork_seed",
    "child_header",
    "fork_seed",
    "seed_marker",
]
