"""`dshlog stats`."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from ..model.stats import session_stats, total_stats
from ..model.summary import summarize
from ..ops.sessions import unique_prefixes
from ..output import labels
from ..output.terminal import table
from ..output.text import human_duration
from .app import command_app
from .common import (
    FormatOpt,
    JSON_SHAPE,
    JsonOpt,
    SelectOpt,
    emit_json,
    open_log,
    print_notes,
    screen,
)

app = command_app()


@app.command("stats")
def stats(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE...", help="Session logs (paths, directories, session ids; default: the current session).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Per session and in total: turns, steps, model calls, retries, cancellations, tools with errors, tokens per model, time.

    Time is first to last event; test-snapshot projections carry time 0 and show no duration.

    Example: dshlog stats ~/.dsh/sessions/--home-ann-p--/*/ --json | jq .total.tokensByModel
    """
    sessions = []
    current: list[str | None] = [None]  # no FILE: the current session
    for f in files or current:
        log = open_log(f, strict=False, select=select, format_version=format_version)
        with log:
            s = summarize(log.stored_runs())
            sessions.append({"path": log.path, "id": log.session_id, "version": log.version, "projection": log.projection, **session_stats(s, projection=log.projection)})
            print_notes(log, quiet=json_)
    total = total_stats(sessions)
    if json_:
        emit_json({"shape": JSON_SHAPE, "sessions": sessions, "total": total})
        return

    def row(name: str, d: dict[str, Any]) -> list[Any]:
        tools = sum(c["calls"] for c in d["toolCalls"].values())
        errors = sum(c["errors"] for c in d["toolCalls"].values())
        tokens = d["tokens"]
        timed = d.get("timed", True)
        return [name, d["turns"], d["steps"], d["modelCalls"], d["retries"], d["cancellations"], f"{tools} ({errors} err)",
                labels.count(tokens.get("inputTokens", 0)), labels.count(tokens.get("outputTokens", 0)), human_duration(d["durationMs"]) if timed else "-"]

    names = [str(s["id"] or s["path"]) for s in sessions]
    short = unique_prefixes(names) if screen().tty else {}  # a terminal shows ids people can type, not fold them
    rows = [row(short.get(n, n), s) for n, s in zip(names, sessions)]
    if len(sessions) > 1:
        rows.append(row("total", total))
    table(screen(), None, ["session", "turns", "steps", "calls", "retries", "cancelled", "tools", labels.token_name("inputTokens"), labels.token_name("outputTokens"), "time"], rows,
          justify={i: "right" for i in range(1, 10)})
    if total["toolCalls"]:
        table(screen(), "tool calls", ["tool", "calls", "errors"], ([n, c["calls"], c["errors"]] for n, c in total["toolCalls"].items()), justify={1: "right", 2: "right"})
    if total["tokensByModel"]:
        keys = sorted({k for u in total["tokensByModel"].values() for k in u})
        table(screen(), "tokens by model", ["model", *map(labels.token_name, keys)], ([m, *(labels.count(u.get(k, 0)) for k in keys)] for m, u in total["tokensByModel"].items()),
              justify={i + 1: "right" for i in range(len(keys))})

