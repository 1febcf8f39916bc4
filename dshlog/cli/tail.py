"""`dshlog tail`."""

from __future__ import annotations

from collections import deque
from typing import Annotated

import typer

from ..check.problems import Problems
from ..errors import UsageError
from ..read.follow import EventFollower
from ..read.session import open_session
from .app import command_app
from .common import FileArg, FormatOpt, JsonOpt, current, err, event_bytes, open_log, print_notes, resolve

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
    if not follow:
        log = open_log(file, strict=False, format_version=format_version)
        with log:
            last: deque[bytes] = deque((), maxlen=lines)
            for r in log.stored():
                last.append(event_bytes(r.event, r.raw, json_))
            for b in last:
                stdout.write(b)
            print_notes(log)
        return

    target = resolve(file)
    if target == "-":
        raise UsageError("tail -f needs a file: standard input cannot be followed")
    with open_session(target, strict=False, format_version=format_version) as log:  # header, version, container
        path, container = log.path, log.info.container
    if container not in ("jsonl", "jsonl.zstd"):
        raise UsageError(f"tail -f follows JSONL generations; this input is {container}", path=path)
    notes = Problems()
    fol = EventFollower(target, poll_interval=interval, notes=notes, format_version=format_version)
    shown = 0

    def say_notes() -> None:
        nonlocal shown
        for n in list(notes)[shown:]:
            err(f"dshlog: {fol.path}: {n.message}")
        shown = len(list(notes))

    try:
        first: deque[bytes] = deque((), maxlen=lines)
        for ev, raw in fol.drain():
            first.append(event_bytes(ev, raw, json_))
        for b in first:
            stdout.write(b)
        stdout.flush()
        say_notes()
        for ev, raw in fol.follow():
            stdout.write(event_bytes(ev, raw, json_))
            stdout.flush()
            say_notes()
    except KeyboardInterrupt:
        stdout.flush()
