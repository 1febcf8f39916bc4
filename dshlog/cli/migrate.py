"""`dshlog migrate`."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ..ops.migrate import MigrationOutcome, find_sessions, migrate_all
from ..protocol.vocabulary import CURRENT_VERSION
from .app import command_app
from .common import batch_executor, batch_source, emit_json, err, JobsOpt, JsonOpt, out, resolve, SchedulerOpt

app = command_app()


@app.command("migrate")
def migrate(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="PATH", help="Session files, session directories, session ids, or roots to walk (--recursive). Default: the current directory's latest session.")] = None,
    recursive: Annotated[bool, typer.Option("--recursive", "-R", help="Walk directories for every session below them.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 0 when nothing needs migrating, 10 when something does; write nothing.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Migrate in memory and report what would be published, with event counts.")] = False,
    no_children: Annotated[bool, typer.Option("--no-children", help="State that the sessions have no child sessions (needed outside a dsh persistence root).")] = False,
    json_: JsonOpt = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Upgrade v0..v3 sessions to v4 by publishing session.v4.jsonl[.zstd] beside the old file, as dsh does.

    The old generation stays byte-identical; a session already at v4 is skipped; a second run changes nothing.

    Example: dshlog migrate --recursive ~/.dsh/sessions --check || dshlog migrate --recursive ~/.dsh/sessions
    """
    # session ids (or unique prefixes) stand for their generation files; no PATH means the current session
    paths = [p if os.path.exists(p) else resolve(p) for p in paths] if paths else [resolve(None)]
    sources = list(find_sessions(paths, recursive=recursive))
    # on a terminal, progress is drawn by the batch's executor (batch_executor): one line on stderr
    def report(o: MigrationOutcome) -> None:
        if json_:
            return
        if o.status == "failed":
            out(f"failed {o.source}")  # a result like the others, on stdout, naming its session
            err(f"dshlog: {o.error}")  # and why, as every error is said: on stderr, naming it too
            for note in o.notes:  # what may bring it back (dshlog rescue)
                err(f"dshlog: {o.source}: {note}")
        elif o.status == "migrated":
            out(f"migrated {o.source} -> {o.target} ({o.events} events)")
        elif o.status == "would-migrate":
            out(f"would publish {o.target} ({o.events} events, from v{o.version})")
        elif o.status == "needed":
            out(f"needs migration: {o.source} (v{o.version})")
        for w in o.warnings:
            err(f"dshlog: warning: {o.source}: {w}")

    with batch_executor(jobs, scheduler) as ex:
        batch = migrate_all(sources, check=check, dry_run=dry_run, children="none" if no_children else "auto",
                            source=batch_source(), executor=ex, progress=report)
    counts = batch.summary
    if json_:
        emit_json(batch.as_dict())
    else:
        err(
            f"{counts['migrated']} migrated, {counts['current']} skipped (already v{CURRENT_VERSION}), {counts['failed']} failed"
            + (f", {counts['needed']} need migration" if check else "")
            + (f", {counts['would-migrate']} would migrate" if dry_run else "")
        )
    raise typer.Exit(int(batch.exit_code))
