"""`dshlog fork`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..ops.fork import fork_session
from .app import command_app
from .common import (
    closer_lines, current, emit_json, err, FileArg, FormatOpt, JsonOpt, out, resolve, SelectOpt, source_for,
)

app = command_app()


@app.command("fork")
def fork(
    file: FileArg = None,
    *,
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Where to write the child log: a file, a directory to create it in (existing, or ending in /), or a persistence root, where it goes where dsh keeps it (<root>/<project>/<id>/). Default: the parent's persistence root.")] = None,
    at: Annotated[Optional[int], typer.Option("--at", metavar="SEQ", help="Inclusive last parent seq (dsh's fork boundary). Default: the last event.")] = None,
    at_turn: Annotated[Optional[int], typer.Option("--at-turn", metavar="N", help="Cut right after turn N's turn/end.")] = None,
    child_id: Annotated[Optional[str], typer.Option("--id", metavar="ID", help="Child session id (default: a fresh UUID).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """A child session from a prefix of the parent: prefix, inherited end-seed marker, forked closers.

    The parent is never modified; the child is written atomically and never over an existing file.

    Example: dshlog fork session.v4.jsonl --at 15 -o child/
    """
    if at is not None and at_turn is not None:
        raise UsageError("choose either --at SEQ or --at-turn N")
    file = resolve(file)
    result = fork_session(source_for(file, select=select, format_version=format_version), output, at=at, turn=at_turn,
                          child_id=child_id, created_at=int(current().env.now() * 1000))
    if json_:
        emit_json(result.as_dict())
        return
    for w in result.warnings:
        err(f"dshlog: warning: {w}")
    out(f"{result.path}: child {result.child_id} of {result.parent_id}: {result.events} events "
         f"(parent prefix 0..{result.at}, marker at {result.at + 1}, {len(result.closers)} closers)")
    for line in closer_lines(result.closers):
        out(f"  {line}")
