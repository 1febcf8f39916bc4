"""`dshlog repair`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ExitCode, UsageError
from ..ops.repair import RepairResult, plan_repair, repair_copy, repair_in_place
from ..output.plain import echo
from .app import command_app
from .common import (
    JSON_SHAPE,
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    closer_lines,
    emit_json,
    plugins,
    resolve,
)

app = command_app()


@app.command("repair")
def repair(
    file: FileArg = None,
    write: Annotated[bool, typer.Option("--write", help="Append the closers to the log itself (v4 only), under session.lock, atomically.")] = False,
    out: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write a repaired v4 copy to OUT instead (never overwrites).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 10 when the tail needs closing, 0 when it is healthy; write nothing.")] = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Close an interrupted tail after a crash, exactly as dsh does when it resumes.

    By default shows what is open and the exact events that would be appended, and writes nothing.

    Example: dshlog repair session.v4.jsonl && dshlog repair session.v4.jsonl --write
    """
    if write and out:
        raise UsageError("choose either --write (in place) or -o OUT (a repaired copy)")
    file = resolve(file)
    if write:
        result = repair_in_place(file)
    elif out:

        result = repair_copy(file, Path(out), select=select, format_version=format_version, system_prompt_plugins=plugins())
    else:
        result = RepairResult(plan_repair(file, select=select, format_version=format_version, system_prompt_plugins=plugins()))
    plan = result.plan
    if json_:
        rep = plan.report
        emit_json(
            {
                "shape": JSON_SHAPE,
                "path": plan.path,
                "healthy": plan.healthy,
                "openTurn": rep.open_turn,
                "openStep": rep.open_step,
                "pendingCalls": [{"callId": c.call_id, "step": c.step, "started": c.started, "callSeq": c.call_seq} for c in rep.pending],
                "tornBytes": plan.torn_bytes,
                "closers": plan.closers,
                "warnings": plan.warnings,
                "written": result.written,
                "sidecar": result.sidecar,
            }
        )
    else:
        rep = plan.report
        if plan.healthy:
            echo(f"{plan.path}: healthy: the last turn is closed ({plan.event_count} events)" + (f"; a torn tail of {plan.torn_bytes} bytes is ignored" if plan.torn_bytes else ""))
        else:
            pend = ", ".join(f"{c.call_id} ({'started' if c.started else 'not started'})" for c in rep.pending) or "none"
            echo(f"{plan.path}: open tail: turn {rep.open_turn}" + (f", step {rep.open_step}" if rep.open_step is not None else "") + f"; unanswered tool calls: {pend}")
            if plan.torn_bytes:
                echo(f"torn tail: {plan.torn_bytes} bytes after the last complete line")
            for w in plan.warnings:
                echo(f"dshlog: warning: {w}", sys.stderr)
            echo("appended:" if result.written else "would append:")
            for line in closer_lines(plan.closers):
                echo(f"  {line}")
            if result.written:
                echo(f"written: {result.written}" + (" (in place)" if result.in_place else ""), sys.stderr)
            for w in result.warnings:
                echo(f"dshlog: warning: {w}", sys.stderr)
            if result.sidecar:
                echo(f"torn bytes kept in {result.sidecar}", sys.stderr)
            elif not write and not out:
                echo("nothing written; use --write to repair in place or -o OUT for a repaired copy", sys.stderr)
    if check and not plan.healthy:
        raise typer.Exit(int(ExitCode.PENDING))

