"""Shared machinery of the migration edges.

Each edge is a small stateful stage; what they have in common lives here: the
monotonic source→target seq map (kept as runs so memory grows with the number of
insertions/foldings, not with the log), the refusal type the chain rewraps with
dsh's edge prefix, JSON text for hashing, and the projection placeholder rule.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from typing import Any, Iterable, Protocol

import orjson

from ..errors import DshlogError, MigrationRefused
from ..vocabulary import is_count, is_safe_integer

__all__ = [
    "Stage",
    "SeqMap",
    "StageRefusal",
    "is_count",
    "is_safe_integer",
    "is_placeholder",
    "js_json",
    "js_string",
    "MAX_SAFE",
    "CONSUMED",
    "record",
]

MAX_SAFE = 2**53 - 1
#: Marker stored in a :class:`SeqMap` for a source event that has no target
#: counterpart (a chunk folded into a settlement).
CONSUMED = -1

_PLACEHOLDER = re.compile(r"^\{\{[^{}]+\}\}$")


def is_placeholder(value: Any) -> bool:
    """A committed test fixture stands in ``{{name}}`` for a real value."""
    return isinstance(value, str) and bool(_PLACEHOLDER.match(value))


def js_json(value: Any) -> bytes:
    """Compact ``JSON.stringify`` bytes.

    Prefers the project's JS-exact serializer; orjson produces the same text for
    the strings and integers this module hashes or embeds.
    """
    try:
        from .. import jsjson  # written alongside; optional at import time
    except ImportError:  # pragma: no cover - only while the module is absent
        return orjson.dumps(value)
    return jsjson.dumps(value)


def js_string(value: str) -> str:
    """``JSON.stringify(value)`` for a string, used inside dsh's error texts."""
    return js_json(value).decode("utf-8")


class StageRefusal(MigrationRefused):
    """A refusal raised inside one edge; the chain prefixes it with the edge name.

    Edge unit tests can read ``message`` to compare the bare dsh detail text.
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

    @property
    def recorded(self) -> int:
        """How many source seqs have been recorded (``0 .. recorded-1``)."""
        return self._next

    def runs(self) -> int:
        return len(self._src)

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


def rewrap(err: DshlogError, name: str, version: int, seq: int | None = None) -> MigrationRefused:
    """dsh's chain text: ``<edge> refuses this format vN Session: <detail>``."""
    out = MigrationRefused(f"{name} refuses this format v{version} Session: {err.message}", path=err.path, loc=err.loc,
                           seq=err.seq if err.seq is not None else seq)
    return out
