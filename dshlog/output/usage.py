"""``report`` and ``search`` for people and for scripts.

The report table fits 80 columns whatever the keys: the figures take a fixed
width (counts shortened to ``12.3M``, ``450k``), and the key labels share what is
left; a label that does not fit keeps its end (a project's last directories, a
model's name without its provider) or, for a session id, its start.  Retries,
cancellations and tool errors share one column (``r/c/e``).  Every label is
session data and passes through :func:`~dshlog.output.text.sanitize`.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Sequence
from typing import Any

from ..model.search import Hit
from ..model.usage import COUNTS, ReportRow, UsageReport, cache_hit_ratio
from .labels import IN_PART, plural
from .text import sanitize

__all__ = ["hit_document", "hit_line", "report_csv", "report_lines", "short_count"]

WIDTH = 80
_TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
#: (header, width) of the figures, after the key column.
_FIGURES = (("sess", 5), ("turns", 5), ("calls", 5), ("input", 6), ("output", 6), ("cached", 6), ("reason", 6),
            ("hit", 4), ("r/c/e", 8))
_COST = ("cost", 8)


def short_count(n: int) -> str:
    """``999``, ``12.3k``, ``450k``, ``12.3M``, ``1.2G``: at most 5 characters."""
    if n < 1000:
        return str(n)
    for div, unit in ((1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")):
        x = n / div
        if x < 99.95:
            return f"{x:.1f}{unit}"
        if x < 999.5:
            return f"{x:.0f}{unit}"
    return f"{n / 1e12:.0f}T"


def cells(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _fit(label: str, width: int, keep_start: bool) -> str:
    """``label`` in at most ``width`` columns, padded to exactly ``width``; cut with ``…``."""
    label = sanitize(label).replace("\n", " ").replace("\t", " ")
    if cells(label) > width:
        chars = list(label) if keep_start else list(reversed(label))
        kept: list[str] = []
        used = 1
        for ch in chars:
            w = cells(ch)
            if used + w > width:
                break
            kept.append(ch)
            used += w
        body = "".join(kept) if keep_start else "".join(reversed(kept))
        label = body + "…" if keep_start else "…" + body
    return label + " " * (width - cells(label))


def _figures(row: ReportRow, priced: bool) -> list[str]:
    u = row.usage
    tokens = u.tokens
    ratio = cache_hit_ratio(tokens)
    sess = str(len(row.sessions)) + (f"+{len(row.subagents)}" if row.subagents else "")
    counted = u.counted
    c = u.counts

    def n(key: str) -> str:
        return short_count(c[key]) if counted else "-"

    out = [sess, n("turns"), n("modelCalls"), short_count(tokens.get("inputTokens", 0)), short_count(tokens.get("outputTokens", 0)),
           short_count(tokens.get("cacheReadTokens", 0)), short_count(tokens.get("reasoningTokens", 0)),
           "-" if ratio is None else f"{ratio * 100:.0f}%",
           f"{c['retries']}/{c['cancellations']}/{c['toolErrors']}" if counted else "-"]
    if priced:
        out.append("-" if row.cost is None else (f"${row.cost:.2f}" + ("*" if row.unpriced else "")))
    return out


def report_lines(rep: UsageReport, width: int = WIDTH) -> list[str]:
    """The table, a total line, and a note on unpriced models (``*``) and the zone."""
    figures = [*_FIGURES, _COST] if rep.priced else list(_FIGURES)
    fixed = sum(w + 1 for _, w in figures)
    key_w = max(8, width - fixed)
    head_key = " ".join(rep.by) if rep.by else ""

    def key_text(row: ReportRow, total: bool) -> str:
        if total:
            return "total"
        parts = list(zip(rep.by, row.key))
        each = max(4, (key_w - (len(parts) - 1)) // max(1, len(parts)))
        return " ".join(_fit(label.rsplit("/", 1)[-1] if by == "model" else label, each, keep_start=by == "session")
                        for by, label in parts)

    def line(key: str, values: Sequence[str]) -> str:
        return (_fit(key, key_w, True) + "".join(f" {v:>{w}}" for v, (_, w) in zip(values, figures))).rstrip()

    out = [line(head_key, [h for h, _ in figures])]
    out += [line(key_text(r, False), _figures(r, rep.priced)) for r in rep.rows]
    out.append(line("total", _figures(rep.total, rep.priced)))
    notes = [f"times in {rep.zone}"]
    if rep.total.subagents:
        notes.append("sess: sessions+subagents (children count in their parent's rows)")
    notes.append("r/c/e: retries/cancellations/tool errors")
    if rep.in_part:
        notes.append(f"{plural(len(rep.in_part), 'session')} {IN_PART}: a damaged row skipped (named on stderr)")
    if rep.total.unpriced:
        notes.append("* without a price: " + ", ".join(sanitize(m) for m in sorted(rep.total.unpriced)))
    out += [f"  {n}" for n in notes]
    return out


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


def hit_line(session: str, hit: Hit, *, color: bool = False) -> str:
    """``<session> seq 12 turn 3 user text: …before MATCH after…`` (the match in bold red on a terminal)."""
    match = _flat(hit.match)
    if color:
        match = _MARK_ON + match + _MARK_OFF
    where = f"seq {hit.seq if hit.seq is not None else '-'}" + (f" turn {hit.turn}" if hit.turn is not None else "")
    return f"{sanitize(session)} {where} {hit.role} {hit.field}: {_flat(hit.before)}{match}{_flat(hit.after)}"


def hit_document(session_id: str | None, path: str, hit: Hit, shape: int) -> dict[str, Any]:
    """One ``--json`` line (NDJSON): the session, then where the hit is and its snippet."""
    return {"shape": shape, "session": session_id, "path": path, **hit.as_dict()}
