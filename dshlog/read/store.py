"""dsh's persistence root: where sessions live, how to name, list and find them.

Layout (FORMAT.md 1.1)::

    <root>/<projectKey(cwd)> or _no-cwd/<encodeSegment(sessionId)>/session[.vN].jsonl[.zstd]

The root defaults to ``$DSH_HOME/sessions`` with ``DSH_HOME`` defaulting to
``~/.dsh``.  Listing reads each session's header and makes one cheap pass over
its raw lines (only lines that mention ``turn/start`` or ``session/title`` are
parsed), so ``ls`` stays fast on big logs.  Ids read from inside a log never
become paths except through :func:`encode_segment`.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable, Iterable, Iterator, Sequence

import msgspec

from ..errors import DshlogError, ExitCode, IOFailure, Refused, UsageError, boundary
from ..model.content import TRANSCRIPT, content_text
from ..model.period import parse_when
from ..protocol import layout
from ..protocol.jsjson import loads_or_none
from ..protocol.layout import (
    NO_CWD,
    NO_GENERATION,
    choose_generation,
    decode_segment,
    encode_segment,
    identity_refusal,
    is_project_dir,
    parse_generation,
    project_key,
    root_refusal,
    session_dir,
)
from ..protocol.texts import session_not_found
from ..protocol.zstd import ZSTD_MAGIC
from .container import SourceInfo, iter_lines, iter_zstd_lines, not_regular_text, open_regular
from .place import place_refusal, root_look

# ----------------------------------------------------------------------------- naming


def is_session_directory(directory: Path) -> bool:
    """Whether ``directory`` holds a session: its ``session.lock`` or a generation file."""
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any(n == layout.LOCK_FILENAME or parse_generation(n) is not None for n in names)


# ----------------------------------------------------------------------------- raw reading


def _open_raw(path: Path) -> io.BufferedReader:
    return open_regular(path)


def raw_lines(path: Path, *, parallel: bool = False) -> Iterator[bytes]:
    """Complete lines (no newline) of a plain or zstd generation, header first; torn tail ignored.

    ``parallel``: a forked helper may decode a large zstd body (the caller's policy).
    """
    with _open_raw(path) as fh:
        head = fh.peek(4)[:4]
        info = SourceInfo(path=str(path), container="jsonl")
        lines = iter_zstd_lines(fh, info, parallel) if head == ZSTD_MAGIC else iter_lines(fh, info)
        for rec in lines:
            if rec.raw is not None:
                yield rec.raw


def first_header(path: Path) -> dict[str, Any] | None:
    """The physical header of a generation, reading only its first line (zstd: its first frame)."""
    with _open_raw(path) as fh:
        lines = iter_zstd_lines(fh, SourceInfo(path=str(path), container="jsonl.zstd"), parallel=False) \
            if fh.peek(4)[:4] == ZSTD_MAGIC else iter_lines(fh, SourceInfo(path=str(path), container="jsonl"))
        try:
            first = next(lines, None)
        except DshlogError:
            return None
    if first is None or first.raw is None:
        return None
    obj = loads_or_none(first.raw)
    return obj if isinstance(obj, dict) and obj.get("type") == "session" else None


# ----------------------------------------------------------------------------- sessions


@dataclass
class SessionEntry:
    """One session directory of a root, as ``ls`` shows it."""

    dir: Path
    project: str
    path: Path | None = None  # selected generation
    id: str | None = None
    header: dict[str, Any] | None = None
    size: int | None = None
    mtime_ms: int | None = None
    error: str | None = None
    exit_code: ExitCode = ExitCode.OK  # of what kept the session from being read (not of an identity note)
    scanned: bool = False
    title: str | None = None
    prompt: str | None = None  # the first thing the user wrote: what a session without a title is about
    turns: int = 0
    events: int = 0
    last_time: int | None = None  # time of the last event (0/None in projections)
    children: list[str] = field(default_factory=list)

    @property
    def version(self) -> int | None:
        g = parse_generation(self.path.name) if self.path is not None else None
        return g.version if g is not None else None

    @property
    def cwd(self) -> str | None:
        cwd = (self.header or {}).get("cwd")
        return cwd if isinstance(cwd, str) else None

    @property
    def parent(self) -> str | None:
        p = (self.header or {}).get("parentSession")
        return p if isinstance(p, str) else None

    @property
    def origin(self) -> str | None:
        o = (self.header or {}).get("origin")
        return o if isinstance(o, str) else None

    @property
    def display_title(self) -> str | None:
        """The title, or, for a session without ``session/title``, its first user prompt."""
        return self.title or self.prompt

    @property
    def last_activity(self) -> int | None:
        """Epoch ms of the last event, or the file's mtime when events carry no time."""
        if self.last_time:
            return self.last_time
        return self.mtime_ms

    def scan(self) -> SessionEntry:
        """One cheap pass: turns, event count, title and last event time (parses few lines)."""
        if self.scanned or self.path is None:
            return self
        self.scanned = True
        last: bytes | None = None
        first = True
        try:
            for raw in raw_lines(self.path):
                if first:
                    first = False
                    head = loads_or_none(raw)
                    if isinstance(head, dict) and head.get("type") == "session":
                        continue  # the header
                self.events += 1
                last = raw
                if self.prompt is None and b'"user/message"' in raw:
                    self.prompt = _prompt(loads_or_none(raw))
                if b"turn/start" in raw or b"session/title" in raw:
                    obj = loads_or_none(raw)
                    t = obj.get("type") if isinstance(obj, dict) else None
                    if t == "turn/start":
                        self.turns += 1
                    elif t == "session/title":
                        data = obj.get("data")
                        if isinstance(data, dict) and isinstance(data.get("title"), str):
                            self.title = data["title"]
        except DshlogError as exc:
            self.error = exc.one_line()
        if last is not None:
            obj = loads_or_none(last)
            if isinstance(obj, dict):
                t = obj.get("time", obj.get("time0"))
                if type(t) is int and t > 0:
                    self.last_time = t
        return self

    def as_dict(self) -> dict[str, Any]:
        h = self.header or {}
        return {
            "shape": 1,
            "id": self.id,
            "title": self.title,
            "prompt": self.prompt,
            "cwd": self.cwd,
            "project": self.project,
            "dir": str(self.dir),
            "path": str(self.path) if self.path is not None else None,
            "generation": self.path.name if self.path is not None else None,
            "version": h.get("version", self.version) if self.header else self.version,
            "size": self.size,
            "events": self.events if self.scanned else None,
            "turns": self.turns if self.scanned else None,
            "createdAt": h.get("createdAt"),
            "lastActivity": self.last_activity,
            "lastEventTime": self.last_time,
            "mtime": self.mtime_ms,
            "parentSession": self.parent,
            "origin": self.origin,
            "children": list(self.children),
            "error": self.error,
        }


def _prompt(obj: Any) -> str | None:
    """The text of a ``user/message`` the user wrote (``None`` for the harness's context messages)."""
    if not isinstance(obj, dict) or obj.get("type") != "user/message" or not isinstance(obj.get("data"), dict):
        return None
    data = obj["data"]
    source = data.get("source")
    if isinstance(source, dict) and source.get("kind") not in (None, "user"):
        return None
    message = data.get("message")
    content = data.get("content", message.get("content") if isinstance(message, dict) else None)  # v0 wraps the message
    text = content_text(content, TRANSCRIPT).strip()
    return text or None


def _entry(found: str | Unreadable, *, header: bool) -> SessionEntry:
    if isinstance(found, Unreadable):
        where = Path(found.path)
        sdir = where.parent if parse_generation(where.name) is not None else where
        e = SessionEntry(dir=sdir, project=sdir.parent.name, error=found.reason, exit_code=found.exit_code)
        e.id = _segment_id(sdir.name)
        return e
    path = Path(found)
    e = SessionEntry(dir=path.parent, project=path.parent.parent.name, path=path)
    e.id = _segment_id(path.parent.name)
    try:
        st = path.stat()
        e.size = st.st_size
        e.mtime_ms = st.st_mtime_ns // 1_000_000
        if header:
            e.header = first_header(path)
            hid = (e.header or {}).get("id")
            if isinstance(hid, str) and hid:
                e.id = hid
                e.error = identity_refusal(path, hid, (e.header or {}).get("cwd"))
            elif e.header is None:
                e.error = "unreadable session header"
    except DshlogError as exc:
        e.error, e.exit_code = exc.message, exc.exit_code
    except OSError as exc:
        e.error, e.exit_code = exc.strerror or str(exc), ExitCode.IO
    return e


def _segment_id(name: str) -> str | None:
    try:
        return decode_segment(name)
    except UsageError:
        return None


def place_refused(source: str | Path) -> str | None:
    """dsh's refusal of the generation at ``source`` for where it sits in its store, or ``None``.

    Rescue publishes its successor beside the source, in the same place: such a
    session is not one it brings back, whatever the log holds.
    """
    try:
        header = first_header(Path(source)) or {}
    except (DshlogError, OSError):
        return None
    return place_refusal(source, header.get("id"), header.get("cwd"), compressed=str(source).endswith(layout.ZSTD_SUFFIX))


# ----------------------------------------------------------------------------- walking a store


class Unreadable(msgspec.Struct, frozen=True):
    """A session (or a directory) a walk found and cannot read: where, why (one line), its exit code.

    Plain values, so that a batch can hand it back in its place among the results
    of the sessions that were read (:func:`in_walk_order`).
    """

    path: str
    error: str  # the one line: kind, path, why
    exit_code: ExitCode
    reason: str  # kind and why, for a listing that names the session itself

    @classmethod
    def of(cls, exc: DshlogError, path: str) -> Unreadable:
        return cls(exc.path or path, exc.with_context(path=path).one_line(), exc.exit_code, f"{exc.kind}: {exc.message}")


def _problem(exc: DshlogError, path: Path) -> Unreadable:
    return Unreadable.of(exc, str(path))


def _generation_of(directory: Path, names: Iterable[str]) -> str | Unreadable:
    """The generation dsh reads in a session directory, if it is a readable regular file.

    Looked at, never opened: a FIFO, a device or a socket there (or a symlink to
    one), a dangling symlink or a file this process may not read is named instead.
    """
    try:
        path = directory / choose_generation(names, where=str(directory))
    except DshlogError as exc:  # a directory mixing plain and compressed generations: dsh refuses it
        return _problem(exc, directory)
    try:
        st = path.stat()
    except FileNotFoundError:
        dangling = "a dangling symbolic link" if path.is_symlink() else "no such file"
        return _problem(IOFailure(dangling), path)
    except OSError as exc:
        return _problem(IOFailure(f"cannot read: {exc.strerror}"), path)
    if not stat.S_ISREG(st.st_mode):
        return _problem(IOFailure(not_regular_text(st.st_mode)), path)
    if not os.access(path, os.R_OK):
        return _problem(IOFailure("permission denied"), path)
    return str(path)


def _listing(directory: Path) -> list[os.DirEntry[str]] | Unreadable:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda d: d.name)
    except OSError as exc:
        return _problem(IOFailure(f"cannot list directory: {exc.strerror}"), directory)


def _has_generation(directory: Path) -> bool:
    try:
        return any(parse_generation(n) is not None for n in os.listdir(directory))
    except OSError:
        return False


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk_tree(top: Path, projects_only: bool) -> Iterator[str | Unreadable]:
    """Every session below ``top``, in name order (see :func:`walk_sessions`)."""
    boundary = os.path.realpath(top)
    seen: set[tuple[int, int]] = set()

    def visit(directory: Path, real: str, depth: int) -> Iterator[str | Unreadable]:
        listing = _listing(directory)
        if isinstance(listing, Unreadable):
            yield listing
            return
        names = [d.name for d in listing]
        if any(parse_generation(n) is not None for n in names):
            yield _generation_of(directory, names)  # a session directory: sessions do not nest
            return
        for d in listing:
            if projects_only and depth == 0 and not is_project_dir(d.name):
                continue
            try:
                if not d.is_dir():
                    continue
                st = d.stat()
            except OSError:
                continue
            child = Path(d.path)
            child_real = os.path.realpath(child)
            if d.is_symlink():
                # a linked session directory is one session wherever it is (a person linked it in);
                # any other directory outside the target would take the walk out of the store
                if not _inside(child_real, boundary) and not _has_generation(child):
                    yield _problem(Refused(f"a symbolic link to a directory outside {top} ({child_real}): not followed"), child)
                    continue
                if _inside(real, child_real):
                    yield _problem(Refused(f"a symbolic link to a directory it is in ({child_real}): a loop, not followed"), child)
                    continue
            if (st.st_dev, st.st_ino) in seen:  # reached twice (two links to one directory): walked once
                continue
            seen.add((st.st_dev, st.st_ino))
            yield from visit(child, child_real, depth + 1)

    try:
        st = top.stat()
        seen.add((st.st_dev, st.st_ino))
    except OSError as exc:
        yield _problem(IOFailure(f"cannot read: {exc.strerror}"), top)
        return
    yield from visit(top, boundary, 0)


def walk_sessions(targets: Iterable[str], *, recursive: bool = True, projects_only: bool = False) -> list[str | Unreadable]:
    """The one walk of a store: what each target stands for, session by session, in order.

    A file is itself (``-`` too: standard input); a session directory is the
    generation dsh reads in it; any other directory (a persistence root, a project
    directory, a tree of them), with ``recursive``, is every session below it.  A
    session that cannot be read is an :class:`Unreadable` in its place, so that a
    batch names it and goes on: a directory that cannot be listed, one that mixes
    plain and compressed generations (dsh refuses it), a generation that is not a
    readable regular file (never opened: a FIFO would block, ``/dev/zero`` never
    ends).  A symbolic link to a directory is followed only inside the target (a
    link to a session directory, one session, wherever it points) and never into a
    directory it is in (a loop); a directory reached twice is walked once.
    ``projects_only``: below a root, only directories named as dsh names projects.
    """
    found: list[str | Unreadable] = []
    for target in targets:
        if target == "":  # Path("") is the current directory: an empty argument must not mean "here"
            raise UsageError("an empty PATH names no file or directory")
        path = Path(target)
        if target == "-" or not path.is_dir():
            found.append(target)
            continue
        listing = _listing(path)
        if isinstance(listing, Unreadable):
            found.append(listing)
        elif any(parse_generation(d.name) is not None for d in listing):
            found.append(_generation_of(path, [d.name for d in listing]))
        elif recursive:
            found.extend(_walk_tree(path, projects_only))
        else:
            found.append(_problem(UsageError(NO_GENERATION), path))
    return found


R = TypeVar("R")


def in_walk_order(found: Sequence[str | Unreadable], run: Callable[[list[str]], Iterable[R]],
                  failed: Callable[[Unreadable], R]) -> Iterator[R]:
    """A batch's results in walk order: ``run`` works on the readable sessions (in a pool, say),
    ``failed`` makes the result of each one the walk could not read, in its turn."""
    results = iter(run([f for f in found if isinstance(f, str)]))
    for f in found:
        yield failed(f) if isinstance(f, Unreadable) else next(results)


@boundary
def list_sessions(root: str | os.PathLike[str], *, project: str | None = None, scan: bool = True,
                  scanner: Callable[[list[SessionEntry]], object] | None = None) -> list[SessionEntry]:
    """Every session of a persistence root (``$DSH_HOME/sessions``), with parent/child links filled in.

    ``project`` limits the listing to one project directory name (a project key).
    ``entry.as_dict()`` is the object ``dshlog ls --json`` prints for it.

    ``scanner`` scans the entries instead of :meth:`SessionEntry.scan` one by one (a caller
    that serves scans it already made: ``ls`` with its cache); the links are made after it.
    A session the walk cannot read is listed with its ``error`` and ``exit_code``.
    """
    root = Path(root)
    if not root.is_dir():
        raise IOFailure("no such session root (set DSH_HOME or pass ROOT)", path=str(root))
    if project is not None:
        pdir = root / project
        found = walk_sessions([str(pdir)]) if pdir.is_dir() else []
    else:
        found = list(_walk_tree(root, projects_only=True))
    entries = [_entry(f, header=True) for f in found]
    look = root_look(root)  # once for the root: dsh refuses every session of a root it refuses
    for e in entries:
        if e.error is None and e.path is not None:
            e.error = root_refusal(look, e.path.name.endswith(layout.ZSTD_SUFFIX))
    if scan and scanner is not None:
        scanner(entries)
    elif scan:
        for e in entries:
            e.scan()
    by_id: dict[str, list[SessionEntry]] = {}
    for e in entries:
        if e.id is not None:
            by_id.setdefault(e.id, []).append(e)
    for e in entries:
        if e.parent is None or e.id is None:
            continue
        parents = by_id.get(e.parent, [])
        # a copy in the wrong place (identity error) is not the parent when the real one is there
        for parent in [p for p in parents if p.error is None] or parents:
            parent.children.append(e.id)
    return entries


# ----------------------------------------------------------------------------- filters


def parse_since(text: str, *, now: float) -> int:
    """``--since`` as epoch ms: a duration back from ``now`` (epoch seconds; ``3d``, ``12h``) or a date/time
    (``2026-11-01``).

    The grammar is :func:`dshlog.model.period.parse_when`'s (without its words), in local time.
    """
    return parse_when(text, now_ms=int(now * 1000), tz=None, words=False)


# ----------------------------------------------------------------------------- resolution


class Resolved(msgspec.Struct, frozen=True):
    """What a command's FILE argument resolved to; ``chosen`` when dshlog picked the session."""

    path: str
    session_id: str | None = None
    chosen: bool = False


def _looks_like_path(arg: str) -> bool:
    return os.sep in arg or "/" in arg or arg.endswith((".jsonl", ".zstd", ".json")) or arg in (".", "..", "~")


def _by_id(arg: str, root: Path) -> Resolved:
    if not arg.strip():
        raise UsageError("an empty session id names no session")
    exact: list[tuple[str, Path]] = []
    prefix: list[tuple[str, Path]] = []
    if root.is_dir():
        for item in _walk_tree(root, projects_only=True):
            where = Path(item if isinstance(item, str) else item.path)
            # the session directory: a generation's parent (a problem may name the directory itself)
            sdir = where.parent if parse_generation(where.name) is not None else where
            sid = _segment_id(sdir.name)
            if sid is None:
                continue
            if sid == arg:
                exact.append((sid, where))
            elif sid.startswith(arg):
                prefix.append((sid, where))
    found = exact or prefix
    if not found:
        # dsh's words for an id it cannot open; what dshlog looked for around them
        raise UsageError(f"{session_not_found(arg)}: no such file, and no session id or id prefix {arg!r} under {root}")
    if len(found) > 1:
        cands = ", ".join(f"{sid} ({d.parent.name})" for sid, d in found[:10]) + (f", ... {len(found) - 10} more" if len(found) > 10 else "")
        what = "session id" if exact else "id prefix"
        raise UsageError(f"{what} {arg!r} is ambiguous: {cands}")
    sid, where = found[0]
    return Resolved(str(where), sid, True)  # a session that cannot be read is named by its opener


def most_recent(root: Path, cwd: str) -> SessionEntry | None:
    """The session dsh would resume in ``cwd``: the project's most recently active top-level session.

    Subagent children (``origin: subagent``) are not resumed by a person, so they are skipped.
    """
    pdir = root / project_key(cwd)
    if not pdir.is_dir():
        return None
    entries = [e for e in list_sessions(root, project=pdir.name, scan=True) if e.path is not None and e.origin != "subagent"]
    if not entries:
        return None
    return max(entries, key=lambda e: (e.last_activity or 0, e.mtime_ms or 0, e.id or ""))


def resolve_session(arg: str | None, *, root: Path | str, cwd: str | None = None) -> Resolved:
    """A command's FILE argument: a path as is, else a session id / id prefix, else the current session
    (the most recent of ``cwd``'s project under ``root``; both are the caller's)."""
    if arg is not None:
        if arg == "":  # not a path, and as an id prefix it would match every session
            raise UsageError("an empty FILE names no file and no session (give a path, an id, or nothing for the current session)")
        if arg == "-" or os.path.lexists(arg) or _looks_like_path(arg):
            return Resolved(arg)
        return _by_id(arg, Path(root))
    root_p = Path(root)
    if cwd is None:
        raise UsageError("no FILE given, and no current directory to find its session")
    e = most_recent(root_p, cwd)
    if e is None:
        raise UsageError(f"no FILE given and no session of this directory under {root_p / project_key(cwd)}")
    return Resolved(str(e.path), e.id, True)


def resolve_target(arg: str | None, *, root: Path | str, cwd: str | None = None) -> str:
    """Path to open for a command argument (see :func:`resolve_session`)."""
    return resolve_session(arg, root=root, cwd=cwd).path


def sort_entries(entries: Iterable[SessionEntry], key: str, *, reverse: bool = False) -> list[SessionEntry]:
    """``--sort time|size|id|turns``; time/size/turns list the largest (most recent) first."""
    keys = {
        "time": lambda e: (e.last_activity or 0, e.id or ""),
        "size": lambda e: (e.size or 0, e.id or ""),
        "turns": lambda e: (e.turns, e.id or ""),
        "id": lambda e: (e.id or "",),
    }
    if key not in keys:
        raise UsageError(f"--sort {key!r}: expected one of time, size, id, turns")
    descending = key != "id"
    return sorted(entries, key=keys[key], reverse=descending != reverse)


__all__ = [
    "NO_CWD",
    "Resolved",
    "SessionEntry",
    "Unreadable",
    "decode_segment",
    "is_session_directory",
    "encode_segment",
    "list_sessions",
    "most_recent",
    "parse_since",
    "project_key",
    "place_refused",
    "first_header",
    "resolve_session",
    "resolve_target",
    "session_dir",
    "sort_entries",
    "in_walk_order",
    "walk_sessions",
]
