"""The v4 view of an opened log: its events as dsh holds them after opening it, with dsh's restore over them.

:class:`~dshlog.read.session.SessionLog` is the log (its input, :mod:`dshlog.read.input`, and the
header decision, :mod:`dshlog.read.header`); this module is the view every dsh-view command reads
(:meth:`SessionLog.v4`):
a v4 log's stored events, or an older log migrated in memory (or read from its proven
successor, :mod:`dshlog.read.successor`), run through dsh's v4 restore
(:class:`~dshlog.check.validate.Validator`), which decides at the end whether dsh refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol, Self

from ..check.problems import Problem, Problems
from ..check.surface import SurfaceFold, SurfaceShare
from ..check.validate import Validator
from ..errors import CorruptLog, DshlogError, Location, MigrationRefused, UnsupportedVersion, guarded
from ..protocol.texts import transformed_artifact_refusal
from ..protocol.vocabulary import CURRENT_VERSION
from . import successor
from .container import Container, Position, SourceInfo
from .header import HeaderDecision
from .lazy import RowGate
from .rows import RowDecoder
from .source import Source

if TYPE_CHECKING:
    from ..migrate.chain import MigratedEvents

__all__ = ["ViewedLog", "V4View"]


class ViewedLog(Protocol):
    """What the view reads of its log (:class:`~dshlog.read.session.SessionLog`): the header decision,
    the stored rows, the input and how it is read (its :class:`~dshlog.read.source.Source`), the reader's notes.  The view owns nothing of the input."""

    @property
    def path(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def header(self) -> dict[str, Any] | None: ...
    @property
    def header_loc(self) -> Location | None: ...
    @property
    def decision(self) -> HeaderDecision | None: ...
    @property
    def info(self) -> SourceInfo: ...
    @property
    def notes(self) -> Problems: ...
    @property
    def decoder(self) -> RowDecoder: ...
    @property
    def strict(self) -> bool: ...
    @property
    def guard(self) -> bool: ...
    @property
    def progress(self) -> Position | None: ...
    @property
    def cache(self) -> str | None: ...
    @property
    def source(self) -> Source: ...
    @property
    def snapshot(self) -> bool: ...
    @property
    def _fh(self) -> IO[bytes]: ...
    def _stored(self, gate: RowGate | None = None) -> Iterator[Any]: ...
    def _stored_runs(self, gate: RowGate | None = None) -> Iterator[Any]: ...
    def _migration_header(self) -> dict[str, Any]: ...
    def _discover_children(self) -> list[dict[str, Any]]: ...
    def sibling(self, path: str) -> ViewedLog:
        """Another file opened by the same reader, with this one's options (a proven successor)."""
        ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...


#: Problem codes of the Validator by the pass of dsh's v4 restore that finds them:
#: dsh checks every event's own shape first (``restoreReleasedV4Artifact``'s loop),
#: then the inherited cut, then the relationships between events, and reports the
#: first failure of the earliest pass.
_RESTORE_PASS = {"unsupported": 0, "retired": 0, "envelope": 0, "seq-gap": 0, "message": 0, "stream": 0, "cut": 1}


def _restore_rank(problem: Problem) -> int:
    return _RESTORE_PASS.get(problem.code, 2)


def _restore_unsupported(problem: Problem) -> bool:
    """Whether dsh throws this restore refusal as ``SessionFormatUnsupportedMigrationError``."""
    return problem.code == "unsupported" or problem.message.startswith("format v4 rejects retired event type")


class V4View:
    """The v4 events of a session log, as dsh holds them after opening it.

    A v4 log is its stored events; an older one is migrated in memory, once, as
    it is iterated (nothing is written).  ``header`` is the v4 header, derived
    from the stored header alone.  After iteration ``inherited_cut`` is the
    inherited event count the chain reported (``None`` for a v4 log).

    Of a strict log it is dsh's view: rows are read as dsh's recovering read
    reads them, and the v4 artifact is restored as dsh restores it (every
    event's shape, the inherited cut, the relationships, run through
    :class:`~dshlog.check.validate.Validator`); a refusal is raised, with dsh's
    text, when the last event has gone by.  A consumer that stops early, or that
    fails on its own, asks :meth:`finish` (or uses the view as a context manager,
    which does) whether dsh would refuse the log: dsh's refusal then wins.
    """

    def __init__(self, log: ViewedLog, child_facts: list[dict[str, Any]] | None, runs: bool = True, *,
                 allow_unknown: bool = False, restore: bool = True,
                 share: SurfaceShare | None = None, told: Callable[[Problem], None] | None = None) -> None:
        self._log = log
        self._told = told
        self._restore = restore
        self._share = share  # a consumer that takes the whole log's fold (surface)
        self._rules: Validator | None = None
        self._shared = False  # the restore's fold is a consumer's too (share_surface)
        self._allow_unknown = allow_unknown
        self._child_facts = child_facts
        self._runs = runs
        self._header: dict[str, Any] | None = None
        self._migrated: MigratedEvents | None = None
        self._gen: Iterator[tuple[dict[str, Any], bytes | None]] | None = None
        self.inherited_cut: int | None = None
        #: dsh's view: recoverable rows and the v4 restore (a strict log)
        self.dsh = log.strict
        if self.dsh:
            log.decoder.recoverable = True

    @property
    def header(self) -> dict[str, Any] | None:
        """The v4 physical header (``None`` for an input without one); reads no body."""
        log = self._log
        if self._header is None and log.header is not None:
            if log.version == CURRENT_VERSION:
                self._header = log.header
            elif self.dsh and log.decision is not None and log.decision.header is not None:
                self._header = log.decision.header
            else:
                from ..migrate.chain import header_only  # an older log only: a v4 one loads no migration

                try:
                    self._header = header_only(log._migration_header(), projection=log.snapshot)
                except DshlogError as exc:
                    raise exc.with_context(path=log.path, loc=log.header_loc)  # noqa: B904 - the error itself, located
        return self._header

    def _source(self) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        """(v4 event, its stored line when the line is exactly the event)."""
        log = self._log
        if log.version == CURRENT_VERSION:
            for r in log._stored():  # the view guards its own stream once, not each layer
                yield r.event, r.raw
            return
        facts = self._child_facts if self._child_facts is not None else log._discover_children()
        claim = self._claim(facts)
        if claim is not None:
            proof = successor.proven(claim)
            published = self._successor(proof) if proof is not None else None
            if published is not None:
                yield from published
                return
        from ..migrate.chain import migrate_stream  # an older log only: a v4 one loads no migration

        witness = successor.Witness(claim) if claim is not None else None
        noted = len(log.notes)
        try:
            body = log._stored_runs() if self._runs else (r.event for r in log._stored())
            header, events = migrate_stream(log._migration_header(), body, child_facts=facts, projection=log.snapshot,
                                            system_prompt_plugins=log.source.plugins)
            self._header = header
            self._migrated = events
            if witness is None:
                for ev in events:
                    yield ev, None
            else:
                witness.line(header)
                for ev in events:
                    witness.line(ev)
                    yield ev, None
        except DshlogError as exc:
            raise exc.with_context(path=log.path)  # noqa: B904 - the error itself, located
        self.inherited_cut = events.inherited_cut
        if witness is not None and len(log.notes) == noted:  # a read that noted nothing about the body
            witness.close(self.inherited_cut)

    def _claim(self, facts: list[dict[str, Any]]) -> successor.Claim | None:
        """What this view of an old generation file may prove or use (:mod:`dshlog.read.successor`), or ``None``."""
        log = self._log
        if log.cache is None or not log.source.named or log.header is None or log.info.container != Container.JSONL \
                or log.snapshot:
            return None
        return successor.claim(log.cache, log.path, log._fh.fileno(), strict=log.strict, version=log.version,
                               plugins=log.source.plugins, facts=facts)

    def _successor(self, proof: successor.Proof) -> Iterator[tuple[dict[str, Any], bytes | None]] | None:
        """The proven successor's events, as the migration would yield them; ``None`` when it cannot be opened as proven."""
        log = self._log
        try:
            published = log.sibling(proof.path)
        except DshlogError:
            return None
        if not successor.same_file(proof.stamp, published._fh.fileno()) or published.version != CURRENT_VERSION \
                or published.header is None:
            published.close()
            return None
        return self._published(published, proof)

    def _published(self, published: ViewedLog, proof: successor.Proof) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        with published:
            self._header = published.header
            for r in published._stored():
                yield r.event, None  # as migrated: no stored line of the old file is this event
        self.inherited_cut = proof.inherited_cut

    def _restored(self) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        """The source, with dsh's v4 restore over it (dsh's view only)."""
        pairs = self._source()
        if not self.dsh or not self._restore:
            yield from pairs
            return
        log = self._log
        rules = self._rules
        if rules is None:
            rules = self._validator(self._share)
            self._rules = rules
        first: Any = None
        # Where the restore's fold skipped an event, a shared fold's consumer (which would
        # have stopped at that refusal) is given nothing more: the rest is only checked.
        shared = self._shared
        skipped_by: Any = None
        told = self._told
        for pair in pairs:
            problems = rules.feed(pair[0])
            if problems:
                if told is not None:
                    for p in problems:
                        told(p)
                first = self._first(first, problems)
            if not shared:
                yield pair
            elif skipped_by is None:
                if rules.skipped:
                    skipped_by = problems[0] if problems else True
                else:
                    yield pair
        problems = rules.finish()
        if told is not None:
            for p in problems:
                told(p)
        first = self._first(first, problems)
        if first is not None:
            raise self._refusal(first)
        if isinstance(skipped_by, Problem):  # refused by a rule whose finding dsh does not refuse the log for
            raise CorruptLog(skipped_by.message, path=log.path, seq=skipped_by.seq)

    def _validator(self, share: SurfaceShare | None) -> Validator:
        """The restore's rules for this log."""
        log = self._log
        # a v4 log's events are its rows as jsjson parsed them; migrated ones are built in Python
        return Validator(self.header, projection=log.snapshot, json_values=log.version == CURRENT_VERSION, share=share)

    def share_surface(self, share: SurfaceShare) -> SurfaceFold | None:
        """Before the view is read: the restore's surface fold, made to do ``share``'s fold too; ``None`` where it cannot.

        A consumer that folds the surface of the events it reads (``requests``,
        ``rebuild``) follows this fold instead of folding every event a second time:
        the restore folds each event before the view yields it, and tells the
        consumer before each settlement (:class:`~dshlog.check.surface.SurfaceShare`).
        The restore's fold checks what a consumer's checking fold checks (the rules
        it leaves to the restore's other rules report the same events), and skips an
        event it refuses where such a fold would have stopped: from that event on the
        view yields nothing more and ends with dsh's refusal (or, where dsh would not
        refuse the log, the refusal of the fold that skipped it).  ``None`` (the consumer
        folds its own) where there is no restore, where the view was read or its rules
        resumed, of a snapshot projection (where a placeholder can turn a refusal into
        a warning), and where the view was made with a share of its own.
        """
        if self._gen is not None or self._rules is not None or not self.dsh or not self._restore \
                or self._log.snapshot or self._share is not None:
            return None
        self._rules = self._validator(share)
        self._shared = True
        return self._rules.fold

    @property
    def open_rules(self) -> Validator | None:
        """While the view is read: the restore's rules, when they have found nothing yet (dsh's decision still open).

        What :mod:`dshlog.read.resume` keeps of dsh's view at the end of the rows, to go on
        from there once the log has grown.
        """
        rules = self._rules
        return rules if rules is not None and rules.unflagged else None

    def resume_rules(self, rules: Validator) -> bool:
        """Go on with a kept restore's rules instead of fresh ones (before the view is read); whether it could."""
        if self._gen is not None or not self.dsh or not self._restore or self._log.version != CURRENT_VERSION \
                or self._shared:
            return False
        self._rules = rules
        return True

    @property
    def surface(self) -> SurfaceFold | None:
        """After the view is used up: the restore's surface fold, where it stands for a checking fold of the log.

        That is dsh's view of a log the restore found no problem in (see
        :attr:`~dshlog.check.validate.Validator.clean_fold`); ``None`` otherwise,
        and always where there was no restore.  A caller that wants the surface of
        the whole log takes it instead of folding every event a second time, having
        made the view with the :class:`~dshlog.check.surface.SurfaceShare` it keeps.
        """
        return self._rules.clean_fold if self._rules is not None else None

    def _first(self, first: Any, problems: list[Any]) -> Any:
        for p in problems:
            if p.severity != "error" or (self._allow_unknown and p.code == "unsupported"):
                continue
            if first is None or _restore_rank(p) < _restore_rank(first):
                first = p
        return first

    def _refusal(self, problem: Any) -> DshlogError:
        """dsh's refusal of the restored artifact: a migrated one is wrapped in the chain's words."""
        log = self._log
        seq = problem.seq
        if _restore_unsupported(problem):
            cls = MigrationRefused if log.version < CURRENT_VERSION else UnsupportedVersion
            return cls(problem.message, path=log.path, seq=seq)
        if log.version < CURRENT_VERSION:
            return MigrationRefused(transformed_artifact_refusal(log.version, CURRENT_VERSION, problem.message), path=log.path, seq=seq)
        return CorruptLog(problem.message, path=log.path, seq=seq)

    def _stream(self) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        if self._gen is None:
            restored = self._restored()
            self._gen = guarded(restored) if self._log.guard else restored
        return self._gen

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (ev for ev, _raw in self._stream())

    def records(self) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        """(v4 event, original line bytes or ``None``): untouched v4 lines keep their exact bytes."""
        return self._stream()

    def finish(self) -> None:
        """Read what is left of the log (keeping nothing): raises dsh's refusal, if dsh refuses it."""
        for _ in self._stream():
            pass

    def __enter__(self) -> V4View:
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        """A view used up, or abandoned by a consumer that failed: dsh's decision on the whole log first."""
        if kind is None:
            self.finish()
        elif isinstance(error, DshlogError):
            try:
                self.finish()
            except DshlogError as refusal:
                raise refusal from error
