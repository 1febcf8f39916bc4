"""Whole-log validation report: framing, rows, migration and v4 rules together.

:mod:`dshlog.check.validate` holds the event rules of a released dsh reader; this module
drives them over one input and gathers *every* problem (the reader runs in its
lenient mode so one bad row does not hide the next), so ``dshlog validate`` can
list them all with their locations and pick an exit code.  Everything it lists
is a :class:`~dshlog.check.problems.Problem`, whoever found it.  The verdict also
holds dsh's own decision: the log is opened once more as dsh opens it (header
admission, the recovering read, the migration, the v4 restore), and a refusal
is one more error, in dsh's words.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..check.problems import Problem, Severity
from ..check.validate import Validator
from ..errors import DshlogError, ExitCode, MigrationRefused, NotASessionLog, UnsupportedVersion, boundary
from ..executor import Executor, InProcess, helpers_allowed
from ..fastpaths import fast
from ..protocol.packed import PackedRun
from ..protocol.vocabulary import CURRENT_VERSION
from ..read.cache import MAX_VALUE_BYTES, Kind, open_cache, problem_of, problem_record, resumed_map
from ..read.container import Container, Position
from ..read.header import refused_header_note
from ..read.place import place_keys, place_refusal
from ..read.resume import Checkpoint, StateCodec, resume_read, state_kind
from ..read.session import SessionLog, is_dsh_refusal, open_log
from ..read.store import Unreadable, in_walk_order
from ..output.jsondoc import SHAPE
from .outcome import worst
from ..read.source import Reread, Source, Target

MAX_PROBLEMS = 1000  # per file; the rest are counted, so memory stays bounded

# Relationship problems that cannot be judged on a stream that starts mid-log.
_PARTIAL = frozenset({"seq-gap", "lifecycle", "delivery", "cut", "surface"})
# Reader notes that make a (non-snapshot) log damaged.
_DAMAGING_NOTES = frozenset({"seq-gap", "row", "envelope", "unparsable"})


#: The problem code of an input that is no session log at all (exit 2, not damage).
NOT_A_LOG = "not-a-log"

#: A report's verdict per exit code (``damaged`` for the others); the walk's "not followed" is ``skipped``.
STATUS = {ExitCode.OK: "ok", ExitCode.UNSUPPORTED: "unsupported", ExitCode.IO: "unreadable", ExitCode.CONFLICT: "skipped",
          ExitCode.USAGE: "not a session log"}


@dataclass
class ValidationReport:
    """Every problem of one input, with its location, and the verdict: what ``validate`` lists of one file.

    Built as the input is read (:meth:`add`); ``problems`` keeps at most
    :data:`MAX_PROBLEMS`, the rest are counted in ``more_problems``.
    """

    path: str
    version: int | None = None
    events: int = 0
    projection: bool = False
    problems: list[Problem] = field(default_factory=list)
    more_problems: int = 0  # problems past the per-file limit, counted only
    unsupported: bool = False
    #: ``rescue can bring this session back: dshlog rescue ID``, when dsh refuses a session rescue brings back
    rescue: str | None = None
    unread: ExitCode | None = None  # not read: the store's walk named why (its exit code)

    def add(self, problem: Problem) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        else:
            self.more_problems += 1

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == Severity.ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == Severity.WARNING)

    @property
    def exit_code(self) -> ExitCode:
        if self.unread is not None:
            return self.unread
        errors = [p for p in self.problems if p.severity == Severity.ERROR]
        if any(p.code == "io" for p in errors):
            return ExitCode.IO  # the file could not be read at all
        if errors and all(p.code == NOT_A_LOG for p in errors):
            return ExitCode.USAGE  # no session log at all: the wrong file was named, nothing is damaged
        if errors and all(p.code in ("unsupported", "refused") for p in errors) and not self.more_problems:
            return ExitCode.UNSUPPORTED  # intact, but uses something this reader does not know
        if errors or self.more_problems:
            return ExitCode.CORRUPT
        if self.unsupported:
            return ExitCode.UNSUPPORTED
        return ExitCode.OK

    @property
    def status(self) -> str:
        """``ok``, ``unsupported``, ``unreadable`` (the file could not be read: missing, denied),
        ``not a session log`` (the wrong file), ``skipped`` (a link the walk did not follow) or ``damaged``."""
        return STATUS.get(self.exit_code, "damaged")

    def grouped(self) -> list[tuple[Problem, list[Problem]]]:
        """The problems in file order, each with the later problems of its code (on later lines).

        One damaged row makes every later row look wrong (a seq out of place makes
        each following event "not dense"): the first of such a run is the cause
        worth reading, the rest are its consequences, shown as a count.
        """
        ordered = sorted(self.problems, key=_position)
        groups: list[tuple[Problem, list[Problem]]] = []
        first: dict[tuple[str, str], tuple[Problem, list[Problem]]] = {}
        for p in ordered:
            key = (p.code, str(p.severity))
            g = first.get(key)
            if g is not None and _position(p)[0] > _position(g[0])[0]:
                g[1].append(p)
            else:
                g = (p, [])
                groups.append(g)
                first.setdefault(key, g)
        return groups

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "version": self.version,
            "events": self.events,
            "projection": self.projection,
            "status": self.status,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "problems": [p.as_dict() for p in sorted(self.problems, key=_position)],
            "moreProblems": self.more_problems,
            **({"rescue": self.rescue} if self.rescue is not None else {}),
        }


def _position(p: Problem) -> tuple[int, int]:
    """Where a problem is in the file (line, then byte); problems of the whole file come first."""
    loc = p.loc
    line = loc.line if loc is not None and loc.line is not None else 0
    offset = loc.offset if loc is not None and loc.offset is not None else 0
    return line, offset


def _from_error(report: ValidationReport, exc: DshlogError) -> None:
    """A refusal that stopped the read: one error where it happened (the path when nothing finer is known)."""
    unsupported = isinstance(exc, UnsupportedVersion)
    if unsupported:
        report.unsupported = True
    code = "refused" if isinstance(exc, MigrationRefused) else ("unsupported" if unsupported else exc.kind)
    if isinstance(exc, NotASessionLog):
        code = NOT_A_LOG
    report.add(Problem(code, exc.message, Severity.ERROR, exc.seq, exc.loc, exc.path))


def _feed_rules(report: ValidationReport, rules: Validator, events: Any) -> None:
    for ev in events:
        report.events += 1
        for p in rules.feed(ev):
            report.add(p)
    for p in rules.finish():
        report.add(p)


@dataclass
class _Restored:
    """What dsh's restore of an old log found, as the rules over its migrated form list it (the one-restore fast path).

    dsh's restore of a migrated log is those rules (:class:`~dshlog.read.view.V4View`): when
    its strict read takes the very events the lenient read migrates (no row was dropped,
    recovered or completed), its findings are that listing, and the log is not read again.
    """

    found: ValidationReport
    #: the strict read took the lenient read's events: ``found`` is the migrated form's listing
    whole: bool = False


def _one_restore(log: SessionLog, report: ValidationReport) -> bool:
    """Whether dsh's restore of this old log may also list its migrated form (fastpaths: one restore).

    Only when the listing found nothing at all: then every row decoded as it is, and
    the strict read (which recovers a damaged tail, and completes nothing) reads the same rows.
    """
    return fast() and log.version is not None and log.version < CURRENT_VERSION and log.header is not None \
        and not report.problems and not report.unsupported


#: The stored versions whose header the lenient listing reads as dsh does (a v1 header may be the June
#: pre-release writer's, which the listing reads as v0 with a note).
_LISTED_VERSIONS = (0, 2, 3)
#: Notes of the migration's setup rather than of the rows (no persistence root to find child sessions
#: in): the listing, which does not migrate, never has them.
_SETUP_NOTES = frozenset({"children"})


def _dsh_lists(log: SessionLog, cache: str | None) -> bool:
    """Whether dsh's read of this old log may stand for the whole listing (fastpaths: one restore; :func:`_listed_by_dsh`).

    ``log`` is the lenient listing, opened, its body not read yet.  Not with a cache (dsh's
    read may take a proven successor, not this file's rows), nor for a header the listing
    has noted something about or reads with another version than it stores.
    """
    header = log.header
    if not fast() or cache is not None or header is None or log.notes:
        return False
    version = header.get("version")
    container = log.info.container
    return type(version) is int and version in _LISTED_VERSIONS and log.version == version and (
        container == Container.ZSTD or (container == Container.JSONL and not log.path.endswith(".zstd")))


def _listed_by_dsh(again: Reread, progress: Position | None) -> ValidationReport | DshlogError | None:
    """An old log's whole report from dsh's read of it alone, when that read is clean; else ``None`` (read it all),
    or dsh's refusal (the full read lists why and where, and takes it as dsh's decision instead of reading it again).

    dsh's strict read refuses (or recovers, with a note) every row the lenient listing
    would note: a row that does not parse or decode, an envelope unlike the rows before it,
    a seq gap.  So when it took every row and noted nothing, the listing would note nothing
    and count the same events (the decoder's next seq: dense from 0), and the restore's
    rules are those of the migrated form (:class:`_Restored`): one read instead of three.
    """
    from ..migrate.chain import header_only  # an older log only: validate of a v4 one loads no migration

    found = ValidationReport(again.name)
    try:
        with open_log(again(), progress=progress) as log:
            header = log.header
            if header is None or log.version != header.get("version"):
                return None
            with log.v4(told=found.add) as view:
                view.finish()
            if not _SETUP_NOTES.issuperset(log.notes.counts) or log.snapshot or log.decoder.seq_offset is not None \
                    or view.header != header_only(header, projection=False):
                return None
            found.path, found.version, found.projection, found.events = log.path, log.version, log.projection, log.decoder.next_seq
    except DshlogError as exc:
        return exc
    return found


def _dsh_verdict(report: ValidationReport, log: Any, again: Reread, progress: Position | None = None,
                 cache: str | None = None, restored: _Restored | None = None, refusal: DshlogError | None = None) -> None:
    """dsh's decision on the whole log, added as an error when dsh refuses it (unless already listed).

    ``log`` is the lenient reader the listing used.  A header dsh refuses is known
    from it; a v4 log whose listing found nothing (every rule of dsh's restore ran
    over rows that all decoded) is one dsh reads, so it is not read again.
    ``restored``: also gather every problem of dsh's restore (:class:`_Restored`).
    ``refusal``: dsh's refusal of this very read, already taken (:func:`_listed_by_dsh`).
    """
    source = log.source
    decision = getattr(log, "decision", None)
    if log.version == CURRENT_VERSION and (decision is None or decision.admitted) and not report.errors and not report.warnings:
        header = log.header or {}
        if source.name == "-" or place_refusal(log.path, header.get("id"), header.get("cwd"), compressed=log.info.container == Container.ZSTD) is None:
            return  # otherwise dsh refuses it for where it sits: the strict open below says so
    try:
        if refusal is not None:
            raise refusal
        with open_log(again(), progress=progress, cache=cache) as log:
            with log.v4(told=restored.found.add if restored is not None else None) as view:
                view.finish()
            if restored is not None:
                from ..migrate.chain import header_only  # an older log only (restored is asked of one)

                # the lenient read migrates this header as it is stored: the same v4 header, the same rules
                restored.whole = not log.notes and not log.snapshot and log.header is not None \
                    and view.header == header_only(log.header, projection=False)
    except DshlogError as exc:
        if is_dsh_refusal(exc) and source.name != "-" and source.select is None and source.format_version is None:
            # asked only of a session dsh refuses, read from its file as rescue reads it; imported here so
            # that validate's start-up does not load the rescue catalogue (tests/test_architecture.py)
            from .rescuable import rescue_hint

            report.rescue = rescue_hint(replace(source, stream=None))
        if any(p.severity == "error" and p.message.endswith(exc.message) for p in report.problems):
            return  # listed already, as an error
        # the reader's note on a header dsh refuses becomes this error
        report.problems = [p for p in report.problems if p.message != refused_header_note(exc.message)]
        _from_error(report, exc)


def validate_log(target: Source | Target, *, progress: Position | None = None,
                 cache: str | None = None) -> ValidationReport:
    """Check one input completely; never raises for problems in the log itself.

    A source's ``stream`` (what ``-`` names) is read up to three times (the listing,
    dsh's decision, the migrated form), so it is spooled once to a temporary file,
    never held in memory.  ``progress``: told how far
    each read is (bytes of the file, its size).  ``cache``: the directory of the verified cache, or
    none; with one, the two reads of an old log's migrated form read its proven successor instead
    (:mod:`dshlog.read.successor`); the listing reads the old file's own rows.
    """
    with Reread(Source.of(target)) as again:
        return _validate_log(again, progress, cache)[0]


#: What a kept state of validate's read may refer to by name (nothing but the shared constants).
_CODEC = StateCodec(limit=MAX_VALUE_BYTES)


def _resumed(log: SessionLog, kept: Any, report: ValidationReport) -> tuple[bool, Validator | None]:
    """Go on with validate's read of ``log`` from a kept state: whether it fits (else ``log`` is read afresh),
    and its rules (``None``: no row was read yet); the report's findings so far are put back in ``report``."""
    parts = resume_read(log, kept, _CODEC, 4)
    if parts is None:
        return False, None
    rules, events, problems, more = parts
    if not (rules is None or type(rules) is Validator) or type(events) is not int or type(more) is not int \
            or type(problems) is not list or not all(type(p) is Problem for p in problems):
        return False, None  # the log was moved on: the caller opens it again
    report.events, report.problems, report.more_problems = events, problems, more
    return True, rules


def _validate_log(again: Reread, progress: Position | None = None,
                  cache: str | None = None, kept: Any = None) -> tuple[ValidationReport, Any]:
    """The report, and the state validate's read of a v4 log leaves to go on from once it has grown (``None``: none).

    ``kept``: such a state an earlier read of this file left, the file since appended to:
    the rows it read are not read again (:mod:`dshlog.read.resume`).
    """
    report = ValidationReport(path=again.name)

    def opened() -> SessionLog:
        return open_log(again(), strict=False, progress=progress)

    rules: Validator | None = None
    refusal: DshlogError | None = None
    try:
        log = opened()
        if kept is not None and log.version == CURRENT_VERSION:
            fits, rules = _resumed(log, kept, report)
            if not fits:
                log.close()
                log = opened()  # the state does not fit this file: read it afresh
        if kept is None and _dsh_lists(log, cache):
            listed = _listed_by_dsh(again, progress)
            if isinstance(listed, ValidationReport):
                log.close()
                return listed, None
            refusal = listed
    except DshlogError as exc:
        _from_error(report, exc)
        return report, None
    report.path = log.path
    report.version = log.version
    checkpoint = Checkpoint(log, lambda: [rules, report.events, report.problems, report.more_problems], _CODEC)
    with log:
        try:
            if log.version == CURRENT_VERSION:
                # one pass: rows (lenient) feed the rules directly
                header_loc = log.header_loc
                for r in log.stored():
                    if rules is None:
                        rules = Validator(log.header, projection=log.snapshot, json_values=True)
                    report.events += 1
                    for p in rules.feed(r.event):
                        header_wide = p.seq is None and p.code in ("header", "projection") and header_loc
                        report.add(replace(p, loc=header_loc if header_wide else r.loc))
                if rules is None:
                    rules = Validator(log.header, projection=log.snapshot, json_values=True)
                for p in rules.finish():
                    report.add(p)
            else:
                # row checks only (the v4 rules run on the migrated form below)
                report.events = sum(e.count if isinstance(e, PackedRun) else 1 for e in log.stored_runs())
        except DshlogError as exc:
            _from_error(report, exc)
        report.projection = log.projection
        offset = getattr(log.decoder, "seq_offset", None)
        if offset:
            # a wrapped stream that starts mid-log (a subscription opened late): the events before
            # it are missing, so density and cross-event relationships cannot be judged
            report.problems = [
                replace(p, severity=Severity.WARNING, message=f"partial stream (starts at seq {offset}): {p.message}")
                if p.severity == Severity.ERROR and p.code in _PARTIAL
                else p
                for p in report.problems
            ]
        # The reader and the rules share the envelope rule: a row both judged is listed once.
        judged = {(p.code, p.message) for p in report.problems}
        for n in log.notes:
            if n.code == "unsupported-version":
                report.unsupported = True
                report.add(replace(n, code="unsupported", severity=Severity.WARNING))
                continue
            if (n.code, n.message) in judged:
                continue
            if n.severity == Severity.INFO:
                sev = Severity.INFO
            elif n.severity == Severity.ERROR or (n.code in _DAMAGING_NOTES and not log.snapshot):
                sev = Severity.ERROR
            else:
                sev = Severity.WARNING
            report.add(n.with_severity(sev))
    restored = _Restored(ValidationReport(report.path)) if _one_restore(log, report) else None
    _dsh_verdict(report, log, again, progress, cache, restored, refusal)
    if log.version is not None and log.version < CURRENT_VERSION and not report.errors and not report.unsupported:
        # historical: the log must also migrate, and its v4 form must pass the rules
        if restored is not None and restored.whole:
            for p in restored.found.problems:  # dsh's restore ran those rules over that form
                report.add(p)
            report.more_problems += restored.found.more_problems
            return report, checkpoint.state
        try:
            log2 = open_log(again(), strict=False, progress=progress, cache=cache)
            with log2:
                migrated = log2.v4()
                rules = Validator(migrated.header if log2.header is not None else None, projection=log2.snapshot)
                n_before = report.events
                _feed_rules(report, rules, migrated)
                report.events = n_before
        except DshlogError as exc:
            _from_error(report, exc)
    return report, checkpoint.state


def _validate_target(target: str, kept: Any, *, source: Source, progress: Position | None,
                     cache: str | None) -> tuple[ValidationReport, Any]:
    """One target of a batch: ``-`` reads the batch's stream, every other target its file (going on from ``kept``)."""
    member = source.at(target)
    if member.stream is not None:
        return validate_log(member, progress=progress, cache=cache), None
    return _validate_log(Reread(member), progress, cache, kept)


def unreadable_report(u: Unreadable) -> ValidationReport:
    """The report of a session the store's walk could not read: its one problem, the walk's exit code."""
    report = ValidationReport(path=u.path, unread=u.exit_code)
    kind, _, message = u.reason.partition(": ")
    report.add(Problem(kind, message, Severity.ERROR, None, None, u.path))
    return report


def _report_record(r: ValidationReport) -> list[Any]:
    """A verdict as a plain form for the cache (a task's report: the walk's ``unread`` is never one)."""
    return [r.path, r.version, r.events, r.projection, [problem_record(p) for p in r.problems], r.more_problems,
            r.unsupported, r.rescue]


def _report_of(rec: list[Any]) -> ValidationReport:
    """:func:`_report_record` back; raises on anything it did not write."""
    path, version, events, projection, problems, dropped, unsupported, rescue = rec
    if not isinstance(path, str) or not isinstance(events, int) or not isinstance(dropped, int):
        raise TypeError("not a verdict's record")
    if rescue is not None and not isinstance(rescue, str):
        raise TypeError("a rescue note is text")
    return ValidationReport(path, version, events, bool(projection), [problem_of(p) for p in problems], dropped, bool(unsupported), rescue)


#: ``validate``'s verdicts in the cache (bump ``version`` when :class:`ValidationReport` changes).
REPORT = Kind("validate", 2, _report_record, _report_of)
#: What validate's read of a v4 log leaves to go on from (:mod:`dshlog.read.resume`).
REPORT_STATE = state_kind("validate")


def _lasting(r: ValidationReport) -> bool:
    """Whether a verdict is a fact of its file (a file that could not be read is asked again)."""
    return r.exit_code != ExitCode.IO


@boundary
def validate_many(targets: Iterable[Target | Unreadable], *, source: Source = Source(), executor: Executor | None = None,
                  progress: Position | None = None, cache: str | None = None) -> Iterator[ValidationReport]:
    """``validate`` of each target, one task per session, yielded in input order as each turn comes.

    ``executor`` is how the tasks run (:class:`~dshlog.executor.InProcess` by
    default; a :class:`~dshlog.executor.ProcessPool` or a
    :class:`~dshlog.executor.DaskExecutor` to use more cores or machines); only
    paths travel to a worker.  Like :func:`validate`, it never raises for a log's own problems;
    a session a store's walk could not read (an :class:`~dshlog.read.store.Unreadable`) is a
    report of its own.

    ``progress``: told how far the read of a single target is, when the batch is that one
    target read in this process (a hook does not travel to a worker).

    ``source``: how every target is read (a :class:`~dshlog.read.source.Source` without a
    path); its ``stream`` is what a target ``-`` reads (the caller's standard input).  With
    one, the batch runs in this process whatever ``executor`` says: an open stream is this
    process's and cannot travel to a worker.

    ``cache``: the directory of the verified cache of per-session results
    (:mod:`dshlog.read.cache`), or none; only regular files are served from it (never ``-``).
    """
    ex = executor if executor is not None and source.named else InProcess()
    paths = [t if isinstance(t, Unreadable) else os.fspath(t) for t in targets]
    told = progress if len(paths) == 1 and isinstance(ex, InProcess) else None
    task = partial(_validate_target, source=replace(source, parallel=helpers_allowed(ex, source.parallel)), progress=told,
                   cache=cache)
    yield from in_walk_order(paths, lambda readable: resumed_map(open_cache(cache), REPORT, REPORT_STATE, task, readable,
                                                                 ex, options=source.options, keep=_lasting,
                                                                 depends=place_keys()), unreadable_report)


@dataclass(frozen=True, slots=True)
class Validation:
    """``dshlog validate``: one report per input; the exit code is the worst of them (:func:`~dshlog.ops.outcome.worst`)."""

    files: tuple[ValidationReport, ...]

    @property
    def exit_code(self) -> ExitCode:
        return worst(f.exit_code for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "files": [f.as_dict() for f in self.files]}


@boundary
def validate(*targets: Source | Target) -> Validation:
    """``dshlog validate``: every problem of each input with its location; never raises for the log's own.

    ``result.exit_code`` is the worst verdict (0 clean, 3 unsupported, 4 damaged, 6 unreadable).
    """
    return Validation(tuple(validate_log(t) for t in targets))
