"""`dshlog show`."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from ..errors import DshlogError
from ..model.transcript import SessionHead
from ..output.plain import PlainRenderer
from ..output.renderer import render
from ..output.terminal import TerminalRenderer, console, on_terminal, use_color
from .app import command_app
from .common import FileArg, FormatOpt, SelectOpt, located, open_log, print_notes

app = command_app()


@app.command("show")
def show(
    file: FileArg,
    full: Annotated[bool, typer.Option("--full", help="Show tool output, arguments and system prompts untrimmed.")] = False,
    reasoning: Annotated[bool, typer.Option("--reasoning", help="Unfold the model's reasoning.")] = False,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print directly instead of through a pager on a terminal.")] = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The conversation as a person reads it: turns, messages, tool calls and results, retries, cancellations.

    On a terminal the transcript is styled and shown through a pager ($PAGER, default less); piped, it is
    plain text. Older logs are migrated to v4 in memory first (nothing is written).

    Example: dshlog show session.v4.jsonl --reasoning
    """
    log = open_log(file, select=select, format_version=format_version)
    with log:
        head = SessionHead(log.session_id, log.version, log.path, log.projection)
        try:
            if on_terminal():
                con = console()
                if sys.stdout.isatty() and not no_pager:
                    os.environ.setdefault("LESS", "-FRX")  # colours through less; quit at once when it fits
                    with con.pager(styles=use_color()):
                        render(log.v4(), head, TerminalRenderer(con, reasoning=reasoning), full=full)
                else:
                    render(log.v4(), head, TerminalRenderer(con, reasoning=reasoning), full=full)
            else:
                render(log.v4(), head, PlainRenderer(sys.stdout.buffer.write, reasoning=reasoning), full=full)
        except DshlogError as exc:
            raise located(log, exc)  # noqa: B904 - the error itself, located
        print_notes(log)

