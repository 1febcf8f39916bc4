"""`dshlog show`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import CorruptLog, DshlogError, UnsupportedVersion
from ..model.transcript import SessionHead
from ..read.session import SessionLog
from ..output.labels import refusal_mark
from ..output.plain import PlainRenderer
from ..output.renderer import render
from ..output.terminal import TerminalRenderer
from .app import command_app
from .common import FileArg, FormatOpt, SelectOpt, current, located, open_log, print_notes
from .pager import paged

app = command_app()


@app.command("show")
def show(
    file: FileArg = None,
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
    run = current()
    log = open_log(file, select=select, format_version=format_version)
    with log:
        head = SessionHead(log.session_id, log.version, log.path, log.projection)
        scr = run.env.screen()
        try:
            if not scr.terminal:
                _render(log, head, PlainRenderer(scr.stream.write, reasoning=reasoning), full)
            elif scr.tty and not no_pager:
                with paged(run.env) as stream:
                    _render(log, head, TerminalRenderer(scr.console(stream), reasoning=reasoning), full)
            else:
                _render(log, head, TerminalRenderer(scr.console(), reasoning=reasoning), full)
        except DshlogError as exc:
            raise located(log, exc)  # noqa: B904 - the error itself, located
        print_notes(log)


def _render(log: SessionLog, head: SessionHead, renderer: PlainRenderer | TerminalRenderer, full: bool) -> None:
    """The transcript; where dsh's decision stops it, a mark saying so ends what was shown."""
    try:
        render(log.v4(), head, renderer, full=full)
    except (UnsupportedVersion, CorruptLog) as exc:
        renderer.mark(refusal_mark(exc.message))
        raise
