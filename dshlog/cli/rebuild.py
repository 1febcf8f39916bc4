"""`dshlog rebuild`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import DshlogError
from ..model.requests import rebuild as rebuild_request
from .app import command_app
from .common import (
    FileArg,
    FormatOpt,
    SelectOpt,
    UnknownOpt,
    emit_json,
    located,
    open_log,
    print_notes,
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
    log = open_log(file, select=select, format_version=format_version)
    with log:
        try:
            with log.v4(allow_unknown=allow_unknown) as view:
                req = rebuild_request(view, request, session_id=log.session_id, strict_unknown=not allow_unknown)
        except DshlogError as exc:
            raise located(log, exc)  # noqa: B904 - the error itself, located
        emit_json(req["messages"] if messages_only else req, pretty=not compact)
        print_notes(log)

