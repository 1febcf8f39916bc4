"""``dshlog search``: hits of a pattern across sessions, one session per task of the executor.

A task (:func:`search_session`) gets a path and the query, opens the session as
``events`` reads it (the stored events, any version, plain or zstd), and returns
its hits; the caller receives the sessions' results in input order.  A caller that
shows hits as they come passes ``on_hit``: a session searched in this process tells
it of each hit as the read finds it (the first hit of a large log is shown long before
the read ends), a pool's results when they arrive, so the hits come in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..check.problems import Problem
from ..errors import DshlogError, ExitCode, boundary
from ..executor import Executor, InProcess
from ..model.search import Hit, Query, Searcher
from ..protocol.packed import PackedRun
from ..read.session import open_log
from ..model.selection import Pinned, Selection
from ..read.store import Unreadable, in_walk_order, first_header
from .report import project_of
from ..read.source import Target

__all__ = ["OnHit", "SessionHits", "pin", "search", "search_session"]


@dataclass
class SessionHits:
    """One session's hits, in log order; ``error`` when it could not be read (the hits found before it stay)."""

    path: str
    id: str | None = None
    hits: list[Hit] = field(default_factory=list)
    error: str | None = None
    exit_code: int = ExitCode.OK
    #: what the reader noticed (a damaged row it skipped is an error here, as ``events`` says it)
    notes: list[Problem] = field(default_factory=list)
    suppressed: dict[str, int] = field(default_factory=dict)


#: Told of one hit and the result of its session so far (its path and id known; its notes not yet).
OnHit = Callable[[SessionHits, Hit], None]


def search_session(path: str, query: Query, on_hit: OnHit | None = None) -> SessionHits:
    """The hits of ``query`` in one session; never raises for the session's own problems.

    ``on_hit``: each hit goes to it as the read finds it, and not into the result (a log's
    hits are then never held); only for a task run in the caller's process.
    """
    out = SessionHits(path)
    searcher = Searcher(query)
    found = False
    try:
        with open_log(path, strict=False) as log:
            out.path, out.id = log.path, log.session_id
            h = log.header if isinstance(log.header, dict) else {}
            cwd = h.get("cwd") if isinstance(h.get("cwd"), str) else None
            if not query.selection.keeps_place(cwd, project_of(Path(log.path))):
                return out
            for ev in log.stored_runs():
                if type(ev) is PackedRun:  # v0/v1 streaming chunks: the settled message holds their text
                    continue
                for hit in searcher.feed(ev):
                    found = True
                    if on_hit is None:
                        out.hits.append(hit)
                    else:
                        on_hit(out, hit)
                if query.first_only and found:
                    break
            out.notes, out.suppressed = list(log.notes), dict(log.notes.suppressed())
    except DshlogError as exc:
        out.error, out.exit_code = exc.one_line(), exc.exit_code
    return out


def pin(paths: list[str | Unreadable], selection: Selection) -> Pinned:
    """``--cwd`` pinned to one of the directories of the sessions at ``paths`` (their headers are read only then)."""
    if selection.cwd is None:
        return Pinned(selection)
    cwds = []
    for p in paths:
        if isinstance(p, Unreadable):  # named at its turn by the search
            continue
        try:
            h = first_header(Path(p))
        except (DshlogError, OSError):  # the search names a session it cannot read at its turn
            continue
        cwd = h.get("cwd") if isinstance(h, dict) else None
        cwds.append(cwd if isinstance(cwd, str) else None)
    return selection.pin(cwds)


@boundary
def search(paths: Iterable[Target | Unreadable], query: Query, *, executor: Executor | None = None,
           on_hit: OnHit | None = None) -> Iterator[SessionHits]:
    """``dshlog search``: each session's hits of ``query``, in input order (sessions without hits
    included, with none).  ``paths`` are generation files (a root's: ``[e.path for e in
    list_sessions(root)]``); a session that cannot be read, or that a store's walk could not
    read (:func:`~dshlog.read.store.walk_sessions`), has its ``error``.  A bad pattern raises
    :class:`~dshlog.errors.UsageError` before any session is read.

    ``on_hit``: told of every hit, in input order, and the results carry none.  With an
    :class:`~dshlog.executor.InProcess` executor each hit as the read finds it (before its
    session's result is yielded); with a pool, a session's hits when its result arrives (a
    worker's result comes back whole).  Either way the same hits, in the same order.
    """
    Searcher(query)  # a bad pattern is the caller's error, raised before any task runs
    ex = executor if executor is not None else InProcess()
    streamed = on_hit is not None and isinstance(ex, InProcess)
    task = partial(search_session, query=query, on_hit=on_hit if streamed else None)
    found = [p if isinstance(p, Unreadable) else os.fspath(p) for p in paths]
    for r in in_walk_order(found, lambda readable: ex.map(task, readable),
                           lambda u: SessionHits(u.path, error=u.error, exit_code=u.exit_code)):
        if on_hit is not None and not streamed:
            for hit in r.hits:
                on_hit(r, hit)
            r.hits = []
        yield r
