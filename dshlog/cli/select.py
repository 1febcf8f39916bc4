"""The options that select sessions, shared by every command over a store (one spelling, one help text).

``ls``, ``report``, ``search``, ``export ROOT``, ``validate``, ``stats`` and ``browse`` declare ``--since``,
``--until``, ``--project`` and ``--cwd`` with these aliases and turn them into one
:class:`~dshlog.model.selection.Selection` with :func:`selection`; the grammar is
:mod:`dshlog.model.selection`'s.  :func:`say` prints a selection's note (``--cwd``
matched nothing) so that an empty answer is never silent.  :func:`of_roots` refuses them
where a command is given one log rather than a root (``export``, ``validate``, ``stats``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..model.period import zone_named
from ..model.selection import Pinned, Selection, parse_selection
from ..read.store import is_session_directory
from .common import current, err

__all__ = ["CwdOpt", "ProjectOpt", "SinceOpt", "UntilOpt", "is_root", "of_roots", "say", "selection"]

#: The forms ``--since`` and ``--until`` take, said once for every command's help.
WHEN_FORMS = "a date (2026-11-01), a date and time (2026-11-01T09:30), today, yesterday, or a duration back (7d, 12h)"

SinceOpt = Annotated[Optional[str], typer.Option("--since", metavar="WHEN", help=f"Only sessions active from then on: {WHEN_FORMS}.")]

UntilOpt = Annotated[Optional[str], typer.Option("--until", metavar="WHEN", help="Only sessions active before then (same forms; a date: up to its end).")]

ProjectOpt = Annotated[Optional[str], typer.Option("--project", metavar="TEXT", help="Only sessions whose project directory contains TEXT.")]

CwdOpt = Annotated[Optional[str], typer.Option("--cwd", metavar="PATH", help="Only sessions of this project directory: a path, or a unique part of one (webapp).")]


def selection(since: str | None = None, until: str | None = None, project: str | None = None, cwd: str | None = None,
              *, timezone: str | None = None) -> Selection:
    """The selecting options as given, parsed against this run's clock, zone (or ``timezone``) and directory."""
    env = current().env
    tz, _ = zone_named(timezone if timezone is not None else env.timezone)
    return parse_selection(since=since, until=until, project=project, cwd=cwd, now_ms=int(env.now() * 1000), tz=tz,
                           base=env.cwd, home=str(env.home))


def say(pinned: Pinned | str | None) -> None:
    """A selection's note on stderr (``--cwd`` matched no session), when it has one."""
    note = pinned.note if isinstance(pinned, Pinned) else pinned
    if note:
        err(f"dshlog: note: {note}")


def is_root(path: str) -> bool:
    """Whether ``path`` holds sessions to select among: a persistence root or a project directory, not one session's."""
    return Path(path).is_dir() and not is_session_directory(Path(path))


def of_roots(chosen: Selection, given: Sequence[str | None], hint: str = "give a ROOT or a project directory") -> None:
    """Refuse the selecting options unless every target in ``given`` is a root or project directory.

    They select sessions of a root; on one log (a file, a session directory, ``-``, an id,
    the current session: ``None``) there is nothing to select, and a filter that kept or
    dropped the one log a person named would only hide it.  ``hint``: what to give instead.
    """
    if chosen != Selection() and not all(g is not None and is_root(g) for g in given):
        raise UsageError(f"--since, --until, --project and --cwd select sessions of a root: {hint}")
