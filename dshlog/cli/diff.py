"""`dshlog diff`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import UsageError
from ..ops.diff import request_diff
from ..output.diff import diff_lines
from .app import command_app
from .common import emit_json, FormatOpt, JsonOpt, out, print_notes, resolve, SelectOpt, source_for

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
        path = resolve(files[0])
        d = request_diff(source_for(path, select=select, format_version=format_version), request[0], request[1],
                         read=print_notes)
        label_a, label_b = f"request {request[0]}", f"request {request[1]}"
    elif len(files) == 2:
        if len(request) not in (1, 2):
            raise UsageError("with two files give --request N (or one --request per file)")
        numbers = [request[0], request[-1]]
        a, b = resolve(files[0]), resolve(files[1])
        d = request_diff(source_for(a, select=select, format_version=format_version), numbers[0], numbers[1],
                         b=source_for(b, select=select, format_version=format_version), read=print_notes)
        label_a, label_b = f"{files[0]} request {numbers[0]}", f"{files[1]} request {numbers[1]}"
    else:
        raise UsageError("give one FILE with two --request options, or two files")
    if json_:
        emit_json(d.as_dict(label_a, label_b))
        return
    for line in diff_lines(dict(d.changes), label_a, label_b):
        out(line)
