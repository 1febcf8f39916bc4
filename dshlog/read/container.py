"""Physical sources: bytes -> records.

A *source* is whatever the user pointed dshlog at: a plain JSONL generation, a
Zstandard multi-frame generation, a JSON array of events, a stream of events
wrapped in another protocol (stream-json ``session_event`` lines, JSON-RPC
``session.event`` notifications, ``result.json``/``behavior.json`` documents), a
session directory, or standard input.  This module only frames bytes into
records and says where each one came from; it never interprets events.

The container is detected by content (magic bytes, first line), never only by
name, and everything streams: plain files line by line, zstd frames block by
block, JSON documents element by element through the one JSON reader.  Memory
stays bounded by the longest line (or element).
"""

from __future__ import annotations

import functools
import io
import os
import stat
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, cast
from collections.abc import Callable, Iterator

import msgspec

from .. import forked
from ..errors import BeyondLimit, CorruptLog, IOFailure, Location, UsageError
from ..protocol.jsjson import JsonError, iter_array, loads
from ..protocol.layout import choose_generation
from ..protocol.texts import TORN_RECORD_IN_FRAME
from ..protocol.zstd import ZSTD_MAGIC, FrameWalker

CHUNK = 1 << 20

# --------------------------------------------------------------------------- the line-size limit

#: The longest line a reader accepts by default, in plaintext bytes (newline excluded).
#: dsh itself cannot hold a longer line: V8 strings end at 2**29 - 24 UTF-16 units
#: (512 MiB), and a real log's longest lines are tool outputs of tens of MB.  Reading a
#: line costs a few times its size (the bytes, the parsed strings, a render), so 256 MiB
#: keeps every command under about 1.5 GB; a decompression bomb or a corrupt file with
#: no newline is refused once this many bytes arrived, before more is decoded.
DEFAULT_MAX_LINE_BYTES = 256 << 20


class LineLimit:
    """The one line-size policy of every reader (plain, zstd, follow); the CLI may raise it."""

    __slots__ = ("max_bytes",)

    def __init__(self, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_bytes = max_bytes

    def set(self, max_bytes: int) -> None:
        """Set the limit (at least 1 KiB: a header line must fit)."""
        if max_bytes < 1024:
            raise UsageError(f"the line-size limit must be at least 1024 bytes, not {max_bytes}")
        self.max_bytes = max_bytes

    def refusal(self, path: str, line: int, offset: int, seen: int, frame: int | None = None) -> BeyondLimit:
        """The error for a line still growing past the limit (``seen`` bytes of it arrived)."""
        return BeyondLimit(
            f"the line is longer than the line-size limit of {_size(self.max_bytes)} "
            f"(at least {seen} bytes; a longer limit is set with --max-line-size)",
            path=path, loc=Location(line=line, offset=offset, frame=frame))


#: A reader's progress hook: ``(bytes of the file read so far, the file's size or None)``.
#: The reading loop calls it (:class:`~dshlog.read.session.SessionLog`'s ``progress``), never a thread:
#: a process that forks a zstd decoder must have no other thread.
Position = Callable[[int, int | None], None]

#: About how many bytes a reader reads between two calls of its :data:`Position` hook.
PROGRESS_STEP = 1 << 20


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n} bytes"


#: The limit in force (``LINE_LIMIT.set`` changes it for the process).
LINE_LIMIT = LineLimit()


def bounded_lines(fh: IO[bytes]) -> Iterator[bytes]:
    """``for line in fh``, but no line read past the limit: an over-long one comes back unterminated.

    The caller tells it from a torn tail by its length (``len(line) > LINE_LIMIT.max_bytes``).
    """
    return iter(functools.partial(fh.readline, LINE_LIMIT.max_bytes + 1), b"")



class Container:
    """Names of the containers we recognise (stable strings, shown by ``info``)."""

    JSONL = "jsonl"
    ZSTD = "jsonl.zstd"
    ARRAY = "json-array"
    STREAM_JSON = "stream-json"
    JSONRPC = "jsonrpc"
    RESULT_JSON = "result-json"
    BEHAVIOR_JSON = "behavior-json"


@dataclass(slots=True)
class Record:
    """One physical record: a header or body line, or one element of a JSON document.

    ``raw`` holds the exact line bytes (without the newline) when the record came
    from a JSONL line whose content *is* the record; ``obj`` holds the parsed value
    when the container already parsed it (JSON documents, wrapped streams).
    """

    raw: bytes | None
    obj: Any
    line: int | None
    offset: int | None
    frame: int | None = None
    index: int | None = None

    def loc(self) -> Location:
        return _make_loc(self.line, self.offset, self.frame, self.index)


def _loc_factory() -> Callable[[int | None, int | None, int | None, int | None], Location]:
    """A fast ``Location(line, offset, frame, index)`` for the per-row hot path.

    ``Location`` is a frozen slotted dataclass whose generated ``__init__`` goes
    through ``object.__setattr__`` per field (~1.3 us); writing the slots through
    their descriptors builds the same object in a third of the time.  Readers make
    one per physical row, so this is measurable on multi-GB logs.
    """
    try:
        new = object.__new__
        slots: Any = Location  # its slot descriptors (type checkers see the fields' values)
        set_line, set_offset = slots.line.__set__, slots.offset.__set__
        set_frame, set_index = slots.frame.__set__, slots.index.__set__
    except AttributeError:  # pragma: no cover - Location without slots
        return Location

    def make(line: int | None, offset: int | None, frame: int | None, index: int | None) -> Location:
        loc = new(Location)
        set_line(loc, line)
        set_offset(loc, offset)
        set_frame(loc, frame)
        set_index(loc, index)
        return loc

    if make(1, 2, 3, 4) != Location(1, 2, 3, 4):  # pragma: no cover - field order changed
        return Location
    return make


_make_loc = _loc_factory()


def torn_text(t: Torn, size_on_disk: int | None) -> str:
    """A reader's note of a torn tail: that it is ignored, and :func:`torn_description`."""
    return f"torn tail ignored: {torn_description(t, size_on_disk)}"


def torn_description(t: Torn, size_on_disk: int | None) -> str:
    """What a torn tail is, for people: the bytes of an unfinished line, or an unfinished zstd frame
    (whose write's events are lost, however little of it decodes)."""
    if t.frame is not None and t.frame_offset is not None and size_on_disk is not None:
        return (f"zstd frame {t.frame} is incomplete ({size_on_disk - t.frame_offset} bytes on disk "
                f"from byte {t.frame_offset}); the events of that write are lost")
    return f"{t.length} bytes after the last complete line (byte {t.offset})"


class Torn(msgspec.Struct):
    """An incomplete tail that readers never see (dsh truncates it on its next write)."""

    offset: int  # plaintext offset where the torn bytes start
    length: int  # number of plaintext bytes dropped (recovered part of a torn frame counts)
    frame: int | None = None  # zstd: index of the torn frame
    frame_offset: int | None = None  # zstd: file offset where the torn frame starts
    data: bytes = b""  # the dropped plaintext bytes (bounded: only kept up to 1 MiB)


class SourceInfo(msgspec.Struct):
    """What the framing layer learnt while reading (filled in as records stream)."""

    path: str
    container: str
    size_on_disk: int | None = None
    decoded_bytes: int = 0
    frames: int = 0
    torn: Torn | None = None
    wrapped_sessions: list[str] = msgspec.field(default_factory=list)


def select_generation(directory: Path) -> Path:
    """The generation dsh would read in a session directory (FORMAT.md 1.3; the rule is layout's)."""
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise IOFailure(f"cannot list session directory: {exc.strerror}", path=str(directory)) from None
    return directory / choose_generation(names, where=str(directory))


def file_kind(mode: int) -> str:
    """What a non-regular file is, in a person's words (``a FIFO``, ``a character device``)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def not_regular_text(mode: int) -> str:
    """The refusal of a file that is not a regular one (a device, a socket, a FIFO where a file must be)."""
    return f"not a regular file ({file_kind(mode)}): not opened"


def _missing_text(path: Path) -> str:
    """The refusal of a path with nothing behind it: gone, or a symbolic link to nothing."""
    return "no such file or directory" if not path.is_symlink() else "a dangling symbolic link"


def resolve_path(target: str) -> Path:
    """A file path, or the selected generation of a session directory.

    A person may name a pipe (``<(zstdcat ...)``, a FIFO a writer feeds): it is read
    as a stream.  Every other kind of file (a device, a socket) is refused before it
    is opened: ``/dev/zero`` would feed a reader up to its line limit.
    """
    p = Path(target)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise IOFailure(_missing_text(p), path=target) from None
    except OSError as exc:
        raise IOFailure(f"cannot open: {exc.strerror}", path=target) from None
    if stat.S_ISDIR(st.st_mode):
        return select_generation(p)
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISFIFO(st.st_mode):
        raise UsageError(not_regular_text(st.st_mode), path=target)
    return p


#: How long a FIFO named as input may take to get a writer (seconds): a pipe from a running
#: command has one already, or within milliseconds; a FIFO nobody writes to is refused then,
#: instead of blocking the reader forever in ``open()``.
FIFO_WRITER_WAIT = 1.0


class _Prefixed(io.RawIOBase):
    """A pipe's first bytes (read while waiting for its writer), then the rest of the pipe."""

    def __init__(self, first: bytes, fd: int) -> None:
        super().__init__()
        self._first = first
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._first:
            n = min(len(buffer), len(self._first))
            buffer[:n] = self._first[:n]
            self._first = self._first[n:]
            return n
        data = os.read(self._fd, len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def _open_fifo(path: Path) -> IO[bytes]:
    """A FIFO as a stream, without blocking on a FIFO nobody writes to.

    Opened non-blocking (which never waits for a writer); a read then tells a FIFO
    with a writer (data, or "try again") from one without (end of file).  A writer
    gets :data:`FIFO_WRITER_WAIT` seconds to arrive; then the FIFO is refused.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise IOFailure(f"cannot open: {exc.strerror}", path=str(path)) from None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):  # replaced since it was looked at
            raise UsageError("not a regular file: not opened", path=str(path))
        deadline = time.monotonic() + FIFO_WRITER_WAIT
        while True:
            try:
                first = os.read(fd, CHUNK)
            except BlockingIOError:  # a writer is there and has written nothing yet: wait for it
                first = b""
                break
            if first:
                break
            if time.monotonic() >= deadline:
                raise UsageError(f"a FIFO nobody writes to (waited {FIFO_WRITER_WAIT:g} s): nothing to read", path=str(path))
            time.sleep(0.02)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(_Prefixed(first, fd), CHUNK)


def open_regular(path: Path, buffering: int = CHUNK) -> io.BufferedReader:
    """Open a file that must be a regular file, never blocking and never reading anything else.

    Looked at before it is opened (a device is never opened), opened non-blocking
    (a FIFO put there meanwhile cannot hang the open) and looked at again through
    the open descriptor.
    """
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise IOFailure(not_regular_text(st.st_mode), path=str(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise IOFailure(_missing_text(path), path=str(path)) from None
    except PermissionError:
        raise IOFailure("permission denied", path=str(path)) from None
    except OSError as exc:
        raise IOFailure(f"cannot open: {exc.strerror}", path=str(path)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise IOFailure(not_regular_text(mode), path=str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return cast(io.BufferedReader, open(fd, "rb", buffering=buffering))  # "rb" with a buffer: buffered


# --------------------------------------------------------------------------- plain JSONL


def iter_lines(fh: IO[bytes], info: SourceInfo, start_line: int = 1, start_offset: int = 0) -> Iterator[Record]:
    """Split a byte stream into newline-terminated records; the unterminated rest is torn."""
    line_no = start_line
    offset = start_offset
    for line in bounded_lines(fh):
        n = len(line)
        if line.endswith(b"\n"):
            yield Record(line[:-1], None, line_no, offset)
            line_no += 1
            offset += n
        elif n > LINE_LIMIT.max_bytes:
            raise LINE_LIMIT.refusal(info.path, line_no, offset, n)
        else:
            info.torn = Torn(offset=offset, length=n, data=line[: 1 << 20])
            offset += n
    info.decoded_bytes = offset


# --------------------------------------------------------------------------- zstd frames


def _zstd_pieces(fh: IO[bytes], info: SourceInfo) -> Iterator[tuple[int, int, bytes, bool | None]]:
    """The frame walk's pieces, keeping ``info.frames`` current (the worker reports it too)."""
    walker = FrameWalker(fh.read, info.path)
    for piece in walker.pieces():
        info.frames = walker.frames
        yield piece
    info.frames = walker.frames


def _positional(fh: IO[bytes]) -> Callable[[int], bytes] | None:
    """A reader of ``fh``'s file from its start that leaves the file position alone (``pread``).

    A forked decoder may be reading the same open file (the position is shared
    with the child): a look at the beginning must not move it under the child.
    """
    try:
        fd = fh.fileno()
        os.pread(fd, 0, 0)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    pos = 0

    def read(n: int) -> bytes:
        nonlocal pos
        data = os.pread(fd, n, pos)
        pos += len(data)
        return data

    return read


def zstd_prefix(fh: IO[bytes], path: str, n: int) -> bytes:
    """Up to ``n`` leading plaintext bytes of a compressed generation (a damaged frame ends it early).

    For content sniffing and header reads: what the frames decode to before the
    first problem, through the one frame walk.  A file is read from its start
    without moving its position (a forked decoder may be reading it); any
    other stream is rewound first and put back where it was.
    """
    out: list[bytes] = []
    size = 0
    read = _positional(fh)
    pos: int | None = None
    if read is None:
        pos = fh.tell()
        fh.seek(0)
        read = fh.read
    try:
        for _index, _start, data, _end in FrameWalker(read, path).pieces():
            out.append(data)
            size += len(data)
            if size >= n:
                break
    except CorruptLog:
        pass
    finally:
        if pos is not None:
            fh.seek(pos)
    return b"".join(out)[:n]


# One message per piece on the worker's pipe: kind, frame index, frame offset, length,
# end, and the walk's frame count so far (the serial walk keeps ``info.frames`` current).
_MSG = struct.Struct("<Bqqqbq")
_PIECE, _DONE, _ERROR = 0, 1, 2
_END_CODE = {True: 1, False: 0, None: -1}
_END_VALUE = {1: True, 0: False, -1: None}
# Below this many compressed bytes a worker's start-up costs more than it saves.
WORKER_MIN_BYTES = 2 << 20


def _worker_possible(fh: IO[bytes], parallel: bool, min_bytes: int) -> bool:
    """A forked decoder needs the caller's consent, fork, a second CPU, no other thread and a real file worth it."""
    if not forked.can_fork(parallel):
        return False
    try:
        fd = fh.fileno()
        return os.fstat(fd).st_size - fh.tell() >= min_bytes
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


def _decode_in_child(items: Iterator[Any], info: SourceInfo, out_fd: int, keep: int) -> None:
    """Child side of :func:`_decode_in_worker`: stream the pieces into the pipe, then exit.

    Every descriptor but the input and the pipe is closed first, so the child
    never keeps a parent's lock (``session.lock``, a staged file's flock) alive.
    """

    def work() -> None:
        with open(out_fd, "wb", buffering=1 << 20) as out:
            pack = _MSG.pack
            try:
                for index, start, data, end in items:
                    out.write(pack(_PIECE, index, start, len(data), _END_CODE[end], info.frames or 0))
                    out.write(data)
                out.write(pack(_DONE, 0, 0, 0, 0, info.frames or 0))
            except BrokenPipeError:
                raise  # the parent stopped reading
            except BaseException as exc:  # noqa: BLE001 - handed to the parent, raised there in order
                blob = forked.pack_error(exc)
                out.write(pack(_ERROR, 0, 0, len(blob), 0, info.frames or 0))
                out.write(blob)

    forked.run_child((out_fd, keep), work)


def _decode_in_worker(items: Iterator[Any], info: SourceInfo, fh: IO[bytes]) -> Iterator[Any]:
    """Run the frame walk and libzstd in a forked process, ahead of the consumer.

    dsh writes one small frame per append batch, so a body is tens of thousands of
    frames, each a few microseconds of Python walking and a call into libzstd.  A
    thread cannot take that off the parser: the walk holds the GIL, and the GIL is
    released only for a few microseconds per frame, so the threads simply took
    turns (wall time equalled CPU time).  A child process has its own interpreter:
    the parent only reads ``(index, offset, plaintext, end)`` pieces from a pipe,
    in the same order and with the same values as the serial walk, and an error
    of the walk is re-raised after every piece that preceded it.
    """
    r, w = os.pipe()
    forked.enlarge_pipe(w)
    try:
        pid = os.fork()
    except OSError:  # no process to spare (process or memory limits): decode here
        os.close(r)
        os.close(w)
        yield from items
        return
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(r)
        _decode_in_child(items, info, w, fh.fileno())
    os.close(w)
    src = open(r, "rb", buffering=1 << 20)
    read = src.read
    unpack = _MSG.unpack
    size = _MSG.size
    try:
        while True:
            head = read(size)
            if len(head) != size:
                raise IOFailure("the zstd decoding process ended before the end of the file", path=info.path)
            kind, index, start, length, end, info.frames = unpack(head)
            if kind == _PIECE:
                yield index, start, read(length) if length else b"", _END_VALUE[end]
            elif kind == _DONE:
                return
            else:
                raise forked.unpack_error(read(length))
    finally:
        src.close()  # a child still writing gets EPIPE and exits
        os.waitpid(pid, 0)


def iter_zstd_lines(fh: IO[bytes], info: SourceInfo, parallel: bool = False, *,
                    min_bytes: int | None = None) -> Iterator[Record]:
    """Records of a multi-frame zstd generation, each tagged with the frame that ends it.

    The header frame is decoded here (so a caller may still seek and sample the
    file right after reading the header).  ``parallel`` is the caller's policy:
    when true, the body frames are decoded by a forked worker where one pays
    (:func:`_worker_possible`: at least ``min_bytes``, default :data:`WORKER_MIN_BYTES`,
    of compressed body left);
    by default, and always as a fallback, they are decoded here.
    """
    line_no = 1
    offset = 0
    rest = b""
    pending: list[bytes] = []  # pieces of a line longer than one piece (joined once, not copied per piece)
    pending_len = 0
    limit = LINE_LIMIT.max_bytes
    source = _zstd_pieces(fh, info)
    head = next(source, None)
    if head is None:
        info.decoded_bytes = 0
        return
    forking = head[3] is not False and _worker_possible(fh, parallel, WORKER_MIN_BYTES if min_bytes is None else min_bytes)
    body = _decode_in_worker(source, info, fh) if forking else source
    for index, start, data, end in chain_first(head, body):
        if data:
            if pending and b"\n" not in data:
                pending.append(data)
                pending_len += len(data)
                if pending_len > limit:
                    raise LINE_LIMIT.refusal(info.path, line_no, offset, pending_len, index)
                continue
            if pending:
                rest = b"".join(pending)
                pending, pending_len = [], 0
            parts = (rest + data if rest else data).split(b"\n")
            rest = parts.pop()
            for raw in parts:
                if len(raw) > limit:
                    raise LINE_LIMIT.refusal(info.path, line_no, offset, len(raw), index)
                yield Record(raw, None, line_no, offset, index)
                offset += len(raw) + 1
                line_no += 1
            if len(rest) > limit:
                raise LINE_LIMIT.refusal(info.path, line_no, offset, len(rest), index)
            if rest and end is None:  # the line goes on in the next piece
                pending, pending_len, rest = [rest], len(rest), b""
                continue
        elif pending and end is not None:
            rest = b"".join(pending)
            pending, pending_len = [], 0
        if end:
            if rest:
                raise CorruptLog(
                    TORN_RECORD_IN_FRAME,
                    path=info.path,
                    loc=Location(line=line_no, offset=offset, frame=index),
                )
        elif end is False:
            # torn last frame: complete lines were recovered above; the rest is dropped
            info.torn = Torn(offset=offset, length=len(rest), frame=index, frame_offset=start, data=rest[: 1 << 20])
            offset += len(rest)
            break
    info.decoded_bytes = offset


_T = TypeVar("_T")


def chain_first(first: _T, rest: Iterator[_T]) -> Iterator[_T]:
    """``first``, then the rest: a row taken out to look at, put back in front of its stream."""
    yield first
    yield from rest


def beyond_limit(subject: str, detail: str) -> str:
    """The one wording of a value nested past the reader's limit (a limit of dshlog's, never damage of the log)."""
    return f"{subject} is {detail}, beyond what dshlog reads"


# --------------------------------------------------------------------------- JSON documents


def iter_json_array(fh: IO[bytes], info: SourceInfo, path: tuple[str, ...] = ()) -> Iterator[Record]:
    """Elements of a JSON array (the document, or the one under ``path`` such as ``("events",)``), streamed.

    Each element is parsed by the one JSON reader (:func:`dshlog.protocol.jsjson.iter_array`).
    """
    i = 0
    try:
        for obj in iter_array(fh.read, path):
            yield Record(None, obj, None, None, index=i)
            i += 1
    except JsonError as exc:
        if exc.kind == "depth":  # a limit of dshlog's, not damage
            raise BeyondLimit(beyond_limit(f"element {i} of the JSON document", exc.detail),
                              path=info.path, loc=Location(index=i)) from None
        raise CorruptLog(f"invalid JSON document: {exc.detail}", path=info.path, loc=Location(index=i)) from None


# --------------------------------------------------------------------------- detection


def sniff(head: bytes) -> str:
    """Guess the container from the first bytes."""
    if head.startswith(ZSTD_MAGIC):
        return Container.ZSTD
    s = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if s.startswith(b"["):
        return Container.ARRAY
    if s.startswith(b"{"):
        nl = head.find(b"\n")
        first = head[:nl] if nl >= 0 else head
        try:
            obj = loads(first)
        except JsonError:
            # a pretty-printed document; a first line without newline is a (torn) JSONL header
            if nl < 0:
                return Container.JSONL
            return "json-document"
        if isinstance(obj, dict):
            if obj.get("type") == "session_event":
                return Container.STREAM_JSON
            if "method" in obj and "params" in obj:
                return Container.JSONRPC
        return Container.JSONL
    return Container.JSONL


def open_binary(target: str) -> tuple[IO[bytes], str, int | None]:
    """Open a path or ``-`` for buffered binary reading; returns (stream, display path, size)."""
    if target == "-":
        stdin = cast(io.RawIOBase, sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer)  # a raw stream at run time
        return io.BufferedReader(stdin, CHUNK), "<stdin>", None
    path = resolve_path(target)
    try:
        is_fifo = stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        is_fifo = False
    fh: IO[bytes] = _open_fifo(path) if is_fifo else open_regular(path)
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError:
        size = None
    return fh, str(path), size
