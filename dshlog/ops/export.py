"""``dshlog export -o OUT``: a transcript written to a file through the one publication transaction.

``export ROOT --format html -o DIR`` (:func:`export_store`) does it for every session of a
persistence root: one page per session, then an ``index.html`` listing them by last
activity, each subagent under its parent, the pages linking parent and children.

The renderers are :mod:`dshlog.output.export`'s; this module only publishes
their bytes: staged beside ``OUT``, checked to hold every byte written, then
linked without overwriting.  An export is a file to share, so it gets the
usual ``0666 & ~umask`` mode (not the staging 0600) and belongs to whoever ran
the command.  When ``OUT``'s directory is a session directory, that session's
lock is held while the file appears; the log must not change while it is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DshlogError, Refused, UsageError
from ..model.transcript import SessionHead, session_facts
from ..output.export import export as render_export
from ..output.export import export_name
from ..output.html import HtmlRenderer, IndexRow, PageLinks, store_index
from ..output.redact import redact as mask
from ..output.renderer import render
from ..protocol.layout import encode_segment
from ..read.session import open_session
from ..read.store import SessionEntry, list_sessions, sort_entries
from ..write.target import output_path
from ..write.transaction import Ownership, Publication, make_directory, output_lock


def export_to_file(
    log: Any,
    head: SessionHead,
    fmt: str,
    out: str,
    *,
    full: bool = False,
    redact: bool = False,
) -> tuple[Path, list[str]]:
    """Render ``log``'s transcript into ``out``; returns the published path and what could not be kept.

    ``out`` follows the one ``-o`` rule (:func:`dshlog.write.target.output_path`); into a
    directory the file is named after the session (:func:`dshlog.output.export.export_name`).
    Standard output (``-``) is the caller's: it needs no publication.
    """
    target = output_path(out, export_name(head, fmt), owner=Ownership.shared(), what="export")
    source = Path(log.path) if log.target != "-" else None  # standard input has no identity to check
    pub = Publication(
        target,
        lock=output_lock(target),
        source=source if source is not None and source.is_file() else None,
        owner=Ownership.shared(),
        changed="the log changed while it was exported; nothing was written",
    )
    with pub:
        staged = pub.stage()
        with log.v4() as view:  # dsh's decision on the whole log before the file appears
            render_export(view, head, fmt, staged.write, full=full, redact=redact)
        pub.publish()
    return target, pub.warnings


INDEX = "index.html"


@dataclass
class StoreExport:
    """What ``export ROOT -o DIR`` wrote: the pages, the sessions that could not be exported, warnings."""

    directory: Path
    index: Path
    pages: list[Path] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (session id or dir, one-line error)
    warnings: list[str] = field(default_factory=list)


def page_name(entry: SessionEntry) -> str:
    """A session's page file name: its directory segment (injective, never a path), ``.html``."""
    return (encode_segment(entry.id) if entry.id else entry.dir.name) + ".html"


def _ordered(entries: list[SessionEntry]) -> list[tuple[SessionEntry, int]]:
    """Most recent first; each subagent right under its parent (depth-first), orphans at top level."""
    by_id = {e.id: e for e in entries if e.id is not None}
    children: dict[str, list[SessionEntry]] = {}
    top: list[SessionEntry] = []
    for e in sort_entries(entries, "time"):
        if e.parent is not None and e.parent in by_id and e.parent != e.id:
            children.setdefault(e.parent, []).append(e)
        else:
            top.append(e)
    out: list[tuple[SessionEntry, int]] = []
    seen: set[int] = set()

    def walk(e: SessionEntry, depth: int) -> None:
        if id(e) in seen:  # a parent cycle in damaged headers: list each session once
            return
        seen.add(id(e))
        out.append((e, depth))
        for c in children.get(e.id or "", []):
            walk(c, depth + 1)

    for e in top:
        walk(e, 0)
    for e in entries:  # what only a cycle reaches
        walk(e, 0)
    return out


def _publish(target: Path, write_page: Callable[[Callable[[bytes], None]], None]) -> list[str]:
    pub = Publication(target, lock=None, owner=Ownership.shared())
    with pub:
        staged = pub.stage()
        write_page(staged.write)
        pub.publish()
    return pub.warnings


def export_store(root: Path | str, out: str, *, full: bool = False, redact: bool = False, parallel: bool = False) -> StoreExport:
    """Every session of ``root`` as an HTML page in the new or empty directory ``out``, plus ``index.html``.

    A session that cannot be read is listed in the index with its error and in
    :attr:`StoreExport.failed`; the others are still written.  Nothing is ever
    overwritten: ``out`` must not hold any of the files this export writes.
    ``parallel``: forked helpers may decode large zstd sessions (the caller's policy).
    """
    entries = list_sessions(root)
    if not entries:
        raise UsageError(f"no sessions under {root}", path=str(root))
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{out} is a file; give a directory for -o with a root", path=out)
    ordered = _ordered(entries)
    names = {id(e): page_name(e) for e, _ in ordered}
    if directory.is_dir():
        clash = sorted(set(os.listdir(directory)) & ({INDEX} | set(names.values())))
        if clash:
            raise Refused(f"{out} already holds {', '.join(clash[:3])}{' ...' if len(clash) > 3 else ''}; export into a new or empty directory", path=out)
    make_directory(directory, None)
    by_id = {e.id: e for e, _ in ordered if e.id is not None}
    result = StoreExport(directory, directory / INDEX)
    rows: list[IndexRow] = []
    text = mask if redact else (lambda s: s)
    for e, depth in ordered:
        href: str | None = names[id(e)]
        name = e.title or e.id or e.dir.name
        error = e.error
        if e.path is not None and error is None:
            parent = by_id.get(e.parent) if e.parent is not None else None
            links = PageLinks(
                index=INDEX,
                parent=(e.parent, names[id(parent)]) if parent is not None and e.parent is not None else None,
                children=tuple((c, names[id(by_id[c])]) for c in e.children if c in by_id),
            )
            try:
                renderer = _export_page(e, directory / names[id(e)], links, full=full, redact=redact, result=result,
                                        parallel=parallel)
                name = renderer.name or name
            except DshlogError as exc:
                error = exc.one_line()
        if error is not None:
            href = None
            result.failed.append((e.id or e.dir.name, error))
        rows.append(IndexRow(text(name), text(e.id) if e.id else None, href, text(e.cwd) if e.cwd else e.project, e.last_activity, e.size, e.turns, depth, error))
    result.warnings += _publish(result.index, lambda w: w(store_index(rows, root=text(str(root))).encode("utf-8")))
    return result


def _export_page(entry: SessionEntry, target: Path, links: PageLinks, *, full: bool, redact: bool, result: StoreExport,
                 parallel: bool = False) -> HtmlRenderer:
    assert entry.path is not None
    with open_session(str(entry.path), parallel=parallel) as log:
        facts = session_facts(log.v4().header, path=os.path.basename(log.path), version=log.version)
        head = SessionHead(log.session_id, log.version, log.path, log.projection, facts)
        renderer: HtmlRenderer | None = None

        def write_page(write: Callable[[bytes], None]) -> None:
            nonlocal renderer
            renderer = HtmlRenderer(write, links=links)
            with log.v4() as view:
                render(view, head, renderer, full=full, redact=mask if redact else None)

        result.warnings += _publish(target, write_page)
    result.pages.append(target)
    assert renderer is not None
    return renderer


__all__ = ["INDEX", "StoreExport", "export_store", "export_to_file", "page_name"]
