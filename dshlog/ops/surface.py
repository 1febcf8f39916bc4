"""``dshlog surface`` in memory that follows the surface's length, not its messages.

The library's :func:`surface` returns every current message (a
:class:`SurfaceView`); on a log that never compacts that is
every message of the log.  The command prints far less: per node its seq, type,
role, id, whether it derives a message, and a 60-column preview.  So the command's
fold is the lean checking fold (``keep_messages=False``, dsh's checks unchanged)
with a *note* per node: the row it prints, made from the event as it is folded and
dropped when the node is shadowed.  Of a whole log that dsh's restore found no
problem in, that fold is the restore's own (:attr:`~dshlog.read.view.V4View.surface`):
the log is folded once; a prefix (``--at``), a stream, or a log the restore
reported anything in is folded by the command.  Only ``--json --messages`` needs the messages
themselves; they are read again from the log when they are written (a second
pass through the same dsh view, in seq order, put in surface order through a
buffer that holds only the nodes a replacement placed before older ones), and the
JSON document is written piece by piece (:func:`~dshlog.protocol.jsjson.pretty_pieces`).
A stream (``-``) cannot be read twice, so there the fold keeps the messages.
The bytes printed are those of the library's view (a test compares them).

What the fold leaves (each node's seq, type, note and projected message, the
replacements, the reader's notes) is what the verified cache keeps of a file
(:mod:`dshlog.read.cache`, the kind :data:`SURFACE`): an unchanged log is not folded
again, and ``--messages`` still reads its messages from the log.  A surface whose kept
form would be larger than the cache's bound is not kept (:func:`_kept_record` stops early).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from ..check.problems import Problem
from ..check.surface import SurfaceFold, SurfaceShare, derive_message, fold
from ..errors import CorruptLog, UsageError, boundary
from ..output.jsondoc import SHAPE
from ..output.text import preview
from ..protocol.jsjson import Items, pretty_pieces
from ..protocol.vocabulary import message_of
from ..read.cache import MAX_VALUE_BYTES, STDIN, Kind, open_cache, problem_of, problem_record, resumed_call
from ..read.container import Position
from ..read.place import place_keys
from ..read.resume import StateCodec, resume_view, state_kind, view_checkpoint
from ..read.session import SessionLog
from .sessions import located, open_target
from ..read.source import Source, Target
from .stance import stance

__all__ = ["KeptFold", "NodeRow", "Note", "SurfaceRows", "SurfaceView", "command_fold", "node_note", "surface", "surface_rows"]


class NodeRow(NamedTuple):
    """What ``surface`` prints of one current node (``--json``'s node object, in its key order)."""

    seq: int
    type: str
    role: Any
    id: Any
    empty: bool
    preview: str

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "role": self.role, "id": self.id, "empty": self.empty,
                "preview": self.preview}


#: What the fold keeps of a node for its row (seq and type are the fold's own): UTF-8 bytes,
#: ``0``/``1`` (empty) + role + NUL + id + NUL + preview, when role and id are strings
#: without a NUL (every real log); else the tuple (role, id, empty, preview).
Note = bytes | tuple[Any, Any, bool, str]


def _facts(message: Any, empty: bool) -> tuple[Any, Any, bool, str]:
    """The printed facts of a node's current message (as ``SurfaceFold.node_info`` words them)."""
    if isinstance(message, dict):
        return message.get("role"), message.get("id"), empty, preview(message)
    return None, None, empty, preview(message)


def node_note(seq: int, etype: str, data: Any) -> Note:
    """The fold's note of a node (``SurfaceFold(note=...)``): its row's facts, made while the event is at hand.

    Packed into one ``bytes`` where it can be: a tuple, its id and its preview were three
    objects, some 270 bytes a node (a cut preview ends in ``…``, so its ``str`` takes two
    bytes a character); the UTF-8 bytes take about half.  ``surrogatepass`` keeps a lone
    surrogate of the text as it is, both ways.
    """
    role, id_, empty, text = _facts(message_of(etype, data), derive_message(etype, data) is None)
    if type(role) is str and type(id_) is str and "\0" not in role and "\0" not in id_:
        return (("1" if empty else "0") + role + "\0" + id_ + "\0" + text).encode("utf-8", "surrogatepass")
    return role, id_, empty, text


def _unpack(note: Note) -> tuple[Any, Any, bool, str]:
    """A note's facts (:func:`node_note`)."""
    if isinstance(note, tuple):
        return note
    role, id_, text = note[1:].decode("utf-8", "surrogatepass").split("\0", 2)
    return sys.intern(role), id_, note[:1] == b"1", text


class FoldedSurface(Protocol):
    """What :class:`SurfaceRows` reads of a fold: the fold itself, or what the cache kept of it."""

    @property
    def projected(self) -> Mapping[int, Any]: ...

    def node_notes(self) -> Iterator[tuple[int, str, Any, dict[str, Any] | None]]: ...

    def iter_replacements(self) -> Iterator[dict[str, Any]]: ...

    def messages(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class KeptFold:
    """What the cache keeps of a command's fold: each current node's facts, the replacements.

    ``projected`` holds the projected messages of the current nodes only: the second pass
    of ``--messages`` asks for no other.  It keeps no message: the messages are read again
    from the log (a :class:`SurfaceRows` of a kept fold always has its ``reread``).
    """

    nodes: tuple[tuple[int, str, Note], ...]
    replacements: tuple[dict[str, Any], ...]
    projected: Mapping[int, Any]

    def node_notes(self) -> Iterator[tuple[int, str, Any, dict[str, Any] | None]]:
        for seq, etype, note in self.nodes:
            yield seq, etype, note, self.projected.get(seq)

    def iter_replacements(self) -> Iterator[dict[str, Any]]:
        return iter(self.replacements)

    def messages(self) -> list[dict[str, Any]]:
        raise RuntimeError("a kept fold keeps no messages: they are read again from the log")


@dataclass(frozen=True, slots=True)
class SurfaceRows:
    """The lean ``dshlog surface``: a row per current node, the replacements, and the messages on demand.

    The rows are made from the fold each time they are asked for (a few hundred
    bytes a node stay in the fold, never a list of rows beside them).
    """

    fold: FoldedSurface
    #: opens the log again to read the derived messages (``None``: the fold kept them)
    reread: Callable[[], SessionLog] | None
    allow_unknown: bool
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    def rows(self) -> Iterator[NodeRow]:
        """The current nodes' rows, in surface order."""
        for seq, etype, note, projected in self.fold.node_notes():
            # a projected message (image/offload) is the node's message now, and derives one
            role, id_, empty, text = _unpack(note) if projected is None else _facts(projected, False)
            yield NodeRow(seq, etype, role, id_, empty, text)

    @property
    def roles(self) -> list[Any]:
        """The derived messages' roles, in surface order (a node that derives none has no role here)."""
        return [r.role for r in self.rows() if not r.empty]

    def replacements(self) -> Iterator[dict[str, Any]]:
        return self.fold.iter_replacements()

    def messages(self) -> Iterator[dict[str, Any]]:
        """The derived messages of the surface, in surface order (the library view's ``messages``)."""
        if self.reread is None:
            yield from self.fold.messages()
            return
        yield from _reread_messages(self.reread, self.allow_unknown, self.rows(), self.fold.projected)

    def json_pieces(self, *, messages: bool = False) -> Iterator[bytes]:
        """``surface --json`` (``messages``: ``--messages`` too) as pieces of :func:`dumps_pretty`'s bytes."""
        doc: dict[str, Any] = {"shape": SHAPE, "nodes": Items(r.as_dict() for r in self.rows()), "roles": self.roles,
                               "replacements": Items(self.replacements())}
        if messages:
            doc["messages"] = Items(self.messages())
        return pretty_pieces(doc)


def _reread_messages(reopen: Callable[[], SessionLog], allow_unknown: bool, rows: Iterable[NodeRow],
                     projected: Mapping[int, Any]) -> Iterator[dict[str, Any]]:
    """The messages of the non-empty ``rows`` from a second pass over the log, in the rows' order.

    The log yields them in seq order; a node a replacement placed before older ones
    is held until the older ones before it in the surface are written.
    """
    order = array("q")  # the seqs of the nodes that derive a message, in surface order
    types = bytearray()  # and the type of each (an index into type_names)
    type_names: list[str] = []
    for r in rows:
        if not r.empty:
            order.append(r.seq)
            if r.type not in type_names:
                type_names.append(r.type)
            types.append(type_names.index(r.type))
    if not order:
        return
    by_seq = sorted(range(len(order)), key=order.__getitem__)
    places = array("q", by_seq)  # k-th smallest seq -> its place among the messages
    del by_seq
    pending: dict[int, dict[str, Any]] = {}
    written = found = 0
    # dsh's decision on this log is known (the fold's pass took its whole view): the rows are
    # read as dsh reads them, without the restore, and only as far as the last message
    with reopen() as log, located(log.path):
        for event in log.v4(allow_unknown=allow_unknown, restore=False):
            seq = event.get("seq")
            k = places[found]
            if seq != order[k]:
                continue
            etype = type_names[types[k]]
            message = derive_message(event["type"], event["data"], projected.get(seq))
            if event["type"] != etype or message is None:
                raise CorruptLog(f"the log changed while it was read: seq {seq} is no longer a {etype}", seq=seq)
            found += 1
            if k != written:
                pending[k] = message
            else:
                yield message
                written += 1
                while written in pending:
                    yield pending.pop(written)
                    written += 1
            if found == len(order):
                break
    if written != len(order):
        raise CorruptLog("the log changed while it was read: surface nodes are missing from it")


def command_fold(*, strict_unknown: bool = True, keep_messages: bool = False) -> SurfaceFold:
    """The fold ``surface`` makes: dsh's checks, every replacement record, a row's facts per node."""
    return SurfaceFold(strict_unknown=strict_unknown, keep_messages=keep_messages, note=node_note)


def surface_rows(target: Source | Target, *, at: int | None = None, allow_unknown: bool = False,
                 progress: Position | None = None, cache: str | None = None) -> SurfaceRows:
    """Fold the log (or its prefix up to seq ``at``) keeping the printed row of each node, not its message.

    ``cache``: the directory of the verified cache of per-session results
    (:mod:`dshlog.read.cache`), or none; a regular file unchanged since its surface was
    kept (with these options, in the same root) is not folded again, and an old log's proven
    successor is read instead of migrating it again (:mod:`dshlog.read.successor`).
    """
    source = Source.of(target)

    def reopen() -> SessionLog:
        return open_target(source, progress=progress, cache=cache)

    def fold(_path: str, kept: Any = None) -> tuple[SurfaceRows, Any]:
        return _surface_rows(reopen, at, allow_unknown, not source.named, kept)

    if not source.named or source.name == STDIN:
        return fold(source.name)[0]
    options = repr((at, allow_unknown, source.options))
    rows = resumed_call(open_cache(cache), SURFACE, SURFACE_STATE, fold, source.name, options=options,
                        depends=place_keys())
    return replace(rows, reread=reopen)  # a kept fold reads its messages from the log, as the command's own does


def _surface_rows(reopen: Callable[[], SessionLog], at: int | None, allow_unknown: bool, streamed: bool,
                  kept: Any = None) -> tuple[SurfaceRows, Any]:
    """The surface, and the state its read leaves to go on from once the log has grown (``None``: none).

    Of a whole log, dsh's restore folds it anyway, and where it found nothing its fold is
    the command's; ``kept`` (a state an earlier read of this file left, the file since
    appended to) lets it read only the new lines (:mod:`dshlog.read.resume`).  A prefix
    (``at``), a stream, or a log the restore reported anything in is folded by the command.
    """
    if at is not None or streamed:
        return _command_rows(reopen, at, allow_unknown, streamed), None
    codec = StateCodec({"node_note": node_note}, limit=MAX_VALUE_BYTES)
    for attempt in ((kept,) if kept is None else (kept, None)):
        with reopen() as log, located(log.path):
            view = log.v4(allow_unknown=allow_unknown, share=SurfaceShare(note=node_note, replacements=True))
            if attempt is not None and not resume_view(log, view, attempt, codec):
                continue  # the state does not fit this file: read it afresh
            checkpoint = view_checkpoint(log, view, codec)
            with view:
                view.finish()
            shared = view.surface
            if shared is not None:
                return SurfaceRows(shared, reopen, allow_unknown, tuple(log.notes), log.path,
                                   log.notes.suppressed()), checkpoint.state
        break
    return _command_rows(reopen, None, allow_unknown, False), None


def _command_rows(reopen: Callable[[], SessionLog], at: int | None, allow_unknown: bool, streamed: bool) -> SurfaceRows:
    """The command's own fold: of a prefix (``at``), of a stream, or of a log dsh's restore reported anything in."""
    state = command_fold(strict_unknown=not allow_unknown, keep_messages=streamed)
    with reopen() as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            if at is None or at >= 0:
                for event in view:
                    state.apply(event)
                    if at is not None and state.next_seq > at:
                        break
        if at is not None and state.next_seq <= at:
            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        return SurfaceRows(state, None if streamed else reopen, allow_unknown, tuple(log.notes), log.path,
                           log.notes.suppressed())


def _kept_record(s: SurfaceRows) -> list[Any]:
    """The surface as a plain form for the cache; raises ``ValueError`` as soon as it grows past the bound.

    The nodes' notes are most of it (a few hundred bytes a node): they are counted as they
    are taken, so a surface too large to keep is never held twice in memory.
    """
    nodes: list[list[Any]] = []
    size = 0
    for seq, etype, note, projected in s.fold.node_notes():
        size += 32 + len(etype) + (len(note) if isinstance(note, bytes) else sum(len(str(x)) for x in note))
        if projected is not None:
            size += len(str(projected))
        if size > MAX_VALUE_BYTES:
            raise ValueError("the surface is larger than the cache keeps")
        nodes.append([seq, etype, note, projected])
    return [nodes, list(s.fold.iter_replacements()), s.allow_unknown, [problem_record(n) for n in s.notes], s.path,
            dict(s.suppressed)]


def _kept_of(rec: list[Any]) -> SurfaceRows:
    """:func:`_kept_record` back (its ``reread`` is the caller's); raises on anything it did not write."""
    nodes, replacements, allow_unknown, notes, path, suppressed = rec
    if not isinstance(path, str) or not isinstance(suppressed, dict):
        raise TypeError("not a surface's record")
    kept: list[tuple[int, str, Note]] = []
    projected: dict[int, Any] = {}
    for seq, etype, note, message in nodes:
        if not isinstance(seq, int) or not isinstance(etype, str) or not isinstance(note, (bytes, list)):
            raise TypeError("not a node's record")
        kept.append((seq, sys.intern(etype), note if isinstance(note, bytes) else _note_of(note)))
        if message is not None:
            projected[seq] = message
    if not all(isinstance(r, dict) for r in replacements):
        raise TypeError("a replacement is a map")
    fold = KeptFold(tuple(kept), tuple(replacements), projected)
    return SurfaceRows(fold, None, bool(allow_unknown), tuple(problem_of(n) for n in notes), path, suppressed)


def _note_of(rec: list[Any]) -> tuple[Any, Any, bool, str]:
    """A note kept as its four facts (:func:`node_note`'s tuple) back."""
    role, id_, empty, text = rec
    if not isinstance(empty, bool) or not isinstance(text, str):
        raise TypeError("not a node's facts")
    return role, id_, empty, text


#: ``surface``'s folds in the cache (bump ``version`` when :class:`KeptFold` or a node's note changes).
SURFACE = Kind("surface", 1, _kept_record, _kept_of)
#: What a read of the whole log leaves to go on from (:mod:`dshlog.read.resume`).
SURFACE_STATE = state_kind("surface")


@dataclass(frozen=True, slots=True)
class SurfaceView:
    """``dshlog surface``: the surface nodes after the fold, the derived roles, the replacements."""

    nodes: tuple[Mapping[str, Any], ...]  # seq, type, role, empty, ... and the message
    messages: tuple[Mapping[str, Any], ...]  # the derived model messages, in surface order
    replacements: tuple[Mapping[str, Any], ...]
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    @property
    def roles(self) -> list[Any]:
        return [m.get("role") for m in self.messages]

    def as_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """``surface --json`` (``messages=True``: ``--messages`` too)."""
        nodes = [{**{k: v for k, v in n.items() if k != "message"}, "preview": preview(n["message"])} for n in self.nodes]
        doc: dict[str, Any] = {"shape": SHAPE, "nodes": nodes, "roles": self.roles, "replacements": list(self.replacements)}
        if messages:
            doc["messages"] = list(self.messages)
        return doc


@boundary
def surface(target: Source | Target, *, at: int | None = None, allow_unknown: bool = False,
            progress: Position | None = None) -> SurfaceView:
    """``dshlog surface``: the fold of the log (or of its prefix up to seq ``at``): nodes and derived messages."""
    with open_target(target, strict=stance("surface").strict, progress=progress) as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            state = fold(view, until_seq=at, strict_unknown=not allow_unknown)
        if at is not None and state.next_seq <= at:
            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        return SurfaceView(tuple(state.node_info()), tuple(state.messages()), tuple(state.replacements), tuple(log.notes),
                           log.path, log.notes.suppressed())
