"""`dshlog validate`."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..errors import ExitCode
from ..ops.validate import validate_log
from ..output.plain import echo
from .app import command_app
from .common import (
    JSON_SHAPE,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    emit_json,
    plugins,
    resolve,
)

app = command_app()


@app.command("validate")
def validate(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE...", help="Session logs to check (paths, directories, - or session ids; default: the current session).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Every check a released dsh reader makes; reports every problem with its location. Never writes.

    Exit 0 when clean (warnings allowed), 4 when damaged, 3 when the format is newer than dsh's.

    Example: dshlog validate ~/.dsh/sessions/*/*/
    """
    worst = ExitCode.OK
    reports = []
    current: list[str | None] = [None]  # no FILE: the current session
    for f in files or current:
        report = validate_log(resolve(f), select=select, format_version=format_version, system_prompt_plugins=plugins())
        reports.append(report)
        worst = max(worst, report.exit_code)
        if not json_:
            for p in report.problems:
                where = p.where()
                echo(f"{report.path}: {where + ': ' if where else ''}{p.severity}: {p.code}: {p.message}")
            status = "ok" if report.exit_code == ExitCode.OK else ("unsupported" if report.exit_code == ExitCode.UNSUPPORTED else "damaged")
            echo(f"{report.path}: {status} (v{report.version if report.version is not None else '?'}, {report.events} events, "
                 f"{report.count('error')} errors, {report.count('warning')} warnings)", sys.stderr)
    if json_:
        emit_json({"shape": JSON_SHAPE, "files": [r.as_dict() for r in reports]})
    raise typer.Exit(int(worst))

