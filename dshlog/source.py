"""Physical sources: bytes -> records.

A *source* is whatever the user pointed dshlog at: a plain JSONL generation, a
Zstandard multi-frame generation, a JSON array of events, a stream of events
wrapped in another protocol (stream-json ``session_event`` lines, JSON-RPC
``session.event`` notifications, ``result.json``/``behavior.json`` documents), a
session directory, or standard input.  This module only frames bytes into
records and says where each one came from; it never interprets events.

The container is detected by content (magic bytes, first line), never only by
name, and everything streams: plain files line by line, zstd frames block by
block, JSON documents through ijson.  Memory stays bounded by the longest line.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

import orjson

from .errors import CorruptLog, IOFailure, Location, UnsupportedVersion, UsageError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20

# Canonical generation basename (FORMAT.md 1.2), before an optional ".zstd".
_CANONICAL = re.compile(r"^session(?:\.v([1-9][0-9]*))?\.jsonl$")


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
        return Location(line=self.line, offset=self.offset, frame=self.frame, index=self.index)


@dataclass(slots=True)
class Torn:
    """An incomplete tail that readers never see (dsh truncates it on its next write)."""

    offset: int  # plaintext offset where the torn bytes start
    length: int  # number of plaintext bytes dropped (recovered part of a torn frame counts)
    frame: int | None = None  # zstd: index of the torn frame
    frame_offset: int | None = None  # zstd: file offset where the torn frame starts
    data: bytes = b""  # the dropped plaintext bytes (bounded: only kept up to 1 MiB)


@dataclass
class SourceInfo:
    """What the framing layer learnt while reading (filled in as records stream)."""

    path: str
    container: str
    size_on_disk: int | None = None
    decoded_bytes: int = 0
    frames: int = 0
    torn: Torn | None = None
    wrapped_sessions: list[str] = field(default_factory=list)


def canonical_version(name: str) -> int | None:
    """Generation version encoded in a canonical file name, else ``None``."""
    base = name[:-5] if name.endswith(".zstd") else name
    m = _CANONICAL.match(base)
    if not m:
        return None
    return int(m.group(1)) if m.group(1) else 0


def select_generation(directory: Path) -> Path:
    """Pick the generation dsh would read in a session directory (FORMAT.md 1.3).

    Highest canonical version wins; a directory holding both compressed and plain
    canonical generations is refused, as dsh refuses a mixed root.
    """
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise IOFailure(f"cannot list session directory: {exc.strerror}", path=str(directory)) from None
    plain: list[tuple[int, str]] = []
    zstd: list[tuple[int, str]] = []
    for name in names:
        v = canonical_version(name)
        if v is None:
            continue
        (zstd if name.endswith(".zstd") else plain).append((v, name))
    if plain and zstd:
        raise UnsupportedVersion(
            f'session directory mixes plain ({", ".join(n for _, n in plain)}) and compressed '
            f'({", ".join(n for _, n in zstd)}) generations; dsh refuses a root that uses both encodings',
            path=str(directory),
        )
    found = plain or zstd
    if not found:
        raise UsageError("no session generation (session[.vN].jsonl[.zstd]) in this directory", path=str(directory))
    return directory / max(found)[1]


def resolve_path(target: str) -> Path:
    """A file path, or the selected generation of a session directory."""
    p = Path(target)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise IOFailure("no such file or directory", path=target) from None
    except OSError as exc:
        raise IOFailure(f"cannot open: {exc.strerror}", path=target) from None
    if stat.S_ISDIR(st.st_mode):
        return select_generation(p)
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISFIFO(st.st_mode):
        raise UsageError("not a regular file", path=target)
    return p


# --------------------------------------------------------------------------- plain JSONL


def iter_lines(fh: IO[bytes], info: SourceInfo, start_line: int = 1, start_offset: int = 0) -> Iterator[Record]:
    """Split a byte stream into newline-terminated records; the unterminated rest is torn."""
    line_no = start_line
    offset = start_offset
    for line in fh:
        n = len(line)
        if line.endswith(b"\n"):
            yield Record(line[:-1], None, line_no, offset)
            line_no += 1
            offset += n
        else:
            info.torn = Torn(offset=offset, length=n, data=line[: 1 << 20])
            offset += n
    info.decoded_bytes = offset


# --------------------------------------------------------------------------- zstd frames


class _FrameReader:
    """Walk concatenated zstd frames structurally (FORMAT.md 1.5) and decompress each.

    Frames are decompressed block by block as they are read, so a body stored as
    one huge frame still streams in bounded memory.  Complete frames must verify
    (checksum included); a frame cut short by the end of the file is the torn last
    frame, decoded as far as possible with errors swallowed.
    """

    def __init__(self, fh: IO[bytes], info: SourceInfo) -> None:
        import zstandard

        self._fh = fh
        self._info = info
        self._dctx = zstandard.ZstdDecompressor()
        self._zerr = zstandard.ZstdError
        self.file_offset = 0

    def _read(self, n: int) -> bytes:
        data = self._fh.read(n)
        self.file_offset += len(data)
        return data

    def frames(self) -> Iterator[tuple[int, int, Iterator[bytes], list[bool]]]:
        """Yield ``(index, start_offset, plaintext_pieces, state)``; state[0] is True once complete."""
        index = 0
        while True:
            start = self.file_offset
            magic = self._read(4)
            if not magic:
                return
            if len(magic) < 4:
                state = [False]
                yield index, start, iter(()), state
                return
            if magic != ZSTD_MAGIC:
                raise CorruptLog(
                    f"corrupt Zstandard session log: invalid frame magic at byte {start}",
                    path=self._info.path,
                    loc=Location(frame=index),
                )
            state = [False]
            yield index, start, self._frame_pieces(magic, index, start, state), state
            index += 1
            self._info.frames = index
            if not state[0]:
                return

    def _frame_pieces(self, magic: bytes, index: int, start: int, state: list[bool]) -> Iterator[bytes]:
        dobj = self._dctx.decompressobj()
        torn = False

        def feed(data: bytes) -> bytes:
            nonlocal torn
            if torn:
                return b""
            try:
                return dobj.decompress(data)
            except self._zerr as exc:
                if complete_expected:
                    raise CorruptLog(
                        f"corrupt Zstandard session log: frame {index} at byte {start} does not decode: {exc}",
                        path=self._info.path,
                        loc=Location(frame=index),
                    ) from None
                torn = True
                return b""

        complete_expected = False
        pending = bytearray(magic)
        desc_b = self._read(1)
        if not desc_b:
            return
        desc = desc_b[0]
        if desc & 0x18:
            raise CorruptLog(
                f"corrupt Zstandard session log: reserved frame header bits set at byte {start + 4}",
                path=self._info.path,
                loc=Location(frame=index),
            )
        single = (desc >> 5) & 1
        fcs_flag = desc >> 6
        did_flag = desc & 3
        checksum = (desc >> 2) & 1
        hdr_len = (0 if single else 1) + (0, 1, 2, 4)[did_flag] + (single if fcs_flag == 0 else (1, 2, 4, 8)[fcs_flag])
        rest = self._read(hdr_len)
        pending += desc_b + rest
        if len(rest) < hdr_len:
            return
        # Blocks: feed the decompressor as we go; decode errors in a complete frame are corruption.
        while True:
            bh = self._read(3)
            pending += bh
            if len(bh) < 3:
                out = feed(bytes(pending))
                if out:
                    yield out
                return
            v = bh[0] | (bh[1] << 8) | (bh[2] << 16)
            last = v & 1
            btype = (v >> 1) & 3
            size = v >> 3
            if btype == 3:
                raise CorruptLog(
                    f"corrupt Zstandard session log: reserved block type in frame {index}",
                    path=self._info.path,
                    loc=Location(frame=index),
                )
            need = 1 if btype == 1 else size
            payload = self._read(need)
            pending += payload
            if len(payload) < need:
                out = feed(bytes(pending))
                if out:
                    yield out
                return
            if last:
                break
            if len(pending) >= CHUNK:
                out = feed(bytes(pending))
                pending.clear()
                if out:
                    yield out
        if checksum:
            ck = self._read(4)
            pending += ck
            if len(ck) < 4:
                out = feed(bytes(pending))
                if out:
                    yield out
                return
        complete_expected = True
        out = feed(bytes(pending))
        if out:
            yield out
        if not dobj.eof:
            raise CorruptLog(
                f"corrupt Zstandard session log: frame {index} at byte {start} ends before its content",
                path=self._info.path,
                loc=Location(frame=index),
            )
        state[0] = True


def iter_zstd_lines(fh: IO[bytes], info: SourceInfo) -> Iterator[Record]:
    """Records of a multi-frame zstd generation, each tagged with the frame that ends it."""
    reader = _FrameReader(fh, info)
    line_no = 1
    offset = 0
    for index, start, pieces, state in reader.frames():
        buf = b""
        for piece in pieces:
            buf = buf + piece if buf else piece
            pos = 0
            while True:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                yield Record(buf[pos:nl], None, line_no, offset, frame=index)
                offset += nl + 1 - pos
                line_no += 1
                pos = nl + 1
            buf = buf[pos:]
        if state[0]:
            if buf:
                raise CorruptLog(
                    "corrupt Zstandard session log: complete frame contains a torn JSONL record",
                    path=info.path,
                    loc=Location(line=line_no, offset=offset, frame=index),
                )
        else:
            # torn last frame: complete lines were recovered above; the rest is dropped
            info.torn = Torn(offset=offset, length=len(buf), frame=index, frame_offset=start, data=buf[: 1 << 20])
            offset += len(buf)
            break
    info.decoded_bytes = offset


# --------------------------------------------------------------------------- JSON documents


def _ijson_items(fh: IO[bytes], prefix: str) -> Iterator[Any]:
    import ijson

    return ijson.items(fh, prefix, use_float=True)


def iter_json_array(fh: IO[bytes], info: SourceInfo, prefix: str = "item") -> Iterator[Record]:
    """Elements of a JSON array (``[...]`` or a member such as ``events.item``), streamed."""
    import ijson

    i = 0
    try:
        for obj in _ijson_items(fh, prefix):
            yield Record(None, obj, None, None, index=i)
            i += 1
    except ijson.JSONError as exc:
        raise CorruptLog(f"invalid JSON document: {' '.join(str(exc).split())}", path=info.path, loc=Location(index=i)) from None
    except ijson.IncompleteJSONError as exc:  # pragma: no cover - subclass of JSONError in most backends
        raise CorruptLog(f"truncated JSON document: {exc}", path=info.path, loc=Location(index=i)) from None


# --------------------------------------------------------------------------- detection


def _peek(fh: io.BufferedReader, n: int = 4096) -> bytes:
    return fh.peek(n)[:n]


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
            obj = orjson.loads(first)
        except orjson.JSONDecodeError:
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
        return io.BufferedReader(sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer, CHUNK), "<stdin>", None  # type: ignore[arg-type]
    path = resolve_path(target)
    try:
        fh = open(path, "rb", buffering=CHUNK)
    except PermissionError:
        raise IOFailure("permission denied", path=str(path)) from None
    except OSError as exc:
        raise IOFailure(f"cannot open: {exc.strerror}", path=str(path)) from None
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError:
        size = None
    return fh, str(path), size
