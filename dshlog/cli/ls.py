"""`dshlog ls`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..ops.outcome import worst
from ..ops.sessions import list_store, unique_prefixes
from ..output.labels import shared_reason
from ..output.table import Column, table
from ..model.period import zone_named
from ..output.text import human_bytes, local_minutes, zone_text
from ..read.store import SessionEntry
from .app import command_app
from .common import (
    batch_executor, batch_source, cache_dir, current, emit_json, err, JobsOpt, root, SchedulerOpt, screen,
)
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, say, selection

app = command_app()

SORT_KEYS = ("time", "size", "id", "turns")


def _links(e: SessionEntry) -> str:
    bits = []
    if e.parent:
        bits.append(f"parent {e.parent}" + (" (subagent)" if e.origin == "subagent" else ""))
    if e.children:
        bits.append(f"children {', '.join(e.children)}")
    return "; ".join(bits)


@app.command("ls")
def ls_(
    root_arg: Annotated[Optional[str], typer.Argument(metavar="ROOT", help="Persistence root (default: $DSH_HOME/sessions, DSH_HOME defaulting to ~/.dsh).")] = None,
    sort: Annotated[str, typer.Option("--sort", metavar="KEY", help="time (last activity), size, id or turns.", autocompletion=lambda: list(SORT_KEYS))] = "time",
    reverse: Annotated[bool, typer.Option("--reverse", help="Reverse the order.")] = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    cwd: CwdOpt = None,
    grep: Annotated[Optional[str], typer.Option("--grep", metavar="TEXT", help="Only sessions whose user or assistant messages contain TEXT (smart case: all lower case ignores case, any capital matches exactly).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="NDJSON: one object per session.")] = False,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """One row per session: id, title (or first prompt), project directory, generation, size, turns, last activity, links.

    On a terminal the table fits the width: ids are shortened to a unique prefix (any command takes one),
    long titles are cut with "…" and project directories on the left ("…/api-server"); piped and with --json
    every id and path is whole.

    Example: dshlog ls --cwd . --since 3d --grep 'migration'
    """
    env = current().env
    root_p = Path(root_arg) if root_arg is not None else root()
    chosen = selection(since, until, project, cwd)
    with batch_executor(jobs, scheduler) as ex:  # --grep reads every session: one task each
        entries = list_store(root_p, selection=chosen, grep=grep, sort=sort, reverse=reverse, executor=ex,
                              source=batch_source(), cache=cache_dir())
    say(entries.note)
    current().note_outcome(worst(e.exit_code for e in entries))  # a session it could not read: named, and the exit code
    if json_:
        for e in entries:
            emit_json(e.as_dict(), pretty=False)
        return
    _say_unread(entries)
    scr = screen()
    tz, zone = zone_named(env.timezone)
    short = unique_prefixes([e.id for e in entries if e.id]) if scr.tty else {}
    table(
        scr,
        None,
        [Column("id"), Column("title", flex=True), Column("cwd", path=True, drop=4), Column("generation", drop=2),
         Column("size", "right", drop=3), Column("turns", number=True), Column(f"last activity ({zone_text(tz, zone, env.now() * 1000)})"), Column("links", flex=True, drop=1)],
        (
            [short.get(e.id, e.id) if e.id else "", e.display_title or "", e.cwd or "",
             f"{e.path.name} v{e.version}" if e.path else "-", human_bytes(e.size), e.turns, local_minutes(e.last_activity, tz), _links(e)]
            for e in entries
        ),
    )


def _say_unread(entries: list[SessionEntry]) -> None:
    """Name each session that could not be read, on stderr; a reason many share is said once.

    A root that mixes encodings makes dsh refuse every session in it: one line per session
    would bury the table under the same sentence, so such a reason names how many and the first.
    """
    seen: dict[str, tuple[Path, int]] = {}  # reason -> (the first session with it, how many)
    for e in entries:
        if e.error:
            first, n = seen.get(e.error, (e.dir, 0))
            seen[e.error] = (first, n + 1)
    for reason, (first, n) in seen.items():
        err(f"dshlog: {first if n == 1 else shared_reason(n, first)}: {reason}")
