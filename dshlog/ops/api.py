"""The library's entry points: one call per thing a script wants, each returning a typed result.

These are what ``import dshlog`` offers (see ``docs/python-api.md``).  Each one
opens its input through :func:`open_session`, makes the core call the
matching command makes, and returns a result of :mod:`dshlog.ops.results`
whose ``as_dict()`` is the document the command prints with ``--json``.  They
never print, never exit and read no environment: a root, a path or a stream is
always passed in.  Every call is a :func:`~dshlog.errors.boundary`: only the
errors of :mod:`dshlog.errors` leave it (a bug is an
:class:`~dshlog.errors.InternalError`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, tzinfo
from pathlib import Path
from typing import IO, Literal, cast

from ..errors import UsageError, boundary
from ..executor import Executor
from ..model.search import Query
from ..model.usage import PriceTable, UsageReport
from ..output.export import FORMATS
from ..protocol.events import Event
from ..read.container import Position
from ..read.session import EventRecord, SessionLog
from ..read.store import SessionEntry, resolve_session
from ..read.store import list_sessions as _list_sessions
from . import export as _export
from . import report as _report
from . import rescue as _rescue
from . import search as _search
from . import sessions as _sessions
from .rescue import RescueOutcome
from .search import SessionHits
from .sessions import Target, located
from .transcript import export_to, open_reading
from .sessions import open_target as _open
from .info import session_info
from .rebuild import rebuild_request
from .requests import request_series
from .stats import session_stats, stats_many
from .migrate import migrate_many, migrate_session, migrate_sessions
from .repair import plan_repair, repair_copy, repair_in_place
from .fork import fork_session
from .surface import surface
from .validate import validate, validate_many
from .results import (
    ExportResult,
)

__all__ = [
    "export_bytes",
    "export_transcript",
    "find_session",
    "fork_session",
    "grep_session",
    "list_sessions",
    "migrate_many",
    "migrate_session",
    "migrate_sessions",
    "open_session",
    "plan_repair",
    "rebuild_request",
    "repair_copy",
    "repair_in_place",
    "request_series",
    "rescue",
    "search",
    "session_info",
    "session_stats",
    "stats_many",
    "stored_events",
    "surface",
    "usage_report",
    "v4_events",
    "validate",
    "validate_many",
]

ExportFormat = Literal["md", "html", "json"]


# ----------------------------------------------------------------------------- opening


@boundary
def open_session(
    target: Target,
    *,
    strict: bool = True,
    select: str | None = None,
    format_version: int | None = None,
    system_prompt_plugins: Iterable[str] = (),
    stream: IO[bytes] | None = None,
    parallel: bool = False,
) -> SessionLog:
    """Open a log: a generation file, a session directory, a JSON array or wrapped stream, or ``-``.

    ``-`` reads standard input; ``stream`` reads an open binary stream instead
    (``target`` then only names it in messages).  ``strict`` (the default)
    decides as dsh does: a header dsh refuses is refused here, and the v4 view
    ends with dsh's refusal; ``strict=False`` shows a damaged log as far as it
    can be read, with ``log.notes``.  Use the log as a context manager; its body
    can be read once (``log.stored()`` or ``log.v4()``).  ``select`` picks one
    session of a multi-session input; ``format_version`` states the version of
    a header-less input; ``system_prompt_plugins`` are package names the v3->v4
    migration treats as dsh's system-prompt producer (a fork build's).

    ``parallel`` (here and in every call below) lets dshlog hand work to forked
    helper processes where a second core pays: decoding a large zstd body,
    reading back a large output before publishing it.  The default runs
    everything in the calling process, which is what a thread, a server or a
    process pool embedding dshlog expects; the command line turns it on.
    """
    # the log's views are guarded too: what escapes their iteration leaves as the hierarchy's error
    return _open(target, strict=strict, select=select, format_version=format_version,
                 system_prompt_plugins=tuple(system_prompt_plugins), stream=stream, parallel=parallel, guard=True)


@boundary
def find_session(session_id: str, *, root: Target) -> Path:
    """The generation dsh reads for a session id (or unique id prefix) under a persistence root."""
    resolved = resolve_session(session_id, root=Path(root))
    return Path(resolved.path)


@boundary
def stored_events(target: Target, *, strict: bool = False, select: str | None = None,
                  format_version: int | None = None, parallel: bool = False) -> Iterator[EventRecord]:
    """The events as stored (any version), each with its exact line bytes and location.

    Not strict by default: the rows are shown as far as they can be read, as
    ``dshlog events`` shows them.  The file is closed when the iterator ends.
    """
    with _open(target, strict=strict, select=select, format_version=format_version, parallel=parallel) as log:
        yield from log.stored()


@boundary
def v4_events(target: Target, *, allow_unknown: bool = False, select: str | None = None,
              format_version: int | None = None, system_prompt_plugins: Iterable[str] = (),
              parallel: bool = False) -> Iterator[Event]:
    """dsh's view of a log: v4 events (an older log migrated in memory), ending with dsh's decision.

    When dsh would refuse the log, the error is raised after the last event (or
    when the iterator is closed early), as dsh's read refuses a log as a whole.
    """
    with _open(target, select=select, format_version=format_version, system_prompt_plugins=tuple(system_prompt_plugins),
               parallel=parallel) as log:
        with log.v4(allow_unknown=allow_unknown) as view:
            for event in view:
                yield cast(Event, event)


# ----------------------------------------------------------------------------- reading


# ----------------------------------------------------------------------------- the store


@boundary
def list_sessions(root: Target, *, project: str | None = None, scan: bool = True) -> list[SessionEntry]:
    """Every session of a persistence root (``$DSH_HOME/sessions``), with parent/child links.

    ``project`` limits the listing to one project directory name (a project key).
    ``entry.as_dict()`` is the object ``dshlog ls --json`` prints for it.
    """
    return _list_sessions(Path(root), project=project, scan=scan)


@boundary
def grep_session(path: Target, text: str, *, parallel: bool = False) -> bool:
    """Whether any user or assistant message of a generation contains ``text`` (case-insensitive)."""
    return _sessions.grep_session(Path(path), text, parallel=parallel)


# ----------------------------------------------------------------------------- writers


@boundary
def export_transcript(target: Target, out: Target, *, format: ExportFormat = "md", full: bool = False,
                      redact: bool = False, select: str | None = None, format_version: int | None = None,
                      system_prompt_plugins: Iterable[str] = (), stream: IO[bytes] | None = None,
                      parallel: bool = False, progress: Position | None = None, force: bool = False) -> ExportResult:
    """``dshlog export -o OUT``: a transcript (Markdown, self-contained HTML, or JSON) published at ``out``
    (``force``: replacing an earlier export there, staged first and renamed over it)."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose {', '.join(FORMATS)})")
    with open_reading(target, select=select, format_version=format_version, system_prompt_plugins=tuple(system_prompt_plugins),
                      stream=stream, parallel=parallel, progress=progress) as reading:
        with located(reading.path):
            path, warnings = _export.export_to_file(reading, format, os.fspath(out), full=full, redact=redact, force=force)
        return ExportResult(str(path), format, tuple(warnings), reading.path, tuple(reading.notes), reading.notes.suppressed(),
                            reading.refused, reading.rescue)


@boundary
def export_bytes(target: Target, *, format: ExportFormat = "md", full: bool = False, redact: bool = False,
                 select: str | None = None, format_version: int | None = None, parallel: bool = False) -> bytes:
    """The transcript ``dshlog export`` prints, as bytes; a log dsh refuses opens with the refusal."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose {', '.join(FORMATS)})")
    parts: list[bytes] = []
    export_to(target, format, parts.append, full=full, redact=redact, select=select, format_version=format_version,
              parallel=parallel)
    return b"".join(parts)


# ----------------------------------------------------------------------------- batches over many sessions


@boundary
def usage_report(*targets: Target, by: Sequence[str] = ("day",), tz: tzinfo | None = UTC, zone: str = "UTC",
                 since: int | None = None, until: int | None = None, prices: PriceTable | None = None,
                 project: str | None = None, cwd: str | None = None, executor: Executor | None = None) -> UsageReport:
    """``dshlog report``: usage (turns, calls, tokens, cost) of every session below ``targets``, in rows of ``by``.

    ``by`` keys are ``day``, ``week``, ``month``, ``session``, ``project`` and
    ``model``; days are counted in ``tz`` (named ``zone`` in the report; UTC
    unless given: the library reads no local time zone).  ``since``/``until``
    are epoch milliseconds; ``prices`` a :class:`~dshlog.model.usage.PriceTable`
    for costs; ``project`` a part of a session's cwd, ``cwd`` one project exactly.
    A session that cannot be read is listed in ``errors``, never raised.
    """
    return _report.usage_report([os.fspath(t) for t in targets], list(by), tz=tz, zone=zone, since=since, until=until,
                                prices=prices, project=project, cwd=cwd, executor=executor)


@boundary
def search(paths: Iterable[Target], query: Query, *, executor: Executor | None = None) -> Iterator[SessionHits]:
    """``dshlog search``: each session's hits of ``query`` (a :class:`~dshlog.model.search.Query`), in input order.

    ``paths`` are generation files (a root's: ``[e.path for e in list_sessions(root)]``);
    a session that cannot be read has ``error`` set.  A bad pattern raises
    :class:`~dshlog.errors.UsageError` before any session is read.
    """
    yield from _search.search([os.fspath(p) for p in paths], query, executor=executor)


@boundary
def rescue(source: Target, *, allow: Iterable[str] = (), all_: bool = False, publish: bool = False,
           output: Target | None = None, parallel: bool = False) -> RescueOutcome:
    """``dshlog rescue``: what dsh refuses in a session, the transformations that resolve it, and (``publish``) the v4 successor.

    A dry run by default.  ``allow`` names the transformations a successor may
    use (``all_``: every one); ``publish`` writes the successor beside the source
    with a rescue record, ``output`` writes it there instead; the source is
    never touched.  Never raises for the session's own problems (``status``,
    ``error``, ``exit_code``); an unknown transformation is a usage error.
    """
    return _rescue.rescue_session(Path(source), allow=allow, all_=all_, publish=publish,
                                  output=Path(output) if output is not None else None, parallel=parallel)
