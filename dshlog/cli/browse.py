"""`dshlog browse`: the only command that loads Textual (this module is imported when it runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..browse.app import BrowseApp
from ..errors import UsageError
from ..read.store import is_session_directory
from .app import command_app
from .common import batch_source, current, print_refusal, resolve, root as default_root, ShownRefusal
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, selection

app = command_app()


@app.command("browse")
def browse(
    target: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[ROOT|FILE]",
            help="A persistence root to list its sessions (default: $DSH_HOME/sessions), or one session: a file, "
            "a session directory or a session id (prefix).",
        ),
    ] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    cwd: CwdOpt = None,
) -> None:
    """Read sessions interactively: a root's sessions, or one session's conversation, events, surface and requests.

    In a session: ] and [ move by turn (or page), g jumps to a turn or a seq, / n N search, c and y copy a
    seq or an event's JSON, Enter opens an event's JSON or a request's diff, ? lists every key, q quits.
    The log is never held: pages are read from it as they are shown.

    The list shows the sessions --since, --until, --project and --cwd keep (as ls); f filters it further
    by text (smart case: a filter with an upper-case letter matches case).

    Example: dshlog browse ~/.dsh/sessions --cwd . --since 7d
    """
    env = current().env
    chosen = selection(since, until, project, cwd)  # a usage error before the terminal is taken
    if not (env.stdin_isatty and env.stdout_isatty):
        raise UsageError("browse needs a terminal (for a transcript on stdout use show or export)")
    if target is None:
        root: Path | None = default_root()
        session = None
    elif target and Path(target).is_dir() and not is_session_directory(Path(target)):
        root, session = Path(target), None
    else:
        root, session = None, resolve(target)
    if session is not None and (since, until, project, cwd) != (None, None, None, None):
        raise UsageError("--since, --until, --project and --cwd select sessions of a root; give a ROOT, not one session")
    app_ = BrowseApp(root=root, target=session, source=batch_source(), selection=chosen if root is not None else None)
    app_.run()
    for refused, rescue in app_.refused.values():  # once the terminal is given back: said as show says it
        print_refusal("browse", ShownRefusal(refused, rescue))
