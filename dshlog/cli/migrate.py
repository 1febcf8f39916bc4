"""`dshlog migrate`."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from ..errors import ExitCode
from ..ops.migrate import find_sessions, migrate_session
from ..output.plain import echo
from ..output.terminal import console
from .app import command_app
from .common import JSON_SHAPE, JsonOpt, emit_json, plugins, resolve

app = command_app()


@app.command("migrate")
def migrate(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="PATH", help="Session files, session directories, session ids, or roots to walk (--recursive). Default: the current directory's latest session.")] = None,
    recursive: Annotated[bool, typer.Option("--recursive", "-R", help="Walk directories for every session below them.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 0 when nothing needs migrating, 10 when something does; write nothing.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Migrate in memory and report what would be published, with event counts.")] = False,
    no_children: Annotated[bool, typer.Option("--no-children", help="State that the sessions have no child sessions (needed outside a dsh persistence root).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Upgrade v0..v3 sessions to v4 by publishing session.v4.jsonl[.zstd] beside the old file, as dsh does.

    The old generation stays byte-identical; a session already at v4 is skipped; a second run changes nothing.

    Example: dshlog migrate --recursive ~/.dsh/sessions --check || dshlog migrate --recursive ~/.dsh/sessions
    """
    # session ids (or unique prefixes) stand for their generation files; no PATH means the current session
    paths = [p if os.path.exists(p) else resolve(p) for p in paths] if paths else [resolve(None)]
    sources = list(find_sessions(paths, recursive=recursive))
    outcomes = []
    progress = None
    if len(sources) > 1 and sys.stderr.isatty() and not json_:
        from rich.progress import (
            Progress,  # lazy: heavy, only for a progress bar on a terminal
        )

        progress = Progress(console=console(stderr=True), transient=True)
        task = progress.add_task("migrating", total=len(sources))
        progress.start()
    try:
        for src in sources:
            o = migrate_session(src, check=check, dry_run=dry_run, children="none" if no_children else "auto",
                                system_prompt_plugins=plugins())
            outcomes.append(o)
            if progress is not None:
                progress.advance(task)
            if not json_:
                if o.status == "failed":
                    echo(f"dshlog: {o.error}", sys.stderr)
                elif o.status == "migrated":
                    echo(f"migrated {o.source} -> {o.target} ({o.events} events)")
                elif o.status == "would-migrate":
                    echo(f"would publish {o.target} ({o.events} events, from v{o.version})")
                elif o.status == "needed":
                    echo(f"needs migration: {o.source} (v{o.version})")
                for w in o.warnings:
                    echo(f"dshlog: warning: {w}", sys.stderr)
    finally:
        if progress is not None:
            progress.stop()
    counts = {k: sum(1 for o in outcomes if o.status == k) for k in ("migrated", "current", "needed", "would-migrate", "failed")}
    if json_:
        emit_json({"shape": JSON_SHAPE, "sessions": [o.as_dict() for o in outcomes], "summary": counts})
    else:
        print(
            f"{counts['migrated']} migrated, {counts['current']} skipped (already v4), {counts['failed']} failed"
            + (f", {counts['needed']} need migration" if check else "")
            + (f", {counts['would-migrate']} would migrate" if dry_run else ""),
            file=sys.stderr,
        )
    failed = [o.exit_code for o in outcomes if o.status == "failed"]
    if failed:
        raise typer.Exit(int(max(failed)))
    if check and counts["needed"]:
        raise typer.Exit(int(ExitCode.PENDING))

