"""`dshlog validate`."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Optional

import typer

from ..ops.outcome import worst
from ..ops.validate import validate_many
from ..output import labels
from ..ops.sessions import select_sessions, store_sessions
from .app import command_app
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, of_roots, say, selection
from .common import (
    batch_executor, batch_source, cache_dir, emit_json, err, FormatOpt, JobsOpt, JSON_SHAPE, JsonOpt, out,
    read_progress, resolve, SchedulerOpt, SelectOpt,
)

app = command_app()


@app.command("validate")
def validate(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE...", help="Session logs to check (paths, directories, - or session ids; default: the current session).")] = None,
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
    """Every check a released dsh reader makes; reports every problem with its location. Never writes.

    Exit 0 when clean (warnings allowed), 4 when damaged, 3 when the format is newer than dsh's.

    Example: dshlog validate ~/.dsh/sessions/*/*/
    """
    reports = []
    current: list[str | None] = [None]  # no FILE: the current session
    chosen = selection(since, until, project, cwd)
    of_roots(chosen, files or current)
    targets, note = select_sessions(store_sessions([resolve(f) for f in files or current]), chosen,
                                    cache=cache_dir())  # a root or project directory: its sessions, as ls keeps them
    say(note)
    with batch_executor(jobs, scheduler, targets, one_each=True) as ex:
        for report in validate_many(targets, source=batch_source(targets, select=select, format_version=format_version),
                                    executor=ex, progress=read_progress() if len(targets) == 1 else None, cache=cache_dir()):
            reports.append(report)
            if json_:
                continue
            if report.status in ("unreadable", "skipped") and len(report.problems) == 1 and not report.events:
                only = report.problems[0]  # nothing was read: the verdict and its reason are one result line
                out(f"{report.path}: {report.status} ({only.code}: {only.message})")
                continue
            for first, more in report.grouped():
                where = first.where()
                where = "" if where == report.path else where
                out(f"{report.path}: {where + ': ' if where else ''}{first.severity}: {first.code}: {first.message}")
                if more:
                    last = more[-1].where() or "the end"
                    out(f"{report.path}: ... {labels.plural(len(more), 'more ' + first.code + ' problem')} after it, "
                        f"through {last} (most likely consequences of the one above)")
            out(f"{report.path}: {report.status} (v{report.version if report.version is not None else '?'}, "
                f"{labels.plural(report.events, 'event')}, {labels.plural(len(report.errors), 'error')}, "
                f"{labels.plural(len(report.warnings), 'warning')})")
            if report.rescue is not None:
                err(f"{report.path}: {report.rescue}")
    if json_:
        emit_json({"shape": JSON_SHAPE, "files": [r.as_dict() for r in reports]})
    elif len(reports) > 1:
        counts = Counter(r.status for r in reports)
        out(f"{labels.plural(len(reports), 'session')}: " + ", ".join(f"{n} {status}" for status, n in counts.most_common()))
    raise typer.Exit(int(worst(r.exit_code for r in reports)))
