"""The shapes of a session log's records, for type checkers: the header and the event envelope.

These are descriptions, not validators: the core keeps events as the plain
dicts the JSON reader gives (a log is judged by :mod:`dshlog.check`, and an
event that breaks a rule is still an object someone may want to look at).
A script that reads ``event["seq"]`` gets the type its checker expects.
The key sets are :mod:`dshlog.protocol.vocabulary`'s (a test holds them
equal); ``data`` is the event type's payload, described in the format notes.
"""

# No ``from __future__ import annotations``: TypedDict reads NotRequired[...] from evaluated annotations.
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = ["Event", "EventData", "SessionHeader", "StoredEvent", "SurfaceOp", "SurfaceReplace"]

#: An event's payload: an object whose keys depend on the event type.
EventData: TypeAlias = dict[str, Any]


class SurfaceReplace(TypedDict):
    """A v3/v4 replace marker: the inclusive span ``startSeq..endSeq`` (surface order) becomes this event."""

    op: Literal["replace"]
    startSeq: int
    endSeq: int


#: ``"append"`` pushes the event's seq on the surface; a replace rewrites a span of it.
SurfaceOp: TypeAlias = Literal["append"] | SurfaceReplace


class Event(TypedDict):
    """One v4 event (the envelope; FORMAT 3.1).

    ``seq`` is dense from 0; ``time`` is epoch milliseconds (0 in test-snapshot
    projections); ``ignorable`` is present only as ``true``; ``sourceEventSeqs``
    is the expanded (logical) list of earlier seqs this event derives from.
    """

    type: str
    seq: int
    time: int
    data: EventData
    ignorable: NotRequired[Literal[True]]
    sourceEventSeqs: NotRequired[list[int]]
    surfaceOp: NotRequired[SurfaceOp]


class StoredEvent(TypedDict, total=False):
    """An event as an older version stored it (v0..v3): the same keys, looser values.

    v0/v1 replace markers spell their span ``start``/``end``; test-snapshot
    projections carry no ``seq``/``time``; packed v0/v1 rows are expanded by the
    reader before anyone sees them.
    """

    type: str
    seq: int
    time: int
    data: Any
    ignorable: Literal[True]
    sourceEventSeqs: list[int]
    surfaceOp: Literal["append"] | dict[str, Any]


class SessionHeader(TypedDict):
    """The v4 header line, in dsh's key order (FORMAT 2.1)."""

    type: Literal["session"]
    version: int
    id: str
    createdAt: int
    cwd: NotRequired[str]
    parentSession: NotRequired[str]
    isSeeded: bool
    origin: NotRequired[Literal["subagent"]]
    delegationDepth: int
    agentPreset: NotRequired[str]
