"""``dshlog stats`` of one or many sessions: one session per task of the executor."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from ..check.problems import Problem
from ..errors import UsageError, boundary
from ..executor import Executor, InProcess, helpers_allowed
from ..model.stats import stats_counters, total_stats
from ..model.summary import summarize
from ..output.jsondoc import SHAPE
from ..read.cache import Kind, cached_map, open_cache, problem_of, problem_record
from ..read.container import Container
from ..read.session import open_log
from ..read.store import Unreadable, in_walk_order
from .sessions import Target

__all__ = ["STATS", "SessionStats", "Stats", "session_stats", "session_stats_of", "stats_many"]


@dataclass(frozen=True, slots=True)
class SessionStats:
    """One session's counters (:func:`~dshlog.model.stats.stats_counters`), and the reader's notes for stderr."""

    path: str
    id: str | None
    version: int
    projection: bool
    counters: Mapping[str, Any]  # turns, steps, modelCalls, retries, toolCalls, tokens, durationMs, ...
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` shape of one session."""
        return {"path": self.path, "id": self.id, "version": self.version, "projection": self.projection, **self.counters}


@dataclass(frozen=True, slots=True)
class Stats:
    """``dshlog stats``: per session and in total."""

    sessions: tuple[SessionStats, ...]
    total: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "sessions": [s.as_dict() for s in self.sessions], "total": dict(self.total)}


@boundary
def session_stats(*targets: Target, select: str | None = None, format_version: int | None = None,
                  parallel: bool = False) -> Stats:
    """``dshlog stats``: per session and in total (turns, steps, calls, retries, tools, tokens, time)."""
    sessions = tuple(session_stats_of(os.fspath(t), select=select, format_version=format_version, parallel=parallel)
                     for t in targets)
    return Stats(sessions, total_stats(s.as_dict() for s in sessions))


def session_stats_of(target: str, *, select: str | None = None, format_version: int | None = None,
                     stream: IO[bytes] | None = None, parallel: bool = False) -> SessionStats:
    """One session's ``stats``; a log that cannot be opened raises, as a single ``stats FILE`` does.

    ``stream``: what ``-`` reads (the caller's standard input), instead of this process's.
    ``parallel``: a forked helper may decode a large zstd body (the caller's policy).
    """
    with open_log(target, strict=False, select=select, format_version=format_version,
                      stream=stream if target == "-" else None, parallel=parallel) as log:
        if select is not None and log.info.container in (Container.JSONL, Container.ZSTD, Container.ARRAY):
            raise UsageError(f"--select picks a session of a wrapped stream or document; this input is {log.info.container}",
                             path=log.path)
        s = summarize(log.counted())
        return SessionStats(log.path, log.session_id, log.version, log.projection, stats_counters(s, projection=log.projection),
                            tuple(log.notes), log.notes.suppressed())


def _stats_record(s: SessionStats) -> list[Any]:
    """One session's ``stats`` as a plain form for the cache."""
    return [s.path, s.id, s.version, s.projection, dict(s.counters), [problem_record(n) for n in s.notes], dict(s.suppressed)]


def _stats_of(rec: list[Any]) -> SessionStats:
    """:func:`_stats_record` back; raises on anything it did not write."""
    path, sid, version, projection, stats, notes, suppressed = rec
    if not isinstance(stats, dict) or not isinstance(suppressed, dict):
        raise TypeError("a session's stats and suppressed counts are maps")
    return SessionStats(path, sid, int(version), bool(projection), stats, tuple(problem_of(n) for n in notes), suppressed)


#: ``stats``' per-session results in the cache (bump ``version`` when :class:`SessionStats` changes).
STATS = Kind("stats", 2, _stats_record, _stats_of)


@boundary
def stats_many(targets: Iterable[Target | Unreadable], *, select: str | None = None, format_version: int | None = None,
               executor: Executor | None = None, stream: IO[bytes] | None = None,
               parallel: bool = False, cache: str | None = None) -> Iterator[SessionStats | Unreadable]:
    """Each target's ``stats`` through ``executor``, in input order; the first that cannot be opened raises, at its turn.

    A session a store's walk could not read (an :class:`~dshlog.read.store.Unreadable`
    among ``targets``) comes back as it came, in its turn.

    With a ``stream`` for ``-`` the batch runs in this process, whatever ``executor``
    says: an open stream is this process's and cannot travel to a worker.  ``cache``:
    the directory of the verified cache of per-session results (:mod:`dshlog.read.cache`),
    or none; only regular files are served from it (never ``-``).
    """
    ex = executor if executor is not None and stream is None else InProcess()
    task = partial(session_stats_of, select=select, format_version=format_version, stream=stream,
                   parallel=helpers_allowed(ex, parallel))
    # a session the store's walk could not read comes back in its turn, as the walk named it
    paths = [t if isinstance(t, Unreadable) else os.fspath(t) for t in targets]
    yield from in_walk_order(paths, lambda readable: cached_map(open_cache(cache), STATS, task, readable, ex,
                                                                       options=f"{select},{format_version}"), _as_result)


def _as_result(u: Unreadable) -> SessionStats | Unreadable:
    return u
