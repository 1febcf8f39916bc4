"""`dshlog diff`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..errors import UsageError
from ..ops.diff import request_diff
from ..output.diff import diff_lines
from .app import command_app
from .common import (
    FormatOpt,
    JsonOpt,
    SelectOpt,
    emit_json,
    may_fork,
    out,
    plugins,
    print_notes,
    resolve,
    stdin_for,
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
    options: dict[str, Any] = {"read": print_notes, "select": select, "format_version": format_version, "system_prompt_plugins": plugins(),
               "parallel": may_fork()}
    if len(files) == 1:
        if len(request) != 2:
            raise UsageError("with one FILE give exactly two --request options (e.g. --request 3 --request 4)")
        path = resolve(files[0])
        d = request_diff(path, request[0], request[1], stream_a=stdin_for(path), **options)
        label_a, label_b = f"request {request[0]}", f"request {request[1]}"
    elif len(files) == 2:
        if len(request) not in (1, 2):
            raise UsageError("with two files give --request N (or one --request per file)")
        numbers = [request[0], request[-1]]
        a, b = resolve(files[0]), resolve(files[1])
        d = request_diff(a, numbers[0], numbers[1], b=b, stream_a=stdin_for(a), stream_b=stdin_for(b), **options)
        label_a, label_b = f"{files[0]} request {numbers[0]}", f"{files[1]} request {numbers[1]}"
    else:
        raise UsageError("give one FILE with two --request options, or two files")
    if json_:
        emit_json(d.as_dict(label_a, label_b))
        return
    for line in diff_lines(dict(d.changes), label_a, label_b):
        out(line)
