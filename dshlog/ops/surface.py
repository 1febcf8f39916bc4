"""``dshlog surface`` in memory that follows the surface's length, not its messages.

The library's :func:`~dshlog.ops.api.surface` returns every current message (a
:class:`~dshlog.ops.results.SurfaceView`); on a log that never compacts that is
every message of the log.  The command prints far less: per node its seq, type,
role, id, whether it derives a message, and a 60-column preview.  So the command's
fold is the lean checking fold (``keep_messages=False``, dsh's checks unchanged)
with a *note* per node: the row it prints, made from the event as it is folded and
dropped when the node is shadowed.  Only ``--json --messages`` needs the messages
themselves; they are read again from the log when they are written (a second
pass through the same dsh view, in seq order, put in surface order through a
buffer that holds only the nodes a replacement placed before older ones), and the
JSON document is written piece by piece (:func:`~dshlog.protocol.jsjson.pretty_pieces`).
A stream (``-``) cannot be read twice, so there the fold keeps the messages.
The bytes printed are those of the library's view (a test compares them).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

from ..check.problems import Problem
from ..check.surface import SurfaceFold, derive_message
from ..errors import CorruptLog, UsageError
from ..output.jsondoc import SHAPE
from ..output.text import preview
from ..protocol.jsjson import Items, pretty_pieces
from ..protocol.vocabulary import message_of
from ..read.session import SessionLog
from .sessions import located, open_target

__all__ = ["NodeRow", "SurfaceRows", "surface_rows"]


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


def _row_of(seq: int, etype: str, message: Any, empty: bool) -> NodeRow:
    """The printed facts of a node's current message (as ``SurfaceFold.node_info`` words them)."""
    if isinstance(message, dict):
        return NodeRow(seq, etype, message.get("role"), message.get("id"), empty, preview(message))
    return NodeRow(seq, etype, None, None, empty, preview(message))


def _note(seq: int, etype: str, data: Any) -> NodeRow:
    """The fold's note of a node: its row, made while the event is at hand."""
    return _row_of(seq, etype, message_of(etype, data), derive_message(etype, data) is None)


@dataclass(frozen=True, slots=True)
class SurfaceRows:
    """The lean ``dshlog surface``: one row per current node, the replacements, and the messages on demand."""

    rows: list[NodeRow]
    fold: SurfaceFold
    #: opens the log again to read the derived messages (``None``: the fold kept them)
    reread: Callable[[], SessionLog] | None
    allow_unknown: bool
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    @property
    def roles(self) -> list[Any]:
        """The derived messages' roles, in surface order (a node that derives none has no role here)."""
        return [r.role for r in self.rows if not r.empty]

    def replacements(self) -> Iterator[dict[str, Any]]:
        return self.fold.iter_replacements()

    def messages(self) -> Iterator[dict[str, Any]]:
        """The derived messages of the surface, in surface order (the library view's ``messages``)."""
        if self.reread is None:
            yield from self.fold.messages()
            return
        yield from _reread_messages(self.reread, self.allow_unknown, self.rows, self.fold.projected)

    def json_pieces(self, *, messages: bool = False) -> Iterator[bytes]:
        """``surface --json`` (``messages``: ``--messages`` too) as pieces of :func:`dumps_pretty`'s bytes."""
        doc: dict[str, Any] = {"shape": SHAPE, "nodes": Items(r.as_dict() for r in self.rows), "roles": self.roles,
                               "replacements": Items(self.replacements())}
        if messages:
            doc["messages"] = Items(self.messages())
        return pretty_pieces(doc)


def _reread_messages(reopen: Callable[[], SessionLog], allow_unknown: bool,
                     rows: list[NodeRow], projected: Mapping[int, Any]) -> Iterator[dict[str, Any]]:
    """The messages of the non-empty ``rows`` from a second pass over the log, in the rows' order.

    The log yields them in seq order; a node a replacement placed before older ones
    is held until the older ones before it in the surface are written.
    """
    wanted = [i for i, r in enumerate(rows) if not r.empty]
    if not wanted:
        return
    by_seq = sorted(wanted, key=lambda i: rows[i].seq)
    seqs = array("q", (rows[i].seq for i in by_seq))
    places = array("q", by_seq)
    del by_seq
    rank = array("q", bytes(8 * len(rows)))  # row index -> its place among the messages
    for k, i in enumerate(wanted):
        rank[i] = k
    del wanted[:]
    pending: dict[int, dict[str, Any]] = {}
    written = found = 0
    with reopen() as log, located(log.path), log.v4(allow_unknown=allow_unknown) as view:
        for event in view:
            seq = event["seq"]
            if seq != seqs[found]:
                continue
            row = rows[places[found]]
            message = derive_message(event["type"], event["data"], projected.get(seq))
            if event["type"] != row.type or message is None:
                raise CorruptLog(f"the log changed while it was read: seq {seq} is no longer a {row.type}", seq=seq)
            k = rank[places[found]]
            found += 1
            if k != written:
                pending[k] = message
            else:
                yield message
                written += 1
                while written in pending:
                    yield pending.pop(written)
                    written += 1
            if found == len(seqs):
                break
    if written != len(seqs):
        raise CorruptLog("the log changed while it was read: surface nodes are missing from it")


def surface_rows(target: str | os.PathLike[str], *, at: int | None = None, allow_unknown: bool = False,
                 select: str | None = None, format_version: int | None = None,
                 system_prompt_plugins: tuple[str, ...] = (), stream: IO[bytes] | None = None,
                 parallel: bool = False) -> SurfaceRows:
    """Fold the log (or its prefix up to seq ``at``) keeping the printed row of each node, not its message."""

    def reopen() -> SessionLog:
        return open_target(target, select=select, format_version=format_version,
                           system_prompt_plugins=system_prompt_plugins, stream=stream, parallel=parallel)

    state = SurfaceFold(strict_unknown=not allow_unknown, keep_messages=stream is not None, note=_note)
    with reopen() as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            if at is None or at >= 0:
                for event in view:
                    state.apply(event)
                    if at is not None and state.next_seq > at:
                        break
        if at is not None and state.next_seq <= at:
            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        # a projected message (image/offload) is the node's message now, and derives one
        rows = [note if projected is None else _row_of(seq, etype, projected, False)
                for seq, etype, note, projected in state.node_notes()]
        return SurfaceRows(rows, state, reopen if stream is None else None, allow_unknown, tuple(log.notes), log.path,
                           log.notes.suppressed())
