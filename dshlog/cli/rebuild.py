"""`dshlog rebuild`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..ops.views import rebuild_request
from .app import command_app
from .common import (
    done,
    FileArg,
    FormatOpt,
    SelectOpt,
    UnknownOpt,
    emit,
    print_notes,
    read_progress,
    reading,
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
    req = rebuild_request(path, request, allow_unknown=allow_unknown, select=select, format_version=format_version,
                          **reading(path), progress=read_progress())
    done()
    emit(req.to_json(pretty=not compact, messages_only=messages_only) + b"\n")
    print_notes(req)
