"""``dshlog stats`` of one or many sessions: one session per task of the executor."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..check.problems import Problem
from ..executor import Executor, InProcess
from ..model.stats import session_stats
from ..model.summary import summarize
from ..read.session import open_session

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
                     parallel: bool = False) -> SessionStats:
    """One session's ``stats``; a log that cannot be opened raises, as a single ``stats FILE`` does.

    ``parallel``: a forked helper may decode a large zstd body (the caller's policy).
    """
    with open_session(target, strict=False, select=select, format_version=format_version, parallel=parallel) as log:
        s = summarize(log.stored_runs())
        return SessionStats(log.path, log.session_id, log.version, log.projection, session_stats(s, projection=log.projection),
                            list(log.notes), dict(log.notes.suppressed()))


def stats_many(targets: Iterable[str], *, select: str | None = None, format_version: int | None = None,
               executor: Executor | None = None, parallel: bool = False) -> Iterator[SessionStats]:
    """Each target's ``stats``, in input order; the first that cannot be opened raises, at its turn."""
    ex = executor if executor is not None else InProcess()
    yield from ex.map(partial(session_stats_of, select=select, format_version=format_version, parallel=parallel), list(targets))
