"""`dshlog diff`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import DshlogError, UsageError
from ..model.diff import diff_requests, requests_at
from ..output.jsondoc import diff_document
from ..output.plain import diff_lines
from .app import command_app
from .common import (
    FormatOpt,
    JSON_SHAPE,
    JsonOpt,
    SelectOpt,
    emit_json,
    located,
    open_log,
    out,
    print_notes,
)

app = command_app()


@app.command("diff")
def diff(
    files: Annotated[list[str], typer.Argument(metavar="FILE [FILE_B]", help="One log (compare two of its requests) or two logs (compare request N of each).")],
    request: Annotated[list[int], typer.Option("--request", "-r", metavar="N", help="Request number (1-based); give two for one file, one (or two) for two files.")] = [],
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """What changed between two requests: config, tools, messages added/removed/replaced, where the byte prefix broke.

    Example: dshlog diff session.v4.jsonl --request 5 --request 6
    """
    if len(files) == 1:
        if len(request) != 2:
            raise UsageError("with one FILE give exactly two --request options (e.g. --request 3 --request 4)")
        log = open_log(files[0], select=select, format_version=format_version)
        with log:
            try:
                with log.v4() as view:
                    built = requests_at(view, list(request), session_id=log.session_id)
            except DshlogError as exc:
                raise located(log, exc)  # noqa: B904 - the error itself, located
            req_a, req_b = built[request[0]], built[request[1]]
            label_a, label_b = f"request {request[0]}", f"request {request[1]}"
            print_notes(log)
    elif len(files) == 2:
        if len(request) not in (1, 2):
            raise UsageError("with two files give --request N (or one --request per file)")
        numbers = [request[0], request[-1]]
        reqs = []
        for f, n in zip(files, numbers):
            log = open_log(f, select=select, format_version=format_version)
            with log:
                try:
                    with log.v4() as view:
                        reqs.append(requests_at(view, [n], session_id=log.session_id)[n])
                except DshlogError as exc:
                    raise located(log, exc)  # noqa: B904 - the error itself, located
                print_notes(log)
        req_a, req_b = reqs
        label_a, label_b = f"{files[0]} request {numbers[0]}", f"{files[1]} request {numbers[1]}"
    else:
        raise UsageError("give one FILE with two --request options, or two files")
    d = diff_requests(req_a, req_b)
    if json_:
        emit_json({"shape": JSON_SHAPE, **diff_document(d, label_a, label_b)})
        return
    for line in diff_lines(d, label_a, label_b):
        out(line)

