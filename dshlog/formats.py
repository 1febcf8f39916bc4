"""Row decoding for every released format version (FORMAT.md 2, 3).

Turns physical records into logical events of the *stored* version:
packed v0/v1 chunk rows are expanded into ``assistant/chunk`` events, range-encoded
``sourceEventSeqs`` are expanded, seq density is checked, and dsh test-snapshot
*projections* (rows whose ``seq``/``time`` were stripped) are recognised and given
seqs by position, as dsh's own replay does.  Every deviation from the on-disk rules
becomes either an error (strict) or a :class:`Note` (lenient or projection).
For the migration chain a packed row can instead stay one :class:`PackedRun`
(``RowDecoder.compact``), as dsh's own chain passes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from .errors import CorruptLog, Location
from .protocol.values import MAX_SAFE_INTEGER, is_count, is_safe_integer, safe_int
from .protocol.vocabulary import CURRENT_VERSION, ENVELOPE_KEYS, PACKED_KEYS, PACKED_TYPES, PROJECTED_PACKED_KEYS


@dataclass(slots=True)
class Note:
    """A deviation that did not stop the read (projection artefact, torn tail, lenient skip)."""

    code: str
    message: str
    loc: Location | None = None
    seq: int | None = None
    severity: str = "warning"

    def where(self) -> str:
        bits = []
        if self.loc is not None and self.loc.describe():
            bits.append(self.loc.describe())
        if self.seq is not None:
            bits.append(f"seq {self.seq}")
        return ", ".join(bits)


class Notes:
    """Bounded collection of notes: the first few of each code are kept, the rest counted."""

    KEEP = 20

    def __init__(self) -> None:
        self.items: list[Note] = []
        self.counts: dict[str, int] = {}

    def add(self, note: Note) -> None:
        n = self.counts.get(note.code, 0)
        self.counts[note.code] = n + 1
        if n < self.KEEP:
            self.items.append(note)

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def suppressed(self) -> dict[str, int]:
        return {c: n - self.KEEP for c, n in self.counts.items() if n > self.KEEP}


def expand_seq_refs(value: list, seq: int) -> list[int]:
    """Expand range-encoded ``sourceEventSeqs`` (FORMAT.md 3.2) into the logical list.

    Raises ``ValueError`` with the reason when the physical form is malformed.
    """
    out: list[int] = []
    ranged = False
    for m in value:
        if type(m) is list:
            if len(m) != 2 or not is_count(m[0]) or not is_count(m[1]) or m[0] > m[1]:
                raise ValueError(f"malformed sourceEventSeqs range {m!r}")
            ranged = True
            out.extend(range(safe_int(m[0]), safe_int(m[1]) + 1))
            if len(out) > max(seq, 0) + 1:
                raise ValueError("sourceEventSeqs expands past the event's own seq")
        else:
            out.append(m)
    if ranged and any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError("range-encoded sourceEventSeqs must be strictly increasing")
    return out


def _check_packed(obj: dict) -> tuple[str, dict, list, list, Any, Any, Any]:
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


def _expand(kind: str, data: dict, members: list, dt: list, turn: Any, step: Any, index: Any, seq0: int, time0: int) -> list[dict]:
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


def expand_packed(obj: dict, seq0: int, time0: int) -> list[dict]:
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

    def __init__(self, obj: dict, seq0: int, time0: int) -> None:
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

    def expand(self) -> list[dict]:
        """The member ``assistant/chunk`` events, as the expanding reader yields them."""
        return _expand(self.kind, self.data, self.members, self.dt, self.turn, self.step, self.index, self.seq, self.time)

    def __repr__(self) -> str:
        return f"PackedRun({self.kind}, seq={self.seq}, count={self.count})"


def _strs(values: list) -> bool:
    """Every member a string: one C-level pass over the member types."""
    types = set(map(type, values))
    return types == {str} or all(isinstance(v, str) for v in values)


def _safe_ints(values: list) -> bool:
    """Every member an ``int`` (not bool) within the safe range; checked in C where possible."""
    types = set(map(type, values))
    if types != {int}:
        return False
    return -MAX_SAFE_INTEGER <= min(values) and max(values) <= MAX_SAFE_INTEGER


@dataclass
class RowDecoder:
    """Stateful decoder of body rows for one generation.

    ``strict``: a deviation raises :class:`CorruptLog` (dsh's strict read).  When
    false, deviations become notes and the row is passed on as well as possible
    (``events``/``info``/``validate`` want to see everything).  Projection files are
    recognised from their first body row and handled in both modes.
    """

    version: int
    path: str
    strict: bool = True
    notes: Notes = field(default_factory=Notes)
    projection: bool | None = None  # decided on the first body row
    next_seq: int = 0
    seq_offset: int | None = None  # lenient reads of logs whose seq starts above 0
    #: keep each v0/v1 packed row as one :class:`PackedRun` instead of expanding it
    #: (the migration chain's input); every check and the seq accounting are the same
    compact: bool = False

    def _problem(self, msg: str, loc: Location, seq: int | None = None, code: str = "row") -> None:
        if self.strict:
            raise CorruptLog(msg, path=self.path, loc=loc, seq=seq)
        self.notes.add(Note(code, msg, loc, seq))

    def decode(self, obj: Any, loc: Location) -> list[Any]:
        """Logical events carried by one parsed body row (a :class:`PackedRun` for a packed row when ``compact``)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            self._problem("row is not an event object with a string type", loc, code="row")
            return []
        typ = obj["type"]
        packed = self.version <= 1 and typ in PACKED_TYPES
        has_env = ("seq0" in obj or "time0" in obj) if packed else ("seq" in obj or "time" in obj)
        if self.projection is None:
            self.projection = not has_env
            if self.projection:
                self.notes.add(
                    Note(
                        "projection",
                        "rows carry no seq/time: this is a dsh test-snapshot projection; seq restored by position, time set to 0",
                        loc,
                        severity="info",
                    )
                )
        elif has_env == self.projection:
            self._problem(
                "row " + ("carries" if has_env else "lacks") + " seq/time unlike the rows before it",
                loc,
                code="envelope",
            )
        if packed:
            return self._packed(obj, loc)
        return [self._event(obj, loc)]

    def _packed(self, obj: dict, loc: Location) -> list[Any]:
        if obj.keys() != (PROJECTED_PACKED_KEYS if self.projection else PACKED_KEYS):
            self._problem(f"malformed {obj['type']} storage row: keys {sorted(obj)}", loc, code="row")
        seq0 = obj.get("seq0", self.next_seq) if not self.projection else self.next_seq
        time0 = obj.get("time0", 0) if not self.projection else 0
        if not is_count(seq0) or not is_safe_integer(time0):
            self._problem(f"malformed {obj['type']} storage row: seq0/time0 must be safe integers", loc, code="row")
            seq0, time0 = self.next_seq, 0
        seq0, time0 = safe_int(seq0), safe_int(time0)  # 1.0 is the integer 1 to dsh
        if seq0 != self.next_seq:
            self._gap(seq0, loc)
        try:
            if self.compact:
                run = PackedRun(obj, seq0, time0)
                self.next_seq = seq0 + run.count
                return [run]
            events = expand_packed(obj, seq0, time0)
        except (ValueError, KeyError, TypeError) as exc:
            self._problem(f"malformed {obj['type']} storage row: {exc}", loc, seq=seq0, code="row")
            return []
        self.next_seq = seq0 + len(events)
        return events

    def _gap(self, got: int, loc: Location) -> None:
        if self.next_seq == 0 and self.seq_offset is None and not self.strict:
            self.notes.add(Note("seq-start", f"first event has seq {got}, not 0", loc, got))
            self.seq_offset = got
            return
        msg = f"seq gap in committed region at line {loc.line} (expected {self.next_seq}, got {got})" if loc.line else f"seq gap (expected {self.next_seq}, got {got})"
        self._problem(msg, loc, seq=got, code="seq-gap")

    def _event(self, obj: dict, loc: Location) -> dict:
        if not self.projection:
            # fast path for the well-formed on-disk row (nearly every row): the same checks
            # as below, folded into one condition so a valid row costs a handful of lookups
            seq = obj.get("seq")
            time = obj.get("time")
            if (
                seq == self.next_seq
                and type(seq) is int
                and type(time) is int
                and -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER
                and "data" in obj
                and ENVELOPE_KEYS.issuperset(obj)
                and obj.get("ignorable", True) is True
            ):
                self._expand_refs(obj, seq, loc)
                self.next_seq = seq + 1
                return obj
        extra = [k for k in obj if k not in ENVELOPE_KEYS]
        if extra:
            self._problem(f"event has unexpected envelope key(s) {', '.join(extra)}", loc, code="envelope")
        if self.projection:
            seq = self.next_seq
            # restore the envelope in dsh's writer order: type, seq, time, then the rest
            ev: dict[str, Any] = {"type": obj["type"], "seq": seq, "time": 0}
            for k, v in obj.items():
                if k not in ("type", "seq", "time"):
                    ev[k] = v
        else:
            ev = obj
            seq = obj.get("seq")
            if not is_count(seq):
                self._problem(f"event seq must be a non-negative safe integer, got {seq!r}", loc, code="envelope")
                seq = self.next_seq
                ev["seq"] = seq
            elif type(seq) is not int:
                seq = ev["seq"] = safe_int(seq)  # 1.0 is the integer 1 to dsh
            if not is_safe_integer(obj.get("time")):
                self._problem(f"event time must be a safe integer, got {obj.get('time')!r}", loc, seq=seq, code="envelope")
            if seq != self.next_seq:
                self._gap(seq, loc)
        if "data" not in ev:
            self._problem("event lacks data", loc, seq=seq, code="envelope")
        if "ignorable" in ev and ev["ignorable"] is not True:
            self._problem("event ignorable must be exactly true when present", loc, seq=seq, code="envelope")
        self._expand_refs(ev, seq, loc)
        self.next_seq = seq + 1
        return ev

    def _expand_refs(self, ev: dict, seq: int, loc: Location) -> None:
        """Expand range-encoded ``sourceEventSeqs`` in place (C-level scan: v0 lists are long)."""
        refs = ev.get("sourceEventSeqs")
        if type(refs) is list and list in map(type, refs):
            try:
                ev["sourceEventSeqs"] = expand_seq_refs(refs, seq)
            except ValueError as exc:
                self._problem(str(exc), loc, seq=seq, code="envelope")
