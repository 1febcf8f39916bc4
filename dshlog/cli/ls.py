"""`dshlog ls`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..ops.sessions import grep_session
from ..output.plain import echo
from ..output.terminal import table
from ..output.text import human_bytes, local_minutes
from ..read.store import (
    default_root,
    list_sessions,
    parse_since,
    project_key,
    sort_entries,
)
from .app import command_app
from .common import emit_json

app = command_app()


@app.command("ls")
def ls_(
    root: Annotated[Optional[str], typer.Argument(metavar="ROOT", help="Persistence root (default: $DSH_HOME/sessions, DSH_HOME defaulting to ~/.dsh).")] = None,
    sort: Annotated[str, typer.Option("--sort", metavar="KEY", help="time (last activity), size, id or turns.")] = "time",
    reverse: Annotated[bool, typer.Option("--reverse", help="Reverse the order.")] = False,
    cwd: Annotated[Optional[str], typer.Option("--cwd", metavar="PATH", help="Only sessions of this project directory.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", metavar="WHEN", help="Only sessions active since a date (2026-11-01) or for a duration back (3d, 12h).")] = None,
    grep: Annotated[Optional[str], typer.Option("--grep", metavar="TEXT", help="Only sessions whose user or assistant messages contain TEXT (case-insensitive).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="NDJSON: one object per session.")] = False,
) -> None:
    """One row per session: id, title, project directory, generation, size, turns, last activity, parent/children.

    Example: dshlog ls --cwd . --since 3d --grep 'migration'
    """
    root_p = Path(root) if root is not None else default_root()
    project = project_key(os.path.abspath(cwd)) if cwd is not None else None
    since_ms = parse_since(since) if since is not None else None
    entries = list_sessions(root_p, project=project)
    if since_ms is not None:
        entries = [e for e in entries if (e.last_activity or 0) >= since_ms]
    if grep is not None:
        entries = [e for e in entries if e.path is not None and grep_session(e.path, grep)]
    entries = sort_entries(entries, sort, reverse=reverse)
    if json_:
        for e in entries:
            emit_json(e.as_dict(), pretty=False)
        return
    for e in entries:
        if e.error:
            echo(f"dshlog: {e.dir}: {e.error}", sys.stderr)

    def links(e: Any) -> str:
        bits = []
        if e.parent:
            bits.append(f"parent {e.parent}" + (" (subagent)" if e.origin == "subagent" else ""))
        if e.children:
            bits.append(f"children {', '.join(e.children)}")
        return "; ".join(bits)

    table(
        None,
        ["id", "title", "cwd", "generation", "size", "turns", "last activity", "links"],
        (
            [e.id, e.title or "", e.cwd or "", f"{e.path.name} v{e.version}" if e.path else "-", human_bytes(e.size), e.turns, local_minutes(e.last_activity), links(e)]
            for e in entries
        ),
        justify={4: "right", 5: "right"},
    )

