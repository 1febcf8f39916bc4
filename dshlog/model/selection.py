"""Which sessions a command over a store works on: ``--since``, ``--until``, ``--project``, ``--cwd``.

One grammar for every command that selects sessions (``ls``, ``report``,
``search``, ``export ROOT``, ``validate``/``stats`` over a root, ``browse``'s
list), so that a filter accepted by one is accepted, and means the same, in all:

* ``--since``/``--until``: :func:`~dshlog.model.period.parse_when`'s forms (a date,
  a date and time, ``today``, ``yesterday``, ``7d``, ``12h``); a date as ``--until``
  means up to its end.
* ``--project TEXT``: the text is part of the session's working directory or of
  its project directory's name.
* ``--cwd PATH``: a path (relative to the caller's directory) or a unique part of
  one.  It names the project whose directory it is; when no session has that
  directory, the text is looked for inside the directories the sessions have:
  one directory is that one (or the one directory that ends with it as whole
  names), several are a usage error naming them, none leaves
  a note (:attr:`Pinned.note`) so that an empty answer is never silent.

And one case rule for what people search (``search``, ``ls --grep``, ``browse``'s
``/``): :func:`smart_case`.

Nothing here reads the clock, the zone or the cwd: they are arguments.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import tzinfo

import msgspec

from ..errors import UsageError
from ..protocol.layout import project_key
from .period import parse_when

__all__ = ["Pinned", "Selection", "matches_project", "parse_selection", "smart_case"]

#: How many directories a usage error of an ambiguous ``--cwd`` names.
_NAMED = 5


def smart_case(pattern: str) -> bool:
    """Whether ``pattern`` ignores case: it does when it has no upper-case letter (smart case, as in less and ripgrep)."""
    return pattern == pattern.lower()


def matches_project(wanted: str, cwd: str | None, project_dir: str | None) -> bool:
    """``--project TEXT``: a part of the session's working directory or of its project directory's name."""
    return wanted in (cwd or "") or wanted in (project_dir or "")


class Selection(msgspec.Struct, frozen=True):
    """The filters of a command over sessions, parsed (plain data: it travels to workers)."""

    since: int | None = None  # epoch ms
    until: int | None = None  # epoch ms (exclusive)
    project: str | None = None
    cwd: str | None = None  # an absolute, normalised directory
    cwd_part: str | None = None  # ``--cwd`` as written, while it may still be a part of a directory

    @property
    def places(self) -> bool:
        """Whether the selection keeps sessions by where they ran (``--project``, ``--cwd``)."""
        return self.project is not None or self.cwd is not None

    def keeps_place(self, cwd: str | None, project_dir: str | None) -> bool:
        """Whether a session of working directory ``cwd`` in project directory ``project_dir`` is kept."""
        if self.cwd is not None:
            want = project_key(self.cwd)  # the project directory a path names, as dsh files its sessions
            if project_dir != want and (cwd is None or project_key(cwd) != want):
                return False
        return self.project is None or matches_project(self.project, cwd, project_dir)

    def keeps_span(self, first: int | None, last: int | None) -> bool:
        """Whether a session active from ``first`` to ``last`` (epoch ms) was active in the window."""
        if self.since is not None and (last or 0) < self.since:
            return False
        start = first if first else last
        return self.until is None or (start or 0) < self.until

    def pin(self, cwds: Iterable[str | None], project_dirs: Iterable[str | None] = ()) -> Pinned:
        """``--cwd`` made one directory of the sessions' directories ``cwds`` (and project directory
        names ``project_dirs``), see the module docstring."""
        if self.cwd is None:
            return Pinned(self)
        known = {c for c in cwds if c}
        want = project_key(self.cwd)
        if want in set(project_dirs) or any(project_key(c) == want for c in known):
            return Pinned(msgspec.structs.replace(self, cwd_part=None))
        part = self.cwd_part
        found = sorted(c for c in known if part and part in c)
        named = [c for c in found if part and os.path.normpath(c).endswith(os.sep + part.strip(os.sep))]
        if len(named) == 1:  # ``webapp`` is /home/dev/webapp rather than /home/dev/webapp/workspace
            found = named
        if len(found) == 1:
            return Pinned(msgspec.structs.replace(self, cwd=os.path.normpath(found[0]), cwd_part=None))
        if found:
            more = f" and {len(found) - _NAMED} more" if len(found) > _NAMED else ""
            raise UsageError(f"--cwd {part!r} is part of {len(found)} project directories: "
                             f"{', '.join(found[:_NAMED])}{more} (name one)")
        shown = part if part is not None else self.cwd
        return Pinned(msgspec.structs.replace(self, cwd_part=None),
                      f"--cwd {shown!r}: no session has this project directory or one containing it")


class Pinned(msgspec.Struct, frozen=True):
    """A selection whose ``--cwd`` is one directory, and what to tell a person when it matches no session."""

    selection: Selection
    note: str | None = None


def _may_be_part(text: str) -> bool:
    """A ``--cwd`` that is plainly a path (absolute, ``.``, ``./x``, ``../x``, ``~``) is never looked for as a part."""
    return not (os.path.isabs(text) or text in (".", "..", "~") or text.startswith(("./", "../", "~/")))


def parse_selection(*, since: str | None = None, until: str | None = None, project: str | None = None,
                    cwd: str | None = None, now_ms: int, tz: tzinfo | None, base: str, home: str | None = None) -> Selection:
    """The filters as written, parsed: times against ``now_ms`` in ``tz``, ``--cwd`` against the directory ``base``."""
    since_ms = parse_when(since, now_ms=now_ms, tz=tz, option="--since") if since is not None else None
    until_ms = parse_when(until, now_ms=now_ms, tz=tz, end=True, option="--until") if until is not None else None
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        raise UsageError(f"--until {until!r} is not after --since {since!r}")
    if project is not None and not project:
        raise UsageError("--project: the text is empty")
    path = part = None
    if cwd is not None:
        if not cwd.strip():
            raise UsageError("--cwd: the path is empty")
        given = home + cwd[1:] if home is not None and (cwd == "~" or cwd.startswith("~/")) else cwd
        path = os.path.normpath(os.path.join(base, given))
        part = cwd if _may_be_part(cwd) else None
    return Selection(since=since_ms, until=until_ms, project=project, cwd=path, cwd_part=part)
