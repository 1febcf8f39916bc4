"""Row decoding for every released format version (FORMAT.md 2, 3).

Turns physical records into logical events of the *stored* version:
packed v0/v1 chunk rows are expanded into ``assistant/chunk`` events, range-encoded
``sourceEventSeqs`` are expanded, seq density is checked, and dsh test-snapshot
*projections* (rows whose ``seq``/``time`` were stripped) are recognised and given
seqs by position, as dsh's own replay does.  Every deviation from the on-disk rules
becomes either an error (strict) or a :class:`~dshlog.check.problems.Problem` note (lenient or projection).
For the migration chain a packed row can instead stay one :class:`PackedRun`
(``RowDecoder.compact``), as dsh's own chain passes it.

Three policies (``strict`` and ``recoverable``):

* strict: the first deviation raises (the stored view of a strict open);
* recoverable: dsh's read (``recovery: "recoverable"``, what the v4 view of a strict
  open uses): the first issue (a row that does not decode, a seq gap) is held,
  with dsh's codec text, and every later row is dropped; the issue is raised only
  when a later row is a ``turn/end`` (the damage had been committed); otherwise the
  log ends before the damaged row (:attr:`RowDecoder.issue` says why);
* lenient (``strict=False``): deviations become notes and rows pass on as well as
  possible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..check.envelope import check_envelope, well_formed
from ..check.problems import Problem, Problems, Severity
from ..errors import CorruptLog, DshlogError, Location
from ..protocol.packed import PackedRun, expand_packed, expand_seq_refs
from ..protocol.texts import codec_row_label, invalid_committed_event, row_not_an_object, row_seq_gap
from ..protocol.values import MAX_SAFE_INTEGER, is_count, is_safe_integer, safe_int
from ..protocol.jsjson import js_string
from ..protocol.vocabulary import CURRENT_VERSION, ENVELOPE_KEYS, PACKED_KEYS, PACKED_TYPES, PROJECTED_PACKED_KEYS

#: Members every v2..v4 row must have, in the order dsh's decoder names the first one missing.
_V2_REQUIRED = ("type", "seq", "time", "data")


class _Held(Exception):
    """Raised inside the recoverable policy: the row is the first issue (or one after it)."""

    def __init__(self, error: CorruptLog, *, gap: bool = False) -> None:
        super().__init__(error.message)
        self.error = error
        self.gap = gap  # the row decoded, but its seq is not the next one


def decode_source_seqs(value: Any, seq: int, version: int) -> list[int]:
    """dsh's codec decode of a row's ``sourceEventSeqs`` (``decodeSeqRanges``), with dsh's texts.

    The v0/v1 codec bounds the list by the event's seq and orders only range-encoded
    lists; the v2 codec (v2..v4) also demands unique members below the seq.
    Raises ``ValueError``.
    """
    if type(value) is not list:
        raise ValueError("sourceEventSeqs must be an array")
    if not value:
        return value
    if set(map(type, value)) == {int}:  # the common plain list, checked in C
        if version <= 1:  # in dsh's order: each member is checked until the seq bound is reached
            head = value[:seq]
            if head and (min(head) < 0 or max(head) > MAX_SAFE_INTEGER):
                raise ValueError("sourceEventSeqs member must be a non-negative safe integer")
            if len(value) > seq:
                raise ValueError("sourceEventSeqs exceeds its event seq")
        elif min(value) < 0 or max(value) >= seq or len(set(value)) != len(value):
            raise ValueError("sourceEventSeqs ranges must contain unique earlier seqs")
        return value
    out: list[int] = []
    ranged = False
    for entry in value:
        if type(entry) is not list:
            if version <= 1 and len(out) >= seq:
                raise ValueError("sourceEventSeqs exceeds its event seq")
            if not is_count(entry):
                raise ValueError("sourceEventSeqs member must be a non-negative safe integer")
            out.append(safe_int(entry))
            continue
        if len(entry) != 2:
            raise ValueError("sourceEventSeqs range must be a [start, end] pair")
        if not is_count(entry[0]):
            raise ValueError("sourceEventSeqs range start must be a non-negative safe integer")
        if not is_count(entry[1]):
            raise ValueError("sourceEventSeqs range end must be a non-negative safe integer")
        start, end = safe_int(entry[0]), safe_int(entry[1])
        if end < start or (version >= 2 and end >= seq) or end - start + 1 > seq - len(out):
            raise ValueError("sourceEventSeqs range exceeds its event seq")
        out.extend(range(start, end + 1))
        ranged = True
    if version >= 2 and (any(m >= seq for m in out) or len(set(out)) != len(out)):
        raise ValueError("sourceEventSeqs ranges must contain unique earlier seqs")
    if ranged and any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError("sourceEventSeqs ranges must be strictly increasing")
    return out


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
    notes: Problems = field(default_factory=Problems)
    projection: bool | None = None  # decided on the first body row
    next_seq: int = 0
    seq_offset: int | None = None  # lenient reads of logs whose seq starts above 0
    #: keep each v0/v1 packed row as one :class:`PackedRun` instead of expanding it
    #: (the migration chain's input); every check and the seq accounting are the same
    compact: bool = False
    #: dsh's recovering read (see the module docstring); needs ``strict``
    recoverable: bool = False
    #: the first issue of a recoverable read, once held, with the location of its row
    issue: DshlogError | None = None
    issue_loc: Location | None = None
    #: rows dropped after the issue
    dropped: int = 0
    rows: int = 0  # body rows seen (dsh's 0-based row index of the next one)
    #: the seq of the last ``session/end-seed`` marked ``inherited`` (a v2+ log's cut)
    inherited_marker: int | None = None

    def _problem(self, msg: str, loc: Location, seq: int | None = None, code: str = "row") -> None:
        if self.strict:
            error = CorruptLog(msg, path=self.path, loc=loc, seq=seq)
            if self.recoverable:
                raise _Held(error, gap=code == "seq-gap")
            raise error
        self.notes.add(Problem(code, msg, Severity.WARNING, seq, loc))

    def decode(self, obj: Any, loc: Location) -> list[Any]:
        """Logical events carried by one parsed body row (a :class:`PackedRun` for a packed row when ``compact``)."""
        if self.recoverable:
            return self._recover(obj, loc)
        return self._decode(obj, loc)

    def unparsable(self, error: CorruptLog, loc: Location) -> None:
        """dsh's recovering read of a row that is not JSON: held as the first issue, like any other.

        dsh's scanners record a JSON failure without raising it (a row after an
        issue is dropped, a second failure changes nothing); only a later
        ``turn/end`` proves the damage committed (:meth:`_recover`).
        """
        self.rows += 1
        if self.issue is None:
            self.issue, self.issue_loc = error, loc
        else:
            self.dropped += 1

    def _recover(self, obj: Any, loc: Location) -> list[Any]:
        """dsh's recovering read of one row: hold the first issue, drop what follows it."""
        index = self.rows
        self.rows += 1
        if self.issue is not None:
            if self._commits(obj, index):
                raise self.issue
            self.dropped += 1
            return []
        try:
            if self.version >= 2:
                self._v2_row(obj, index)
            elif not isinstance(obj, dict):
                self._problem(row_not_an_object(self.version, index), loc)
            events = self._decode(obj, loc)
        except _Held as held:
            error = held.error
            if self.version >= CURRENT_VERSION:
                # the current slot's scanner words a codec refusal with the row it counts
                error = CorruptLog(invalid_committed_event(index + 1, error.message), path=self.path, loc=error.loc, seq=error.seq)
            self.issue, self.issue_loc = error.with_context(path=self.path, loc=loc), loc
            if held.gap and isinstance(obj, dict) and obj.get("type") == "turn/end":
                raise error from None  # a committed turn/end with the wrong seq
            return []
        for ev in events:
            if type(ev) is dict and ev.get("type") == "session/end-seed":
                data = ev.get("data")
                if isinstance(data, dict) and data.get("inherited") is True:
                    self.inherited_marker = ev.get("seq")
        return events

    def _commits(self, obj: Any, index: int) -> bool:
        """Whether a row after the issue is a ``turn/end`` dsh decodes (which makes the damage committed)."""
        if not isinstance(obj, dict) or obj.get("type") != "turn/end":
            return False
        if self.version <= 1:
            return True
        try:
            self._v2_row(obj, index)
        except _Held:
            return False
        return True

    def _v2_row(self, obj: Any, index: int) -> None:
        """dsh's v2 row decode (``decodeEvent``; the v3/v4 codecs delegate to it), with its texts."""
        if (
            type(obj) is dict
            and "data" in obj
            and "seq" in obj
            and type(obj.get("type")) is str
            and type(obj.get("time")) is int
            and -MAX_SAFE_INTEGER <= obj["time"] <= MAX_SAFE_INTEGER
            and ENVELOPE_KEYS.issuperset(obj)
            and obj.get("ignorable", True) is True
        ):
            return  # nearly every row: all of the checks below pass
        label = codec_row_label(self.version, index)
        if not isinstance(obj, dict):
            raise _Held(CorruptLog(row_not_an_object(self.version, index)))
        projected = self.projection if self.projection is not None else ("seq" not in obj and "time" not in obj)
        for key in _V2_REQUIRED:
            if key not in obj and not (projected and key in ("seq", "time")):
                raise _Held(CorruptLog(f"{label} lacks required field {key}"))
        for key in obj:
            if key not in ENVELOPE_KEYS:
                raise _Held(CorruptLog(f"{label} has unexpected field {key}"))
        if not isinstance(obj["type"], str):
            raise _Held(CorruptLog(f"{label} type must be a string"))
        if not projected and not is_safe_integer(obj["time"]):
            raise _Held(CorruptLog(f"{label} time must be a safe integer"))
        if "ignorable" in obj and obj["ignorable"] is not True:
            raise _Held(CorruptLog(f"{label} ignorable must be true when present"))

    def finish(self, *, seeded: bool | None, seed_length: int | None = None) -> None:
        """dsh's decoder end of a recoverable read: the inherited cut must agree with the header.

        v2+: ``isSeeded`` needs an inherited end-seed marker and the other way round;
        v0/v1: ``seedLength`` cannot exceed the events read.
        """
        if not (self.recoverable and self.strict):
            return
        if self.version <= 1:
            if seed_length is not None and seed_length > self.next_seq:
                raise CorruptLog("Session inheritedEventCount exceeds its event count", path=self.path)
            return
        if seeded is None:
            return
        if seeded and self.inherited_marker is None:
            raise CorruptLog("released v2 seeded Session lacks an inherited end-seed marker", path=self.path)
        if not seeded and self.inherited_marker is not None:
            raise CorruptLog("released v2 unseeded Session contains an inherited end-seed marker", path=self.path)

    def _decode(self, obj: Any, loc: Location) -> list[Any]:
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
                    Problem(
                        "projection",
                        "rows carry no seq/time: this is a dsh test-snapshot projection; seq restored by position, time set to 0",
                        Severity.INFO,
                        loc=loc,
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

    def _packed(self, obj: dict[str, Any], loc: Location) -> list[Any]:
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

    def _gap(self, got: Any, loc: Location) -> None:
        if self.recoverable:
            self._problem(row_seq_gap(self.version, self.rows - 1, self.next_seq, js_string(got)), loc, seq=got if is_count(got) else None, code="seq-gap")
        if self.next_seq == 0 and self.seq_offset is None and not self.strict:
            self.notes.add(Problem("seq-start", f"first event has seq {got}, not 0", Severity.WARNING, got, loc))
            self.seq_offset = got
            return
        msg = f"seq gap in committed region at line {loc.line} (expected {self.next_seq}, got {got})" if loc.line else f"seq gap (expected {self.next_seq}, got {got})"
        self._problem(msg, loc, seq=got, code="seq-gap")

    def report(self, problem: Problem) -> None:
        """The decoder as the envelope rule's reporter: strict refuses (a recoverable read holds it), lenient notes."""
        if self.strict:
            error = CorruptLog(problem.message, path=self.path, loc=problem.loc, seq=problem.seq)
            if self.recoverable:
                raise _Held(error, gap=problem.code == "seq-gap")
            raise error
        self.notes.add(problem.with_severity(Severity.WARNING))

    def _event(self, obj: dict[str, Any], loc: Location) -> dict[str, Any]:
        seq = self.next_seq
        if not self.projection and well_formed(obj, seq):
            # the well-formed on-disk row (nearly every row): one condition, no problem objects
            self._expand_refs(obj, seq, loc)
            self.next_seq = seq + 1
            return obj
        if self.projection:
            # restore the envelope in dsh's writer order: type, seq, time, then the rest
            ev: dict[str, Any] = {"type": obj["type"], "seq": seq, "time": 0}
            for k, v in obj.items():
                if k not in ("type", "seq", "time"):
                    ev[k] = v
            check_envelope(ev, seq, self, dense=False, loc=loc)
        else:
            ev = obj
            if self.recoverable and self.version >= 2:
                stored = obj.get("seq")
                if not (type(stored) in (int, float) and stored == seq):
                    self._gap(stored, loc)  # dsh's decoder compares the seq with the count (===), whatever it is
                elif type(stored) is float and not is_count(stored) and "sourceEventSeqs" not in obj:
                    # ``-0``: ``-0 === 0`` in dsh's decoder and dsh's restore, which hold the event as
                    # seq 0 (``JSON.stringify`` writes it so); a copy, so the row's bytes are not its line
                    ev = obj = {**obj, "seq": seq}
            check_envelope(obj, seq, self, dense=False, loc=loc)
            stored = obj.get("seq")
            if not is_count(stored):
                ev["seq"] = seq  # reported above; the event takes its position
            else:
                if type(stored) is not int:
                    stored = ev["seq"] = safe_int(stored)  # 1.0 is the integer 1 to dsh
                if stored != seq:
                    self._gap(stored, loc)
                seq = stored
        self._expand_refs(ev, seq, loc)
        self.next_seq = seq + 1
        return ev

    def _expand_refs(self, ev: dict[str, Any], seq: int, loc: Location) -> None:
        """Expand range-encoded ``sourceEventSeqs`` in place (C-level scan: v0 lists are long)."""
        refs = ev.get("sourceEventSeqs")
        if self.recoverable and "sourceEventSeqs" in ev:
            try:
                ev["sourceEventSeqs"] = decode_source_seqs(refs, seq, self.version)
            except ValueError as exc:
                self._problem(str(exc), loc, seq=seq, code="envelope")
            return
        if type(refs) is list and list in map(type, refs):
            try:
                ev["sourceEventSeqs"] = expand_seq_refs(refs, seq)
            except ValueError as exc:
                self._problem(str(exc), loc, seq=seq, code="envelope")
