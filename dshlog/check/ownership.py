"""Ownership rules: which events a child session owns, and the facts only owned events state.

FORMAT §5.2 items 1, 5 and 6: the inherited cut (count, seeded header, the last
``{inherited:true}`` end-seed marker), current-generation delivery markers that
must name this session, and the child catalog with unique ids.  A seeded log
with no explicit cut learns its cut only from its last marker, so the facts
whose verdict depends on it wait (compactly) until :meth:`Ownership.finish`.
"""

from __future__ import annotations

from array import array
from typing import Any

from ..protocol.values import is_count
from ..protocol.vocabulary import CURRENT_VERSION
from .common import nonempty_str
from .problems import Problem, Reporter

__all__ = ["Ownership"]

WRONG_SESSION = "current-generation delivery marker names the wrong Session"


def _problem(report: Reporter, code: str, message: str, seq: int | None, value: Any = None) -> None:
    report.report(Problem(code, message, seq=seq, value=value))


class Ownership:
    """Cut, delivery and catalog rules of one v4 log, fed event by event."""

    def __init__(self, header: dict[str, Any] | None, inherited_cut: int | None, report: Reporter) -> None:
        hdr = header if isinstance(header, dict) else {}
        self.has_header = header is not None
        self.header_id = hdr.get("id")
        self.has_parent = "parentSession" in hdr
        seeded = hdr.get("isSeeded")
        self.seeded: bool | None = seeded if isinstance(seeded, bool) else None
        self.inherited_cut = inherited_cut
        self.last_marker: int | None = None
        # Facts whose verdict depends on a cut not yet known (seeded log, no explicit cut).
        self._catalog_ids: set[str] = set()
        self._catalog_after_marker: list[tuple[int, Any]] = []
        self._foreign_deliveries = array("q")
        if inherited_cut is not None:
            if not is_count(inherited_cut):
                _problem(report, "cut", "format v4 inherited event count must be a non-negative safe integer", None)
            elif self.seeded is False and inherited_cut != 0:
                _problem(report, "cut", "unseeded format v4 Session has inherited events", None)

    def _own(self, seq: int) -> bool | None:
        """Whether ``seq`` is child-owned (at or after the cut); ``None`` until the cut is known."""
        if self.inherited_cut is not None:
            return seq >= self.inherited_cut
        if self.seeded is False:
            return True
        return None

    def check(self, etype: str, data: dict[str, Any], seq: int, report: Reporter) -> None:
        """The ownership facts of one known event with object data."""
        if etype == "session-log-deepseek/delivery-accepted":
            self._delivery(data, seq, report)
        elif etype == "subagent/catalog":
            own = self._own(seq)
            if own is None:
                self._catalog_after_marker.append((seq, data))
            elif own:
                self._catalog_fact(data, seq, report)
        elif etype == "session/end-seed" and data.get("inherited") is True:
            self.last_marker = seq
            self._catalog_after_marker.clear()
            if self.seeded is False:
                _problem(report, "cut", "format v4 unseeded Session contains an inherited end-seed marker", seq)

    def _delivery(self, data: dict[str, Any], seq: int, report: Reporter) -> None:
        version = data.get("sessionFormatVersion", 0)
        if not is_count(version):
            _problem(report, "delivery", "delivery sessionFormatVersion must be a non-negative safe integer", seq)
            return
        if version != CURRENT_VERSION:
            return  # historical generations are not interpreted in v4
        through = data.get("throughSeq")
        if not is_count(through):
            _problem(report, "delivery", "delivery throughSeq must be a non-negative safe integer", seq)
        elif through >= seq:
            _problem(report, "delivery", "delivery throughSeq must precede its marker", seq)
        sid = data.get("sessionId")
        if not nonempty_str(sid):
            _problem(report, "delivery", "delivery requires a nonempty Session id", seq)
            return
        if not self.has_header or sid == self.header_id:
            return
        if not self.has_parent:
            _problem(report, "delivery", WRONG_SESSION, seq, sid)
            return
        own = self._own(seq)
        if own is None:
            self._foreign_deliveries.append(seq)
        elif own:
            _problem(report, "delivery", WRONG_SESSION, seq, sid)

    def _catalog_fact(self, data: Any, seq: int, report: Reporter) -> None:
        """A supported versioned catalog fact with a unique child id (version 2 = ``external``)."""
        ok = (
            isinstance(data, dict)
            and data.get("version") in (0, 1, 2)
            and not isinstance(data.get("version"), bool)
            and isinstance(data.get("childId"), str)
            and (
                data.get("mode") in ("continuable", "one-shot", "unknown")
                if data.get("version") in (0, 1)
                else data.get("mode") == "external"
            )
            and not (data.get("version") == 0 and data.get("mode") == "unknown")
            and not (data.get("mode") == "continuable" and not isinstance(data.get("label"), str))
            and ("label" not in data or isinstance(data.get("label"), str))
        )
        if not ok:
            _problem(report, "catalog", "subagent/catalog requires a supported versioned catalog fact", seq)
            return
        if not is_count(data.get("childCreatedAt")):
            _problem(report, "catalog", "catalog child creation time must be a non-negative safe integer", seq)
        child = data["childId"]
        if child in self._catalog_ids:
            _problem(report, "catalog", f"duplicate catalog child {child}", seq)
        else:
            self._catalog_ids.add(child)

    def finish(self, count: int, report: Reporter) -> None:
        """Cut consistency and the facts that waited for it."""
        marker = self.last_marker
        cut = self.inherited_cut
        if cut is not None and is_count(cut) and cut > count:
            _problem(report, "cut", "format v4 inherited event count exceeds its events", None)
        if self.seeded is True and (marker is None or (cut is not None and marker != cut)):
            _problem(report, "cut", "format v4 seeded header disagrees with its last inherited end-seed marker", marker)
        if cut is None:
            cut = marker if marker is not None else 0
        for seq, data in self._catalog_after_marker:
            if seq >= cut:
                self._catalog_fact(data, seq, report)
        for seq in self._foreign_deliveries:
            if seq >= cut:
                _problem(report, "delivery", WRONG_SESSION, seq)
