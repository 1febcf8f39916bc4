"""Usage statistics per session and across sessions (``dshlog stats``).

Built on :class:`dshlog.model.summary.Summary`, which reads events of any stored
version in one pass; this module only shapes the counters and adds them up.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from .summary import Summary

COUNTERS = ("events", "turns", "steps", "modelCalls", "attempts", "retries", "interrupted", "cancellations", "durationMs")


def stats_counters(s: Summary, *, projection: bool = False) -> dict[str, Any]:
    """The ``stats`` view of one summary.

    ``timed`` is false when the events carry no real time (test-snapshot
    projections have time 0), so a duration of 0 is not mistaken for "instant".
    """
    tools = {
        name: {"calls": s.tool_calls.get(name, 0), "errors": s.tool_errors.get(name, 0)}
        for name in sorted(set(s.tool_calls) | set(s.tool_errors))
    }
    return {
        "events": s.events,
        "turns": s.turns,
        "steps": s.steps,
        "modelCalls": s.model_calls,
        "attempts": s.attempts,
        "retries": s.retries,
        "interrupted": s.interrupted,
        "cancellations": s.cancellations,
        "toolCalls": tools,
        "tokens": dict(s.tokens),
        "tokensByModel": {k: dict(v) for k, v in sorted(s.tokens_by_model.items())},
        "firstTime": s.first_time,
        "lastTime": s.last_time,
        "durationMs": s.duration_ms,
        "timed": not projection and s.first_time is not None,
    }


def total_stats(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum of several :func:`stats_counters` results (durations add up; tool and token maps merge)."""
    tot: dict[str, Any] = {k: 0 for k in COUNTERS}
    tot.update({"sessions": 0, "toolCalls": {}, "tokens": {}, "tokensByModel": {}})
    for p in parts:
        tot["sessions"] += 1
        for k in COUNTERS:
            tot[k] += p.get(k) or 0
        for name, c in p["toolCalls"].items():
            t = tot["toolCalls"].setdefault(name, {"calls": 0, "errors": 0})
            t["calls"] += c["calls"]
            t["errors"] += c["errors"]
        _add(tot["tokens"], p["tokens"])
        for model, usage in p["tokensByModel"].items():
            _add(tot["tokensByModel"].setdefault(model, {}), usage)
    tot["toolCalls"] = dict(sorted(tot["toolCalls"].items()))
    tot["tokensByModel"] = dict(sorted(tot["tokensByModel"].items()))
    return tot


def _add(into: dict[str, int], usage: dict[str, int]) -> None:
    for k, v in usage.items():
        into[k] = into.get(k, 0) + v
