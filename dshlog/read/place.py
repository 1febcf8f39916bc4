"""Where a generation sits in a store, judged as dsh judges it when it opens a session by id.

dsh opens a session by id in its root, and refuses it when the file is not where
its header says (:func:`~dshlog.protocol.layout.identity_refusal`), or when the
root holds a flat ``<project>/<name>.jsonl[.zstd]`` file or a generation of the
other encoding (:func:`~dshlog.protocol.layout.root_refusal`).  The rules and
their words are the protocol layer's; this module only lists the directories
they look at: names and entry types, no file is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePath

from ..protocol.layout import Entry, RootLook, identity_refusal, look_at_root, persistence_root, root_refusal

__all__ = ["entries", "place_keys", "place_refusal", "root_look"]


def entries(directory: Path) -> list[Entry]:
    """``(name, is directory, is regular file)`` of a directory's entries, links not followed; ``[]`` when unreadable."""
    try:
        with os.scandir(directory) as it:
            return [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in it]
    except OSError:
        return []


#: The last looks at roots, each with the stamp of the root it was taken of (:func:`_root_stamp`).
_LOOKS: dict[Path, tuple[tuple[int, ...], RootLook | None]] = {}
#: How many roots :data:`_LOOKS` remembers (a process walks one or a few).
_LOOKS_KEPT = 4


def _root_stamp(root: Path) -> tuple[int, ...] | None:
    """The modification times of ``root`` and of its project directories, or ``None`` when unreadable.

    A session added or removed anywhere changes one of them; what it does not see is a
    generation added to an existing session directory, which changes no encoding
    dsh's check meets unless a writer adds the other encoding beside a session.
    """
    try:
        stamps = [os.stat(root).st_mtime_ns]
        with os.scandir(root) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stamps.append(e.stat(follow_symlinks=False).st_mtime_ns)
    except OSError:
        return None
    return tuple(sorted(stamps))


def root_look(root: Path) -> RootLook | None:
    """What dsh's check of ``root`` meets (a bounded look: ``None`` for a root too large to judge).

    Every strict open of a session in a store asks this of its root: the look is kept
    while the root and its project directories are unchanged, so that a batch over a
    store of n sessions lists it once, not n times.
    """
    stamp = _root_stamp(root)
    kept = _LOOKS.get(root)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return kept[1]
    look = look_at_root(root, entries)
    if stamp is not None:
        if len(_LOOKS) >= _LOOKS_KEPT:
            _LOOKS.pop(next(iter(_LOOKS)))
        _LOOKS[root] = (stamp, look)
    return look


def place_refusal(path: str | PurePath, header_id: object, cwd: object, *, compressed: bool) -> str | None:
    """dsh's refusal to open the session of generation ``path`` because of where it sits, or ``None``.

    A path outside the store layout is not judged.  ``compressed``: the
    generation's encoding, the one dsh would be configured for to read it.
    """
    refusal = identity_refusal(path, header_id, cwd)
    if refusal is not None:
        return refusal
    root = persistence_root(path)
    if root is None:
        return None
    return root_refusal(root_look(root), compressed)


def place_keys() -> Callable[[str], str]:
    """What dsh's judgment of a generation's place reads besides the file, as text: a cache key's part.

    dsh refuses a session of a root that holds a flat file or a generation of the other
    encoding, whatever the file holds (:func:`place_refusal`), so a cached verdict of a
    strict read is keyed by the look at that root too (the rest of the judgment is the
    path's and the header's).  :func:`root_look` keeps the look while the root is
    unchanged, so a batch lists its root once.
    """

    def key(path: str) -> str:
        root = persistence_root(path)
        return "" if root is None else repr(root_look(root))

    return key
