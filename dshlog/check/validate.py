"""Whole-log validation of a v4 artifact: every problem, in one streaming pass.

dsh stops at the first broken rule; a repair tool needs to see all of them, so
:class:`Validator` runs every rule family of this package with a collecting
reporter and carries on:

* :mod:`.header` and :mod:`.envelope` (FORMAT §2.1, §3.1),
* :mod:`.data` (dsh's shared event-data rules), :mod:`.admission` (dsh's v4 row
  admission) with :mod:`.shapes` and :mod:`.streams` (SEMANTICS §1.4, FORMAT §5.1),
* :mod:`.surface`, the fold itself (SEMANTICS §2), which refuses an event and
  leaves the model view as it stood,
* :mod:`.ownership` (cut, deliveries, catalog) and :mod:`.lifecycle` with
  :mod:`.compaction`, :mod:`.retries`, :mod:`.titles` and :mod:`.ptc` (§5.2).

State is bounded: the open turn/step with its advertised tool calls, the
current model view, and whole-log facts kept compactly (seqs in ``array('q')``,
composite facts as 16-byte digests) -- never the events themselves.

Problem texts reuse dsh's wording wherever dsh has one, so a message found here
can be searched for in dsh's own diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import DshlogError, InternalError
from ..fastpaths import fast
from ..protocol import vocabulary as vocab
from ..protocol.texts import unknown_event_type
from ..protocol.values import has_placeholder
from .admission import check_data, typed_clean, typed_event
from .data import check_event_data
from .envelope import check_envelope, invalid_envelope, well_formed
from .header import CwdPlatform, validate_header
from .lifecycle import Lifecycle
from .ownership import Ownership
from .problems import Problem, Severity
from .surface import SurfaceFold, SurfaceShare

__all__ = ["Validator", "validate_events"]


class _Collector:
    """``validate``'s reporter: each text once per event; placeholders explained by a projection.

    With ``projection``, an error whose offending value holds a snapshot
    placeholder becomes a ``projection`` warning.  The value is dropped either
    way, so a kept problem holds no payload.
    """

    __slots__ = ("pending", "seen", "projection", "flagged")

    def __init__(self, projection: bool) -> None:
        self.pending: list[Problem] = []
        self.seen: set[str] = set()
        self.projection = projection
        #: whether anything but an ``info`` was reported (an error, or a warning that may be a fold's refusal)
        self.flagged = False

    def report(self, problem: Problem) -> None:
        if problem.severity != Severity.INFO:
            self.flagged = True
        message = problem.message
        if message in self.seen:
            return
        self.seen.add(message)
        value = problem.value
        if value is not None:
            if self.projection and problem.severity == Severity.ERROR and has_placeholder(value):
                problem = Problem(
                    "projection", f"{message} (snapshot placeholder {value!r})", Severity.WARNING, problem.seq, problem.loc
                )
            else:
                problem = Problem(problem.code, message, problem.severity, problem.seq, problem.loc, problem.path)
        self.pending.append(problem)

    def flush(self) -> list[Problem]:
        out, self.pending = self.pending, []
        self.seen = set()
        return out


class _Gather(list[Any]):
    """A plain list as a reporter (the shared data rules' findings for one event)."""

    report = list.append


class Validator:
    """Incremental validator of one v4 log.

    Feed events in order with :meth:`feed`; call :meth:`finish` once at the end.
    Each call returns the problems it found (header problems come with the first
    call).  ``inherited_cut`` is the inherited event count when the caller knows
    it; otherwise it is derived from the last ``{inherited:true}`` end-seed.
    ``projection=True`` downgrades deviations explained by dsh's snapshot
    projections (placeholder strings where real values were) to ``warning``
    problems with code ``projection``.

    ``json_values=True`` promises that every event is a JSON value as
    ``jsjson.loads`` makes it (dicts, lists, strings, ints, floats, booleans,
    ``None``): the typed decoders then prove clean parts in C and skip their rules.
    The problems are the same either way (``tests/test_typed.py``); without the
    promise (events built in Python, as the migration chain's), or in the exact mode
    of :mod:`dshlog.fastpaths`, every rule runs.
    """

    def __init__(
        self,
        header: dict[str, Any] | None = None,
        *,
        inherited_cut: int | None = None,
        projection: bool = False,
        known_types: Iterable[str] | None = None,
        cwd_platform: CwdPlatform = "any",
        json_values: bool = False,
        share: SurfaceShare | None = None,
    ) -> None:
        """``share``: the fold also keeps what a consumer of the events folds the surface for,
        and tells it before each settlement (see :class:`~dshlog.check.surface.SurfaceShare`):
        a consumer that follows :attr:`fold` does so while :attr:`skipped` is 0, and one that
        takes the whole log's surface takes :attr:`clean_fold` (a log without problems)."""
        self.header = header
        self.typed = json_values and fast()
        self.projection = projection
        self.known: frozenset[str] = frozenset(known_types) if known_types is not None else vocab.V4_TYPES
        self.inherited_cut = inherited_cut
        self.count = 0
        self._report = _Collector(projection)
        self._data = _Gather()
        self._finished = False
        #: events whose surface effect the fold skipped (refused, or not given to it): from the
        #: first one on, the fold is no longer the one a fold that stops at a refusal would hold
        self.skipped = 0
        self._settling = share.settling if share is not None else None

        if header is not None:
            hdr = header if isinstance(header, dict) else {}
            for text in validate_header(header, 4, cwd_platform=cwd_platform):
                value = hdr.get("cwd") if "cwd" in text else hdr.get("id") if " id " in text else None
                self._report.report(Problem("header", text, value=value))
        self.ownership = Ownership(header, inherited_cut, self._report)

        # Validation needs only the count of replacements, not their records, and no
        # messages (the lean fold keeps what its own rules read); the data rules run
        # here, and only the events that pass them are folded.
        self._fold = SurfaceFold(strict_unknown=False, check_messages=False,
                                 keep_replacements=share is not None and share.replacements, keep_messages=False,
                                 digests=share is not None and share.digests, note=share.note if share is not None else None)
        self._fold.check_data = False
        self.lifecycle = Lifecycle(self._fold)

    # ------------------------------------------------------------------ public API

    def feed(self, event: Any) -> list[Problem]:
        """Check the next event; returns the problems found so far that were not yet returned."""
        if self._finished:
            raise InternalError("Validator.feed after finish")
        idx = self.count
        self.count += 1
        report = self._report
        pre = report.flush() if report.pending else []
        self._check_event(event, idx)
        return pre + report.flush()

    def finish(self) -> list[Problem]:
        """End-of-log checks: cut consistency, deferred ownership facts, the open tail."""
        if self._finished:
            return []
        self._finished = True
        report = self._report
        report.seen = set()
        self.ownership.finish(self.count, report)
        self.lifecycle.finish(report)
        return report.flush()

    @property
    def unflagged(self) -> bool:
        """Before :meth:`finish`: nothing but an ``info`` reported so far, and nothing pending."""
        return not self._finished and not self._report.flagged and not self._report.pending

    @property
    def fold(self) -> SurfaceFold:
        """The surface fold as it stands (after the events fed so far)."""
        return self._fold

    @property
    def clean_fold(self) -> SurfaceFold | None:
        """After :meth:`finish`, of a log with no problem but an ``info``: the surface fold, else ``None``.

        On such a log every event was folded, and dsh's checking fold would have
        refused none of them (its checks are rules this validator ran and found
        nothing by), so this lean fold stands for it: a caller that wants the
        surface of the whole log need not fold it a second time.  Where anything
        was reported (a warning too: a projection's placeholder can turn a fold's
        refusal into one), the caller folds the log itself.
        """
        return self._fold if self._finished and not self._report.flagged else None

    # ------------------------------------------------------------------ per event

    def _check_event(self, event: Any, idx: int) -> None:
        report = self._report
        if self.typed and typed_event(event, idx) and event["type"] in self.known:
            # envelope and data proven in one conversion: the rules between events are left
            etype, data = event["type"], event["data"]
            self.ownership.check(etype, data, idx, report)
            self._fold_and_follow(etype, event, data, idx, True)
            return
        if not isinstance(event, dict):
            report.report(Problem("envelope", invalid_envelope(idx), seq=idx))
            self._advance_fold(idx)
            return
        if not well_formed(event, idx) and not check_envelope(event, idx, report):
            self._advance_fold(idx)  # no usable type or data: nothing more to judge
            return
        etype = event["type"]
        ignorable = event.get("ignorable") is True
        if etype not in self.known:
            if etype in vocab.CODE_DISPATCH_TYPES and not ignorable:
                report.report(Problem("retired", f"format v4 rejects retired event type {etype}", seq=idx))
            elif not ignorable:
                report.report(Problem("unsupported", unknown_event_type(vocab.CURRENT_VERSION, f'"{etype}"', idx), seq=idx))
            self._apply_surface(event, idx)
            return

        data = event["data"]
        self._fold_and_follow(etype, event, data, idx, self._check_data(etype, event, data, idx))

    def _fold_and_follow(self, etype: str, event: dict[str, Any], data: Any, idx: int, data_ok: bool) -> None:
        """Fold the event (when its data passed dsh's shared rules), then the lifecycle rules."""
        nodes = self._fold.nodes
        before = (len(nodes), nodes[0] if nodes else None)
        surfaced = self._apply_surface(event, idx) if data_ok else self._advance_fold(idx)
        self.lifecycle.check(etype, event, data, idx, before, surfaced, self._report)

    def _check_data(self, etype: str, event: dict[str, Any], data: Any, idx: int) -> bool:
        """Every data rule of a known event; returns whether dsh's shared rules passed (the fold may see it)."""
        report = self._report
        if self.typed and typed_clean(etype, data):
            self.ownership.check(etype, data, idx, report)  # a proven data is an object
            return True
        shared = self._data
        shared.clear()
        check_event_data(event, f'session event "{etype}" at seq {idx}', shared)
        for problem in shared:
            if problem.code != "retired":  # the v4 retired-syntax rule below reports these, once
                report.report(problem)
        check_data(etype, event, data, idx, report, typed=self.typed)
        if isinstance(data, dict):
            self.ownership.check(etype, data, idx, report)
        return not shared

    # ------------------------------------------------------------------ surface

    def _advance_fold(self, idx: int) -> bool:
        """Skip the event's surface effect (it was refused or reported); always ``False``."""
        self._fold.next_seq = idx + 1
        self.skipped += 1
        return False

    def _apply_surface(self, event: dict[str, Any], idx: int) -> bool:
        """Fold the event; a refusal is reported and the event's surface effect skipped."""
        candidate = event
        if event.get("seq") != idx or type(event.get("seq")) is not int:
            candidate = {**event, "seq": idx}  # seq problems are already reported; keep folding
        if self._settling is not None and event.get("type") in vocab.SETTLEMENT_TYPES:
            self._settling(self._fold)
        try:
            self._fold.apply(candidate)
        except DshlogError as exc:
            self._report.report(Problem("surface", exc.message, seq=idx))
            return self._advance_fold(idx)
        return True


def validate_events(
    header: dict[str, Any] | None,
    events: Iterable[dict[str, Any]],
    *,
    inherited_cut: int | None = None,
    projection: bool = False,
) -> Iterator[Problem]:
    """Every problem of a v4 log, streamed in log order (end-of-log findings last)."""
    validator = Validator(header, inherited_cut=inherited_cut, projection=projection)
    for event in events:
        yield from validator.feed(event)
    yield from validator.finish()
