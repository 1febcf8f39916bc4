"""Row decoding for every released format version (FORMAT.md 2, 3).

Turns physical records into logical events of the *stored* version:
packed v0/v1 chunk rows are expanded into ``assistant/chunk`` events, range-encoded
``sourceEventSeqs`` are expanded, seq density is checked, and dsh test-snapshot
*projections* (rows whose ``seq``/``time`` were stripped) are recognised and given
seqs by position, as dsh's own replay does.  Every deviation from the on-disk rules
becomes either an error (strict) or a :class:`~dshlog.check.problems.Problem` note (lenient or projection).
For the migration chain a packed row can instead stay one :class:`PackedRun`
(``RowDecoder.compact``), as dsh's own chain passes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..check.envelope import check_envelope, well_formed
from ..check.problems import Problem, Problems, Severity
from ..errors import CorruptLog, Location
from ..protocol.packed import PackedRun, expand_packed, expand_seq_refs
from ..protocol.values import is_count, is_safe_integer, safe_int
from ..protocol.vocabulary import PACKED_KEYS, PACKED_TYPES, PROJECTED_PACKED_KEYS


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

    def _problem(self, msg: str, loc: Location, seq: int | None = None, code: str = "row") -> None:
        if self.strict:
            raise CorruptLog(msg, path=self.path, loc=loc, seq=seq)
        self.notes.add(Problem(code, msg, Severity.WARNING, seq, loc))

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
            self.notes.add(Problem("seq-start", f"first event has seq {got}, not 0", Severity.WARNING, got, loc))
            self.seq_offset = got
            return
        msg = f"seq gap in committed region at line {loc.line} (expected {self.next_seq}, got {got})" if loc.line else f"seq gap (expected {self.next_seq}, got {got})"
        self._problem(msg, loc, seq=got, code="seq-gap")

    def report(self, problem: Problem) -> None:
        """The decoder as the envelope rule's reporter: strict refuses, lenient notes."""
        if self.strict:
            raise CorruptLog(problem.message, path=self.path, loc=problem.loc, seq=problem.seq)
        self.notes.add(problem.with_severity(Severity.WARNING))

    def _event(self, obj: dict, loc: Location) -> dict:
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

    def _expand_refs(self, ev: dict, seq: int, loc: Location) -> None:
        """Expand range-encoded ``sourceEventSeqs`` in place (C-level scan: v0 lists are long)."""
        refs = ev.get("sourceEventSeqs")
        if type(refs) is list and list in map(type, refs):
            try:
                ev["sourceEventSeqs"] = expand_seq_refs(refs, seq)
            except ValueError as exc:
                self._problem(str(exc), loc, seq=seq, code="envelope")
