"""The Zstandard frame walk of a compressed generation (FORMAT §1.5), once.

A compressed log is a concatenation of standard frames, one per append batch
(tens of thousands in a real log), the first holding exactly the header line.
Reading it means walking the frames structurally (magic, descriptor, blocks,
checksum) and decompressing each complete one with its checksum verified; a frame
cut short by the end of the file is the torn last frame of a crash.  ``tail -f``
walks the same frames, but treats a frame still being written as not committed
yet instead of torn.  Both use :class:`FrameWalker`; nothing else parses frames.

The walker reads through a ``read(n)`` callable it is given and never opens files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from ..errors import CorruptLog, Location
from .texts import frame_failed_validation, invalid_frame_magic, reserved_block_type, reserved_frame_header_bit

__all__ = ["BIG_FRAME", "FrameWalker", "STREAM_PIECE", "ZSTD_MAGIC"]

#: The little-endian magic ``0xFD2FB528`` that starts every frame dsh writes.  Any other
#: value, skippable-frame magics included, is corruption.
ZSTD_MAGIC: Final[bytes] = b"\x28\xb5\x2f\xfd"
#: Read size of the walk.
CHUNK: Final[int] = 1 << 20
#: Frames declaring more plaintext than this are never decoded in one call.
BIG_FRAME: Final[int] = 8 << 20
#: Compressed bytes fed per call while streaming a big frame.
STREAM_PIECE: Final[int] = 256 << 10
#: The most plaintext one zstd block decodes to (the format's Block_Maximum_Size).
BLOCK_MAX: Final[int] = 128 << 10
#: Blocks fed per call at most: what they decode to is bounded (4 MiB), whatever the
#: ratio.  A decompression bomb (an RLE block is 4 bytes for 128 KiB) is thus decoded
#: a bounded piece at a time, and a reader can stop it at its line-size limit.
STREAM_BLOCKS: Final[int] = (4 << 20) // BLOCK_MAX


class FrameWalker:
    """Walk concatenated zstd frames structurally and decompress each one.

    The data is read in 1 MiB chunks and frame and block headers are walked inside
    that buffer (per-frame ``read`` calls used to cost more than the decompression).
    A small complete frame is decoded in one call (libzstd verifies its checksum and
    content size); a frame with more than ``STREAM_PIECE`` compressed bytes (a
    migrated body is one frame) is fed to a streaming decoder that much at a time,
    so memory stays bounded.  In read mode a frame cut short by the end of the data
    is the torn last frame, decoded as far as possible with errors swallowed.

    ``base`` is the offset of the first byte ``read`` returns and ``first_index``
    the index of the frame there (a follower resumes mid-file); :attr:`frames`
    counts the frames walked so far and :attr:`committed` is the offset just after
    the last complete one.
    """

    def __init__(
        self, read: Callable[[int], bytes], path: str, *, base: int = 0, first_index: int = 0, follow: bool = False
    ) -> None:
        import zstandard  # heavy optional dependency: only compressed logs need it

        self._read = read
        self._path = path
        self._base = base
        self._follow = follow
        self.frames = first_index
        #: Offset just after the last complete frame walked (where a follower resumes).
        self.committed = base
        self._dctx: Any = zstandard.ZstdDecompressor()
        self._zerr: type[Exception] = zstandard.ZstdError

    def _corrupt(self, msg: str, index: int) -> CorruptLog:
        return CorruptLog(msg, path=self._path, loc=Location(frame=index))

    def pieces(self) -> Iterator[tuple[int, int, bytes, bool | None]]:
        """Yield ``(frame index, frame file offset, plaintext, end)``.

        ``end`` is ``None`` while more plaintext of the same frame follows, ``True``
        on the last piece of a complete (verified) frame and ``False`` on the last
        piece of the torn last frame (nothing follows it).  In follow mode a frame
        cut short by the end of the data is not committed yet: the walk ends before
        it, and plaintext it already yielded (``end=None``) must be dropped.
        """
        read = self._read
        dctx = self._dctx
        zerr = self._zerr
        follow = self._follow
        buf = b""
        pos = 0  # first byte of buf not yet consumed (start of the frame, or first unfed byte)
        base = self._base  # file offset of buf[0]
        index = self.frames
        eof = False

        def refill(p: int, need: int) -> tuple[int, bool]:
            """Make ``buf[p:]`` hold ``need`` bytes if the file has them; keep ``buf[pos:]``."""
            nonlocal buf, pos, base, eof
            while len(buf) - p < need and not eof:
                more = read(max(CHUNK, need - (len(buf) - p)))
                if not more:
                    eof = True
                    break
                shift = pos
                buf = buf[pos:] + more
                base += shift
                pos = 0
                p -= shift
            return p, len(buf) - p >= need

        while True:
            p, ok = refill(pos, 18)  # 18 = longest frame header (magic, descriptor, window, dict id, size)
            n = len(buf)
            if p >= n:
                return
            start = base + p
            if n - p < 4:
                if follow:
                    return
                yield index, start, b"", False
                return
            if buf[p : p + 4] != ZSTD_MAGIC:
                raise self._corrupt(invalid_frame_magic(start), index)
            dobj = None  # streaming decoder, only for big or size-less frames
            torn = False
            fcs: int | None = None
            if n - p < 5:
                torn = True
            else:
                desc = buf[p + 4]
                if desc & 0x18:
                    raise self._corrupt(reserved_frame_header_bit(start + 4), index)
                single = (desc >> 5) & 1
                fcs_flag = desc >> 6
                did_len = (0, 1, 2, 4)[desc & 3]
                fcs_len = single if fcs_flag == 0 else (1, 2, 4, 8)[fcs_flag]
                hdr_len = (0 if single else 1) + did_len + fcs_len
                checksum = (desc >> 2) & 1
                if n - p < 5 + hdr_len:
                    torn = True
                else:
                    if fcs_len:
                        o = p + 5 + hdr_len - fcs_len
                        fcs = int.from_bytes(buf[o : o + fcs_len], "little") + (256 if fcs_len == 2 else 0)
                    q = p + 5 + hdr_len
                    blocks = 0  # blocks between pos and q (each decodes to at most BLOCK_MAX bytes)
                    # blocks: 3-byte header, then payload (RLE: one byte)
                    while True:
                        if len(buf) - q < 3:
                            q, ok = refill(q, 3)
                            if not ok:
                                torn = True
                                break
                        v = buf[q] | (buf[q + 1] << 8) | (buf[q + 2] << 16)
                        btype = (v >> 1) & 3
                        if btype == 3:
                            raise self._corrupt(reserved_block_type(base + q), index)
                        need = 3 + (1 if btype == 1 else v >> 3)
                        if q - pos >= STREAM_PIECE or blocks >= STREAM_BLOCKS:
                            # a big frame (a migrated body is one): decode the blocks we hold
                            # and drop them, so memory stays bounded whatever the frame size
                            if dobj is None:
                                dobj = dctx.decompressobj()
                            try:
                                out = dobj.decompress(buf[pos:q])
                            except zerr as exc:
                                raise self._corrupt(f"{frame_failed_validation(start)} ({exc})", index) from None
                            pos = q
                            blocks = 0
                            if out:
                                yield index, start, out, None
                        if len(buf) - q < need:
                            q, ok = refill(q, need)
                            if not ok:
                                torn = True
                                break
                        q += need
                        blocks += 1
                        if v & 1:
                            break
                    if not torn and checksum:
                        q, ok = refill(q, 4)
                        if ok:
                            q += 4
                        else:
                            torn = True
            index += 1
            if torn:
                if follow:
                    return  # not committed yet: the next poll walks it again from its start
                self.frames = index
                # the torn last frame: recover what the available bytes decode to, swallow errors
                if dobj is None:
                    dobj = dctx.decompressobj()
                try:
                    out = dobj.decompress(buf[pos:])
                except zerr:
                    out = b""
                yield index - 1, start, out, False
                return
            self.frames = index
            self.committed = base + q
            frame = buf[pos:q]
            pos = q
            try:
                if dobj is None and fcs and fcs <= BIG_FRAME:
                    out = dctx.decompress(frame)  # one call; libzstd checks size and checksum
                else:
                    if dobj is None:
                        dobj = dctx.decompressobj()
                    out = dobj.decompress(frame)
                    if not dobj.eof:
                        raise self._corrupt(f"{frame_failed_validation(start)} (it ends before its content)", index - 1)
            except zerr as exc:
                raise self._corrupt(f"{frame_failed_validation(start)} ({exc})", index - 1) from None
            yield index - 1, start, out, True
