"""Encode a log into a staged file exactly as dsh lays it out.

Plain generations are a header line then one compact JSON line per event.
Compressed generations are a header frame followed by the body compressed as
one continuous stream (dsh's migrated-successor layout, FORMAT.md 1.5); a batch
appended to an existing compressed log is one more checksummed frame.

Events that were read from a v4 line and not changed are written as their
original bytes, so untouched events pass through byte for byte.
"""

from __future__ import annotations

import hashlib
from typing import Any
from collections.abc import Callable

from .atomic import StagedFile
from ..protocol.jsjson import dumps

FLUSH_AT = 1 << 20


def frame(data: bytes) -> bytes:
    """One standalone checksummed zstd frame (an append batch)."""
    import zstandard  # lazy: a heavy import only .zstd output needs

    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


class LogWriter:
    """Streams a header and events into a :class:`StagedFile`.

    Tracks the plaintext size and SHA-256 so the caller can verify the staged file
    by reading it back.
    """

    def __init__(
        self,
        staged: StagedFile,
        *,
        compressed: bool,
        projection: bool = False,
        tee: Callable[[bytes], None] | None = None,
    ) -> None:
        self._staged = staged
        # receives every plaintext byte written, in order (migrate's read-back checks the stream)
        self._tee = tee
        # a projection (dsh test-snapshot form) is written without seq/time, as dsh's snapshot writer does
        self._projection = projection
        self._compressed = compressed
        self._buf: list[bytes] = []
        self._buf_len = 0
        self._sha = hashlib.sha256()
        self.plain_bytes = 0
        self.events = 0
        self._cobj: Any = None

    def header(self, header: dict[str, Any] | bytes) -> None:
        line = (header if isinstance(header, bytes) else dumps(header)) + b"\n"
        self._flush()  # the digest follows the write order
        self._account(line)
        if self._tee is not None:
            self._tee(line)
        if self._compressed:
            self._staged.write(frame(line))
        else:
            self._staged.write(line)

    def event(self, ev: dict[str, Any], raw: bytes | None = None) -> None:
        if self._projection:
            ev = {k: v for k, v in ev.items() if k not in ("seq", "time")}
            raw = None
        line = (raw if raw is not None else dumps(ev)) + b"\n"
        self.line(line)
        self.events += 1

    def line(self, line: bytes) -> None:
        self._buf.append(line)
        self._buf_len += len(line)
        if self._buf_len >= FLUSH_AT:
            self._flush()

    def _account(self, line: bytes) -> None:
        self._sha.update(line)
        self.plain_bytes += len(line)

    def _flush(self) -> None:
        if not self._buf:
            return
        data = b"".join(self._buf)
        self._buf.clear()
        self._buf_len = 0
        self._account(data)  # once per ~1 MiB batch rather than once per line
        if self._tee is not None:
            self._tee(data)
        if self._compressed:
            if self._cobj is None:
                import zstandard  # lazy: a heavy import only .zstd output needs

                self._cobj = zstandard.ZstdCompressor(write_checksum=True).compressobj()
            out = self._cobj.compress(data)
            if out:
                self._staged.write(out)
        else:
            self._staged.write(data)

    def finish_frame(self) -> None:
        """Close the current compressed body stream as one frame (no-op for plain files)."""
        self._flush()
        if self._compressed and self._cobj is not None:
            self._staged.write(self._cobj.flush())
            self._cobj = None

    def close(self) -> tuple[int, str]:
        """Finish encoding (not the file); returns (plaintext bytes, sha256 hex)."""
        self.finish_frame()
        return self.plain_bytes, self._sha.hexdigest()
