"""``dshlog rebuild`` in memory that does not follow the size of the request it writes.

The library's :func:`rebuild_request` returns the request as one
mapping; of a log that never compacts, the last request holds every message of the
log, and the command held them all, then their JSON text beside them (93 MB at a
30 MB log, 291 MB at 120 MB).  The command's fold is dsh's restore's own lean
checking fold (:meth:`~dshlog.read.view.V4View.share_surface`; a log without a restore
is folded by the builder) with a *note* per surface node instead of its message: as each
node is folded, its derived message is written, already in the output's form, to a
temporary spill, and the note is where that text starts.  A node shadowed later
leaves its text unread in the spill.  The request is then written piece by piece
(:func:`~dshlog.protocol.jsjson.document_pieces`), each message's text read back
from the spill in surface order; a message an ``image/offload`` projected is the
fold's own and is encoded when it is written.  One pass over the log, so a stream
(``-``) is read as a file is.  The bytes printed are those of the library's
:meth:`RebuiltRequest.to_json` (a test compares them).
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any

from ..check.problems import Problem
from ..check.surface import derive_message
from ..errors import boundary
from ..model.requests import RequestBuilder, SharedSurface, message_note, settle
from ..model.requests import rebuild as rebuild_from
from ..protocol.jsjson import Items, document_pieces, dumps, dumps_pretty
from ..read.container import Position
from .sessions import located, open_target
from ..read.source import Source, Target
from .stance import stance

__all__ = ["MessageSpill", "RebuiltRequest", "RequestText", "rebuild_request", "rebuild_text"]

#: The spill stays in memory up to this size, then moves to a temporary file.
_IN_MEMORY = 4 << 20
_LENGTH = struct.Struct("<Q")


class MessageSpill:
    """The derived messages' texts as they are folded, each prefixed by its length.

    :meth:`note` is the fold's note (``SurfaceFold(note=...)``): it writes the
    node's message and returns where its text starts (an ``int``, some 36 bytes a
    node in the fold), or ``None`` for a node that derives no message.
    """

    def __init__(self, encode: Callable[[Any], bytes]) -> None:
        self.encode = encode
        self._file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=_IN_MEMORY)  # noqa: SIM115 - closed by close()
        self._end = 0
        self._reading = False

    def note(self, seq: int, etype: str, data: Any) -> int | None:
        message = derive_message(etype, data)
        if message is None:
            return None
        text = self.encode(message)
        if self._reading:  # never while the fold runs, but a write must land at the end
            self._file.seek(self._end)
            self._reading = False
        start = self._end
        self._file.write(_LENGTH.pack(len(text)))
        self._file.write(text)
        self._end = start + _LENGTH.size + len(text)
        return start

    def text(self, start: int) -> bytes:
        """The text noted at ``start``."""
        self._reading = True
        self._file.seek(start)
        (length,) = _LENGTH.unpack(self._file.read(_LENGTH.size))
        return self._file.read(length)

    def close(self) -> None:
        self._file.close()


class RequestText:
    """Request ``number``, ready to be written piece by piece (close it, or use it as a context manager).

    ``notes``, ``path`` and ``suppressed`` are the reader's, as on every result.
    """

    __slots__ = ("_document", "_spill", "notes", "number", "path", "pretty", "suppressed")

    def __init__(self, number: int, document: dict[str, Any] | Items, spill: MessageSpill, pretty: bool,
                 notes: tuple[Problem, ...], path: str, suppressed: Mapping[str, int]) -> None:
        self.number = number
        self._document = document
        self._spill = spill
        self.pretty = pretty
        self.notes = notes
        self.path = path
        self.suppressed = suppressed

    def pieces(self) -> Iterator[bytes]:
        """The bytes ``rebuild`` prints (without the final newline), in pieces."""
        return document_pieces(self._document, pretty=self.pretty)

    def close(self) -> None:
        self._spill.close()

    def __enter__(self) -> RequestText:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _texts(builder: RequestBuilder, spill: MessageSpill) -> Iterator[bytes]:
    """The current messages' texts in surface order: spilled, or a projected message encoded now."""
    for _seq, _etype, start, projected in builder.node_notes():
        if projected is not None:
            yield spill.encode(projected)
        elif start is not None:
            yield spill.text(start)


def rebuild_text(target: Source | Target, number: int, *, pretty: bool = True, messages_only: bool = False,
                 allow_unknown: bool = False, progress: Position | None = None, cache: str | None = None) -> RequestText:
    """Fold the log up to request ``number``'s settlement, spilling each message's text (see the module docstring).

    ``progress``: told how far the read of the log is (bytes of the file, its size).
    ``cache``: the directory of the verified cache, or none; with one, an old log's proven
    successor is read instead of migrating it again (:mod:`dshlog.read.successor`).

    Raises what :func:`rebuild_request` raises, before anything is written.
    """
    spill = MessageSpill(dumps_pretty if pretty else dumps)
    try:
        with open_target(target, strict=stance("rebuild").strict,
                         progress=progress, cache=cache) as log:
            with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
                session_id = log.session_id  # as known before the body is read (sharing the fold peeks at it)
                shared = SharedSurface(note=spill.note, request=number)
                shared.fold = view.share_surface(shared.share)
                builder = RequestBuilder(session_id=session_id, strict_unknown=not allow_unknown, note=spill.note,
                                         shared=shared)
                settle(builder, view, number)
                request = builder.document(Items(_texts(builder, spill), encoded=True))
            document: dict[str, Any] | Items = request["messages"] if messages_only else request
            return RequestText(number, document, spill, pretty, tuple(log.notes), log.path, log.notes.suppressed())
    except BaseException:
        spill.close()
        raise


@dataclass(frozen=True, slots=True)
class RebuiltRequest:
    """``dshlog rebuild``: request ``number`` exactly as dsh sent it (dsh's own JSON, not a versioned shape)."""

    number: int
    request: Mapping[str, Any]
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> list[Any]:
        return list(self.request["messages"])

    def as_dict(self) -> dict[str, Any]:
        return dict(self.request)

    def to_json(self, *, pretty: bool = True, messages_only: bool = False) -> bytes:
        """The bytes ``rebuild`` prints (without the final newline): ``JSON.stringify`` exactly."""
        value: Any = self.messages if messages_only else self.as_dict()
        return dumps_pretty(value) if pretty else dumps(value)


@boundary
def rebuild_request(target: Source | Target, number: int, *, allow_unknown: bool = False,
                    progress: Position | None = None) -> RebuiltRequest:
    """``dshlog rebuild``: request ``number`` (1-based) exactly as dsh sent it, from the log alone."""
    with open_target(target, strict=stance("rebuild").strict, progress=progress) as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            session_id = log.session_id  # as known before the body is read (sharing the fold peeks at it)
            shared = SharedSurface(note=message_note, request=number)
            shared.fold = view.share_surface(shared.share)  # the restore folds the surface once, for both
            request = rebuild_from(view, number, session_id=session_id, strict_unknown=not allow_unknown, shared=shared)
        return RebuiltRequest(number, request, tuple(log.notes), log.path, log.notes.suppressed())
