"""`dshlog events`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Optional

import typer

from ..errors import DshlogError
from ..ops.events import EventFilter, filtered
from ..protocol.jsjson import dumps
from .app import command_app
from .common import (
    BatchedStdout,
    DeferredStdout,
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    event_bytes,
    located,
    open_log,
    print_notes,
    release,
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
    # the stored rows are shown as far as they can be read; --v4 is dsh's view, decided as dsh decides
    log = open_log(file, strict=v4, select=select, format_version=format_version)
    with log:
        view = log.v4() if v4 else None
        source: Iterator[tuple[dict[str, Any], bytes | None]]
        if view is not None:
            source = ((ev, None) for ev in view)
        else:
            source = ((r.event, r.raw) for r in log.stored())
        flt = EventFilter(tuple(type_), turn, from_seq, to_seq)
        # a filter may find at the end that its turn or seq does not exist: then nothing is printed
        out = DeferredStdout() if view is not None or flt.active else BatchedStdout()
        write = out.write
        try:
            if json_ and not flt.active:
                # the common `events --json | jq` case: no bookkeeping, original bytes where we have them
                for ev, raw in source:
                    write((raw if raw is not None else dumps(ev)) + b"\n")
            else:
                for ev, raw in filtered(source, flt):
                    write(event_bytes(ev, raw, json_))
        except DshlogError as exc:
            raise located(log, exc)  # noqa: B904 - the error itself, located
        release(out, view)
        print_notes(log)
