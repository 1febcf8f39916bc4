"""`dshlog requests`."""

from __future__ import annotations

from ..ops.requests import request_series
from ..output import labels
from ..output.table import Column, table
from ..protocol.jsjson import dumps
from .app import command_app
from .common import (
    done,
    BatchedStdout,
    FileArg,
    FormatOpt,
    JSON_SHAPE,
    JsonOpt,
    SelectOpt,
    UnknownOpt,
    cache_dir,
    print_notes,
    read_progress,
    source_for,
    resolve,
    screen,
)

app = command_app()


@app.command("requests")
def requests(
    file: FileArg = None,
    allow_unknown: UnknownOpt = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Every request in one table: settlement, message count, prefix reuse and why it broke, tokens.

    "extends" says whether the request starts with the previous request's messages byte for byte, which is
    what a provider's prefix cache needs; when it does not, "reason" says why.

    Example: dshlog requests session.v4.jsonl --json | jq '.requests[] | select(.extends == false)'
    """
    path = resolve(file)
    # dsh's decision on the whole log, and every row, before anything is printed
    series = request_series(source_for(path, select=select, format_version=format_version), allow_unknown=allow_unknown,
                            progress=read_progress(), cache=cache_dir())
    done()
    if json_:
        # one request per line: a long series reads (and pipes) row by row
        out = BatchedStdout()
        out.write(b'{"shape":%d,"requests":[' % JSON_SHAPE)
        sep = b"\n"
        for r in series.requests:
            out.write(sep + dumps(r.as_dict()))
            sep = b",\n"
        out.write(b"\n]}\n")
        out.flush()
        return
    table(screen(),
        None,
        [Column("#", "right"), Column("seq", "right"), Column("settled as"), Column("turn.step"), Column("msgs", number=True), Column("extends"),
         Column("why not"), Column(labels.token_name("inputTokens"), number=True), Column(labels.token_name("outputTokens"), number=True)],
        (
            [
                r.number,
                r.settlement_seq,
                r.settlement.split("/")[1] + (f" ({labels.INTERRUPTED})" if r.interrupted else ""),
                f"{r.turn}.{r.step}",
                r.messages,
                "-" if r.extends is None else ("yes" if r.extends else "no"),
                r.reason or "",
                r.input_tokens,
                r.output_tokens,
            ]
            for r in series.requests
        ),
    )
    print_notes(series)
