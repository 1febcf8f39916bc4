"""`dshlog rebuild`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..ops.rebuild import rebuild_text
from .app import command_app
from .common import (
    BatchedStdout,
    done,
    FileArg,
    FormatOpt,
    SelectOpt,
    UnknownOpt,
    cache_dir,
    print_notes,
    read_progress,
    source_for,
    resolve,
)

app = command_app()


@app.command("rebuild")
def rebuild(
    file: FileArg = None,
    *,
    request: Annotated[int, typer.Option("--request", "-r", metavar="N", help="Request number (1-based; the N-th settlement).")],
    messages_only: Annotated[bool, typer.Option("--messages-only", help="Only the messages array.")] = False,
    compact: Annotated[bool, typer.Option("--compact", help="One line of compact JSON instead of 2-space indentation.")] = False,
    allow_unknown: UnknownOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The exact request dsh sent, rebuilt from the log alone, as dsh's JSON.

    Request N is the one settled by the N-th assistant/message or assistant/attempt, built from the events before it.

    Example: dshlog rebuild session.v4.jsonl --request 3 --messages-only
    """
    path = resolve(file)
    # the messages are spilled as they are folded and written piece by piece: the request never exists whole
    with rebuild_text(source_for(path, select=select, format_version=format_version), request, pretty=not compact,
                      messages_only=messages_only, allow_unknown=allow_unknown, progress=read_progress(),
                      cache=cache_dir()) as req:
        done()
        batch = BatchedStdout()
        for piece in req.pieces():
            batch.write(piece)
        batch.write(b"\n")
        batch.flush()
    print_notes(req)
