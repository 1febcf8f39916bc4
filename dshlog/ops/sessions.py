"""Opening one log for an operation, and the sessions of a store: listing them filtered and sorted,
finding the ones that mention a text.  The library's ways in (:func:`open_session`,
:func:`stored_events`, :func:`v4_events`, :func:`find_session`) are here too."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

from ..check.problems import Problems
from ..errors import DshlogError, ExitCode, UsageError, boundary
from ..executor import Executor, InProcess, helpers_allowed
from ..model.content import SEARCH, message_text
from ..model.selection import Selection, smart_case
from ..protocol.jsjson import loads_or_none
from ..protocol.layout import decode_segment
from ..protocol.vocabulary import ROLE_OF_TYPE
from ..read.cache import Kind, cached_map, open_cache
from ..read.container import Container, Position
from ..protocol.events import Event
from ..read.session import EventRecord, SessionLog, open_log
from ..read.source import Source, Target
from ..read.store import SessionEntry, Unreadable, list_sessions, project_key, resolve_session, raw_lines, first_header, sort_entries, walk_sessions

__all__ = ["Listing", "OpenLog", "Unreadable", "find_session", "grep_session", "list_store", "located",
           "logged_message_texts", "open_session", "open_target", "select_entries", "select_sessions", "session_ids",
           "store_sessions", "stored_events", "unique_prefixes", "v4_events"]

@contextmanager
def located(path: str) -> Iterator[None]:
    """An error of the core met while a log's events stream by names that log (where its raiser did not).

    One ``try`` around a whole read: a generator that streams through it pays nothing per event.
    """
    try:
        yield
    except DshlogError as exc:
        raise exc.with_context(path=path)  # noqa: B904 - the error itself, located


def open_target(target: Source | Target, *, strict: bool = True, guard: bool = False,
                progress: Position | None = None, cache: str | None = None) -> SessionLog:
    """Open the input of an operation (see :class:`~dshlog.read.session.SessionLog` for the keywords).

    The source's ``select`` picks one session of a wrapped stream or document; on an
    input that holds one session it is a usage error rather than silently ignored.
    ``progress``: told how far the body's read is (bytes of the file, its size).
    """
    source = Source.of(target)
    log = open_log(source, strict=strict, guard=guard, progress=progress, cache=cache)
    if source.select is not None and log.info.container in (Container.JSONL, Container.ZSTD, Container.ARRAY):
        log.close()
        raise UsageError(f"--select picks a session of a wrapped stream or document; this input is {log.info.container}",
                         path=source.name)
    return log


class OpenLog:
    """A result that streams from a log still open: its path, what the reader noticed so far, closed once.

    The streaming results (``events``, ``show``) are read after the operation
    returns, so they hold the log until :meth:`close`; use them as context managers.
    """

    def __init__(self, log: SessionLog) -> None:
        self._log = log

    @property
    def path(self) -> str:
        return self._log.path

    @property
    def notes(self) -> Problems:
        """What the reader noticed; complete once the stream has been read."""
        return self._log.notes

    def close(self) -> None:
        self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


#: The events whose message text ``ls --grep`` searches: what the user and the model wrote.
_SEARCHED: frozenset[str] = frozenset(t for t, role in ROLE_OF_TYPE.items() if role in ("user", "assistant"))
_NEEDLES: tuple[bytes, ...] = tuple(t.encode() for t in sorted(_SEARCHED))


def logged_message_texts(source: Source) -> Iterator[str]:
    """Text of every user and assistant message in a generation, streamed (only those lines are parsed).

    The text is the one extractor's :data:`~dshlog.model.content.SEARCH` rule:
    reasoning included, tool markers left out, one block per line.  The source's
    ``parallel``: a forked helper may decode a large zstd body (the caller's policy).
    """
    for raw in raw_lines(Path(source.name), parallel=source.parallel):
        if not any(n in raw for n in _NEEDLES):
            continue
        obj = loads_or_none(raw)
        if not isinstance(obj, dict) or obj.get("type") not in _SEARCHED:
            continue
        data = obj.get("data")
        if not isinstance(data, dict):
            continue
        msg = data.get("message") if isinstance(data.get("message"), dict) else data
        text = message_text(msg, SEARCH)
        if text:
            yield text


@boundary
def grep_session(target: Source | Target, needle: str) -> bool:
    """Whether any user or assistant message of a generation contains ``needle`` (smart case: see
    :func:`~dshlog.model.selection.smart_case`)."""
    source = Source.of(target)
    if smart_case(needle):
        n = needle.casefold()
        return any(n in t.casefold() for t in logged_message_texts(source))
    return any(needle in t for t in logged_message_texts(source))


def _created(e: SessionEntry) -> int | None:
    created = (e.header or {}).get("createdAt")
    return created if type(created) is int else None


def select_entries(entries: list[SessionEntry], selection: Selection) -> tuple[list[SessionEntry], str | None]:
    """The entries ``selection`` keeps (``--cwd`` pinned to one of their directories), and its note."""
    pinned = selection.pin((e.cwd for e in entries), (e.project for e in entries))
    sel = pinned.selection
    kept = [e for e in entries if sel.keeps_place(e.cwd, e.project) and sel.keeps_span(_created(e), e.last_activity)]
    return kept, pinned.note


def select_sessions(found: Sequence[str | Unreadable], selection: Selection, *,
                    cache: str | None = None) -> tuple[list[str | Unreadable], str | None]:
    """The sessions of a walk (:func:`store_sessions`) that ``selection`` keeps, in walk order, and its note.

    They are kept as ``ls`` keeps its entries (:func:`select_entries`), so that ``validate`` and
    ``stats`` over a root work on the sessions ``ls`` lists with the same filters.  A session the
    walk (or this look at it) could not read stays whatever the filters: the command names it and
    it sets the exit code.  Only headers are read, unless ``--since``/``--until`` ask for a
    session's last activity (a scan, served from the cache in ``cache`` when there is one).
    """
    if selection == Selection():
        return list(found), None
    entries: dict[int, SessionEntry] = {}
    for i, f in enumerate(found):
        if isinstance(f, str) and f != "-":
            p = Path(f)
            e = SessionEntry(dir=p.parent, project=p.parent.parent.name, path=p)
            try:
                e.mtime_ms = p.stat().st_mtime_ns // 1_000_000
                e.header = first_header(p)
            except DshlogError as exc:
                e.exit_code = exc.exit_code
            except OSError:
                e.exit_code = ExitCode.IO
            entries[i] = e
    readable = [e for e in entries.values() if not e.exit_code]
    if selection.since is not None or selection.until is not None:  # a span needs each session's last event
        if cache is not None:
            cached_scanner(cache)(readable)
        else:
            for e in readable:
                e.scan()
    kept, note = select_entries(readable, selection)
    keep = {id(e) for e in kept}
    return [f for i, f in enumerate(found) if i not in entries or entries[i].exit_code or id(entries[i]) in keep], note


def scan_record(path: str) -> list[Any]:
    """What ``ls``'s scan of one generation finds (:meth:`SessionEntry.scan`), as a plain form for the cache."""
    p = Path(path)
    e = SessionEntry(dir=p.parent, project=p.parent.parent.name, path=p).scan()
    return [e.title, e.prompt, e.turns, e.events, e.last_time, e.error]


def _scan_of(rec: list[Any]) -> list[Any]:
    """:func:`scan_record` back from the cache; raises on anything it did not write."""
    title, prompt, turns, events, last_time, error = rec
    if not all(v is None or isinstance(v, str) for v in (title, prompt, error)) or type(turns) is not int \
            or type(events) is not int or not (last_time is None or type(last_time) is int):
        raise TypeError("not a scan")
    return [title, prompt, turns, events, last_time, error]


#: ``ls``'s per-session scans in the cache (bump ``version`` when the scan's fields change).
SCAN = Kind("scan", 1, lambda rec: rec, _scan_of)


def cached_scanner(cache: str | None) -> Any:
    """A ``scanner`` for :func:`list_sessions` that serves each entry's scan from the cache in ``cache`` (a directory)."""

    def scanner(entries: list[SessionEntry]) -> None:
        todo = [e for e in entries if e.path is not None and not e.scanned]
        for e, rec in zip(todo, cached_map(open_cache(cache), SCAN, scan_record, [str(e.path) for e in todo], InProcess())):
            e.scanned = True
            e.title, e.prompt, e.turns, e.events, e.last_time, error = rec
            if error is not None:
                e.error = error

    return scanner


class Listing(list[SessionEntry]):
    """``ls``'s entries, and what a person is told about its selection (``--cwd`` matched nothing)."""

    note: str | None = None


def list_store(root: Path, *, selection: Selection | None = None, grep: str | None = None,
               sort: str = "time", reverse: bool = False, executor: Executor | None = None, source: Source = Source(),
               cache: str | None = None) -> Listing:
    """``ls``: the sessions of ``root`` that ``selection`` keeps, mentioning ``grep``; sorted by ``sort``.

    ``grep`` reads every listed session: one task per session of ``executor`` (in-process by
    default); ``source``: how each session is read (a :class:`~dshlog.read.source.Source` without a
    path); its ``parallel``: a read in this process may fork helpers to decode large zstd bodies
    (workers of a pool read in their own process: they are the parallelism).  ``cache``: the
    directory of the verified cache of per-session results (:mod:`dshlog.read.cache`), or none.
    """
    sel = selection if selection is not None else Selection()
    sort_entries([], sort)  # an unknown key is a usage error before the store is read
    entries: list[SessionEntry] = []
    scanner = cached_scanner(cache) if cache is not None else None
    if sel.cwd is not None:  # the project directory of a path, read alone when it is there
        entries = list_sessions(root, project=project_key(sel.cwd), scanner=scanner)
    if not entries:
        entries = list_sessions(root, scanner=scanner)
    # a session the walk could not read stays listed whatever the filters: it is named, and sets the exit code
    unread = [e for e in entries if e.exit_code]
    entries, note = select_entries([e for e in entries if not e.exit_code], sel)
    entries = unread + entries
    if grep is not None:
        ex = executor if executor is not None else InProcess()
        how = replace(source, parallel=helpers_allowed(ex, source.parallel))
        task = partial(grep_session, needle=grep)
        readable = [e for e in entries if e.path is not None]
        hits = {id(e) for e, hit in zip(readable, ex.map(task, [how.at(e.path) for e in readable if e.path is not None]))
                if hit}
        entries = [e for e in entries if id(e) in hits or (e.path is None and e.exit_code)]
    listing = Listing(sort_entries(entries, sort, reverse=reverse))
    listing.note = note
    return listing


def session_ids(paths: Iterable[str]) -> list[str]:
    """The session ids the directories of ``paths`` (session generations) name, for :func:`unique_prefixes`
    (a directory whose name encodes no id is left out)."""
    out = []
    for p in paths:
        try:
            out.append(decode_segment(Path(p).parent.name))
        except UsageError:
            continue
    return out


def store_sessions(targets: Iterable[str]) -> list[str | Unreadable]:
    """The generation of every session below the targets (roots, project or session directories, files), in walk order;
    each session the walk cannot read an :class:`~dshlog.read.store.Unreadable` in its place (every command over
    many sessions takes its sessions from here)."""
    return walk_sessions(targets, recursive=True)


def unique_prefixes(ids: list[str], *, minimum: int = 8, longer_than: int = 12) -> dict[str, str]:
    """The shortest prefix (at least ``minimum`` characters) of each id longer than ``longer_than``
    that no other id starts with; shorter ids stay whole.

    Every prefix is accepted wherever a session id is (the store's id lookup), so a
    listing on a terminal can show ids people can type.
    """
    out: dict[str, str] = {}
    for i in ids:
        if len(i) <= longer_than:
            out[i] = i
            continue
        n = min(minimum, len(i))
        while n < len(i) and any(o != i and o.startswith(i[:n]) for o in ids):
            n += 1
        out[i] = i[:n]
    return out


@boundary
def open_session(target: Source | Target, *, strict: bool = True) -> SessionLog:
    """Open a log: a generation file, a session directory, a JSON array or wrapped stream, or ``-``.

    ``target`` is a path, or a :class:`~dshlog.read.source.Source` that says how to
    read it: an open binary stream to read instead (``-``), which session of a
    multi-session input, the version of a header-less input, the package names
    the v3->v4 migration treats as dsh's system-prompt producer (a fork build's),
    and whether forked helpers may work on it.  ``strict`` (the default) decides
    as dsh does: a header dsh refuses is refused here, and the v4 view ends with
    dsh's refusal; ``strict=False`` shows a damaged log as far as it can be read,
    with ``log.notes``.  Use the log as a context manager; its body can be read
    once (``log.stored()`` or ``log.v4()``).

    ``Source.parallel`` (here and in every operation of the library) lets dshlog hand work to
    forked helper processes where a second core pays: decoding a large zstd body,
    reading back a large output before publishing it.  The default runs
    everything in the calling process, which is what a thread, a server or a
    process pool embedding dshlog expects; the command line turns it on.
    """
    # the log's views are guarded too: what escapes their iteration leaves as the hierarchy's error
    return open_target(target, strict=strict, guard=True)


@boundary
def find_session(session_id: str, *, root: Target) -> Path:
    """The generation dsh reads for a session id (or unique id prefix) under a persistence root."""
    return Path(resolve_session(session_id, root=Path(root)).path)


@boundary
def stored_events(target: Source | Target, *, strict: bool = False) -> Iterator[EventRecord]:
    """The events as stored (any version), each with its exact line bytes and location.

    Not strict by default: the rows are shown as far as they can be read, as
    ``dshlog events`` shows them.  The file is closed when the iterator ends.
    """
    with open_target(target, strict=strict) as log:
        yield from log.stored()


@boundary
def v4_events(target: Source | Target, *, allow_unknown: bool = False) -> Iterator[Event]:
    """dsh's view of a log: v4 events (an older log migrated in memory), ending with dsh's decision.

    When dsh would refuse the log, the error is raised after the last event (or
    when the iterator is closed early), as dsh's read refuses a log as a whole.
    """
    with open_target(target) as log:
        with log.v4(allow_unknown=allow_unknown) as view:
            for event in view:
                yield cast(Event, event)
