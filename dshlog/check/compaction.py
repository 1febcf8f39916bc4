"""Compaction rules: transactions and the surface spans they account for (FORMAT §5.2 item 7).

``compaction/start`` opens one transaction in the open turn; a summary (at most
one) and prunes name an exact span of the current surface that spares the
protected system head; ``compaction/end`` closes it in the same turn.  No turn
boundary may cross an open compaction, unless a later end-seed proves it an
orphan inherited from the parent (dsh's look-ahead, done lazily here: the first
crossing is remembered and reported only when the compaction closes or the log
ends).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..protocol.values import is_count
from .common import nonempty_str
from .problems import Reporter, report_lifecycle

__all__ = ["Compactions", "OpenCompaction"]


class OpenCompaction:
    """The open transaction: its identity, owner turn, whether it has its summary."""

    __slots__ = ("id", "command", "turn", "seq", "summarized", "crossings")

    def __init__(self, cid: Any, command: Any, turn: int | None, seq: int) -> None:
        self.id = cid
        self.command = command
        self.turn = turn
        self.seq = seq
        self.summarized = False
        # Turn boundaries that crossed this compaction; forgiven if an end-seed
        # later proves it an inherited orphan.
        self.crossings: list[tuple[str, int]] = []


class Compactions:
    """The compaction transaction of a log, event by event."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: OpenCompaction | None = None

    def crossing(self, etype: str, seq: int) -> None:
        """A turn boundary at ``seq``; dsh reports only the first crossing of an open compaction."""
        if self.open is not None and not self.open.crossings:
            self.open.crossings.append((etype, seq))

    def forgive(self) -> None:
        """An end-seed closes (and forgives) any compaction inherited before it."""
        self.open = None

    def owner(self, data: dict[str, Any], subject: str, seq: int, report: Reporter) -> OpenCompaction | None:
        """The open compaction ``data`` belongs to (same id and source command), or a problem."""
        comp = self.open
        if comp is None or comp.id != data.get("compactionId") or comp.command != data.get("sourceCommandId"):
            report_lifecycle(report, f"{subject} has no matching compaction/start", seq)
            return None
        return comp

    def check(
        self, etype: str, data: dict[str, Any], seq: int, turn: int | None, nodes: Sequence[int] | None, head: int | None, report: Reporter
    ) -> None:
        """One ``compaction/*`` event; ``turn`` is the open turn, ``nodes`` the current surface."""
        if etype in ("compaction/prune", "compaction/summary") and nodes is not None:
            self._span(etype, data, seq, nodes, head, report)
        if etype == "compaction/prune":
            return
        if etype == "compaction/start":
            if self.open is not None:
                report_lifecycle(report, "compaction/start overlaps an open compaction", seq)
            owner_turn = data.get("turn")
            if owner_turn is not None and not is_count(owner_turn):
                report_lifecycle(report, "compaction turn must be a non-negative safe integer", seq)
            elif owner_turn != turn:
                report_lifecycle(report, "compaction/start does not match the open turn", seq)
            cid = data.get("compactionId")
            if not nonempty_str(cid):
                report_lifecycle(report, "compactionId requires a nonempty string", seq)
            self.open = OpenCompaction(cid, data.get("sourceCommandId"), owner_turn if is_count(owner_turn) else None, seq)
            return
        comp = self.owner(data, etype, seq, report)
        if comp is None:
            return
        if comp.turn != turn:
            report_lifecycle(report, f"{etype} does not match the open turn", seq)
        if etype == "compaction/summary":
            if comp.summarized:
                report_lifecycle(report, "compaction/summary repeats", seq)
            comp.summarized = True
            return
        if data.get("turn") != comp.turn:
            report_lifecycle(report, "compaction/end changes its owner turn", seq)
        if "error" not in data and not comp.summarized:
            report_lifecycle(report, "successful compaction/end requires one summary", seq)
        self.report_crossings(report)
        self.open = None

    def report_crossings(self, report: Reporter) -> None:
        """The crossing of the open compaction, now that no end-seed can forgive it."""
        if self.open is not None:
            for crossing, at in self.open.crossings:
                report_lifecycle(report, f"{crossing} crosses an open compaction", at)

    @staticmethod
    def _span(etype: str, data: dict[str, Any], seq: int, nodes: Sequence[int], head: int | None, report: Reporter) -> None:
        """The shadowed range and seqs name an exact current surface span that spares the head."""
        rng = data.get("shadowedRange")
        seqs = data.get("shadowedSeqs")
        if not isinstance(rng, dict):
            report_lifecycle(report, "compaction shadowedRange requires an object", seq)
            return
        if not isinstance(seqs, list):
            report_lifecycle(report, "compaction shadowedSeqs requires an array", seq)
            return
        start: Any = rng.get("start")  # both counts once the loop below has passed
        end: Any = rng.get("end")
        for value, name in ((start, "compaction range start"), (end, "compaction range end")):
            if not is_count(value):
                report_lifecycle(report, f"{name} must be a non-negative safe integer", seq)
                return
            if value >= seq:
                report_lifecycle(report, f"{name} must name an earlier event", seq)
                return
        try:
            a = nodes.index(start)
            b = nodes.index(end)
        except ValueError:
            a = b = -1
        if a < 0 or b < a or list(nodes[a : b + 1]) != seqs:  # a lean fold's nodes are an array
            report_lifecycle(report, f"{etype} shadowedSeqs do not name an exact current surface span", seq)
            return
        if head is not None and head in seqs:
            report_lifecycle(report, "compaction cannot shadow the protected system head", seq)
