"""`dshlog info`."""

from __future__ import annotations

from datetime import tzinfo

from ..ops.info import SessionInfo, session_info
from ..output import labels
from ..model.period import zone_named
from ..output.table import Column, table
from ..output.text import human_bytes, local_iso
from ..read.container import torn_description
from .app import command_app
from .common import (
    FileArg,
    FormatOpt,
    current,
    JsonOpt,
    SelectOpt,
    cache_dir,
    emit_json,
    js,
    out,
    print_notes,
    source_for,
    resolve,
    screen,
)

app = command_app()


@app.command("info")
def info(file: FileArg = None, json_: JsonOpt = False, select: SelectOpt = None, format_version: FormatOpt = None) -> None:
    """Header fields, version, generation, counts by event type, turns, steps, model calls, tokens, sizes.

    Example: dshlog info session.v4.jsonl --json | jq .summary.tokens
    """
    path = resolve(file)
    result = session_info(source_for(path, select=select, format_version=format_version), cache=cache_dir())
    if json_:
        emit_json(result.as_dict())
        print_notes(result, quiet=True)  # the notes are in the document; the exit code is the same as without --json
        return
    _render(result)
    print_notes(result)


def _render(i: SessionInfo) -> None:
    s = i.summary
    tz, _ = zone_named(current().env.timezone)
    out(f"file        {i.path}")
    out(f"container   {i.container}" + (f", {i.frames} frames" if i.frames is not None else ""))
    out(f"version     v{i.version}" + ("  (test-snapshot projection: no seq/time)" if i.projection else ""))
    if i.header:
        out("header      " + ", ".join(f"{k}={_value(k, v, tz)}" for k, v in i.header.items() if k != "type"))
    else:
        out("header      (none)")
    out(f"size        {human_bytes(i.size_on_disk)} on disk, {human_bytes(i.decoded_bytes)} decoded")
    if i.torn:
        out(f"torn tail   {torn_description(i.torn, i.size_on_disk)}")
    if s.title:
        out(f"title       {s.title}")
    out(f"events      {s.events}" + (f" (seq {s.first_seq}..{s.last_seq})" if s.events else ""))
    out(f"turns       {s.turns}" + (" (last turn open)" if s.turns_open else ""))
    out(f"steps       {s.steps}")
    out(f"model calls {s.model_calls} ({s.attempts} without surface message, {s.interrupted} interrupted)")
    if s.tokens:
        out("tokens      " + labels.tokens_text(s.tokens))
    table(screen(), "events by type", [Column("type"), Column("count", number=True)], sorted(s.by_type.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def _value(key: str, value: object, tz: tzinfo | None) -> str:
    """A header member as a person reads it: ``createdAt`` as a date-time with its offset (``--json`` keeps the number)."""
    if key == "createdAt":
        when = local_iso(value, tz)
        if when is not None:
            return when
    return value if isinstance(value, str) else js(value)
