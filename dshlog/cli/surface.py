"""`dshlog surface`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..check.surface import fold
from ..errors import DshlogError, UsageError
from ..output.terminal import table
from ..ops.results import SurfaceView
from ..output.text import preview
from .app import command_app
from .common import (
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    UnknownOpt,
    emit_json,
    located,
    open_log,
    out,
    print_notes,
    screen,
)

app = command_app()


@app.command("surface")
def surface(
    file: FileArg = None,
    at: Annotated[Optional[int], typer.Option("--at", metavar="SEQ", help="Fold only the prefix up to and including this seq.")] = None,
    messages: Annotated[bool, typer.Option("--messages", help="With --json, include the derived messages.")] = False,
    allow_unknown: UnknownOpt = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The model view: surface nodes (seq, type, role, preview), derived roles, and replacements.

    Older logs are migrated to v4 in memory first (nothing is written).

    Example: dshlog surface session.v4.jsonl --at 15
    """
    log = open_log(file, select=select, format_version=format_version)
    with log:
        try:
            with log.v4(allow_unknown=allow_unknown) as view:
                state = fold(view, until_seq=at, strict_unknown=not allow_unknown)
        except DshlogError as exc:
            raise located(log, exc)  # noqa: B904 - the error itself, located
        if at is not None and state.next_seq <= at:

            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        if json_:
            emit_json(SurfaceView(tuple(state.node_info()), tuple(state.messages()), tuple(state.replacements)).as_dict(messages=messages))
            return
        nodes = [{**{k: v for k, v in n.items() if k != "message"}, "preview": preview(n["message"])} for n in state.node_info()]
        roles = [m.get("role") for m in state.messages()]
        table(screen(), None, ["seq", "type", "role", "preview"], ([n["seq"], n["type"], (n["role"] or "") + (" (empty)" if n["empty"] else ""), n["preview"]] for n in nodes), justify={0: "right"})
        out(f"nodes: {[n['seq'] for n in nodes]}")
        out(f"roles: {', '.join(str(r) for r in roles)}")
        for r in state.replacements:
            out(f"replacement: seq {r['seq']} replaced {r['start']}..{r['end']} (shadowed {', '.join(map(str, r['shadowedSeqs']))})")
        print_notes(log)

