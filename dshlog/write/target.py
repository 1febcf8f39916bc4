"""The one rule for ``-o OUT``, shared by every writer (``export``, ``repair``, ``fork``).

* ``-`` is standard output, for a writer that can stream there (``export``); the
  others refuse it as a usage error rather than create a file named ``-``;
* an existing directory, or a name ending in ``/``, means "into this directory":
  the writer's own file name goes inside it, and a missing directory is created
  (0700, given to the owner the writer chooses);
* anything else is the file itself, whose directory must exist.

A writer never publishes over an existing file; that is the publication
transaction's rule (:class:`~dshlog.write.transaction.Publication`), not this one.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from ..protocol.layout import is_project_dir, persistence_root
from .transaction import FileOwner, make_directory

__all__ = ["STDOUT", "is_persistence_root", "means_directory", "output_path"]

#: The ``-o`` value that means standard output.
STDOUT = "-"


def means_directory(out: str | os.PathLike[str]) -> bool:
    """Whether ``-o OUT`` names a directory to write into (an existing one, or a trailing slash)."""
    text = os.fspath(out)
    return text.endswith(("/", os.sep)) or Path(text).is_dir()


def output_path(out: str | os.PathLike[str], name: str, *, owner: FileOwner | None, what: str) -> Path:
    """The file ``-o OUT`` names for a writer whose own file name is ``name``.

    ``what`` names the writer in the usage errors (``"repair"``, ``"fork"``).
    The directory of "into this directory" is created when missing.
    """
    text = os.fspath(out)
    if text == "":
        raise UsageError(f"{what}: -o needs a file or directory name")
    if text == STDOUT:
        raise UsageError(f"{what} writes a session log: give -o a file or a directory ('-', standard output, is for export)")
    if means_directory(text):
        directory = Path(text)
        if not directory.is_dir():
            if not directory.parent.is_dir():
                raise UsageError(f"directory {directory.parent} does not exist", path=text)
            make_directory(directory, owner)
        return directory / name
    target = Path(text)
    if not target.parent.is_dir():
        raise UsageError(f"directory {target.parent} does not exist", path=text)
    return target


def is_persistence_root(directory: Path, *, near: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``directory`` is a dsh persistence root: the root ``near`` (a generation file) lives in,
    or a directory that already holds project directories."""
    if near is not None:
        root = persistence_root(os.fspath(near))
        if root is not None and root.exists() and directory.exists() and os.path.samefile(root, directory):
            return True
    try:
        return any(is_project_dir(e.name) and e.is_dir() for e in os.scandir(directory))
    except OSError:
        return False
