"""`dshlog stats`."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from ..model.stats import total_stats
from ..ops.sessions import Unreadable, select_sessions, store_sessions, unique_prefixes
from ..ops.stats import stats_many
from ..output import labels
from ..output.table import Column, table
from ..output.text import human_duration
from .app import command_app
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, of_roots, say, selection
from .common import (
    batch_executor, batch_source, cache_dir, current as run, emit_json, err, FormatOpt, JobsOpt, JSON_SHAPE,
    JsonOpt, print_problems, resolve, SchedulerOpt, screen, SelectOpt,
)

app = command_app()


@app.command("stats")
def stats(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE...", help="Session logs (paths, directories, session ids; default: the current session).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    cwd: CwdOpt = None,
) -> None:
    """Per session and in total: turns, steps, model calls, retries, cancellations, tools with errors, tokens per model, time.

    Time is first to last event; test-snapshot projections carry time 0 and show no duration.

    Example: dshlog stats ~/.dsh/sessions/--home-ann-p--/*/ --json | jq .total.tokensByModel
    """
    sessions = []
    current: list[str | None] = [None]  # no FILE: the current session
    chosen = selection(since, until, project, cwd)
    of_roots(chosen, files or current)
    targets, note = select_sessions(store_sessions([resolve(f) for f in files or current]), chosen,
                                    cache=cache_dir())  # a root or project directory: its sessions, as ls keeps them
    say(note)
    with batch_executor(jobs, scheduler, targets, one_each=True) as ex:
        for one in stats_many(targets, source=batch_source(targets, select=select, format_version=format_version),
                              executor=ex, cache=cache_dir()):
            if isinstance(one, Unreadable):  # named, and the batch goes on
                err(f"dshlog: {one.error}")
                run().note_outcome(one.exit_code)
                continue
            sessions.append(one.as_dict())
            print_problems(one.path, one.notes, one.suppressed)  # --json too: the document has no place for them
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
                tokens.get("inputTokens", 0), tokens.get("outputTokens", 0), human_duration(d["durationMs"]) if timed else "-"]

    names = [str(s["id"] or s["path"]) for s in sessions]
    short = unique_prefixes(names) if screen().tty else {}  # a terminal shows ids people can type, not fold them
    rows = [row(short.get(n, n), s) for n, s in zip(names, sessions)]
    if len(sessions) > 1:
        rows.append(row("total", total))
    figures = ["turns", "steps", "calls", "retries", "cancelled"]
    table(screen(), None, [Column("session"), *(Column(h, number=True) for h in figures), Column("tools", "right"),
                           *(Column(labels.token_name(k), number=True) for k in ("inputTokens", "outputTokens")), Column("time", "right")], rows)
    if total["toolCalls"]:
        table(screen(), "tool calls", [Column("tool"), Column("calls", number=True), Column("errors", number=True)],
              ([n, c["calls"], c["errors"]] for n, c in total["toolCalls"].items()))
    if total["tokensByModel"]:
        keys = sorted({k for u in total["tokensByModel"].values() for k in u})
        table(screen(), "tokens by model", [Column("model"), *(Column(labels.token_name(k), number=True) for k in keys)],
              ([m, *(u.get(k, 0) for k in keys)] for m, u in total["tokensByModel"].items()))

