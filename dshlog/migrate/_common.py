"""Shared machinery of the migration edges.

Each edge is a small stateful stage; what they have in common lives here: the
monotonic source→target seq map (kept as runs so memory grows with the number of
insertions/foldings, not with the log), and the refusal type the chain rewraps with
dsh's edge prefix.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from typing import Any, Protocol
from collections.abc import Iterable

from ..errors import DshlogError, MigrationRefused
from ..protocol.texts import edge_refusal
from ..protocol.values import MAX_SAFE_INTEGER

__all__ = [
    "Stage",
    "SeqMap",
    "SeqStrings",
    "StageRefusal",
    "UnsupportedStageRefusal",
    "CONSUMED",
    "record",
]

#: Marker stored in a :class:`SeqMap` for a source event that has no target
#: counterpart (a chunk folded into a settlement).
CONSUMED = -1

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


class StageRefusal(MigrationRefused):
    """A plain format error raised inside one edge (dsh's ``SessionFormatError``).

    The chain prefixes it with the edge name (:func:`rewrap`).  Edge unit tests can
    read ``message`` to compare the bare dsh detail text.
    """


class UnsupportedStageRefusal(StageRefusal):
    """An edge's refusal that dsh throws as ``SessionFormatUnsupportedMigrationError``.

    dsh's chain passes such an error through unchanged (``throwUnsupportedRefusal``):
    its text is the edge's own, without the edge prefix.
    """


def record(value: Any) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty dict (for tolerant lookups)."""
    return value if isinstance(value, dict) else {}


class Stage(Protocol):
    """One adjacent edge ``vN → vN+1``, created fresh per artifact."""

    name: str
    source_version: int
    target_version: int
    #: Target inherited cut, known after :meth:`finish`.
    cut: int | None
    #: Cut the previous stage reported (set by the chain before ``finish``).
    source_cut: int | None

    def header(self, h: dict[str, Any]) -> dict[str, Any]: ...

    def feed(self, event: dict[str, Any]) -> Iterable[dict[str, Any]]: ...

    def finish(self) -> list[dict[str, Any]]: ...


class Edge(Protocol):
    """An edge class as the chain's table holds it: its versions and its static header step.

    Called, it makes the edge's :class:`Stage` for one artifact (the options
    differ per edge: only v3->v4 takes the child facts).
    """

    @property
    def name(self) -> str: ...

    @property
    def source_version(self) -> int: ...

    @property
    def target_version(self) -> int: ...

    def header(self, h: dict[str, Any], /) -> dict[str, Any]: ...


class SeqMap:
    """Monotonic map from source seq to target seq (or :data:`CONSUMED`).

    Renumbering never reorders source events, so the map is a sequence of runs
    ``(source start, target start)`` where inside a run the target advances
    with the source; consumed runs store :data:`CONSUMED`.  Memory is one run
    per discontinuity (insertion or folded attempt), in two ``array('q')``.
    Entries must be recorded in increasing source order.
    """

    __slots__ = ("_src", "_tgt", "_next")

    def __init__(self) -> None:
        self._src = array("q")
        self._tgt = array("q")
        self._next = 0  # the next source seq expected

    def record(self, source: int, target: int) -> None:
        if source != self._next:
            raise ValueError(f"seq map expects source {self._next}, got {source}")
        self._next = source + 1
        if self._src:
            start, tstart = self._src[-1], self._tgt[-1]
            if tstart == CONSUMED and target == CONSUMED:
                return
            if tstart != CONSUMED and target != CONSUMED and target == tstart + (source - start):
                return
        self._src.append(source)
        self._tgt.append(target)

    def record_consumed(self, source: int, count: int) -> None:
        """Record ``count`` consecutive consumed source seqs from ``source`` (a compact chunk run)."""
        if source != self._next:
            raise ValueError(f"seq map expects source {self._next}, got {source}")
        self._next = source + count
        if not self._src or self._tgt[-1] != CONSUMED:
            self._src.append(source)
            self._tgt.append(CONSUMED)

    def get(self, source: int) -> int | None:
        """Target seq, :data:`CONSUMED`, or ``None`` when not (yet) recorded."""
        if not isinstance(source, int) or isinstance(source, bool) or source < 0 or source >= self._next:
            return None
        i = bisect_right(self._src, source) - 1
        t = self._tgt[i]
        return CONSUMED if t == CONSUMED else t + (source - self._src[i])


def rewrap(err: DshlogError, name: str, version: int, seq: int | None = None, subject: str = "Session") -> MigrationRefused:
    """dsh's chain text ``<edge> refuses this format vN <subject>: <detail>`` for a plain format error.

    An :class:`UnsupportedStageRefusal` passes through with its own text (only the
    seq is filled in when the edge did not know it), as dsh's chain passes it.
    """
    if isinstance(err, UnsupportedStageRefusal):
        err.with_context(seq=seq)
        return err
    out = MigrationRefused(edge_refusal(name, version, subject, err.message), path=err.path, loc=err.loc,
                           seq=err.seq if err.seq is not None else seq)
    return out


class SeqStrings:
    """A ``seq -> str`` map for seqs added in increasing order, in two arrays and one buffer.

    The v0->v1 edge must remember the message id of every surface event (a legacy
    tool/result replacement inherits the id of the event it replaces, whichever it
    is).  As a dict of str objects that was about 90 bytes per event, the largest
    part of a migration's memory that grows with the log; packed here it is the
    id's UTF-8 bytes plus 16, and a canonical lowercase UUID (dsh's ids are UUIDs)
    is kept as its 16 raw bytes, marked by a negative end offset.  A seq that
    arrives out of order (never in a valid log) goes to a small dict so the map
    stays exact.
    """

    __slots__ = ("_seqs", "_ends", "_blob", "_other")

    def __init__(self) -> None:
        self._seqs = array("q")
        self._ends = array("q")
        self._blob = bytearray()
        self._other: dict[int, str] = {}

    def __setitem__(self, seq: int, value: str) -> None:
        seqs = self._seqs
        if (seqs and seq <= seqs[-1]) or not -MAX_SAFE_INTEGER <= seq <= MAX_SAFE_INTEGER:
            self._other[seq] = value
            return
        if len(value) == 36 and _UUID.match(value):
            self._blob += bytes.fromhex(value.replace("-", ""))
            end = -len(self._blob)
        else:
            self._blob += value.encode("utf-8", "surrogatepass")
            end = len(self._blob)
        seqs.append(seq)
        self._ends.append(end)

    def get(self, seq: Any, default: str | None = None) -> str | None:
        """``dict.get`` semantics, keys compared as a dict compares them (``True`` finds 1)."""
        if type(seq) is not int:
            if isinstance(seq, bool) or (isinstance(seq, float) and seq.is_integer()):
                seq = int(seq)
            else:
                return self._other.get(seq, default)  # unhashable keys raise, as a dict's do
        if seq in self._other:
            return self._other[seq]
        i = bisect_right(self._seqs, seq) - 1
        if i < 0 or self._seqs[i] != seq:
            return default
        start = abs(self._ends[i - 1]) if i else 0
        end = self._ends[i]
        if end < 0:
            h = self._blob[start:-end].hex()
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return self._blob[start:end].decode("utf-8", "surrogatepass")
