"""The packed physical forms of v0/v1 rows (FORMAT §3.2, §3.3), encoded and decoded once.

v0/v1 store a run of three or more same-block deltas as one ``text-chunks`` /
``reasoning-chunks`` / ``tool-call-chunks`` row, and long ``sourceEventSeqs`` lists
as ``[first, last]`` ranges.  The expanding reader turns a packed row into its
``assistant/chunk`` events; the migration chain takes it whole as a
:class:`PackedRun`, as dsh's chain does.  Both go through the same check, so they
refuse the same rows with the same texts.  Pure functions; no I/O.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from .values import MAX_SAFE_INTEGER, is_count, is_safe_integer, safe_int
from .vocabulary import PACKED_TYPES
from .jsjson import stringify

__all__ = ["PackedRun", "expand_packed", "expand_seq_refs"]


def expand_seq_refs(value: list[Any], seq: int) -> list[int]:
    """Expand range-encoded ``sourceEventSeqs`` (FORMAT.md 3.2) into the logical list.

    Raises ``ValueError`` with the reason when the physical form is malformed.
    """
    out: list[int] = []
    ranged = False
    for m in value:
        if type(m) is list:
            if len(m) != 2 or not is_count(m[0]) or not is_count(m[1]) or m[0] > m[1]:
                raise ValueError(f"malformed sourceEventSeqs range {stringify(m)}")
            ranged = True
            out.extend(range(safe_int(m[0]), safe_int(m[1]) + 1))
            if len(out) > max(seq, 0) + 1:
                raise ValueError("sourceEventSeqs expands past the event's own seq")
        else:
            out.append(m)
    if ranged and any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError("range-encoded sourceEventSeqs must be strictly increasing")
    return out


def _check_packed(obj: dict[str, Any]) -> tuple[str, dict[str, Any], list[Any], list[Any], Any, Any, Any]:
    """Validate one v0/v1 packed delta row (FORMAT.md 3.3); ``(kind, data, members, dt, turn, step, index)``.

    Shared by the expanding and the compact reader so both refuse the same rows with
    the same texts.  Members and ``dt`` are checked with C-level passes
    (``map``/``min``/``max``): this runs once per packed row of a v0 read.
    Raises ``ValueError`` with the reason.
    """
    kind = obj["type"]
    data = obj["data"]
    if not isinstance(data, dict):
        raise ValueError("packed row data must be an object")
    members = data.get("args" if kind == "tool-call-chunks" else "texts")
    dt = data.get("dt")
    if type(members) is not list or not members or not _strs(members):
        raise ValueError(f"{kind} row needs a non-empty array of strings")
    if type(dt) is not list or len(dt) != len(members) - 1 or (dt and not _safe_ints(dt)):
        raise ValueError(f"{kind} row dt must hold {len(members) - 1} safe integers")
    turn, step, index = data.get("turn"), data.get("step"), data.get("index")
    if not (is_count(turn) and is_count(step) and is_count(index)):
        raise ValueError(f"{kind} row needs count turn, step and index")
    return kind, data, members, dt, turn, step, index


def _expand(kind: str, data: dict[str, Any], members: list[Any], dt: list[Any], turn: Any, step: Any, index: Any, seq0: int, time0: int) -> list[dict[str, Any]]:
    """The ``assistant/chunk`` events of a validated packed row, built by one comprehension."""
    delta = PACKED_TYPES[kind]
    times = accumulate(dt, initial=time0) if dt else (time0,)
    seqs = range(seq0, seq0 + len(members))
    if kind == "tool-call-chunks":
        cid = data.get("id")
        if "name" in data:
            name = data["name"]
            return [
                {"type": "assistant/chunk", "seq": s, "time": t, "data": {"turn": turn, "step": step, "chunk": {"type": delta, "index": index, "id": cid, "name": name, "argumentsDelta": m}}}
                for s, t, m in zip(seqs, times, members)
            ]
        return [
            {"type": "assistant/chunk", "seq": s, "time": t, "data": {"turn": turn, "step": step, "chunk": {"type": delta, "index": index, "id": cid, "argumentsDelta": m}}}
            for s, t, m in zip(seqs, times, members)
        ]
    return [
        {"type": "assistant/chunk", "seq": s, "time": t, "data": {"turn": turn, "step": step, "chunk": {"type": delta, "index": index, "text": m}}}
        for s, t, m in zip(seqs, times, members)
    ]


def expand_packed(obj: dict[str, Any], seq0: int, time0: int) -> list[dict[str, Any]]:
    """Expand one v0/v1 packed delta row into its ``assistant/chunk`` events (FORMAT.md 3.3).

    This is the hottest loop of an expanded v0 read (one call per packed row, tens of
    events each); the migration chain avoids it by reading :class:`PackedRun` items.
    """
    return _expand(*_check_packed(obj), seq0, time0)


class PackedRun:
    """One v0/v1 packed delta row kept whole: the compact run dsh passes through its chain (FORMAT.md 4.1).

    It stands for ``count`` ``assistant/chunk`` events with seqs ``seq .. seq+count-1``;
    the first has time ``time``, the last ``last_time``.  Reading a v0 log this way
    builds one object per packed row instead of three dicts per delta, and the
    v1->v2 stage appends the members to a stream record without ever expanding them.
    ``kind`` is the row type (``text-chunks``, ``reasoning-chunks``, ``tool-call-chunks``);
    ``data`` is the row's validated ``data`` object (``members`` and ``dt`` are its
    ``texts``/``args`` and ``dt`` lists, shared, not copied).  :meth:`expand` gives
    exactly the events :func:`expand_packed` gives.
    """

    __slots__ = ("kind", "seq", "time", "last_time", "data", "count", "members", "dt", "turn", "step", "index")

    def __init__(self, obj: dict[str, Any], seq0: int, time0: int) -> None:
        kind, data, members, dt, turn, step, index = _check_packed(obj)
        self.kind = kind
        self.seq = seq0
        self.time = time0
        self.last_time = time0 + sum(dt) if dt else time0  # needed once per run by the v1->v2 stage
        self.data = data
        self.count = len(members)
        self.members = members
        self.dt = dt
        self.turn = turn
        self.step = step
        self.index = index

    def expand(self) -> list[dict[str, Any]]:
        """The member ``assistant/chunk`` events, as the expanding reader yields them."""
        return _expand(self.kind, self.data, self.members, self.dt, self.turn, self.step, self.index, self.seq, self.time)

    def __repr__(self) -> str:
        return f"PackedRun({self.kind}, seq={self.seq}, count={self.count})"


def _strs(values: list[Any]) -> bool:
    """Every member a string: one C-level pass over the member types."""
    types = set(map(type, values))
    return types == {str} or all(isinstance(v, str) for v in values)


def _safe_ints(values: list[Any]) -> bool:
    """Every member a safe integer; checked in C for the usual all-``int`` list."""
    types = set(map(type, values))
    if types != {int}:
        return all(map(is_safe_integer, values))  # 1.0 is an integer to dsh
    low: int = min(values)
    high: int = max(values)
    return -MAX_SAFE_INTEGER <= low and high <= MAX_SAFE_INTEGER
