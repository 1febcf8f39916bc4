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

import msgspec

__all__ = ["Event", "EventData", "RowHead", "SessionHeader", "StoredEvent", "SurfaceOp", "SurfaceReplace"]

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


class RowHead(msgspec.Struct, forbid_unknown_fields=True):
    """A v2..v4 row's envelope as the lazy reader decodes it (in C, the payload left raw).

    The fields are :data:`~dshlog.protocol.vocabulary.ENVELOPE_KEYS` (a test holds
    them equal), so an unexpected key, a missing required one or a value of another
    JSON type makes the decoder refuse the row, and the exact reader takes it.  The
    types are the well-formed row's (``check.envelope.well_formed``): ``seq`` and
    ``time`` integers (``1.0`` is refused here, the exact checks accept it),
    ``ignorable`` a boolean.  ``sourceEventSeqs`` and ``surfaceOp`` stay raw: an
    empty :class:`msgspec.Raw` means the key is absent.
    """

    type: str
    seq: int
    time: int
    data: msgspec.Raw
    ignorable: bool = True
    sourceEventSeqs: msgspec.Raw = msgspec.Raw()
    surfaceOp: msgspec.Raw = msgspec.Raw()
