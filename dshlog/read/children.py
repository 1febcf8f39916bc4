"""Discovery of a parent's historical child facts (FORMAT §4.5.7).

The v3→v4 edge completes a parent's ``subagent/catalog`` from facts about its
children, which live elsewhere in the same persistence root.  Reading files is
the caller's business (``open_header``/``open_events`` plug in the project's
reader: the child's header and its v4 view), so discovery stays testable and the
migration core never touches the filesystem beyond listing names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from ..errors import DshlogError
from ..protocol.layout import choose_generation


def _generation(session_dir: Path) -> Path | None:
    """The generation dsh reads in a child's directory, or ``None`` when it has none or refuses it."""
    try:
        return session_dir / choose_generation(e.name for e in os.scandir(session_dir) if e.is_file())
    except (OSError, DshlogError):
        return None


class _Parenthood(msgspec.Struct, frozen=True):
    """What one session directory's header said about its parent, and what it was read from."""

    dir_mtime_ns: int
    generation: Path
    size: int
    parent: str | None  # the parentSession of a subagent child, else None


#: Session directory -> its :class:`_Parenthood`, while neither the directory nor its generation changed.
_SEEN: dict[str, _Parenthood] = {}
_SEEN_MAX = 200_000


def _parent_of(session_dir: os.DirEntry[str], open_header: Callable[[Path], dict[str, Any] | None]) -> str | None:
    """The parent a session directory's header names as a subagent child (``None``: none, or unreadable).

    Every old parent in a root asks this of every session in the root, so a batch
    over a root of N old sessions would open N x N headers; the answer is kept per
    directory and trusted while the directory (a new generation is a new file) and
    the generation's size (a header still being written) are unchanged.
    """
    try:
        dir_mtime = session_dir.stat().st_mtime_ns
    except OSError:
        return None
    seen = _SEEN.get(session_dir.path)
    if seen is not None and seen.dir_mtime_ns == dir_mtime:
        try:
            if os.stat(seen.generation).st_size == seen.size:
                return seen.parent
        except OSError:
            pass
    path = _generation(Path(session_dir.path))
    if path is None:  # nothing to read yet: not remembered, the first file may come within the same clock tick
        return None
    parent: str | None = None
    try:
        size = os.stat(path).st_size
        header = open_header(path)
    except (DshlogError, OSError, ValueError):
        size, header = -1, None
    if isinstance(header, dict) and header.get("origin") == "subagent" and isinstance(header.get("parentSession"), str):
        parent = header["parentSession"]
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[session_dir.path] = _Parenthood(dir_mtime, path, size, parent)
    return parent


def _own_descriptors(events: Iterable[dict[str, Any]]) -> tuple[int, Any]:
    """Count the child's own ``subagent/descriptor`` events (seq >= its inherited cut).

    ``events`` is the child's v4 view: for a historical child that is the migrated
    stream, whose ``inherited_cut`` is known once it is exhausted; for a v4 child the
    cut is the seq of its last ``{inherited: true}`` end-seed marker.
    """
    seen: list[tuple[int, Any]] = []
    cut = 0
    for ev in events:
        t = ev.get("type")
        if t == "subagent/descriptor":
            seen.append((ev.get("seq", 0), ev.get("data")))
        elif t == "session/end-seed" and isinstance(ev.get("data"), dict) and ev["data"].get("inherited") is True:
            cut = ev.get("seq", 0)
    inherited = getattr(events, "inherited_cut", None)
    if inherited is not None:
        cut = inherited
    own = [data for seq, data in seen if seq >= cut]
    return len(own), (own[0] if own else None)


def discover_child_facts(
    root: Path,
    parent_id: str,
    *,
    open_header: Callable[[Path], dict[str, Any] | None],
    open_events: Callable[[Path], Iterable[dict[str, Any]]],
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Facts for every subagent child of ``parent_id`` anywhere under ``root``.

    A child is a session whose selected generation's header has
    ``parentSession == parent_id`` and ``origin == "subagent"``; unreadable
    headers are skipped silently.  A child that cannot be decoded, or whose
    descriptor is invalid, still yields a fact (``descriptorCount: 0``,
    ``descriptor: null``) and a warning, so the parent gets an ``unknown`` entry.
    """
    from ..migrate.v3_v4 import child_catalog_fact  # an older log's migration only: a v4 read loads none

    facts: list[dict[str, Any]] = []
    try:
        projects = sorted(p for p in Path(root).iterdir() if p.is_dir())
    except OSError:
        return facts
    for project in projects:
        try:
            with os.scandir(project) as listing:
                sessions = sorted((s for s in listing if s.is_dir()), key=lambda s: s.name)
        except OSError:
            continue
        for entry in sessions:
            if _parent_of(entry, open_header) != parent_id:
                continue
            session_dir = Path(entry.path)
            path = _generation(session_dir)
            if path is None:
                continue
            try:
                header = open_header(path)
            except (DshlogError, OSError, ValueError):
                continue
            if not isinstance(header, dict) or header.get("parentSession") != parent_id \
                    or header.get("origin") != "subagent":
                continue
            fact: dict[str, Any] = {"childId": header.get("id"), "childCreatedAt": header.get("createdAt"),
                                    "descriptorCount": 0, "descriptor": None, "sourcePath": str(path)}
            try:
                count, descriptor = _own_descriptors(open_events(path))
                fact["descriptorCount"], fact["descriptor"] = count, descriptor
                child_catalog_fact(fact)
            except (DshlogError, OSError, ValueError) as err:
                fact["descriptorCount"], fact["descriptor"] = 0, None
                if warnings is not None:
                    warnings.append(f"child {header.get('id')} ({path}): {getattr(err, 'message', err)}")
            if isinstance(fact["childId"], str):
                facts.append(fact)
    return facts
