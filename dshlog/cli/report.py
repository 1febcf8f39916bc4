"""`dshlog report`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..model.period import zone_named
from ..model.usage import BY_KEYS, report_document
from ..ops.outcome import worst
from ..ops.report import load_prices, usage_report
from ..ops.sessions import unique_prefixes
from ..output.labels import IN_PART
from ..output.usage import report_csv, report_notes, report_table
from .app import command_app
from .common import JSON_SHAPE, JobsOpt, JsonOpt, SchedulerOpt, batch_executor, cache_dir, current, emit_json, err, notes_outcome, out, screen, store_targets
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, say, selection

app = command_app()


def by_keys(given: list[str] | None) -> list[str]:
    """``--by`` as given (repeated, or ``day,model``), each key once, in the order named; ``day`` by default."""
    keys: list[str] = []
    for part in given or ["day"]:
        for key in part.split(","):
            key = key.strip()
            if key not in BY_KEYS:
                raise UsageError(f"--by {key!r}: expected one of {', '.join(BY_KEYS)}")
            if key not in keys:
                keys.append(key)
    return keys


@app.command("report", epilog="""More examples:

\b
  dshlog report
  dshlog report --by project --by model --since 7d
  dshlog report --by week --since 2026-10-01 --until 2026-10-31 --timezone Europe/Berlin
  dshlog report --by session --project demo --csv
  dshlog report --by model --json -j 2
""")
def report(
    targets: Annotated[Optional[list[str]], typer.Argument(metavar="[ROOT|DIR|FILE]...", help="Persistence roots, project or session directories, or session files (default: $DSH_HOME/sessions).")] = None,
    by: Annotated[Optional[list[str]], typer.Option("--by", metavar="KEY", help=f"Rows per {', '.join(BY_KEYS)}; repeat (or day,model) for rows of several keys. Default: day.", autocompletion=lambda: list(BY_KEYS))] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    cwd: CwdOpt = None,
    prices: Annotated[Optional[str], typer.Option("--prices", metavar="FILE", help="Price the tokens with a LiteLLM model_prices_and_context_window.json (default: $DSHLOG_PRICES; none: no cost column).")] = None,
    timezone: Annotated[Optional[str], typer.Option("--timezone", metavar="ZONE", help="The zone of days, weeks, months and dates: Europe/Berlin, UTC, +05:30, local (default: TZ, else the system's zone).")] = None,
    json_: JsonOpt = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout: one row per report row and a total row, every figure its own column.")] = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Usage across sessions: turns, model calls, tokens, cache hits, retries, cancellations, tool errors, cost.

    Every figure is made of what `dshlog stats` shows for each session, so the two agree; a subagent's
    figures count in its parent's rows. A session that cannot be read is named on stderr and the
    report of the others is shown (exit 4 for damage, 6 for a missing file).

    Example: dshlog report --by day --since 7d
    """
    env = current().env
    keys = by_keys(by)
    if json_ and csv:
        raise UsageError("--json and --csv exclude each other")
    tz, zone = zone_named(timezone if timezone is not None else env.timezone)
    chosen = selection(since, until, project, cwd, timezone=timezone)
    prices_path = prices if prices is not None else env.prices
    table = load_prices(prices_path) if prices_path else None
    paths = store_targets(targets)
    with batch_executor(jobs, scheduler) as ex:
        rep = usage_report(*paths, by=keys, tz=tz, zone=zone, prices=table, selection=chosen, executor=ex,
                           cache=cache_dir())
    for note in rep.notes:
        say(note)
    for path, error in rep.errors:
        err(f"dshlog: {error}" if path in error else f"dshlog: {path}: {error}")
    for part in rep.in_part:
        err(f"dshlog: {part.path}: {IN_PART}: {part.reason()}")
        current().note_outcome(notes_outcome(part.notes))
    current().note_outcome(worst(rep.exit_codes))
    if json_:
        emit_json(report_document(rep, JSON_SHAPE))
    elif csv:
        out(report_csv(rep).rstrip("\n"))  # session data: sanitised as every line for people is
    else:
        scr = screen()
        # a terminal shows session ids people can type; piped, every key is whole
        short = unique_prefixes([r.key[keys.index("session")] for r in rep.rows]) if scr.tty and "session" in keys else {}
        report_table(scr, rep, short)
        for line in report_notes(rep):
            out(line)
