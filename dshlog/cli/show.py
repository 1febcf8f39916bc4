"""`dshlog show`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..ops.transcript import open_transcript
from ..output.plain import PlainRenderer
from ..output.terminal import TerminalRenderer
from .app import command_app
from .common import FileArg, cache_dir, FormatOpt, SelectOpt, current, done, print_notes, print_refusal, read_progress, source_for, resolve
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
    plain text. Older logs are migrated to v4 in memory first (nothing is written). A log dsh refuses to open
    is shown as far as its stored rows can be read, opening with dsh's reason (exit 4, or 3 when unsupported).

    Example: dshlog show session.v4.jsonl --reasoning
    """
    run = current()
    path = resolve(file)
    scr = run.env.screen()
    with open_transcript(source_for(path, select=select, format_version=format_version), progress=read_progress(),
                         cache=cache_dir()) as t:
        if scr.terminal:
            done()  # the transcript is drawn on the terminal (or a pager) from here: no line under it
        if not scr.terminal:
            t.show(PlainRenderer(scr.stream.write, reasoning=reasoning), full=full)
        elif scr.tty and not no_pager:
            with paged(run.env) as stream:
                t.show(TerminalRenderer(scr.console(stream), reasoning=reasoning), full=full)
        else:
            t.show(TerminalRenderer(scr.console(), reasoning=reasoning), full=full)
        done()
        print_notes(t)
        print_refusal("show", t)
