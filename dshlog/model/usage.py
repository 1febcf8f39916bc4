"""Usage across a store (``dshlog report``): figures per day, week, month, session, project, model.

Every figure is made of the per-session ``stats`` figures, so a report and
``dshlog stats`` can never disagree.  A session is read once, through the one
summary (:class:`dshlog.model.summary.Summary`); :class:`SegmentedSummary` takes a
snapshot of its cumulative :func:`~dshlog.model.stats.stats_counters` whenever the
events cross into another 15-minute span of UTC (or cross ``--since``/``--until``),
and a span's figures are the difference of two snapshots.  The differences of a
session add up to its final ``stats``, exactly (they telescope), and every zone's
day, week and month is a union of whole spans (every zone offset is a multiple of
15 minutes), so the conversion to local time happens after the work, on the side
of the caller, with the caller's zone.

Subagent children are attributed to their parent: their figures count in the
parent's session row and project, and the rows say how many children they hold.

Costs come from a price table in the shape of LiteLLM's
``model_prices_and_context_window.json`` (none is bundled).  dsh's ``inputTokens``
are the prompt tokens the provider did not read from its cache (``cacheReadTokens``
are counted apart, and are often the larger number), so the three are priced
separately; ``reasoningTokens`` are part of ``outputTokens`` and priced with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from ..check.problems import Problem, Severity
from ..errors import ExitCode
from ..protocol.packed import PackedRun
from .period import QUANTUM_MS, bucket_label
from .stats import stats_counters
from .summary import Summary

__all__ = [
    "BY_KEYS",
    "COUNTS",
    "InPart",
    "PriceTable",
    "ReportRow",
    "SegmentedSummary",
    "SessionUsage",
    "Usage",
    "UsageReport",
    "build_report",
]

#: What ``--by`` may name; the first three are time buckets.
BY_KEYS = ("day", "week", "month", "session", "project", "model")
TIME_KEYS = frozenset({"day", "week", "month"})

#: The additive counters of a span, named as ``stats --json`` names them.
COUNTS = ("events", "turns", "steps", "modelCalls", "attempts", "retries", "interrupted", "cancellations", "toolCalls", "toolErrors")

#: The label of activity that carries no time (test-snapshot projections).
UNTIMED = "-"


def _add_tokens(into: dict[str, int], more: dict[str, int], sign: int = 1) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + sign * v
        if not into[k]:
            del into[k]


@dataclass
class Usage:
    """Additive figures of some activity: counters and tokens per model.

    Built from :func:`~dshlog.model.stats.stats_counters` results only
    (:meth:`of_stats`), so every figure means what ``stats`` means by it.
    ``counted`` is false for a per-model share, which carries tokens only: the
    other counters belong to the session, not to one model.
    """

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    tokens_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    counted: bool = True

    @classmethod
    def of_stats(cls, st: dict[str, Any]) -> Usage:
        counts = {k: int(st.get(k) or 0) for k in COUNTS if k not in ("toolCalls", "toolErrors")}
        counts["toolCalls"] = sum(c["calls"] for c in st["toolCalls"].values())
        counts["toolErrors"] = sum(c["errors"] for c in st["toolCalls"].values())
        return cls({k: counts[k] for k in COUNTS}, {m: dict(u) for m, u in st["tokensByModel"].items()})

    @property
    def tokens(self) -> dict[str, int]:
        """Tokens of every model together (``stats``' ``tokens``: its usage adds to both maps)."""
        out: dict[str, int] = {}
        for u in self.tokens_by_model.values():
            _add_tokens(out, u)
        return out

    def add(self, other: Usage, sign: int = 1) -> None:
        for k in COUNTS:
            self.counts[k] += sign * other.counts[k]
        for m, u in other.tokens_by_model.items():
            mine = self.tokens_by_model.setdefault(m, {})
            _add_tokens(mine, u, sign)
            if not mine:
                del self.tokens_by_model[m]

    def minus(self, other: Usage) -> Usage:
        out = Usage(dict(self.counts), {m: dict(u) for m, u in self.tokens_by_model.items()})
        out.add(other, -1)
        return out

    def share(self, model: str) -> Usage:
        """The tokens of one model, as a row of its own (``--by model``)."""
        return Usage(dict.fromkeys(COUNTS, 0), {model: dict(self.tokens_by_model.get(model, {}))}, counted=False)

    @property
    def empty(self) -> bool:
        return not any(self.counts.values()) and not self.tokens_by_model


class SegmentedSummary:
    """One :class:`Summary` over a session, cut into 15-minute spans of UTC and a time window.

    ``since``/``until`` (epoch ms, ``until`` exclusive) bound the activity that
    counts.  Events without a time (0 in projections) belong to the span of the
    timed event before them, or of the first timed one when none came before; a
    session with no timed event at all is one untimed span (key ``None``), which
    counts only when no window is set.
    """

    def __init__(self, *, since: int | None = None, until: int | None = None, projection: bool = False) -> None:
        self.summary = Summary()
        self.since = since
        self.until = until
        self.projection = projection
        self._key: tuple[int, bool] | None = None
        self._lo = self._hi = 0  # the current key holds for times in [lo, hi)
        self._base = Usage()
        self.spans: dict[int | None, Usage] = {}

    def _inside(self, t: int) -> bool:
        return (self.since is None or t >= self.since) and (self.until is None or t < self.until)

    def _bounds(self, t: int) -> tuple[int, int]:
        q = t // QUANTUM_MS * QUANTUM_MS
        lo, hi = q, q + QUANTUM_MS
        for edge in (self.since, self.until):
            if edge is not None:
                if lo < edge <= t:
                    lo = edge
                elif t < edge < hi:
                    hi = edge
        return lo, hi

    def _snapshot(self) -> Usage:
        return Usage.of_stats(stats_counters(self.summary.finish(), projection=self.projection))

    def _close(self, key: tuple[int, bool] | None) -> None:
        now = self._snapshot()
        part = now.minus(self._base)
        self._base = now
        if part.empty:
            return
        if key is None:
            if self.since is not None or self.until is not None:
                return
            span: int | None = None
        else:
            if not key[1]:
                return
            span = key[0]
        self.spans.setdefault(span, Usage()).add(part)

    def feed(self, ev: Any) -> None:
        t = ev.time if type(ev) is PackedRun else ev.get("time")
        if type(t) is int and t > 0 and not (self._lo <= t < self._hi):
            key = (t // QUANTUM_MS, self._inside(t))
            if self._key is not None and key != self._key:
                self._close(self._key)
            self._key = key
            self._lo, self._hi = self._bounds(t)
        self.summary.feed(ev)

    def finish(self) -> dict[str, Any]:
        """Close the last span; returns the session's ``stats`` (what ``dshlog stats`` shows for it)."""
        self._close(self._key)
        return stats_counters(self.summary.finish(), projection=self.projection)


@dataclass
class SessionUsage:
    """What one session contributes to a report: who it is, and its figures per span."""

    path: str
    id: str | None = None
    cwd: str | None = None
    project: str | None = None  # the project directory's name, when the session sits in a root
    parent: str | None = None
    origin: str | None = None
    title: str | None = None
    spans: dict[int | None, Usage] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    exit_code: int = ExitCode.OK  # the error's, so a batch exits with its worst
    #: what the reader noticed; an error among them means rows were skipped, so the session counts only in part
    notes: list[Problem] = field(default_factory=list)
    suppressed: dict[str, int] = field(default_factory=dict)

    @property
    def in_part(self) -> bool:
        """Whether a damaged row was skipped: the figures are those of the rows that could be read."""
        return any(n.severity == Severity.ERROR for n in self.notes)

    @property
    def first(self) -> int | None:
        timed = [s for s in self.spans if s is not None]
        return min(timed) * QUANTUM_MS if timed else None


# ----------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Price:
    """Dollars per token of one model."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, tokens: dict[str, int]) -> float:
        return (tokens.get("inputTokens", 0) * self.input + tokens.get("outputTokens", 0) * self.output
                + tokens.get("cacheReadTokens", 0) * self.cache_read + tokens.get("cacheWriteTokens", 0) * self.cache_write)


def _rate(entry: dict[str, Any], key: str) -> float | None:
    v = entry.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class PriceTable:
    """Per-token prices from a LiteLLM-shaped document (model name -> ``*_cost_per_token`` fields).

    dsh names a model ``provider/model`` (``deepseek-official/deepseek-v4-flash``); a
    table entry matches that name exactly, else the bare model name, else the one
    ``<anything>/model`` entry when exactly one exists.  Cache reads without a
    price of their own are priced as input, as LiteLLM does.
    """

    def __init__(self, doc: dict[str, Any]) -> None:
        self._prices: dict[str, Price] = {}
        for name, entry in doc.items():
            if not isinstance(entry, dict):
                continue
            pin, pout = _rate(entry, "input_cost_per_token"), _rate(entry, "output_cost_per_token")
            if pin is None or pout is None:
                continue  # LiteLLM's sample_spec, image and audio models, ...
            cread = _rate(entry, "cache_read_input_token_cost")
            cwrite = _rate(entry, "cache_creation_input_token_cost")
            self._prices[name] = Price(pin, pout, pin if cread is None else cread, pin if cwrite is None else cwrite)
        self._by_tail: dict[str, list[str]] = {}
        for name in self._prices:
            if "/" in name:
                self._by_tail.setdefault(name.rsplit("/", 1)[1], []).append(name)

    def __len__(self) -> int:
        return len(self._prices)

    def price(self, model: str) -> Price | None:
        if model in self._prices:
            return self._prices[model]
        bare = model.split("/", 1)[1] if "/" in model else model
        if bare in self._prices:
            return self._prices[bare]
        tails = self._by_tail.get(bare, [])
        return self._prices[tails[0]] if len(tails) == 1 else None


# ----------------------------------------------------------------------------- the report


@dataclass
class ReportRow:
    """One row: its key (one label per ``--by``), its figures, who contributed."""

    key: tuple[str, ...]
    usage: Usage = field(default_factory=Usage)
    sessions: set[str] = field(default_factory=set)
    subagents: set[str] = field(default_factory=set)
    cost: float | None = None
    unpriced: set[str] = field(default_factory=set)

    def price(self, prices: PriceTable | None) -> None:
        if prices is None:
            return
        self.cost = 0.0
        for model, tokens in sorted(self.usage.tokens_by_model.items()):
            p = prices.price(model)
            if p is None:
                self.unpriced.add(model)
            else:
                self.cost += p.cost(tokens)

    def as_dict(self, by: Sequence[str]) -> dict[str, Any]:
        tokens = self.usage.tokens
        counted = self.usage.counted
        return {
            **dict(zip(by, self.key)),
            "sessions": len(self.sessions),
            "subagents": len(self.subagents),
            **{k: (self.usage.counts[k] if counted else None) for k in COUNTS},
            "tokens": tokens,
            "tokensByModel": {m: dict(u) for m, u in sorted(self.usage.tokens_by_model.items())},
            "cacheHitRatio": cache_hit_ratio(tokens),
            "cost": self.cost,
            "unpricedModels": sorted(self.unpriced),
        }


def cache_hit_ratio(tokens: dict[str, int]) -> float | None:
    """Share of prompt tokens read from the provider's cache (``None`` without prompt tokens)."""
    prompt = tokens.get("inputTokens", 0) + tokens.get("cacheReadTokens", 0)
    return tokens.get("cacheReadTokens", 0) / prompt if prompt else None


@dataclass
class UsageReport:
    """Rows in key order, the total, and the sessions that could not be read."""

    by: tuple[str, ...]
    rows: list[ReportRow]
    total: ReportRow
    zone: str
    since: int | None = None
    until: int | None = None
    priced: bool = False
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: the exit codes of the sessions in ``errors``, in the same order
    exit_codes: list[int] = field(default_factory=list)
    #: the sessions counted only in part (a damaged row skipped), with the reader's notes, in input order
    in_part: list[InPart] = field(default_factory=list)
    #: what a person is told about the selection (a ``--cwd`` that matched no session)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class InPart:
    """A session a report counted only in part: what was skipped is in its notes (the reader's, as ``stats`` has them)."""

    path: str
    id: str | None
    notes: tuple[Problem, ...]
    suppressed: dict[str, int]

    def reason(self) -> str:
        """The first error, as one line (``line 16, byte 3843: unparsable: ...``)."""
        first = next(n for n in self.notes if n.severity == Severity.ERROR)
        where = first.where()
        return f"{where + ': ' if where else ''}{first.code}: {first.message}"


def _roots(sessions: Sequence[SessionUsage]) -> dict[int, SessionUsage]:
    """Each session's top ancestor in the store (a child whose parent is elsewhere stands alone)."""
    by_id = {s.id: s for s in sessions if s.id is not None}
    out: dict[int, SessionUsage] = {}
    for i, s in enumerate(sessions):
        top, seen = s, set()
        while top.origin == "subagent" and top.parent in by_id and top.id not in seen:
            seen.add(top.id)
            top = by_id[top.parent]
        out[i] = top
    return out


def _sort_key(label: str) -> tuple[int, str]:
    return (1, label) if label == UNTIMED else (0, label)


def build_report(sessions: Iterable[SessionUsage], by: Sequence[str], *, tz: tzinfo | None, zone: str,
                 prices: PriceTable | None = None, keep: Any = None,
                 since: int | None = None, until: int | None = None) -> UsageReport:
    """Rows of ``by`` keys over the sessions' spans (see the module docstring).

    ``keep(root)``: whether a root session (a session with its children) is
    reported at all (``--project``/``--cwd``); children follow their root.
    """
    listed = list(sessions)
    errors = [(s.path, s.error) for s in listed if s.error is not None]
    ok = [s for s in listed if s.error is None]
    roots = _roots(ok)
    rows: dict[tuple[str, ...], ReportRow] = {}
    total = ReportRow(("total",))
    labels: dict[tuple[int | None, str], str] = {}

    def label(span: int | None, key: str) -> str:
        if span is None:
            return UNTIMED
        got = labels.get((span, key))
        if got is None:
            got = labels[(span, key)] = bucket_label(span * QUANTUM_MS, key, tz)
        return got

    in_part: list[InPart] = []
    for i, s in enumerate(ok):
        root = roots[i]
        if keep is not None and not keep(root):
            continue
        if s.in_part:
            in_part.append(InPart(s.path, s.id, tuple(s.notes), s.suppressed))
        root_id = root.id or root.path
        child = root is not s
        for span, usage in s.spans.items():
            base = []
            for key in by:
                if key in TIME_KEYS:
                    base.append(label(span, key))
                elif key == "session":
                    base.append(root_id)
                elif key == "project":
                    base.append(root.cwd or root.project or UNTIMED)
            parts: list[tuple[tuple[str, ...], Usage]]
            if "model" in by:
                at = list(by).index("model")
                parts = [((*base[:at], m, *base[at:]), usage.share(m)) for m in sorted(usage.tokens_by_model)]
            else:
                parts = [(tuple(base), usage)]
            for key_t, part in parts:
                row = rows.get(key_t)
                if row is None:
                    row = rows[key_t] = ReportRow(key_t, Usage(counted=part.counted))
                row.usage.add(part)
                row.sessions.add(root_id)
                if child:
                    row.subagents.add(s.id or s.path)
            total.usage.add(usage)
            total.sessions.add(root_id)
            if child:
                total.subagents.add(s.id or s.path)
    ordered = [rows[k] for k in sorted(rows, key=lambda k: tuple(_sort_key(x) for x in k))]
    for r in [*ordered, total]:
        r.price(prices)
    return UsageReport(tuple(by), ordered, total, zone, since, until, prices is not None, errors,
                       [s.exit_code for s in listed if s.error is not None], in_part)


def report_document(rep: UsageReport, shape: int) -> dict[str, Any]:
    """The versioned ``--json`` shape."""
    return {
        "shape": shape,
        "by": list(rep.by),
        "timezone": rep.zone,
        "since": rep.since,
        "until": rep.until,
        "priced": rep.priced,
        "rows": [r.as_dict(rep.by) for r in rep.rows],
        "total": {k: v for k, v in rep.total.as_dict(()).items()},
        "errors": [{"path": p, "error": e} for p, e in rep.errors],
        "countedInPart": [{"path": p.path, "id": p.id, "reason": p.reason()} for p in rep.in_part],
    }
