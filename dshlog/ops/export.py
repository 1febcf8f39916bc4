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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..check.problems import Problem
from ..errors import DshlogError, Refused, UsageError, boundary
from ..output.export import FORMATS
from ..output.export import export as render_export
from ..output.export import export_name
from ..output.html import HtmlRenderer, IndexRow, PageLinks, store_index
from ..output.labels import refusal_mark
from ..output.redact import redact as mask
from ..output.renderer import render
from ..protocol.layout import encode_segment
from ..read.store import SessionEntry, list_sessions, sort_entries
from ..write.target import output_path
from ..write.transaction import FileOwner, Publication, make_directory, output_lock
from ..model.selection import Selection
from ..output.jsondoc import SHAPE
from ..read.container import Position
from .outcome import ReadNotes
from .sessions import located, select_entries
from ..read.source import Source, Target
from .transcript import Reading, export_to, open_reading

#: The formats of one transcript (:data:`~dshlog.output.export.FORMATS`).
ExportFormat = Literal["md", "html", "json"]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """``dshlog export -o OUT``: the file published, and what publishing could not keep.

    The command prints no JSON for it (only ``written: OUT``); ``as_dict()`` is the
    library's own document, in the same versioned form.
    """

    path: str
    format: str
    warnings: tuple[str, ...] = ()
    source: str = ""  # the log it was made of
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = field(default_factory=dict)
    #: dsh's refusal of the source, whose transcript was exported anyway (it opens with it), and what
    #: ``dshlog rescue`` takes to bring it back
    refused: DshlogError | None = None
    rescue: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "path": self.path, "format": self.format, "warnings": list(self.warnings)}

    @property
    def noted(self) -> ReadNotes:
        """The reader's notes on the source (the file written has its own ``path``), and dsh's refusal of it."""
        return ReadNotes(self.source, self.notes, self.suppressed, self.refused, self.rescue)


@boundary
def export_transcript(target: Source | Target, out: Target, *, format: ExportFormat = "md", full: bool = False,
                      redact: bool = False, progress: Position | None = None, force: bool = False,
                      cache: str | None = None) -> ExportResult:
    """``dshlog export -o OUT``: a transcript (Markdown, self-contained HTML, or JSON) published at ``out``
    (``force``: replacing an earlier export there, staged first and renamed over it; ``cache``: as
    :func:`~dshlog.ops.transcript.open_reading` takes it)."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose {', '.join(FORMATS)})")
    with open_reading(target, progress=progress, cache=cache) as reading:
        with located(reading.path):
            path, warnings = export_to_file(reading, format, os.fspath(out), full=full, redact=redact, force=force)
        return ExportResult(str(path), format, tuple(warnings), reading.path, tuple(reading.notes), reading.notes.suppressed(),
                            reading.refused, reading.rescue)


@boundary
def export_bytes(target: Source | Target, *, format: ExportFormat = "md", full: bool = False, redact: bool = False) -> bytes:
    """The transcript ``dshlog export`` prints, as bytes; a log dsh refuses opens with the refusal."""
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose {', '.join(FORMATS)})")
    parts: list[bytes] = []
    export_to(target, format, parts.append, full=full, redact=redact)
    return b"".join(parts)


def export_to_file(
    reading: Reading,
    fmt: str,
    out: str,
    *,
    full: bool = False,
    redact: bool = False,
    force: bool = False,
) -> tuple[Path, list[str]]:
    """Render the transcript of the log ``reading`` holds into ``out``; returns the published path and what
    could not be kept.  A log dsh refuses is exported too, opening with the refusal (:mod:`dshlog.ops.transcript`).

    ``out`` follows the one ``-o`` rule (:func:`dshlog.write.target.output_path`); into a
    directory the file is named after the session (:func:`dshlog.output.export.export_name`).
    Standard output (``-``) is the caller's: it needs no publication.  ``force``: an earlier
    export at that name is replaced (still staged first, then renamed over it).
    """
    head = reading.export_head()
    target = output_path(out, export_name(head, fmt), owner=FileOwner.shared(), what="export")
    source = Path(reading.path) if reading.path != "-" else None  # standard input has no identity to check
    pub = Publication(
        target,
        lock=output_lock(target),
        source=source if source is not None and source.is_file() else None,
        owner=FileOwner.shared(),
        changed="the log changed while it was exported; nothing was written",
        overwrite=force,
    )
    with pub:
        staged = pub.stage()
        with reading.events() as events:  # dsh's view: its decision on the whole log before the file appears
            render_export(events, head, fmt, staged.write, full=full, redact=redact)
        pub.publish()
    return target, pub.warnings


INDEX = "index.html"


@dataclass
class StoreExport:
    """What ``export ROOT -o DIR`` wrote: the pages, the sessions that could not be exported, warnings.

    ``refused`` are the sessions dsh refuses to open: their pages were written,
    opening with dsh's refusal (a page shows what a log holds).
    """

    directory: Path
    index: Path
    pages: list[Path] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (session id or dir, one-line error)
    warnings: list[str] = field(default_factory=list)
    #: (session id or dir, dsh's refusal, what ``dshlog rescue`` takes to bring it back)
    refused: list[tuple[str, DshlogError, str]] = field(default_factory=list)
    #: what a person is told about the selection (``--cwd`` matched no session)
    note: str | None = None


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


def _publish(target: Path, write_page: Callable[[Callable[[bytes], None]], None], force: bool = False) -> list[str]:
    pub = Publication(target, lock=None, owner=FileOwner.shared(), overwrite=force)
    with pub:
        staged = pub.stage()
        write_page(staged.write)
        pub.publish()
    return pub.warnings


def export_store(root: Path | str, out: str, *, full: bool = False, redact: bool = False, source: Source = Source(),
                 selection: Selection | None = None, force: bool = False) -> StoreExport:
    """Every session of ``root`` as an HTML page in the new or empty directory ``out``, plus ``index.html``.

    A session dsh refuses to open gets its page too (its stored rows, opening with
    dsh's refusal), listed in the index with the refusal and in
    :attr:`StoreExport.refused`.  A session that cannot be read at all is listed
    in the index with its error and in :attr:`StoreExport.failed`; the others are
    still written.  Nothing is ever
    overwritten: ``out`` must not hold any of the files this export writes, unless ``force``
    (refreshing an earlier export in place: each file is staged, then renamed over the old one).
    ``source``: how each session is read (a :class:`~dshlog.read.source.Source` without a path; its
    ``parallel``: forked helpers may decode large zstd sessions, the caller's policy).
    ``selection``: only the sessions it keeps (``--since/--until/--project/--cwd``); what a
    person is told about it (``--cwd`` matched nothing) is :attr:`StoreExport.note`.
    """
    entries = list_sessions(root)
    if not entries:
        raise UsageError(f"no sessions under {root}", path=str(root))
    note = None
    if selection is not None:
        entries, note = select_entries(entries, selection)
        if not entries:
            raise UsageError(f"no session under {root} is selected{': ' + note if note else ''}", path=str(root))
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{out} is a file; give a directory for -o with a root", path=out)
    ordered = _ordered(entries)
    names = {id(e): page_name(e) for e, _ in ordered}
    if directory.is_dir() and not force:
        clash = sorted(set(os.listdir(directory)) & ({INDEX} | set(names.values())))
        if clash:
            raise Refused(f"{out} already holds {', '.join(clash[:3])}{' ...' if len(clash) > 3 else ''}; export into a new or empty directory", path=out)
    make_directory(directory, None)
    by_id = {e.id: e for e, _ in ordered if e.id is not None}
    result = StoreExport(directory, directory / INDEX, note=note)
    rows: list[IndexRow] = []
    text = mask if redact else (lambda s: s)
    for e, depth in ordered:
        href: str | None = names[id(e)]
        name = e.title or e.id or e.dir.name
        error = e.error
        refusal: str | None = None
        if e.path is not None and error is None:
            parent = by_id.get(e.parent) if e.parent is not None else None
            links = PageLinks(
                index=INDEX,
                parent=(e.parent, names[id(parent)]) if parent is not None and e.parent is not None else None,
                children=tuple((c, names[id(by_id[c])]) for c in e.children if c in by_id),
            )
            try:
                renderer, refused, rescue = _export_page(e, directory / names[id(e)], links, full=full, redact=redact,
                                                         result=result, source=source, force=force)
                name = renderer.name or name
                if refused is not None and rescue is not None:
                    result.refused.append((e.id or e.dir.name, refused, rescue))
                    refusal = refusal_mark(refused.message)
            except DshlogError as exc:
                error = exc.one_line()
        if error is not None:
            href = None
            result.failed.append((e.id or e.dir.name, error))
        rows.append(IndexRow(text(name), text(e.id) if e.id else None, href, text(e.cwd) if e.cwd else e.project, e.last_activity,
                             e.size, e.turns, depth, error, text(refusal) if refusal is not None else None))
    result.warnings += _publish(result.index, lambda w: w(store_index(rows, root=text(str(root))).encode("utf-8")), force)
    return result


def _export_page(entry: SessionEntry, target: Path, links: PageLinks, *, full: bool, redact: bool, result: StoreExport,
                 source: Source, force: bool = False) -> tuple[HtmlRenderer, DshlogError | None, str | None]:
    """One session's page; dsh's refusal of the session (its page then opens with it) and what brings it back."""
    assert entry.path is not None
    with open_reading(source.at(entry.path)) as reading:
        head = reading.export_head()
        renderer: HtmlRenderer | None = None

        def write_page(write: Callable[[bytes], None]) -> None:
            nonlocal renderer
            renderer = HtmlRenderer(write, links=links)
            with reading.events() as events:
                render(events, head, renderer, full=full, redact=mask if redact else None)

        result.warnings += _publish(target, write_page, force)
        refused, rescue = reading.refused, reading.rescue
    result.pages.append(target)
    assert renderer is not None
    return renderer, refused, rescue


__all__ = ["INDEX", "ExportFormat", "ExportResult", "StoreExport", "export_bytes", "export_store", "export_to_file",
           "export_transcript", "page_name"]
