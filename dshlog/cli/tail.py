"""`dshlog tail`."""

from __future__ import annotations

import sys
from collections import deque
from typing import Annotated

import typer

from ..check.problems import Problems
from ..errors import Location, UsageError
from ..output.plain import echo
from ..protocol.jsjson import JsonError, loads
from ..read.follow import Follower
from ..read.rows import RowDecoder
from ..read.session import open_session
from .app import command_app
from .common import (
    FileArg,
    FormatOpt,
    JsonOpt,
    event_bytes,
    open_log,
    print_notes,
    resolve,
)

app = command_app()


@app.command("tail")
def tail(
    file: FileArg = None,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing events as dsh appends them (Ctrl-C to stop).")] = False,
    lines: Annotated[int, typer.Option("-n", "--lines", metavar="N", help="How many of the last events to print first.")] = 10,
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS", help="With -f: how often to look for new events.")] = 0.25,
    json_: JsonOpt = False,
    format_version: FormatOpt = None,
) -> None:
    """The last N events, printed as `events` prints them; with -f, follow a live session (plain or .zstd).

    A line or frame still being written is shown only once it is complete.

    Example: dshlog tail -f -n 20
    """
    if lines < 0:
        raise UsageError("-n must be 0 or more")
    write = sys.stdout.buffer.write
    if not follow:
        log = open_log(file, strict=False, format_version=format_version)
        with log:
            last: deque[bytes] = deque((), maxlen=lines)
            for r in log.stored():
                last.append(event_bytes(r.event, r.raw, json_))
            for b in last:
                write(b)
            print_notes(log)
        return

    target = resolve(file)
    if target == "-":
        raise UsageError("tail -f needs a file: standard input cannot be followed")
    with open_session(target, strict=False, format_version=format_version) as log:  # header, version, container
        path, version, container = log.path, log.version, log.info.container
    if container not in ("jsonl", "jsonl.zstd"):
        raise UsageError(f"tail -f follows JSONL generations; this input is {container}", path=path)
    decoder = RowDecoder(version, path, strict=False, notes=Problems())
    fol = Follower(path, poll_interval=interval)
    state = {"header": True, "line": 0}

    def decode(raw: bytes) -> list[bytes]:
        state["line"] += 1
        if state["header"]:
            state["header"] = False
            try:
                obj = loads(raw)
            except JsonError:
                obj = None
            if isinstance(obj, dict) and obj.get("type") == "session":
                return []
        try:
            obj = loads(raw)
        except JsonError:
            echo(f"dshlog: {path}: line {state['line']}: unparsable committed line skipped", sys.stderr)
            return []
        evs = decoder.decode(obj, Location(line=state["line"]))
        return [event_bytes(ev, raw if len(evs) == 1 and ev is obj else None, json_) for ev in evs]

    try:
        last = deque((), maxlen=lines)
        for raw in fol.drain():
            last.extend(decode(raw))
        for b in last:
            write(b)
        sys.stdout.flush()
        for raw in fol.follow():
            for b in decode(raw):
                write(b)
            sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stdout.flush()
        return

