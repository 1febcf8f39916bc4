"""`dshlog requests`."""

from __future__ import annotations

from ..errors import DshlogError
from ..model.requests import RequestInfo, iter_requests
from ..output import labels
from ..ops.results import RequestRow
from ..output.terminal import table
from ..protocol.jsjson import dumps
from .app import command_app
from .common import (
    BatchedStdout,
    FileArg,
    FormatOpt,
    JSON_SHAPE,
    JsonOpt,
    SelectOpt,
    UnknownOpt,
    located,
    open_log,
    print_notes,
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
    log = open_log(file, select=select, format_version=format_version)

    def rows() -> list[RequestInfo]:
        # dsh's decision on the whole log comes before any row is shown
        try:
            with log.v4(allow_unknown=allow_unknown) as view:
                return list(iter_requests(view, session_id=log.session_id, strict_unknown=not allow_unknown))
        except DshlogError as exc:
            raise located(log, exc)  # noqa: B904 - the error itself, located

    with log:
        if not json_:
            found = rows()  # dsh's decision, and every row, before the table's header is printed
        if json_:
            # streamed, one request per line, so memory stays flat however many requests the log holds

            out = BatchedStdout()
            out.write(b'{"shape":%d,"requests":[' % JSON_SHAPE)
            sep = b"\n"
            for r in rows():
                out.write(sep + dumps(RequestRow.of(r).as_dict()))
                sep = b",\n"
            out.write(b"\n]}\n")
            out.flush()
            return
        table(screen(),
            None,
            ["#", "seq", "settled as", "turn.step", "msgs", "extends", "why not", labels.token_name("inputTokens"), labels.token_name("outputTokens")],
            (
                [
                    r.number,
                    r.seq,
                    r.kind.split("/")[1] + (f" ({labels.INTERRUPTED})" if r.interrupted else ""),
                    f"{r.turn}.{r.step}",
                    r.message_count,
                    "-" if r.extends is None else ("yes" if r.extends else "no"),
                    r.reason or "",
                    labels.count(r.input_tokens),
                    labels.count(r.output_tokens),
                ]
                for r in found
            ),
            justify={0: "right", 1: "right", 4: "right", 7: "right", 8: "right"},
        )
        print_notes(log)
