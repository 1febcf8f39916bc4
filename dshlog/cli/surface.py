"""`dshlog surface`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Optional

import typer

from ..ops.surface import surface_rows
from ..output.table import Column, table
from .app import command_app
from .common import (
    done,
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    UnknownOpt,
    BatchedStdout,
    cache_dir,
    out,
    print_notes,
    read_progress,
    source_for,
    resolve,
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
    path = resolve(file)
    # the lean fold: a row per node, not its message; --messages reads the messages again as they are written
    view = surface_rows(source_for(path, select=select, format_version=format_version), at=at,
                        allow_unknown=allow_unknown, progress=read_progress(), cache=cache_dir())
    done()
    if json_:
        batch = BatchedStdout()
        for piece in view.json_pieces(messages=messages):
            batch.write(piece)
        batch.write(b"\n")
        batch.flush()
        return
    seqs: list[int] = []
    roles: list[Any] = []

    def cells() -> Iterator[list[Any]]:
        """The table's rows, noting each node's seq and role on the way: the rows are made once."""
        for n in view.rows():
            seqs.append(n.seq)
            if not n.empty:
                roles.append(n.role)
            yield [n.seq, n.type, (n.role or "") + (" (empty)" if n.empty else ""), n.preview]

    # seq, type and role identify a node and are never cut; the preview takes what the screen leaves
    table(screen(), None, [Column("seq", "right"), Column("type"), Column("role"), Column("preview", flex=True)], cells())
    out(f"nodes: {seqs}")
    out(f"roles: {', '.join(str(r) for r in roles)}")
    for r in view.replacements():
        out(f"replacement: seq {r['seq']} replaced {r['start']}..{r['end']} (shadowed {', '.join(map(str, r['shadowedSeqs']))})")
    print_notes(view)
