"""``dshlog stats`` of one or many sessions: one session per task of the executor."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from ..check.problems import Problem
from ..errors import UsageError
from ..executor import Executor, InProcess, helpers_allowed
from ..model.stats import session_stats
from ..model.summary import summarize
from ..read.cache import Kind, cached_map, open_cache, problem_of, problem_record
from ..read.container import Container
from ..read.session import open_session
from ..read.store import Unreadable, in_walk_order

__all__ = ["SessionStats", "session_stats_of", "stats_many"]


@dataclass
class SessionStats:
    """The ``stats`` of one session, and the reader's notes for stderr (the caller prints them)."""

    path: str
    id: str | None
    version: int
    projection: bool
    stats: dict[str, Any]
    notes: list[Problem] = field(default_factory=list)
    suppressed: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` shape of one session."""
        return {"path": self.path, "id": self.id, "version": self.version, "projection": self.projection, **self.stats}


def session_stats_of(target: str, *, select: str | None = None, format_version: int | None = None,
                     stream: IO[bytes] | None = None, parallel: bool = False) -> SessionStats:
    """One session's ``stats``; a log that cannot be opened raises, as a single ``stats FILE`` does.

    ``stream``: what ``-`` reads (the caller's standard input), instead of this process's.
    ``parallel``: a forked helper may decode a large zstd body (the caller's policy).
    """
    with open_session(target, strict=False, select=select, format_version=format_version,
                      stream=stream if target == "-" else None, parallel=parallel) as log:
        if select is not None and log.info.container in (Container.JSONL, Container.ZSTD, Container.ARRAY):
            raise UsageError(f"--select picks a session of a wrapped stream or document; this input is {log.info.container}",
                             path=log.path)
        s = summarize(log.counted())
        return SessionStats(log.path, log.session_id, log.version, log.projection, session_stats(s, projection=log.projection),
                            list(log.notes), dict(log.notes.suppressed()))


def _stats_record(s: SessionStats) -> list[Any]:
    """One session's ``stats`` as a plain form for the cache."""
    return [s.path, s.id, s.version, s.projection, s.stats, [problem_record(n) for n in s.notes], s.suppressed]


def _stats_of(rec: list[Any]) -> SessionStats:
    """:func:`_stats_record` back; raises on anything it did not write."""
    path, sid, version, projection, stats, notes, suppressed = rec
    if not isinstance(stats, dict) or not isinstance(suppressed, dict):
        raise TypeError("a session's stats and suppressed counts are maps")
    return SessionStats(path, sid, int(version), bool(projection), stats, [problem_of(n) for n in notes], suppressed)


#: ``stats``' per-session results in the cache (bump ``version`` when :class:`SessionStats` changes).
STATS = Kind("stats", 1, _stats_record, _stats_of)


def stats_many(targets: Iterable[str | Unreadable], *, select: str | None = None, format_version: int | None = None,
               executor: Executor | None = None, stream: IO[bytes] | None = None,
               parallel: bool = False, cache: str | None = None) -> Iterator[SessionStats | Unreadable]:
    """Each target's ``stats``, in input order; the first that cannot be opened raises, at its turn.

    With a ``stream`` for ``-`` the batch runs in this process, whatever ``executor``
    says: an open stream is this process's and cannot travel to a worker.  ``cache``:
    the directory of the verified cache of per-session results (:mod:`dshlog.read.cache`),
    or none; only regular files are served from it (never ``-``).
    """
    ex = executor if executor is not None and stream is None else InProcess()
    task = partial(session_stats_of, select=select, format_version=format_version, stream=stream,
                   parallel=helpers_allowed(ex, parallel))
    # a session the store's walk could not read comes back in its turn, as the walk named it
    yield from in_walk_order(list(targets), lambda readable: cached_map(open_cache(cache), STATS, task, readable, ex,
                                                                       options=f"{select},{format_version}"), _as_result)


def _as_result(u: Unreadable) -> SessionStats | Unreadable:
    return u
