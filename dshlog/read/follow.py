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
from typing import IO
from collections.abc import Callable, Iterator

from ..errors import CorruptLog, IOFailure, Location, Refused
from ..protocol.zstd import ZSTD_MAGIC, FrameWalker

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
            raise Refused("the file was replaced while being followed", path=str(self.path))
        if st.st_size < self.offset:
            fh.close()
            raise Refused(
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
            if end:
                if pending:
                    raise CorruptLog(
                        "corrupt Zstandard session log: complete frame contains a torn JSONL record",
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
