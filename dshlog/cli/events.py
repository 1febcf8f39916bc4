"""`dshlog events`."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Annotated, Any, Optional

import typer

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
        out = DeferredStdout() if view is not None else BatchedStdout()
        write = out.write
        if json_ and not (type_ or turn is not None or from_seq is not None or to_seq is not None):
            # the common `events --json | jq` case: no bookkeeping, original bytes where we have them
            for ev, raw in source:
                write((raw if raw is not None else dumps(ev)) + b"\n")
            release(out, view)
            print_notes(log)
            return
        current_turn = None
        for ev, raw in source:
            t = ev.get("type")
            seq = ev.get("seq")
            data: Any = ev.get("data") if isinstance(ev.get("data"), dict) else {}
            if t == "turn/start":
                current_turn = data.get("turn")
            in_turn = current_turn
            if t == "turn/end":
                current_turn = None
            if turn is not None and in_turn != turn:
                continue
            if from_seq is not None and (type(seq) is not int or seq < from_seq):
                continue
            if to_seq is not None and type(seq) is int and seq > to_seq:
                break
            if type_ and not any(fnmatch.fnmatchcase(str(t), pat) for pat in type_):
                continue
            write(event_bytes(ev, raw, json_))
        release(out, view)
        print_notes(log)

