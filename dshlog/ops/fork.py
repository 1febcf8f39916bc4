"""``dshlog fork``: write the child of a fork as a new v4 log; the parent is only read.

The seed and the child header are :mod:`dshlog.model.fork`'s (pure).  The child is
published through the one publication transaction
(:class:`~dshlog.write.transaction.Publication`): staged beside its final name,
read back against every v4 rule, given the parent's owner, group and mode, and
linked without overwriting.  When the output directory is a session directory
(it holds a ``session.lock`` or a generation, or the child is named like a
generation) that session's lock is held while the child appears, and a child
generation is never published next to another session's generation.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError, boundary
from ..output.jsondoc import SHAPE
from ..model.fork import ForkPlan, at_turn, build_fork_seed, child_header
from ..protocol.layout import generation_name, persistence_root, session_dir
from ..protocol.vocabulary import CURRENT_VERSION
from ..read.container import resolve_path
from ..protocol.texts import EMPTY_FORK
from ..read.session import SessionLog, open_log
from ..write.transaction import FileOwner, Publication, make_directory, output_lock
from ..write.target import is_persistence_root, means_directory, output_path
from ..write.verify import ReadBack
from ..write.writer import LogWriter
from ..read.source import Source, Target

__all__ = ["ForkResult", "fork_session"]


@dataclass(frozen=True, slots=True)
class ForkResult:
    """``dshlog fork``: the child written, cut after parent seq ``at``."""

    path: str
    child_id: str
    parent_id: Any
    at: int
    events: int
    closers: tuple[Mapping[str, Any], ...]
    header: Mapping[str, Any]
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "shape": SHAPE,
            "path": self.path,
            "childId": self.child_id,
            "parentId": self.parent_id,
            "at": self.at,
            "events": self.events,
            "closers": list(self.closers),
            "header": dict(self.header),
        }
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        return doc


@boundary
def fork_session(
    target: Source | Target,
    out: Target | None,
    *,
    at: int | None = None,
    turn: int | None = None,
    child_id: str | None = None,
    created_at: int | None = None,
) -> ForkResult:
    """``dshlog fork``: the child of a fork as a new v4 log at ``out``, cut after parent seq ``at``
    (or after turn ``turn``'s end; default: the whole log); the parent is only read.

    ``out`` follows the one ``-o`` rule (:func:`dshlog.write.target.output_path`):
    a file path, or a directory (existing, or named with a trailing slash) in
    which ``session.v4.jsonl[.zstd]`` is created.  A persistence root (the
    parent's, or one holding project directories; ``None`` means the parent's)
    gets the child where dsh would keep it,
    ``<root>/<project key of cwd>/<encoded child id>/``.  ``child_id`` and ``created_at``
    (epoch ms) default to a fresh UUID and the current time.  The child keeps the
    parent's container (plain or zstd).  Prefix events read from a v4 parent are
    copied as their original bytes.  The file is staged and published without
    overwriting, so a failure (or an invalid boundary found late) leaves nothing.
    A parent without events has no seq to cut at: a usage error (the library's
    :func:`build_fork_seed` still gives the empty child of an empty seed).
    ``target``: the parent's path, or a :class:`~dshlog.read.source.Source` that says how to
    read it; its ``parallel`` allows forked helpers (the decode of a large zstd parent, the
    read-back of a large child); by default everything runs in process.
    """

    if at is not None and turn is not None:
        raise UsageError("choose either at (a seq) or turn")
    # a trailing slash names a directory to create the child in: the name is passed on as given, not as a Path
    how = Source.of(target)
    target = how.name
    out = None if out is None else os.fspath(out)

    def _open() -> SessionLog:
        return open_log(how)

    if target == "-" or not resolve_path(target).is_file():  # the input is read twice (probe, then copy)
        raise UsageError("fork needs a regular file, not standard input or a pipe; save the stream to a file first", path=target)
    source = resolve_path(target)
    with _open() as probe:
        parent_header = probe.v4().header or {"type": "session", "id": probe.session_id or "unknown"}
        compressed = probe.info.container == "jsonl.zstd"
        parent_id = parent_header.get("id") or "unknown"
        if turn is not None:
            at = at_turn(probe.v4(), turn, session_id=str(parent_id))
    if child_id is not None and not child_id.strip():
        raise UsageError("--id needs a session id (leave it out for a fresh UUID)")
    new_id = child_id or str(uuid.uuid4())
    created = created_at if created_at is not None else time.time_ns() // 1_000_000
    name = generation_name(CURRENT_VERSION, compressed)
    if out is None:  # next to the parent, where dsh keeps its sessions
        root = persistence_root(source)
        if root is None:
            raise UsageError("the parent is not in a dsh persistence root: give -o OUT (a file, a directory, or a root)", path=target)
        out = root
    made: list[Path] = []  # the directories this fork creates: removed again (when empty) if it fails
    if means_directory(out) and Path(out).is_dir() and is_persistence_root(Path(out), near=source):
        # where dsh would keep the child: <root>/<project key of its cwd>/<encoded id>/
        child_dir = session_dir(Path(out), parent_header.get("cwd") if isinstance(parent_header.get("cwd"), str) else None, new_id)
        if not child_dir.parent.is_dir():
            made.append(child_dir.parent)
        make_directory(child_dir.parent, FileOwner.of(source))
        out = f"{child_dir}{os.sep}"
    if means_directory(out) and not Path(out).is_dir():
        made.append(Path(out))
    try:
        out = output_path(out, name, owner=FileOwner.of(source), what="fork")
        return _write_child(out, source, parent_header=parent_header, new_id=new_id, created=created, compressed=compressed,
                            parent_id=parent_id, at=at, target=target, open_log=_open, parallel=how.parallel)
    except BaseException:
        for directory in reversed(made):
            try:
                directory.rmdir()  # only when empty: anything else there stays
            except OSError:
                pass
        raise


def _write_child(out: Path, source: Path, *, parent_header: dict[str, Any], new_id: str, created: int, compressed: bool,
                 parent_id: Any, at: int | None, target: str, open_log: Callable[[], SessionLog], parallel: bool) -> ForkResult:
    """Stage, verify and publish the child (the publication removes what it made when it fails)."""
    header = child_header(parent_header, new_id=new_id, created_at=created)
    pub = Publication(
        out,
        lock=output_lock(out),
        source=source,
        owner="source",
        changed="the parent log changed while the child was written; nothing was published",
    )
    with pub:
        staged = pub.stage()
        with open_log() as log:
            raws: dict[int, bytes] = {}
            view = log.v4()

            def events() -> Iterator[dict[str, Any]]:
                for ev, raw in view.records():
                    if raw is not None:
                        raws[id(ev)] = raw
                    yield ev

            size_hint = pub.before.size if pub.before is not None else 0
            with ReadBack(staged.path, header, compressed=compressed, snapshot=log.snapshot, subject="fork child",
                          size_hint=size_hint, parallel=parallel) as check:
                w = LogWriter(staged, compressed=compressed, projection=log.projection, tee=check.tee)
                w.header(header)
                plan: list[ForkPlan] = []
                closers: list[dict[str, Any]] = []
                for index, ev in enumerate(build_fork_seed(events(), at, session_id=str(parent_id), now_ms=created, plan=plan)):
                    # the plan is known once the marker is due; what follows the marker are the closers
                    if plan and index > plan[0].inherited:
                        closers.append(ev)
                    w.event(ev, raws.pop(id(ev), None))
                size, digest = w.close()
                view.finish()  # dsh restores the whole parent before it cuts it: its refusal comes first
                boundary = plan[0].boundary if plan else None
                if boundary is None:
                    raise UsageError(EMPTY_FORK, path=target)
                pub.publish(lambda path: check.verify(path, events=w.events, plain=(size, digest)))
    return ForkResult(str(out), new_id, parent_id, boundary if boundary is not None else -1, w.events, tuple(closers),
                      header, tuple(pub.warnings))
