"""`dshlog repair`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import ExitCode, UsageError
from ..ops.repair import plan_repair, repair_copy, repair_in_place
from .app import command_app
from .common import (
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    closer_lines,
    emit_json,
    err,
    out,
    source_for,
    resolve,
)

app = command_app()


@app.command("repair")
def repair(
    file: FileArg = None,
    write: Annotated[bool, typer.Option("--write", help="Append the closers to the log itself (v4 only), under session.lock, atomically.")] = False,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write a repaired v4 copy to OUT instead (a file, or a directory to create it in; never overwrites).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 10 when the tail needs closing, 0 when it is healthy; write nothing (not with --write or -o).")] = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Close an interrupted tail after a crash, exactly as dsh does when it resumes.

    By default shows what is open and the exact events that would be appended, and writes nothing.

    Example: dshlog repair session.v4.jsonl && dshlog repair session.v4.jsonl --write
    """
    if write and output is not None:
        raise UsageError("choose either --write (in place) or -o OUT (a repaired copy)")
    if check and (write or output is not None):
        raise UsageError("--check writes nothing: leave out --write and -o, or leave out --check")
    file = resolve(file)
    if write:
        result = repair_in_place(source_for(file))
    elif output is not None:
        result = repair_copy(source_for(file, select=select, format_version=format_version), output)
    else:
        result = plan_repair(source_for(file, select=select, format_version=format_version))
    plan = result.plan
    if json_:
        emit_json(result.as_dict())
    else:
        rep = plan.report
        if plan.healthy:
            out(f"{plan.path}: healthy: the last turn is closed ({plan.event_count} events)" + (f"; a torn tail is ignored: {plan.torn_note}" if plan.torn_note else ""))
        else:
            pend = ", ".join(f"{c.call_id} ({'started' if c.started else 'not started'})" for c in rep.pending) or "none"
            out(f"{plan.path}: open tail: turn {rep.open_turn}" + (f", step {rep.open_step}" if rep.open_step is not None else "") + f"; unanswered tool calls: {pend}")
            if plan.torn_note:
                out(f"torn tail: {plan.torn_note}" + ("; cut" if result.written else "; a write cuts it"))
            for w in plan.warnings:
                err(f"dshlog: warning: {w}")
            out("appended:" if result.written else "would append:")
            for line in closer_lines(plan.closers):
                out(f"  {line}")
            if result.written:
                err(f"written: {result.written}" + (" (in place)" if result.in_place else ""))
            for w in result.publish_warnings:
                err(f"dshlog: warning: {w}")
            if result.sidecar:
                err(f"torn bytes kept in {result.sidecar}")
            elif not write and output is None:
                err("nothing written; use --write to repair in place or -o OUT for a repaired copy")
    if check and not plan.healthy:
        raise typer.Exit(int(ExitCode.PENDING))

