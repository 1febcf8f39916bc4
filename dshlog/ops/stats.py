"""``dshlog stats`` of one or many sessions: one session per task of the executor."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..check.problems import Problem
from ..errors import boundary
from ..executor import Executor, InProcess, helpers_allowed
from ..model.stats import stats_counters, total_stats
from ..model.summary import summarize
from ..output.jsondoc import SHAPE
from ..read.cache import Kind, cached_map, open_cache, problem_of, problem_record
from ..read.store import Unreadable, in_walk_order
from ..read.source import Source, Target
from .sessions import open_target

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
def session_stats(*targets: Source | Target) -> Stats:
    """``dshlog stats``: per session and in total (turns, steps, calls, retries, tools, tokens, time)."""
    sessions = tuple(session_stats_of(Source.of(t)) for t in targets)
    return Stats(sessions, total_stats(s.as_dict() for s in sessions))


def session_stats_of(source: Source) -> SessionStats:
    """One session's ``stats``; a log that cannot be opened raises, as a single ``stats FILE`` does."""
    with open_target(source, strict=False) as log:
        s = summarize(log.counted())
        return SessionStats(log.path, log.session_id, log.version, log.projection, stats_counters(s, projection=log.projection),
                            tuple(log.notes), log.notes.suppressed())


def _stats_at(path: str, source: Source) -> SessionStats:
    """A batch's task: ``stats`` of the member ``path``, read as ``source`` says."""
    return session_stats_of(source.at(path))


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
def stats_many(targets: Iterable[Target | Unreadable], *, source: Source = Source(), executor: Executor | None = None,
               cache: str | None = None) -> Iterator[SessionStats | Unreadable]:
    """Each target's ``stats`` through ``executor``, in input order; the first that cannot be opened raises, at its turn.

    ``source``: how every target is read (a :class:`~dshlog.read.source.Source` without a path).
    A session a store's walk could not read (an :class:`~dshlog.read.store.Unreadable`
    among ``targets``) comes back as it came, in its turn.

    With a ``stream`` for ``-`` the batch runs in this process, whatever ``executor``
    says: an open stream is this process's and cannot travel to a worker.  ``cache``:
    the directory of the verified cache of per-session results (:mod:`dshlog.read.cache`),
    or none; only regular files are served from it (never ``-``).
    """
    ex = executor if executor is not None and source.named else InProcess()
    task = partial(_stats_at, source=replace(source, parallel=helpers_allowed(ex, source.parallel)))
    # a session the store's walk could not read comes back in its turn, as the walk named it
    paths = [t if isinstance(t, Unreadable) else os.fspath(t) for t in targets]
    yield from in_walk_order(paths, lambda readable: cached_map(open_cache(cache), STATS, task, readable, ex,
                                                                options=source.options), _as_result)


def _as_result(u: Unreadable) -> SessionStats | Unreadable:
    return u
