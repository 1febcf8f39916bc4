"""Follow a live session log as dsh appends to it (``dshlog tail -f``).

dsh appends whole lines (plain JSONL) or whole frames (``.zstd``, one frame per
append batch), ``fsync``s, and rolls a failed write back by truncating to the
previous length.  So the bytes after the last complete line or frame are not
yet committed: they may grow, or be cut away and written again.  The follower
therefore never consumes them; it only advances past complete lines (plain) or
complete frames (zstd) and re-reads the uncommitted rest on the next poll.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO, Any
from collections.abc import Callable, Iterator

from ..check.problems import Problem, Problems, Severity
from ..errors import CorruptLog, IOFailure, Location, Refused, UsageError
from ..protocol.jsjson import JsonError, loads
from ..protocol.layout import parse_generation
from ..protocol.texts import TORN_RECORD_IN_FRAME
from ..protocol.zstd import ZSTD_MAGIC, FrameWalker
from .container import LINE_LIMIT, select_generation
from .rows import RowDecoder


class Replaced(Refused):
    """The followed file was replaced (a repair swapped it in, a rename) or shrank below what was read."""


_CHUNK = 1 << 20  # read size; memory stays bounded by a chunk plus the longest line (zstd: one frame's lines)


class Follower:
    """Committed lines of a generation file, read incrementally.

    :meth:`poll` returns the complete lines that became available since the last
    call (the header line included on the first call); :meth:`follow` polls until
    a stop condition.  Lines are returned without their newline.
    """

    def __init__(self, path: str | os.PathLike[str], *, poll_interval: float = 0.2) -> None:
        self.path = Path(path)
        self.poll_interval = poll_interval
        self.offset = 0  # file offset just after the last consumed line / frame
        self.lines_read = 0
        self.frames_read = 0
        self._zstd: bool | None = None
        self._ino: int | None = None

    def _open(self) -> tuple[IO[bytes], int]:
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            raise IOFailure("the file disappeared while being followed", path=str(self.path)) from None
        except OSError as exc:
            raise IOFailure(f"cannot read: {exc.strerror}", path=str(self.path)) from None
        st = os.fstat(fh.fileno())
        if self._ino is None:
            self._ino = st.st_ino
        elif st.st_ino != self._ino:
            fh.close()
            raise Replaced("the file was replaced while being followed", path=str(self.path))
        if st.st_size < self.offset:
            fh.close()
            raise Replaced(
                f"the file shrank below committed data ({st.st_size} < {self.offset} bytes) while being followed",
                path=str(self.path),
            )
        return fh, st.st_size

    def poll(self) -> list[bytes]:
        """Complete lines committed since the last poll (possibly none)."""
        return list(self.drain())

    def drain(self) -> Iterator[bytes]:
        """Stream the complete lines committed since the last call, in bounded memory."""
        fh, size = self._open()
        with fh:
            if size == self.offset:
                return
            if self._zstd is None:
                fh.seek(0)
                magic = fh.read(4)
                if len(magic) < 4 and ZSTD_MAGIC.startswith(magic):
                    return  # too few bytes to tell the container yet
                self._zstd = magic == ZSTD_MAGIC
            fh.seek(self.offset)
            yield from (self._drain_zstd(fh, size) if self._zstd else self._drain_plain(fh, size))

    def _drain_plain(self, fh: IO[bytes], size: int) -> Iterator[bytes]:
        pending = b""
        remaining = size - self.offset
        while remaining > 0:
            chunk = fh.read(min(_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            buf = pending + chunk if pending else chunk
            end = buf.rfind(b"\n")
            if end < 0:
                pending = buf  # a line still being written: wait for its newline
                if len(pending) > LINE_LIMIT.max_bytes:
                    raise LINE_LIMIT.refusal(str(self.path), self.lines_read + 1, self.offset, len(pending))
                continue
            lines = buf[:end].split(b"\n")
            pending = buf[end + 1 :]
            self.offset += end + 1
            self.lines_read += len(lines)
            yield from lines

    def _drain_zstd(self, fh: IO[bytes], size: int) -> Iterator[bytes]:
        remaining = size - self.offset

        def read(n: int) -> bytes:
            # never past the size seen at open: bytes after it may still be changing
            nonlocal remaining
            data = fh.read(min(n, remaining)) if remaining > 0 else b""
            remaining -= len(data)
            return data

        walker = FrameWalker(read, str(self.path), base=self.offset, first_index=self.frames_read, follow=True)
        lines: list[bytes] = []
        pending = b""
        for _index, _start, data, end in walker.pieces():
            buf = pending + data if pending else data
            cut = buf.rfind(b"\n")
            if cut >= 0:
                lines.extend(buf[:cut].split(b"\n"))
                pending = buf[cut + 1 :]
            else:
                pending = buf
                if len(pending) > LINE_LIMIT.max_bytes:
                    raise LINE_LIMIT.refusal(str(self.path), self.lines_read + len(lines) + 1, self.offset, len(pending))
            if end:
                if pending:
                    raise CorruptLog(
                        TORN_RECORD_IN_FRAME,
                        path=str(self.path),
                        loc=Location(frame=walker.frames - 1),
                    )
                # a frame is committed as a whole: advance only once all of it decoded
                self.offset = walker.committed
                self.frames_read = walker.frames
                self.lines_read += len(lines)
                yield from lines
                lines = []

    def follow(
        self,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[bytes]:
        """Yield committed lines as they arrive.

        Stops after ``timeout`` seconds in all, after ``idle_timeout`` seconds
        without a new line, or when ``stop()`` returns true; with none of them it
        runs until interrupted (Ctrl-C raises ``KeyboardInterrupt`` in the caller).
        """
        start = last_new = time.monotonic()
        while True:
            got = False
            for line in self.drain():
                got = True
                yield line
            now = time.monotonic()
            if got:
                last_new = now
                continue
            if stop is not None and stop():
                return
            if timeout is not None and now - start >= timeout:
                return
            if idle_timeout is not None and now - last_new >= idle_timeout:
                return
            time.sleep(self.poll_interval)


def follow(
    path: str | os.PathLike[str],
    *,
    poll_interval: float = 0.2,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[bytes]:
    """Every committed line of ``path`` from the start, then new ones as they are appended."""
    return Follower(path, poll_interval=poll_interval).follow(timeout=timeout, idle_timeout=idle_timeout, stop=stop)


class EventFollower:
    """The events of a live session, following its *name* as ``tail -F`` does.

    dsh's own writers and dshlog's replace a log rather than rewrite it:
    ``repair --write`` renames the repaired copy over the log, and a migration
    publishes a newer generation beside the old one.  So when the followed file
    is replaced, or the session directory gets a generation dsh would read
    instead, the follower opens the new file and goes on after the last seq it
    passed on; events are never repeated.  Rows are decoded as the stored
    version's reader decodes them; a row that cannot be read is noted in
    ``notes`` and skipped.
    """

    def __init__(self, target: str | os.PathLike[str], *, poll_interval: float = 0.25, notes: Problems | None = None,
                 format_version: int | None = None) -> None:
        p = Path(target)
        self.directory = p if p.is_dir() else (p.parent if parse_generation(p.name) is not None else None)
        self.path = select_generation(p) if p.is_dir() else p
        self.poll_interval = poll_interval
        self.notes = notes if notes is not None else Problems()
        self.format_version = format_version
        self.last_seq: int | None = None
        self._start()

    def _start(self) -> None:
        self._lines = Follower(self.path, poll_interval=self.poll_interval)
        self._decoder: RowDecoder | None = None
        self._line = 0

    def _decode(self, raw: bytes) -> list[tuple[dict[str, Any], bytes | None]]:
        self._line += 1
        try:
            obj = loads(raw)
        except JsonError:
            self.notes.report(Problem("unparsable", f"line {self._line}: unparsable committed line skipped", Severity.ERROR,
                                      loc=Location(line=self._line)))
            return []
        if self._decoder is None:
            version = self.format_version
            if isinstance(obj, dict) and obj.get("type") == "session":
                v = obj.get("version")
                version = v if type(v) is int else 0
                self._decoder = RowDecoder(version, str(self.path), strict=False, notes=self.notes)
                return []
            self._decoder = RowDecoder(version if version is not None else 0, str(self.path), strict=False, notes=self.notes)
        evs = self._decoder.decode(obj, Location(line=self._line))
        out = []
        for ev in evs:
            seq = ev.get("seq") if isinstance(ev, dict) else None
            if type(seq) is int and self.last_seq is not None and seq <= self.last_seq:
                continue  # already passed on before the file was replaced
            if type(seq) is int:
                self.last_seq = seq
            out.append((ev, raw if len(evs) == 1 and ev is obj else None))
        return out

    def _newer_generation(self) -> bool:
        """Whether the directory now holds a generation dsh would read instead of the followed one."""
        if self.directory is None:
            return False
        try:
            chosen = select_generation(self.directory)
        except (UsageError, IOFailure, CorruptLog):
            return False
        if chosen != self.path:
            self.notes.report(Problem("replaced", f"a newer generation {chosen.name} was published; following it", Severity.WARNING))
            self.path = chosen
            self._start()
            return True
        return False

    def drain(self) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        """(event, its exact line when it is one) for every event committed now."""
        while True:
            try:
                for raw in self._lines.drain():
                    yield from self._decode(raw)
                return
            except Replaced as exc:  # replaced or shrunk: the new file, after the last seq passed on
                # said, as tail -F says it: what follows comes from another file than what came before
                self.notes.report(Problem("replaced", f"{exc.message}; following the new file after the last event shown",
                                          Severity.WARNING))
                self._start()
            except IOFailure:
                if not self._newer_generation():  # the name is gone for now: wait for it
                    if not self.path.exists():
                        return
                    raise

    def follow(self, *, stop: Callable[[], bool] | None = None) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        """Events as they are appended, across replacements and newer generations (until interrupted or ``stop()``)."""
        while True:
            got = False
            for item in self.drain():
                got = True
                yield item
            if got:
                continue
            if self._newer_generation():
                continue
            if stop is not None and stop():
                return
            time.sleep(self.poll_interval)
