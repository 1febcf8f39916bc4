"""`dshlog info`."""

from __future__ import annotations

from ..model.summary import summarize
from ..output import labels
from ..ops.results import SessionInfo
from ..read.container import torn_text
from ..output.terminal import table
from ..output.text import human_bytes
from .app import command_app
from .common import (
    FileArg,
    FormatOpt,
    JsonOpt,
    SelectOpt,
    emit_json,
    js,
    open_log,
    out,
    print_notes,
    screen,
)

app = command_app()


@app.command("info")
def info(file: FileArg = None, json_: JsonOpt = False, select: SelectOpt = None, format_version: FormatOpt = None) -> None:
    """Header fields, version, generation, counts by event type, turns, steps, model calls, tokens, sizes.

    Example: dshlog info session.v4.jsonl --json | jq .summary.tokens
    """
    log = open_log(file, strict=False, select=select, format_version=format_version)
    with log:
        s = summarize(log.stored_runs())
        if json_:
            emit_json(SessionInfo.of(log, s).as_dict())
            return
        h = log.header or {}
        out(f"file        {log.path}")
        out(f"container   {log.info.container}" + (f", {log.info.frames} frames" if log.info.container == "jsonl.zstd" else ""))
        out(f"version     v{log.version}" + ("  (test-snapshot projection: no seq/time)" if log.projection else ""))
        if h:
            out("header      " + ", ".join(f"{k}={v if isinstance(v, str) else js(v)}" for k, v in h.items() if k != "type"))
        else:
            out("header      (none)")
        out(f"size        {human_bytes(log.info.size_on_disk)} on disk, {human_bytes(log.info.decoded_bytes)} decoded")
        if log.info.torn:
            out(f"torn tail   {torn_text(log.info.torn, log.info.size_on_disk).removeprefix('torn tail ignored: ')}")
        if s.title:
            out(f"title       {s.title}")
        out(f"events      {s.events}" + (f" (seq {s.first_seq}..{s.last_seq})" if s.events else ""))
        out(f"turns       {s.turns}" + (" (last turn open)" if s.turns_open else ""))
        out(f"steps       {s.steps}")
        out(f"model calls {s.model_calls} ({s.attempts} without surface message, {s.interrupted} interrupted)")
        if s.tokens:
            out("tokens      " + labels.tokens_text(s.tokens))
        table(screen(), "events by type", ["type", "count"], sorted(s.by_type.items(), key=lambda kv: (-kv[1], str(kv[0]))), justify={1: "right"})
        print_notes(log)

