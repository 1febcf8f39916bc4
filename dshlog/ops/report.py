"""``dshlog report``: usage across a store, one session per task of the executor.

The per-session task (:func:`session_usage`) reads one generation, as ``stats``
reads it, into a :class:`~dshlog.model.usage.SegmentedSummary`; the caller merges
the results in input order (:func:`~dshlog.model.usage.build_report`).  Tasks take
a path and the time window, never file bytes, so a cluster's workers read the
files themselves.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from datetime import UTC, tzinfo
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import DshlogError, ExitCode, IOFailure, UsageError, boundary
from ..executor import Executor, InProcess
from ..model.usage import (
    PriceTable,
    SegmentedSummary,
    SessionUsage,
    Usage,
    UsageReport,
    build_report,
)
from ..model.selection import Selection, matches_project
from ..protocol.jsjson import JsonError, loads
from ..protocol.layout import is_project_dir
from ..read.cache import Kind, cached_map, open_cache, problem_of, problem_record
from ..read.container import open_regular
from ..read.session import open_log
from ..read.store import Unreadable, in_walk_order
from .sessions import store_sessions
from ..read.source import Target

__all__ = ["load_prices", "matches_project", "project_of", "session_usage", "store_sessions", "usage_report"]


#: The largest price table ``--prices`` reads: LiteLLM's whole table is about 1.5 MiB; anything
#: many times larger is not a price table, and reading it whole would cost its size in memory.
MAX_PRICES_BYTES = 16 << 20


def load_prices(path: str) -> PriceTable:
    """A LiteLLM-shaped price table from a regular file of at most :data:`MAX_PRICES_BYTES` (``--prices``).

    Anything else (a FIFO, a device, a directory) is refused before it is read.
    """
    try:
        try:
            fh = open_regular(Path(path))
        except IOFailure as exc:
            raise IOFailure(f"cannot read the price table: {exc.message}", path=path) from None
        with fh:
            data = fh.read(MAX_PRICES_BYTES + 1)
            if len(data) > MAX_PRICES_BYTES:
                raise UsageError(f"the price table is larger than {MAX_PRICES_BYTES >> 20} MiB: not a price table", path=path)
            doc = loads(data)
    except OSError as exc:
        raise IOFailure(f"cannot read the price table: {exc.strerror}", path=path) from None
    except JsonError as exc:
        raise UsageError(f"the price table is not JSON: {exc}", path=path) from None
    if not isinstance(doc, dict):
        raise UsageError("the price table must be a JSON object of model names (LiteLLM's shape)", path=path)
    table = PriceTable(doc)
    if not len(table):
        raise UsageError("the price table has no model with input_cost_per_token and output_cost_per_token", path=path)
    return table


def _unreadable_usage(u: Unreadable) -> SessionUsage:
    return SessionUsage(path=u.path, error=u.error, exit_code=u.exit_code)


def project_of(path: Path) -> str | None:
    """The project directory a generation sits in (``<root>/<project>/<session>/<file>``), if it does."""
    name = path.parent.parent.name
    return name if is_project_dir(name) else None


def session_usage(path: str, *, since: int | None = None, until: int | None = None) -> SessionUsage:
    """One session's contribution to a report; never raises for the session's own problems."""
    out = SessionUsage(path=path, project=project_of(Path(path)))
    try:
        with open_log(path, strict=False) as log:
            out.path = log.path
            h = log.header if isinstance(log.header, dict) else {}
            out.id = log.session_id
            out.cwd = h.get("cwd") if isinstance(h.get("cwd"), str) else None
            out.parent = h.get("parentSession") if isinstance(h.get("parentSession"), str) else None
            out.origin = h.get("origin") if isinstance(h.get("origin"), str) else None
            seg = SegmentedSummary(since=since, until=until, projection=log.projection)
            for ev in log.stored_runs():
                seg.feed(ev)
            out.stats = seg.finish()
            out.spans = seg.spans
            out.title = seg.summary.title
            out.notes, out.suppressed = list(log.notes), dict(log.notes.suppressed())
    except DshlogError as exc:
        out.error, out.exit_code = exc.one_line(), exc.exit_code
    return out


def _usage_record(u: SessionUsage) -> dict[str, Any]:
    """A session's usage as a plain form for the cache (spans as pairs: a span may be ``None``)."""
    return {"path": u.path, "id": u.id, "cwd": u.cwd, "project": u.project, "parent": u.parent, "origin": u.origin,
            "title": u.title, "spans": [[k, s.counts, s.tokens_by_model, s.counted] for k, s in u.spans.items()],
            "stats": u.stats, "error": u.error, "exit_code": u.exit_code,
            "notes": [problem_record(n) for n in u.notes], "suppressed": u.suppressed}


def _usage_of(rec: dict[str, Any]) -> SessionUsage:
    """:func:`_usage_record` back; raises on anything it did not write."""
    spans = {k: Usage(counts, tokens, counted) for k, counts, tokens, counted in rec["spans"]}
    return SessionUsage(path=rec["path"], id=rec["id"], cwd=rec["cwd"], project=rec["project"], parent=rec["parent"],
                        origin=rec["origin"], title=rec["title"], spans=spans, stats=rec["stats"], error=rec["error"],
                        exit_code=int(rec["exit_code"]), notes=[problem_of(n) for n in rec["notes"]],
                        suppressed=rec["suppressed"])


#: ``report``'s per-session results in the cache (bump ``version`` when :class:`SessionUsage` changes).
USAGE = Kind("usage", 1, _usage_record, _usage_of)


def _lasting(u: SessionUsage) -> bool:
    """Whether a session's usage is a fact of its file (an I/O failure is not: it is asked again)."""
    return u.exit_code != ExitCode.IO


def _usages(paths: list[str], ex: Executor, since: int | None, until: int | None, cache: str | None) -> Iterator[SessionUsage]:
    task = partial(session_usage, since=since, until=until)
    return cached_map(open_cache(cache), USAGE, task, paths, ex, options=f"{since},{until}", keep=_lasting)


def _keeper(selection: Selection) -> Any:
    """``--project TEXT`` and ``--cwd PATH`` as a filter of roots (a subagent follows its root)."""

    def keep(root: SessionUsage) -> bool:
        return selection.keeps_place(root.cwd, root.project)

    return keep if selection.places else None


@boundary
def usage_report(*targets: Target, by: Sequence[str] = ("day",), tz: tzinfo | None = UTC, zone: str = "UTC",
                 since: int | None = None, until: int | None = None, prices: PriceTable | None = None,
                 project: str | None = None, cwd: str | None = None,
                 executor: Executor | None = None, selection: Selection | None = None,
                 cache: str | None = None) -> UsageReport:
    """``dshlog report``: usage (turns, calls, tokens, cost) of every session below ``targets``, in rows of ``by``
    (see :mod:`dshlog.model.usage`).

    ``by`` keys are ``day``, ``week``, ``month``, ``session``, ``project`` and
    ``model``; days are counted in ``tz`` (named ``zone`` in the report; UTC
    unless given: the library reads no local time zone).  ``since``/``until``
    are epoch milliseconds; ``prices`` a :class:`~dshlog.model.usage.PriceTable`
    for costs; ``project`` a part of a session's cwd, ``cwd`` one project exactly.
    A session that cannot be read is listed in ``errors``, never raised.

    ``selection`` (the command line's filters, :mod:`dshlog.model.selection`) stands for
    ``since``, ``until``, ``project`` and ``cwd`` (an absolute directory) when given; a
    ``--cwd`` that matched no session is said in the report's ``notes``.
    """
    sel = selection if selection is not None else Selection(since=since, until=until, project=project, cwd=cwd)
    found = store_sessions(os.fspath(t) for t in targets)
    ex = executor if executor is not None else InProcess()
    usages = list(in_walk_order(found, lambda paths: _usages(paths, ex, sel.since, sel.until, cache), _unreadable_usage))  # the report holds them all anyway; --cwd is pinned to their directories
    pinned = sel.pin((u.cwd for u in usages), (u.project for u in usages))
    rep = build_report(usages, list(by), tz=tz, zone=zone, prices=prices,
                       keep=_keeper(pinned.selection), since=sel.since, until=sel.until)
    if pinned.note is not None:
        rep.notes.append(pinned.note)
    return rep
