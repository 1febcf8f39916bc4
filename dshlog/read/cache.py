"""A verified cache of what was derived from a log; the log stays the one source of truth.

Store-wide commands (``report``, ``stats``, ``validate``, ``ls``) read every session again
on each run, and the reading commands of one log (``info``, ``stats``, ``validate``,
``surface``) read a large log whole, though dsh's logs change rarely once a session is over.  This module
keeps each session's result in a SQLite database in the user's cache directory (the
caller passes it; it is never inside dsh's store) and serves it again only for the very
same file:

* an entry is keyed by what was asked (its ``kind``, the path as given, the options
  that change the answer and anything else outside the file the answer depends on, such as
  the root dsh judges a generation's place by) and holds the file's revision identity as dsh judges a file
  unchanged (device, inode, size, nanosecond mtime and ctime) plus a digest of its first
  and last bytes; anything else is a miss, so an appended, touched or replaced file is
  read again;
* each row carries a digest of its own key, stamp and value: a row damaged on disk does
  not decode into a wrong answer, it misses; a file that is not our database (garbage, a
  truncated or foreign file, another schema) is removed and made again;
* values are msgpack of a plain form the caller gives (self-describing), tagged with the
  kind's own version and dshlog's version, so a change of a result type or of a rule
  never serves an answer an older build derived;
* a value whose encoded form is larger than :data:`MAX_VALUE_BYTES` is not kept: reading
  it back would cost more memory than the commands' bounded reads;
* SQLite's write-ahead log and a busy timeout let two processes fill it at once; a cache
  that cannot be created, read or written is silently not used.

The batch helper :func:`cached_map` looks up every item in the caller's process and sends
only the misses to the executor, so a warm run starts no worker at all; :func:`cached_call`
is the same for one log read in this process.  A log that has only grown since its entry
was kept (appended to: the same file, longer, every byte of its old extent unchanged) is a
miss, but :func:`resumed_map` and :func:`resumed_call` hand its read the
state the earlier read left at its end (:mod:`dshlog.read.resume`), so it reads only the
new lines.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import msgspec

from .._version import __version__
from ..check.problems import Problem, Severity
from ..errors import Location
from ..executor import Executor, InProcess
from .container import LINE_LIMIT

__all__ = ["CACHE_FILE", "MAX_VALUE_BYTES", "Kind", "ResultCache", "Stamp", "cached_call", "cached_map", "close_caches",
           "extent_stamp", "grown_from", "open_cache", "problem_of", "problem_record", "resumed_call", "resumed_map", "stamp_of"]

T = TypeVar("T")
R = TypeVar("R")

#: The database's name inside the cache directory.
CACHE_FILE = "summaries.sqlite3"
#: The layout of the database; another number is another file's layout: it is made again.
SCHEMA = 1
#: ``PRAGMA application_id`` of our database (``dshl``): a foreign SQLite file is not ours.
APPLICATION_ID = 0x6473686C
#: Bytes of the file's start and end that take part in its stamp.
HEAD_BYTES = 4096
TAIL_BYTES = 16384
#: The largest encoded value kept (a surface of a long session may be larger: it is then read afresh).
MAX_VALUE_BYTES = 64 << 20
#: The name that stands for the caller's standard input, never a file: never stamped, never cached.
STDIN = "-"


class Stamp(msgspec.Struct, frozen=True):
    """What proves a file is the one an entry was derived from."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    digest: bytes

    def row(self) -> tuple[int, int, int, int, int, bytes]:
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns, self.digest)


def stamp_of(path: str) -> Stamp | None:
    """The stamp of a regular file, or ``None`` (not a regular file, gone, unreadable: never cached).

    Anything but a regular file is refused before it is opened: opening a FIFO, even
    without blocking, would meet its writer, which then writes to a reader that goes
    away, and the command's own read would find nobody writing.  The file opened (without
    blocking) is checked with ``fstat`` to be the one looked at, so a FIFO or a device
    put in its place meanwhile is neither waited on nor read.
    """
    try:
        looked = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(looked.st_mode):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (looked.st_dev, looked.st_ino):
            return None
        return Stamp(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, _digest(fd, st.st_size))
    except OSError:
        return None
    finally:
        os.close(fd)


def _digest(fd: int, size: int) -> bytes:
    """The digest of the first and last bytes of the file's first ``size`` bytes (all of it, for a stamp)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(os.pread(fd, min(HEAD_BYTES, size), 0))
    if size > HEAD_BYTES:
        start = max(HEAD_BYTES, size - TAIL_BYTES)
        h.update(os.pread(fd, size - start, start))
    return h.digest()


#: Bytes hashed at a time when a whole extent is checked (:func:`extent_stamp`).
EXTENT_CHUNK = 1 << 20


def _extent_digest(fd: int, size: int) -> bytes:
    """The digest of every byte of the file's first ``size`` bytes (read in bounded chunks)."""
    h = hashlib.sha256()
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(EXTENT_CHUNK, size - offset), offset)
        if not chunk:
            raise OSError("the file is shorter than its stamp")
        h.update(chunk)
        offset += len(chunk)
    return h.digest()[:16]


def _open_same(path: str, dev: int, ino: int, size: int) -> int | None:
    """The file at ``path`` opened without blocking, when it is the regular file ``dev``/``ino`` of at least ``size`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (dev, ino) or st.st_size < size:
        os.close(fd)
        return None
    return fd


def extent_stamp(path: str, stamp: Stamp) -> Stamp | None:
    """``stamp`` with the digest of *every* byte of the file's extent at that stamp, for a state a later read
    resumes from (:func:`grown_from` checks it); ``None`` when the file is no longer that file."""
    fd = _open_same(path, stamp.dev, stamp.ino, stamp.size)
    if fd is None:
        return None
    try:
        return Stamp(stamp.dev, stamp.ino, stamp.size, stamp.mtime_ns, stamp.ctime_ns, _extent_digest(fd, stamp.size))
    except OSError:
        return None
    finally:
        os.close(fd)


def grown_from(path: str, now: Stamp, kept: Stamp) -> bool:
    """Whether the file ``now`` stamps is the one ``kept`` stamped, since grown: appended to, nothing else.

    The same device and inode, a larger size, and the digest of every byte of its first
    ``kept.size`` bytes (the old file's extent, :func:`extent_stamp`) equal to the kept one:
    an append leaves those bytes as they were; a rewrite anywhere in them, a shrink or
    another file under the name does not pass.  (Times change with any append: they are
    not compared.)  Hashing the old extent costs a small part of parsing it.
    """
    if (now.dev, now.ino) != (kept.dev, kept.ino) or now.size <= kept.size:
        return False
    fd = _open_same(path, kept.dev, kept.ino, now.size)
    if fd is None:
        return False
    try:
        return _extent_digest(fd, kept.size) == kept.digest
    except OSError:
        return False
    finally:
        os.close(fd)


class Kind(msgspec.Struct, frozen=True):
    """One kind of cached result: its name, its version and its plain form both ways.

    ``version`` is bumped on any change of the result type or of how it is encoded,
    so entries an older build wrote miss.  ``decode`` may raise anything on a value it
    does not recognise: the entry is then a miss.
    """

    name: str
    version: int
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]

    def tag(self) -> str:
        """The kind with every version its answers depend on (the reader's line limit too)."""
        return f"{self.name}/{self.version}/{__version__}/{LINE_LIMIT.max_bytes}"


def _check(key: str, stamp: Stamp, value: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(key.encode("utf-8", "surrogatepass"))
    h.update(msgspec.msgpack.encode(list(stamp.row())))
    h.update(value)
    return h.digest()


class ResultCache:
    """The database of one cache directory, opened once per process (see :func:`open_cache`)."""

    def __init__(self, sqlite3: ModuleType, directory: Path) -> None:
        self._sqlite3 = sqlite3
        self.path = directory / CACHE_FILE
        self._db: Any = None
        self._pending: list[tuple[Any, ...]] = []
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            self._db = self._connect()
        except (sqlite3.DatabaseError, ValueError):  # not our database (a damaged name does not decode): made again
            self._discard()
            self._db = self._connect()

    def _connect(self) -> Any:
        sqlite3 = self._sqlite3
        db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA busy_timeout = 5000")
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if (app_id, version) != (APPLICATION_ID, SCHEMA) or (tables and "entries" not in tables):
                if tables or app_id or version:  # a foreign file or another layout
                    db.close()
                    raise sqlite3.DatabaseError("not dshlog's cache")
                db.execute("BEGIN IMMEDIATE")
                db.execute("CREATE TABLE IF NOT EXISTS entries (kind TEXT NOT NULL, key TEXT NOT NULL, "
                           "dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, "
                           "digest BLOB, value BLOB, checksum BLOB, PRIMARY KEY (kind, key))")
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA}")
                db.execute("COMMIT")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("SELECT count(*) FROM entries WHERE 0").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _discard(self) -> None:
        """Remove a database that is not ours (or is damaged) with its journals."""
        if self._db is not None:
            try:
                self._db.close()
            except self._sqlite3.Error:
                pass
            self._db = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass

    def _repair(self) -> None:
        """After a damaged page was met: the file is made again (what it held is only a cache)."""
        try:
            self._discard()
            self._db = self._connect()
        except (OSError, ValueError, self._sqlite3.Error):
            self._db = None

    def close(self) -> None:
        """Write what is pending and close the database."""
        self.flush()
        if self._db is not None:
            try:
                self._db.close()
            except self._sqlite3.Error:
                pass
            self._db = None

    def _entry(self, kind: Kind, key: str) -> tuple[Stamp, bytes] | None:
        """The stamp and encoded value stored for ``key``, checked against the row's own digest; ``None`` on a miss."""
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT dev, ino, size, mtime_ns, ctime_ns, digest, value, checksum FROM entries "
                                   "WHERE kind = ? AND key = ?", (kind.tag(), key)).fetchone()
        except self._sqlite3.DatabaseError:
            self._repair()
            return None
        except (self._sqlite3.Error, ValueError):  # a damaged text column does not decode: a miss
            return None
        if row is None or not all(type(x) is int for x in row[:5]) or not isinstance(row[5], bytes):
            return None
        kept = Stamp(*row[:6])
        value = row[6]
        if not isinstance(value, bytes) or row[7] != _check(f"{kind.tag()}\0{key}", kept, value):
            return None
        return kept, value

    @staticmethod
    def _decoded(kind: Kind, value: bytes) -> Any:
        try:
            return kind.decode(msgspec.msgpack.decode(value))
        except Exception:  # noqa: BLE001 - a row that does not decode is a miss, whatever it holds
            return None

    def get(self, kind: Kind, key: str, stamp: Stamp) -> Any:
        """The value stored for ``key`` under exactly ``stamp``, decoded; ``None`` on a miss."""
        entry = self._entry(kind, key)
        if entry is None or entry[0] != stamp:
            return None
        return self._decoded(kind, entry[1])

    def get_grown(self, kind: Kind, key: str, stamp: Stamp, path: str) -> Any:
        """The value stored for ``key`` at an earlier stamp of the file that has since only grown (:func:`grown_from`).

        Used for what a read keeps to resume from (:mod:`dshlog.read.resume`); ``None``
        on a miss, including a value stored at exactly ``stamp`` (nothing to resume).
        """
        entry = self._entry(kind, key)
        if entry is None or not grown_from(path, stamp, entry[0]):
            return None
        return self._decoded(kind, entry[1])

    def put(self, kind: Kind, key: str, stamp: Stamp, result: Any) -> None:
        """Keep ``result`` for ``key`` at ``stamp`` (written by :meth:`flush`); a value that cannot be encoded is not kept."""
        if self._db is None:
            return
        try:
            value = msgspec.msgpack.encode(kind.encode(result))
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
            return
        if len(value) > MAX_VALUE_BYTES:
            return
        tag = kind.tag()
        self._pending.append((tag, key, *stamp.row(), value, _check(f"{tag}\0{key}", stamp, value)))
        if len(self._pending) >= 256:
            self.flush()

    def flush(self) -> None:
        """Write what :meth:`put` kept, in one transaction; a failure leaves the cache as it was."""
        rows, self._pending = self._pending, []
        if self._db is None or not rows:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except self._sqlite3.DatabaseError:
            self._repair()
        except self._sqlite3.Error:
            pass


_OPEN: dict[tuple[int, str], ResultCache | None] = {}


def open_cache(directory: str | os.PathLike[str] | None) -> ResultCache | None:
    """The cache in ``directory`` (``None``: no cache), opened once per process; ``None`` when it cannot be used.

    SQLite is imported here, only when a cache is used: commands that use none start
    without it.
    """
    if directory is None:
        return None
    key = (os.getpid(), os.fspath(directory))  # a forked child opens its own connection
    if key not in _OPEN:
        import sqlite3  # start-up: loaded only when a cache is used

        try:
            _OPEN[key] = ResultCache(sqlite3, Path(directory))
        except (OSError, ValueError, sqlite3.Error):
            _OPEN[key] = None
    return _OPEN[key]


def close_caches() -> None:
    """Close every cache this process opened; the next :func:`open_cache` opens (and checks) its file again."""
    for cache in _OPEN.values():
        if cache is not None:
            cache.close()
    _OPEN.clear()


def _key(item: str, options: str, depends: Callable[[str], str] | None) -> str:
    """The cache key of an item: its path, the options that change its answer, what else it depends on."""
    return f"{item}\0{options}" if depends is None else f"{item}\0{options}\0{depends(item)}"


def _lookups(cache: ResultCache, kind: Kind, items: list[str], options: str,
             depends: Callable[[str], str] | None) -> tuple[list[Stamp | None], list[str], list[Any]]:
    """Each item's stamp (``None``: standard input or no regular file, never served nor kept), key, and
    the result the cache holds for it (``None``: a miss)."""
    stamps = [stamp_of(item) if item != STDIN else None for item in items]
    keys = [_key(item, options, depends) if s is not None else "" for item, s in zip(items, stamps)]
    hits: list[Any] = [cache.get(kind, k, s) if s is not None else None for k, s in zip(keys, stamps)]
    return stamps, keys, hits


def _unchanged(item: str, stamp: Stamp, key: str, options: str, depends: Callable[[str], str] | None) -> bool:
    """Whether an item's file and what else it depends on are as they were looked up: its result may be kept."""
    return stamp_of(item) == stamp and _key(item, options, depends) == key


def cached_map(cache: ResultCache | None, kind: Kind, fn: Callable[[str], R], items: list[str],
               executor: Executor, *, options: str = "",
               keep: Callable[[R], bool] = lambda _r: True,
               depends: Callable[[str], str] | None = None) -> Generator[R, None, None]:
    """``executor.map(fn, items)`` in input order, the results the cache holds served from it.

    Each item is a path (``-``, the caller's standard input, is never served nor kept);
    ``options`` is every other argument of ``fn`` that changes its answer, and
    ``depends`` (when given) says, per item, what else outside the file its answer
    depends on (asked in this process, before the lookup and again after ``fn``).
    Lookups run in this process; only the misses go to the executor, and a result is
    kept only when the file's stamp and ``depends`` are the same after ``fn`` as
    before it (a file changed meanwhile is read again next time) and ``keep`` says it
    may be (an I/O failure is not a fact about the log).  An error ``fn`` raises is
    raised at its item's turn, as ``executor.map`` does.
    """
    if cache is None:
        yield from executor.map(fn, items)
        return

    stamps, keys, hits = _lookups(cache, kind, items, options, depends)
    misses = iter(executor.map(fn, [item for item, hit in zip(items, hits) if hit is None]))
    try:
        for item, k, s, hit in zip(items, keys, stamps, hits):
            if hit is not None:
                yield hit
                continue
            result = next(misses)
            if s is not None and keep(result) and _unchanged(item, s, k, options, depends):
                cache.put(kind, k, s, result)
            yield result
    finally:
        cache.flush()


def cached_call(cache: ResultCache | None, kind: Kind, fn: Callable[[str], R], item: str, *, options: str = "",
                keep: Callable[[R], bool] = lambda _r: True, depends: Callable[[str], str] | None = None) -> R:
    """``fn(item)`` in this process, served from the cache when it holds it (:func:`cached_map` of one item)."""
    results = cached_map(cache, kind, fn, [item], InProcess(), options=options, keep=keep, depends=depends)
    try:
        return next(results)
    finally:
        results.close()  # writes what it kept now, not when the generator is collected


def resumed_map(cache: ResultCache | None, kind: Kind, state: Kind, fn: Callable[[str, Any], tuple[R, Any]],
                items: list[str], executor: Executor, *, options: str = "", keep: Callable[[R], bool] = lambda _r: True,
                depends: Callable[[str], str] | None = None) -> Generator[R, None, None]:
    """:func:`cached_map` of a read that can go on from where an earlier read of the same file stood.

    ``fn(item, kept)`` reads the log (``kept``: the ``state`` kind's value an earlier read
    of the file left, when the file has only grown since (:meth:`ResultCache.get_grown`);
    else ``None``) and returns its result with the state to keep now (``None``: none).
    Results are served from the cache as :func:`cached_map` serves them; a result and
    its state are kept under the file's stamp when the file did not change while it was
    read.  ``fn`` goes to the executor with its item, as :func:`cached_map`'s does.
    """
    if cache is None:
        yield from (result for result, _state in executor.map(partial(_with, fn), [(item, None) for item in items]))
        return

    stamps, keys, hits = _lookups(cache, kind, items, options, depends)
    kept = [cache.get_grown(state, k, s, item) if s is not None and hit is None else None
            for item, k, s, hit in zip(items, keys, stamps, hits)]
    misses = iter(executor.map(partial(_with, fn), [(item, was) for item, was, hit in zip(items, kept, hits) if hit is None]))
    try:
        for item, k, s, hit in zip(items, keys, stamps, hits):
            if hit is not None:
                yield hit
                continue
            result, now = next(misses)
            if s is not None and keep(result) and _unchanged(item, s, k, options, depends):
                cache.put(kind, k, s, result)
                whole = extent_stamp(item, s) if now is not None else None
                if whole is not None:
                    cache.put(state, k, whole, now)  # stamped with every byte it was read from
            yield result
    finally:
        cache.flush()


def _with(fn: Callable[[str, Any], tuple[R, Any]], pair: tuple[str, Any]) -> tuple[R, Any]:
    """``fn`` of an item and its kept state (a module-level function: an executor's worker can take it)."""
    return fn(*pair)


def resumed_call(cache: ResultCache | None, kind: Kind, state: Kind, fn: Callable[[str, Any], tuple[R, Any]], item: str,
                 *, options: str = "", keep: Callable[[R], bool] = lambda _r: True,
                 depends: Callable[[str], str] | None = None) -> R:
    """:func:`resumed_map` of one item, in this process."""
    results = resumed_map(cache, kind, state, fn, [item], InProcess(), options=options, keep=keep, depends=depends)
    try:
        return next(results)
    finally:
        results.close()  # writes what it kept now, not when the generator is collected


# ----------------------------------------------------------------------------- plain forms shared by the kinds


def problem_record(p: Problem) -> list[Any]:
    """A reader's note as a plain list (its ``value`` is never kept: it takes no part in a result)."""
    loc = None if p.loc is None else [p.loc.line, p.loc.offset, p.loc.frame, p.loc.index]
    return [p.code, p.message, str(p.severity), p.seq, loc, p.path]


def problem_of(rec: list[Any]) -> Problem:
    """:func:`problem_record` back; raises on anything it did not write."""
    code, message, severity, seq, loc, path = rec
    if not isinstance(code, str) or not isinstance(message, str):
        raise TypeError("a note's code and message are text")
    return Problem(code, message, Severity(severity), seq, None if loc is None else Location(*loc), path)
