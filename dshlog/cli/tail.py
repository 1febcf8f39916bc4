"""`dshlog tail`."""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any

import typer

from ..errors import ExitCode, UsageError
from ..ops.events import follower, last_events
from .app import command_app
from .common import FileArg, FormatOpt, JsonOpt, current, err, event_bytes, line_width, print_notes, source_for, resolve

app = command_app()


@app.command("tail")
def tail(
    file: FileArg = None,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing events as dsh appends them, across a repair or a migration that replaces the log (Ctrl-C to stop).")] = False,
    lines: Annotated[int, typer.Option("-n", "--lines", metavar="N", help="How many of the last events to print first.")] = 10,
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS", help="With -f: how often to look for new events.")] = 0.25,
    json_: JsonOpt = False,
    format_version: FormatOpt = None,
) -> None:
    """The last N events, printed as `events` prints them; with -f, follow a live session (plain or .zstd).

    A line or frame still being written is shown only once it is complete. Like `tail -F`, -f follows the
    session's name: when the log is replaced (repair --write) or a newer generation is published (migrate),
    the new file is followed from the event after the last one shown.

    Example: dshlog tail -f -n 20
    """
    if lines < 0:
        raise UsageError("-n must be 0 or more")
    stdout = current().env.stdout
    target = resolve(file)
    width = line_width()
    if not follow:
        last = last_events(source_for(target, format_version=format_version), lines)
        for ev, raw in last.events:
            stdout.write(event_bytes(ev, raw, json_, width))
        print_notes(last)
        return

    fol = follower(source_for(target, format_version=format_version), interval=interval)
    notes = fol.notes
    shown = 0

    def say_notes() -> None:
        nonlocal shown
        for n in list(notes)[shown:]:
            err(f"dshlog: {fol.path}: {n.message}")
        shown = len(list(notes))

    try:
        first: deque[tuple[dict[str, Any], bytes | None]] = deque(fol.drain(), maxlen=lines)  # only N are held
        for ev, raw in first:
            stdout.write(event_bytes(ev, raw, json_, width))
        stdout.flush()
        say_notes()
        for ev, raw in fol.follow():
            stdout.write(event_bytes(ev, raw, json_, width))
            stdout.flush()
            say_notes()
    except KeyboardInterrupt:
        stdout.flush()
        say_notes()
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None  # Ctrl-C ends a follow: 130, as the README's table says
