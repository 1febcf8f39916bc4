"""`dshlog events`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..ops.events import EventFilter, event_stream
from .app import command_app
from .common import (
    BatchedStdout,
    DeferredStdout,
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    event_bytes,
    line_width,
    print_notes,
    source_for,
    release,
    resolve,
)

app = command_app()


@app.command("events")
def events(
    file: FileArg = None,
    type_: Annotated[list[str], typer.Option("--type", "-t", metavar="TYPE", help="Only these event types (glob, e.g. 'tool/*'); repeatable.")] = [],
    turn: Annotated[Optional[int], typer.Option("--turn", help="Only events of turn N (turn/start N through turn/end N).")] = None,
    from_seq: Annotated[Optional[int], typer.Option("--from", metavar="SEQ", help="First seq to show.")] = None,
    to_seq: Annotated[Optional[int], typer.Option("--to", metavar="SEQ", help="Last seq to show.")] = None,
    v4: Annotated[bool, typer.Option("--v4", help="Show the events migrated to v4 (in memory) instead of the stored version.")] = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """One line per event: seq, type, how it enters the model view, a preview.

    With --json each event is one line of dsh's own JSON (a strict v4 log is reproduced byte for byte), ready for jq.

    Example: dshlog events session.v4.jsonl --type 'tool/*' --turn 2
    """
    path = resolve(file)
    # the stored rows are shown as far as they can be read; --v4 is dsh's view, decided as dsh decides
    flt = EventFilter(tuple(type_), turn, from_seq, to_seq)
    width = line_width()
    with event_stream(source_for(path, select=select, format_version=format_version), v4=v4, flt=flt) as events:
        # dsh's view, or a filter that may find at the end that its turn or seq does not exist: nothing before the end
        out = DeferredStdout() if events.deferred else BatchedStdout()
        write = out.write
        if json_ and not events.filtered:
            # the common `events --json | jq` case: no bookkeeping, original bytes where we have them
            for line in events.lines():
                write(line + b"\n")
        else:
            for ev, raw in events:
                write(event_bytes(ev, raw, json_, width))
        release(out, events)
        print_notes(events)
