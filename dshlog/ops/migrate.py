"""Write open of a historical session: publish ``session.v4.jsonl`` beside the old file.

What dsh does when it opens an old session for writing (FORMAT.md 6.2, 6.3), as a
batch job: take ``session.lock``, stream the migrated events into an exclusive
0600 temporary file in the same directory, fsync it, read it back and verify it,
check the source did not change meanwhile, publish with a hard link (never over
an existing file), fsync the directory and drop the temporary name.  Those steps
are :class:`~dshlog.write.transaction.Publication`'s; the successor gets the
source's owner, group and mode.  The source generation is never opened for writing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import Any, Literal

from ..errors import DshlogError, ExitCode, UsageError, boundary
from ..executor import Executor, InProcess, helpers_allowed
from ..output.jsondoc import SHAPE
from ..protocol.layout import parse_generation, persistence_root, successor_name
from ..protocol.vocabulary import CURRENT_VERSION
from ..read.children import discover_child_facts
from ..read.container import select_generation
from ..read.session import child_log_events, child_log_header, is_dsh_refusal, open_log
from ..read.store import Unreadable, in_walk_order, walk_sessions
from ..write.transaction import Publication, leftover_note, sweep
from ..write.verify import ReadBack
from ..write.writer import LogWriter
from .outcome import worst
from .rescuable import rescue_hint
from ..read.source import Source, Target

#: Whether a session's child sessions are looked for in its persistence root (``none``: it has none).
Children = Literal["auto", "none"]


@dataclass
class MigrationOutcome:
    """One session of ``dshlog migrate``; ``status`` is one of :data:`STATUSES` (the README says each).

    ``error`` is the one line the command prints for a failed session; ``notes`` what the
    run noticed (the generation dsh reads instead, what may bring a refused session back).
    """

    source: str
    status: str  # migrated | current | needed | would-migrate | failed
    version: int | None = None
    target: str | None = None
    events: int | None = None
    bytes: int | None = None
    error: str | None = None
    exit_code: ExitCode = ExitCode.OK
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what publishing could not keep (the owner, a leftover)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "status": self.status, "version": self.version}
        for k in ("target", "events", "bytes", "error"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        if self.notes:
            d["notes"] = self.notes
        if self.warnings:
            d["warnings"] = self.warnings
        return d


#: Every status an :class:`MigrationOutcome` may have, in the order a summary lists them.
STATUSES: tuple[str, ...] = ("migrated", "current", "needed", "would-migrate", "failed")


@dataclass
class Migration:
    """``dshlog migrate``: one outcome per session, the counts, and the run's exit code."""

    sessions: list[MigrationOutcome] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, int]:
        """How many sessions ended in each status."""
        return {k: sum(1 for o in self.sessions if o.status == k) for k in STATUSES}

    @property
    def exit_code(self) -> ExitCode:
        """The most severe per-session outcome (:func:`dshlog.ops.outcome.worst`): a failure, else
        work pending (``check``) when a session needs migrating."""
        return worst(o.exit_code for o in self.sessions)

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "sessions": [o.as_dict() for o in self.sessions], "summary": self.summary}


def migrate_all(sources: Iterable[Path | str | Unreadable], *, check: bool = False, dry_run: bool = False, children: Children = "auto",
                source: Source = Source(), executor: Executor | None = None,
                progress: Callable[[MigrationOutcome], None] | None = None) -> Migration:
    """:func:`migrate_many` gathered into a :class:`Migration`; ``progress`` hears each outcome, in input order."""
    batch = Migration()
    for o in migrate_many(list(sources), check=check, dry_run=dry_run, children=children, source=source,
                          executor=executor):
        batch.sessions.append(o)
        if progress is not None:
            progress(o)
    return batch


def target_name(source: Path) -> str:
    """The successor's name: the current generation, in the source's encoding."""
    return successor_name(source.name)


def find_sessions(paths: list[str], *, recursive: bool) -> list[str | Unreadable]:
    """Session generation files to consider (the store's one walk, :func:`~dshlog.read.store.walk_sessions`):
    files as given, directories by generation choice, with ``recursive`` every session below a directory;
    a session the walk cannot read is an :class:`~dshlog.read.store.Unreadable` in its place."""
    return walk_sessions(paths, recursive=recursive)


def unreadable_outcome(u: Unreadable) -> MigrationOutcome:
    """The failed outcome of a session the walk could not read."""
    return MigrationOutcome(source=u.path, status="failed", error=u.error, exit_code=u.exit_code)


def _child_facts(log: Any, children: Children) -> list[dict[str, Any]]:
    if children == "none":
        return []
    root = persistence_root(log.path)
    if root is None:
        raise UsageError(
            "cannot look for child sessions: the file is not inside a dsh persistence root "
            "(<root>/<project>/<session>/); pass --no-children to state that it has none",
            path=log.path,
        )
    return discover_child_facts(root, log.session_id or "", open_header=child_log_header, open_events=child_log_events)


@boundary
def migrate_session(source: Source | Target, *, check: bool = False, dry_run: bool = False,
                    children: Children = "auto") -> MigrationOutcome:
    """``dshlog migrate`` for one session file: publish its v4 successor beside it, as dsh does.

    Never raises for the session's own problems: a failure is ``status ==
    "failed"`` with ``error`` and ``exit_code``.  ``check`` only says whether
    work is needed; ``dry_run`` migrates in memory and counts the events;
    ``children="none"`` states that the session has no child sessions (needed
    outside a dsh persistence root).

    ``source``: a path, or a :class:`~dshlog.read.source.Source`: its ``plugins`` are more package
    names the v3->v4 edge takes for dsh's system-prompt producer (``--system-prompt-plugin``; the
    outcome notes them), its ``parallel`` allows forked helpers (the decode of a large zstd
    source, the read-back of a large successor); by default everything runs in process.
    """
    how = Source.of(source)
    source = Path(how.name)
    out = MigrationOutcome(source=str(source), status="failed")
    try:
        _require_regular(source)
        d = source.parent
        if source.is_file() and parse_generation(source.name) is not None:
            chosen = select_generation(d)
            if chosen.name != source.name:
                out.notes.append(f"{chosen.name} is the generation dsh reads in this directory")
                source = chosen
                out.source = str(source)
        with open_log(how.at(source)) as log:
            out.version = log.version
            if log.version >= CURRENT_VERSION:
                out.status = "current"
                if not check and not dry_run:
                    _clean_after_publication(d, out)
                return out
            if log.info.container not in ("jsonl", "jsonl.zstd") or log.header is None:
                raise UsageError(f"only session generation files can be migrated (this is a {log.info.container} input)", path=log.path)
            target = d / target_name(source)
            out.target = str(target)
            facts = _child_facts(log, children)
            if how.plugins:  # the report says which rule produced the successor
                out.notes.append("system-prompt producers besides upstream's: " + ", ".join(how.plugins))
            if check or dry_run:
                # --check forecasts the run exactly: the same decision as --dry-run (children, the chain,
                # the v4 restore to the last event), only its answer is "needed" and exit 10
                out.events = sum(1 for _ in log.v4(child_facts=facts))
                out.status = "needed" if check else "would-migrate"
                out.exit_code = ExitCode.PENDING if check else ExitCode.OK
                return out
        _publish(how.at(source), target, facts, out)
        out.status = "migrated"
    except DshlogError as exc:
        out.status = "failed"
        out.error = exc.with_context(path=out.source).one_line()  # every failure names its session
        out.exit_code = exc.exit_code
        if is_dsh_refusal(exc):  # asked only of a session dsh refuses: rescue reads it again
            hint = rescue_hint(how.at(out.source))
            if hint is not None:
                out.notes.append(hint)
    return out


def _require_regular(source: Path) -> None:
    """Migration reads its source twice (probe, then the stable read): a pipe or stdin cannot be re-read."""
    if str(source) == "-":
        raise UsageError("migrate needs a session file or directory, not standard input")
    try:
        st = os.stat(source)
    except OSError:
        return  # open_log reports a missing or unreadable path with its own message
    if not stat.S_ISREG(st.st_mode):
        raise UsageError("not a regular file: only session generation files can be migrated", path=str(source))


def _clean_after_publication(d: Path, out: MigrationOutcome) -> None:
    """Remove temps of a run killed after it published the successor but before it dropped the temp name.

    The session is current now, so :func:`_publish` never runs again there (see
    :func:`~dshlog.write.transaction.sweep`).
    """
    try:
        for p in sweep(d):
            out.notes.append(leftover_note(p))
    except (DshlogError, OSError):
        return  # best effort: the session itself is fine


def _publish(how: Source, target: Path, facts: list[dict[str, Any]], out: MigrationOutcome) -> None:
    """Stream the migrated events into the one publication transaction (see the module docstring)."""
    source = Path(how.name)
    compressed = source.name.endswith(".zstd")
    with open_log(str(source)) as probe:
        sid = probe.session_id
    pub = Publication(
        target,
        lock=source.parent,
        session_id=sid,
        source=source,
        changed=f'historical session generation changed during migration: "{source}"',
        owner="source",
        migration=True,
        successor=True,
        taken=f'current session generation already exists at "{target}"',
    )
    with pub:
        out.notes.extend(pub.notes)  # leftovers of an interrupted earlier run
        staged = pub.stage()
        assert pub.before is not None
        with open_log(how) as log:
            view = log.v4(child_facts=facts)
            header, events = view.header, iter(view)
            assert header is not None  # a generation file: migrate_session refused a header-less input
            if log.projection:
                out.notes.append("the source is a test-snapshot projection (no seq/time): the successor is written in the same form")
            with ReadBack(staged.path, header, compressed=compressed, snapshot=log.snapshot, size_hint=pub.before.size,
                          parallel=how.parallel) as check:
                w = LogWriter(staged, compressed=compressed, projection=log.projection, tee=check.tee)
                w.header(header)
                for ev in events:
                    w.event(ev)
                size, digest = w.close()
                pub.publish(lambda path: check.verify(path, events=w.events, plain=(size, digest)))
    out.warnings.extend(pub.warnings)
    out.events = w.events
    out.bytes = size


@boundary
def migrate_many(sources: Iterable[Target | Unreadable], *, check: bool = False, dry_run: bool = False,
                 children: Children = "auto", source: Source = Source(),
                 executor: Executor | None = None) -> Iterator[MigrationOutcome]:
    """:func:`migrate_session` of each source through ``executor``, in input order; never raises for a session's own.

    Sessions are independent (each publication holds its own session's lock); a
    parent that reads its children's facts reads whichever generation of a child
    dsh would read at that moment, and a child's old and new generations hold the
    same facts, so the order in which workers finish does not change any result.  ``source``:
    how every session is read (a :class:`~dshlog.read.source.Source` without a path).
    """
    ex = executor if executor is not None else InProcess()
    task = partial(migrate_session, check=check, dry_run=dry_run, children=children)
    how = replace(source, parallel=helpers_allowed(ex, source.parallel))
    found = [s if isinstance(s, Unreadable) else os.fspath(s) for s in sources]
    yield from in_walk_order(found, lambda readable: ex.map(task, [how.at(p) for p in readable]), unreadable_outcome)


@boundary
def migrate_sessions(*paths: Target, recursive: bool = False, check: bool = False, dry_run: bool = False,
                     children: Children = "auto", source: Source = Source()) -> Migration:
    """``dshlog migrate``: every session named or (``recursive``) found below ``paths``.

    Each session is an outcome of its own; ``result.exit_code`` is the worst failure, or,
    with ``check``, 10 when some session needs migrating.
    """
    return migrate_all(find_sessions([os.fspath(p) for p in paths], recursive=recursive), check=check, dry_run=dry_run,
                       children=children, source=source)
