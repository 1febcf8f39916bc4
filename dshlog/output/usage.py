"""``report`` and ``search`` for people and for scripts.

The report is a table like every other (:mod:`dshlog.output.table`): its keys are
never cut (a full date, ``provider/model``, a project's path, a session id as a
unique prefix on a terminal); on a narrow terminal the figures are abbreviated
(``12.3M``) and then the least needed ones left out; piped, every value is whole
and tab-separated.  Retries, cancellations and tool errors share one column
(``r/c/e``).  Every label is session data and passes through
:func:`~dshlog.output.text.sanitize`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from ..model.search import Hit
from ..model.usage import COUNTS, ReportRow, UsageReport, cache_hit_ratio
from .labels import IN_PART, plural, short_count
from .screen import Screen
from .table import Column, table
from .text import cut, cut_left, display_width, sanitize

__all__ = ["hit_document", "hit_line", "report_csv", "report_notes", "report_table", "short_count"]

_TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
#: The figures after the key columns: header, and when the column is left out on a narrow terminal
#: (lowest first; 0: never).  Every figure is abbreviated (``12.3M``) before any is left out.
_FIGURES = (Column("sess", "right", drop=7), Column("turns", number=True, drop=4), Column("calls", number=True, drop=5),
            Column("input", number=True), Column("output", number=True, drop=8), Column("cached", number=True, drop=3),
            Column("reason", number=True, drop=1), Column("hit", "right", drop=6), Column("r/c/e", "right", drop=2))
_COST = Column("cost", "right")


def _key_column(by: str) -> Column:
    """A key is never cut: a project is a path (cut on the left only when nothing else gives), the rest identifiers."""
    return Column(by, path=by == "project")


def _figures(row: ReportRow, priced: bool) -> list[Any]:
    u = row.usage
    tokens = u.tokens
    ratio = cache_hit_ratio(tokens)
    sess = str(len(row.sessions)) + (f"+{len(row.subagents)}" if row.subagents else "")
    counted = u.counted
    c = u.counts

    def n(key: str) -> int | str:
        return c[key] if counted else "-"

    out: list[Any] = [sess, n("turns"), n("modelCalls"), tokens.get("inputTokens", 0), tokens.get("outputTokens", 0),
                      tokens.get("cacheReadTokens", 0), tokens.get("reasoningTokens", 0),
                      "-" if ratio is None else f"{ratio * 100:.0f}%",
                      f"{c['retries']}/{c['cancellations']}/{c['toolErrors']}" if counted else "-"]
    if priced:
        out.append("-" if row.cost is None else (f"${row.cost:.2f}" + ("*" if row.unpriced else "")))
    return out


def report_table(screen: Screen, rep: UsageReport, short: Mapping[str, str] | None = None) -> None:
    """The report as a table (:func:`~dshlog.output.table.table`): one row per key, then the total.

    ``short`` maps a session id to what stands for it (a unique prefix on a terminal); every
    other key is shown whole.
    """
    short = short or {}
    columns = [*map(_key_column, rep.by), *_FIGURES, *([_COST] if rep.priced else [])]

    def keys(row: ReportRow) -> list[str]:
        return [short.get(label, label) if by == "session" else label for by, label in zip(rep.by, row.key)]

    rows = [[*keys(r), *_figures(r, rep.priced)] for r in rep.rows]
    rows.append(["total", *([""] * (len(rep.by) - 1)), *_figures(rep.total, rep.priced)])
    table(screen, None, columns, rows)


def report_notes(rep: UsageReport) -> list[str]:
    """What the table's marks mean, and the zone of its times (indented lines below it)."""
    notes = [f"times in {rep.zone}"]
    if rep.total.subagents:
        notes.append("sess: sessions+subagents (children count in their parent's rows)")
    notes.append("r/c/e: retries/cancellations/tool errors")
    if rep.in_part:
        notes.append(f"{plural(len(rep.in_part), 'session')} {IN_PART}: a damaged row skipped (named on stderr)")
    if rep.total.unpriced:
        notes.append("* without a price: " + ", ".join(sanitize(m) for m in sorted(rep.total.unpriced)))
    return [f"  {n}" for n in notes]


def report_csv(rep: UsageReport) -> str:
    """One row per report row and a ``total`` row; every counter and token kind its own column."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*rep.by, "sessions", "subagents", *COUNTS, *_TOKEN_KEYS, "cacheHitRatio", "cost"])

    def cells(row: ReportRow) -> list[Any]:
        d = row.as_dict(rep.by)
        ratio = d["cacheHitRatio"]
        return [d["sessions"], d["subagents"], *("" if d[k] is None else d[k] for k in COUNTS),
                *(d["tokens"].get(k, 0) for k in _TOKEN_KEYS), "" if ratio is None else f"{ratio:.6f}",
                "" if d["cost"] is None else f"{d['cost']:.6f}"]

    for r in rep.rows:
        w.writerow([*r.key, *cells(r)])
    w.writerow(["total", *([""] * (len(rep.by) - 1)), *cells(rep.total)])
    return buf.getvalue()


# ----------------------------------------------------------------------------- search

_MARK_ON, _MARK_OFF = "\x1b[1;31m", "\x1b[0m"


def _flat(text: str) -> str:
    return sanitize(text).replace("\n", "⏎").replace("\t", " ")


def hit_line(session: str, hit: Hit, *, color: bool = False, width: int | None = None) -> str:
    """``<session> seq 12 turn 3 user text: …before MATCH after…`` (the match in bold red on a terminal).

    ``width``: a terminal's columns; the text around the match is then cut to fit them (the
    text before on its left, the text after on its right), so a hit is one screen line.  The
    session, seq, turn, role and field are never cut; piped (``None``), the line is whole.
    """
    where = f"seq {hit.seq if hit.seq is not None else '-'}" + (f" turn {hit.turn}" if hit.turn is not None else "")
    head = f"{sanitize(session)} {where} {hit.role} {hit.field}: "
    before, match, after = _flat(hit.before), _flat(hit.match), _flat(hit.after)
    if width is not None:
        room = max(width - display_width(head), 0)
        match = cut(match, room)
        rest = room - display_width(match)
        # the text before takes half of what is left, or more when the text after needs less
        before = cut_left(before, min(display_width(before), max(rest // 2, rest - display_width(after)))) if rest > 0 else ""
        after = cut(after, rest - display_width(before)) if rest > display_width(before) else ""
    if color:
        match = _MARK_ON + match + _MARK_OFF
    return f"{head}{before}{match}{after}"


def hit_document(session_id: str | None, path: str, hit: Hit, shape: int) -> dict[str, Any]:
    """One ``--json`` line (NDJSON): the session, then where the hit is and its snippet."""
    return {"shape": shape, "session": session_id, "path": path, **hit.as_dict()}
