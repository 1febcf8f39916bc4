"""The surface fold: which events the model sees, in which order (SEMANTICS §2).

dsh keeps no message array; the model view is folded from the log on demand.
Each surface event either *appends* its seq or *replaces* a contiguous span of
current nodes with its own seq.  We reproduce that fold exactly, with dsh's own
checks in dsh's order and its exact error texts, so a log dsh would refuse is
refused here with the same words.  The rules other consumers share (message
shapes, :mod:`.shapes`; event data, :mod:`.data`) report to raising reporters
here, so the fold stops at the first problem with the error type its callers
catch, while ``validate`` runs the same rules and collects every problem.  The
surface rules themselves (markers, sources, spans, the protected head, tool
result rewrites, image offloads) are the fold's own.

The fold is incremental and atomic per event (validate everything, then
mutate), and it keeps only what later steps need: the message payload of each
*current* node, the tool lists of request headers (for ``developer/message``
checks) and the replacement records.  A shadowed node's payload is dropped the
moment it leaves the surface, so folding a log of hundreds of MB holds only
the model view, never the log.  What must outlive the surface is stored
compactly: header tools are shared between headers that declare the same list
(seqs in an ``array``), and replacement records keep their shadowed seqs in an
``array`` -- or only the most recent few when the caller does not want them.

A current node is no object of its own: the fold keeps columns beside the list
of seqs, one entry per node at the node's position (a type code in a
``bytearray``; the full fold's payloads in a list; the lean fold's rewrite keys
and message digests as 16 bytes each in ``bytearray`` columns, the rare message with
an image aside by seq).  A replacement is one slice assignment per column, as
it is on the seqs.  A log that never compacts then costs the lean fold some 30
bytes per node instead of the 150-250 a node object, its dict entry and its
digest objects took.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from ..errors import CorruptLog, UnsupportedVersion
from ..fastpaths import fast
from ..protocol.jsjson import UNDEFINED, js_string, json_equal, key_bytes
from ..protocol.values import is_count
from ..protocol.texts import unknown_event_type
from ..protocol.vocabulary import (
    CURRENT_VERSION,
    EMPTY_DERIVES_NOTHING_TYPES,
    MESSAGE_PROJECTION_TYPES,
    SETTLEMENT_TYPES,
    SURFACE_TYPES_V4,
    V4_TYPES,
    message_of,
)
from .common import is_record
from .data import check_event_data
from .envelope import invalid_envelope
from .keys import equality_digest, message_digest
from .problems import Raise
from .shapes import check_message_shape

__all__ = [
    "RECENT_REPLACEMENTS",
    "Digests",
    "SETTLEMENT_TYPES",
    "HeaderTools",
    "NodeNote",
    "SurfaceError",
    "SurfaceFold",
    "SurfaceShare",
    "derive_message",
    "derive_messages",
    "fold",
    "json_equal",
]

# Replacement records a fold keeps when the caller did not ask for all of them (display only).
RECENT_REPLACEMENTS = 8

#: What a caller keeps per surface node instead of its message: ``note(seq, type, data)``
#: (see :class:`SurfaceFold`); the result is held while the node is current.
NodeNote = Callable[[int, str, Any], Any]


class SurfaceShare:
    """What a consumer of the restored events asks of the restore's own fold, so the log is folded once.

    dsh's restore folds the surface to check it; a view built from the surface (a request,
    its messages) is a fold of the same events.  Rather than folding them again, such a
    consumer has the restore's fold keep what it reads (``digests``: a digest of each
    derived message; ``note``: the consumer's note per node, as :class:`SurfaceFold` takes
    them; ``replacements``: every replacement record, not only the last few) and is told,
    through ``settling``, just before the fold takes each settlement event, while the
    surface is the one that settlement's request was built from.  ``settling`` only looks
    at the fold: it must not raise, nor change it.

    A consumer either follows the fold while it reads the events
    (:meth:`~dshlog.read.view.V4View.share_surface`: ``requests``, ``rebuild``) or takes
    the whole log's fold once the view is used up (the view made with ``share``, then
    :attr:`~dshlog.read.view.V4View.surface`: ``surface``); the restore's fold is the
    one producer of the surface either way.
    """

    __slots__ = ("digests", "note", "replacements", "settling")

    def __init__(self, *, digests: bool = False, note: NodeNote | None = None, replacements: bool = False,
                 settling: Callable[[SurfaceFold], None] | None = None) -> None:
        self.digests = digests
        self.note = note
        self.replacements = replacements
        self.settling = settling


class SurfaceError(CorruptLog):
    """A surface fold rule failed; ``message`` is dsh's raw fold text."""


# --------------------------------------------------------------------------- derivation (SEMANTICS §3)



def derive_message(event_type: str, data: Any, projected: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The message one surface node contributes, or ``None`` (SEMANTICS §3 step 2).

    ``projected`` is the node's entry from a message projection (``image/offload``);
    it wins even when its content is empty, because a projection only rewrites
    content of a message that already reached the model.
    """
    if projected is not None:
        return cast("dict[str, Any]", projected)
    if event_type == "user/message":
        return data if isinstance(data, dict) else None
    if event_type in EMPTY_DERIVES_NOTHING_TYPES:
        message = message_of(event_type, data)
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        if isinstance(content, list) and len(content) == 0:
            return None
        return message
    if event_type == "tool/result":
        message = message_of(event_type, data)
        return message if isinstance(message, dict) else None
    return None


# The fold's strict reporters: the shared rule families report, the fold refuses with
# the error type its callers catch (CorruptLog for shapes, SurfaceError for data rules).
_CORRUPT = Raise(CorruptLog)
_REFUSE = Raise(SurfaceError)


# --------------------------------------------------------------------------- the fold


#: The types a surface node can have (only surface-eligible events become nodes), by code.
_TYPES: tuple[str, ...] = tuple(sorted(SURFACE_TYPES_V4))
_CODES: dict[str, int] = {t: i for i, t in enumerate(_TYPES)}
#: A digest column's filler where a node has no digest (never compared: see the flags).
_NO_DIGEST = bytes(16)


class Digests:
    """The 16-byte digests of a surface's derived messages, packed in one ``bytearray``.

    What ``requests`` compares: ``len``, a prefix (``d[:n]``, the packed bytes, equal
    exactly when the digest lists are) and iteration (one ``bytes`` per message).
    A list of ``bytes`` cost 57 bytes a message; this costs 16.
    """

    __slots__ = ("_buf",)

    def __init__(self, packed: bytes | bytearray = b"") -> None:
        self._buf = bytearray(packed)

    def append(self, digest: bytes | bytearray) -> None:
        self._buf += digest

    def __len__(self) -> int:
        return len(self._buf) >> 4

    def __getitem__(self, index: slice) -> bytes:
        if not isinstance(index, slice) or index.start is not None or index.step is not None or index.stop is None:
            raise TypeError("Digests takes a prefix, d[:n]")
        return bytes(self._buf[: max(index.stop, 0) << 4])

    def __iter__(self) -> Iterator[bytes]:
        buf = self._buf
        for i in range(0, len(buf), 16):
            yield bytes(buf[i : i + 16])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Digests):
            return self._buf == other._buf
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable


class HeaderTools:
    """The ``tools`` of every ``request/header`` so far, by seq.

    Any earlier header may be cited (``developer/message.headerSeq``, toolHistory
    definitions), so none can be forgotten; but long sessions re-log the same
    tool list in every header.  Equal lists (same JSON bytes) are kept once and
    shared, and the seqs live in an ``array('q')`` (8 bytes a header), so the
    cost per header is two machine words instead of a copy of every schema.
    """

    __slots__ = ("_seqs", "_tools", "_shared")

    def __init__(self) -> None:
        self._seqs = array("q")  # header seqs, ascending (events arrive in seq order)
        self._tools: list[Any] = []  # the (shared) tools value of each header
        # JSON bytes of a tools list -> the first such list (bytes, not a digest: the key must be
        # exact, and importing hashlib would load OpenSSL into every surface/requests run).
        self._shared: dict[bytes, Any] = {}

    def add(self, seq: int, tools: Any) -> None:
        """Record the tools of the header at ``seq`` (which follows every recorded seq)."""
        if isinstance(tools, list) and tools:
            try:
                raw = key_bytes(tools)
            except TypeError:
                pass  # not plain JSON (e.g. a 70-bit integer): keep this list as it is
            else:
                tools = self._shared.setdefault(raw, tools)
        self._seqs.append(seq)
        self._tools.append(tools)

    def _index(self, seq: Any) -> int:
        i = bisect_left(self._seqs, seq)
        return i if i < len(self._seqs) and self._seqs[i] == seq else -1

    def __contains__(self, seq: Any) -> bool:
        return self._index(seq) >= 0

    def __len__(self) -> int:
        return len(self._seqs)

    def __getitem__(self, seq: Any) -> Any:
        i = self._index(seq)
        if i < 0:
            raise KeyError(seq)
        return self._tools[i]

    def get(self, seq: Any, default: Any = None) -> Any:
        i = self._index(seq)
        return self._tools[i] if i >= 0 else default


class SurfaceFold:
    """Incremental surface fold (SEMANTICS §2) with dsh's checks in dsh's order.

    ``apply(event)`` validates one event completely, then commits it; on error
    the state is untouched, so a caller can report the bad event and still
    show the surface as it stood before it.

    ``strict_unknown`` refuses an unknown type that is not ``ignorable`` (the
    dsh read path refuses such a log); with ``False`` it is treated as log-only.
    ``check_messages`` runs dsh's load-time message shape checks, without which
    derivation could hand a malformed object to the model view.
    ``keep_replacements`` keeps every replacement record for :attr:`replacements`
    (what ``dshlog surface`` prints); without it only the last
    ``RECENT_REPLACEMENTS`` are kept, because their shadowed seqs add up to
    every surface event of the log and validation or request series only need
    :attr:`replacement_count`.
    ``keep_messages=False`` is the lean fold of a caller that only checks (the
    validator, dsh's restore): a node keeps its type and only what a later rule
    can still look at (see :func:`_lean_payload`), so a log that never compacts
    costs a few bytes per node instead of its messages (:attr:`nodes` is then an
    ``array('q')``, not a list); :meth:`messages` and
    :meth:`node_info` are then unavailable.  With ``digests`` as well, each node keeps
    the 16-byte digest of its derived message's JSON text instead (what ``requests``
    compares), and :meth:`message_digests` stands in for :meth:`messages`.
    The lean fold is a fast path: in the exact mode of :mod:`dshlog.fastpaths` every
    fold keeps its messages, and :meth:`message_digests` digests them.
    ``note`` is what a caller that shows the surface keeps per node instead of its
    message: ``note(seq, type, data)`` is called once per surface node as it is folded and
    its result is held while the node is current (:meth:`node_notes`); the lean
    ``dshlog surface`` keeps a row of the table this way, so a log that never compacts
    costs a preview per node, not its messages.
    """

    def __init__(
        self,
        *,
        strict_unknown: bool = True,
        check_messages: bool = True,
        keep_replacements: bool = True,
        keep_messages: bool = True,
        digests: bool = False,
        note: NodeNote | None = None,
    ) -> None:
        self.strict_unknown = strict_unknown
        self.check_messages = check_messages
        self.keep_replacements = keep_replacements
        lean = not keep_messages and fast()
        self.keep_messages = not lean
        self.digests = digests and lean
        # the exact mode's digests (asked of a fold that keeps its messages): (messages digested, digests)
        self._digested: tuple[list[dict[str, Any]], Digests] | None = None
        self._digests_asked = digests and not keep_messages
        self.note = note
        # A caller that runs check_event_data itself and folds only the events that pass
        # it (the validator) switches this off; the rules are deterministic, so skipping
        # them after a pass cannot change the outcome.
        self.check_data = True
        # The current nodes' seqs in surface order, and per node (the same position) its
        # columns: what a node keeps is a few bytes in arrays, never an object of its own.
        # The lean fold's seqs are an array too; the full fold's stay a list (its callers
        # compare them with lists).
        self.nodes: list[int] | array[int] = [] if self.keep_messages else array("q")
        self._types = bytearray()  # type codes (_TYPES)
        # full fold: the stored payload (the event's data; an assistant/message's without its stream)
        self._payloads: list[Any] | None = [] if self.keep_messages else None
        # lean fold: a tool result's rewrite key (the digest rule E compares), 16 bytes a node
        self._keys = bytearray()
        # lean fold: the data of a user message or tool result holding an image, by seq (rare)
        self._whole: dict[int, Any] = {}
        # digests: 16 bytes a node, and whether the node derives a message at all
        self._digests = bytearray()
        self._derives = bytearray()
        # the caller's note of each node (only with ``note``)
        self._notes: list[Any] = []
        # (seq, startSeq, endSeq, shadowed seqs); the seqs in an array, not as int objects.
        self._replacements: list[tuple[int, Any, Any, array[int]]] | deque[tuple[int, Any, Any, array[int]]] = (
            [] if keep_replacements else deque(maxlen=RECENT_REPLACEMENTS)
        )
        self.replacement_count = 0
        self.replace_generation = 0
        self.content_generation = 0
        self.projected: dict[int, dict[str, Any]] = {}
        self._projected_digests: dict[int, bytes] = {}
        self.next_seq = 0  # seq the next event must carry
        self.shadowed_count = 0
        self.surface_event_count = 0
        self.unknown_types: dict[str, int] = {}  # tolerated (ignorable or non-strict) unknown types
        # Derived messages of the current nodes; appends extend it, replacements
        # and projections drop it (rebuilt lazily), so asking for the messages
        # at every settlement of a long log stays linear.
        self._derived: list[dict[str, Any]] | None = [] if self.keep_messages else None
        # The lean fold's digests of the derived messages (``digests=True``), kept like _derived.
        self._derived_digests: Digests | None = Digests() if self.digests else None
        # request/header seq -> its header tools (developer/message checks need any earlier header).
        self._header_tools = HeaderTools()

    # ------------------------------------------------------------------ public API

    def apply(self, event: dict[str, Any]) -> None:
        """Validate ``event`` as the next event of the log, then commit it."""
        index = self.next_seq
        if not isinstance(event, dict):
            raise CorruptLog(invalid_envelope(index), seq=index)
        seq = event.get("seq", UNDEFINED)
        if not is_count(seq) or seq != index:
            raise SurfaceError(f"session event seq {js_string(seq)} is not contiguous; expected {index}", seq=index)
        etype = event.get("type")
        if not isinstance(etype, str):
            raise CorruptLog(f"{invalid_envelope(index)}: type must be a string", seq=index)
        if "data" not in event:
            raise CorruptLog(f"{invalid_envelope(index)}: data is missing", seq=index)
        ignorable = event.get("ignorable") is True
        known = etype in V4_TYPES
        if not known:
            if not ignorable and self.strict_unknown:
                raise UnsupportedVersion(unknown_event_type(CURRENT_VERSION, f'"{etype}"', index), seq=index)
        if self.check_messages:
            check_message_shape(event, index, _CORRUPT)
        if self.check_data:
            check_event_data(event, f'session event "{etype}" at seq {index}', _REFUSE)
        commit = self._plan(event, index, etype, known, ignorable)
        commit()
        if not known:
            self.unknown_types[etype] = self.unknown_types.get(etype, 0) + 1
        if etype == "request/header":
            header = event["data"]["header"]
            self._header_tools.add(index, header.get("tools"))
        self.next_seq = index + 1

    @property
    def replacements(self) -> list[dict[str, Any]]:
        """The replacement records, oldest first: ``{seq, start, end, shadowedSeqs}``.

        Built on each access from the compact records (a new list each time).
        With ``keep_replacements=False`` only the most recent ones are left.
        """
        return [
            {"seq": seq, "start": start, "end": end, "shadowedSeqs": list(shadowed)}
            for seq, start, end, shadowed in self._replacements
        ]

    def iter_replacements(self) -> Iterator[dict[str, Any]]:
        """The records of :attr:`replacements` one at a time (a writer that streams holds one)."""
        for seq, start, end, shadowed in self._replacements:
            yield {"seq": seq, "start": start, "end": end, "shadowedSeqs": list(shadowed)}

    def node_notes(self) -> Iterator[tuple[int, str, Any, dict[str, Any] | None]]:
        """``(seq, type, note, projected message or None)`` of each current node, in surface order.

        Needs a fold made with ``note``; a projected message (``image/offload``) is
        the node's message now, so a caller notes it again from that.
        """
        if self.note is None:
            raise RuntimeError("node_notes needs a fold made with a note")
        projected = self.projected
        for i, seq in enumerate(self.nodes):
            yield seq, _TYPES[self._types[i]], self._notes[i], projected.get(seq) if projected else None

    def messages(self) -> list[dict[str, Any]]:
        """Derived messages of the current surface (SEMANTICS §3), the stored objects themselves.

        Returns a new list each call (the message objects are shared, not copied).
        """
        if not self.keep_messages:
            raise RuntimeError("a fold made with keep_messages=False keeps no messages")
        if self._derived is None:
            derived: list[dict[str, Any]] = []
            payloads = cast("list[Any]", self._payloads)
            for i, seq in enumerate(self.nodes):
                message = derive_message(_TYPES[self._types[i]], payloads[i], self.projected.get(seq))
                if message is not None:
                    derived.append(message)
            self._derived = derived
        return list(self._derived)

    def message_digests(self) -> Digests:
        """Digests of the derived messages of the current surface (a ``digests=True`` fold).

        Equal exactly when the messages' JSON texts are (``JSON.stringify``, key order
        significant), as :meth:`messages` would compare.  The list is the fold's own, not
        a copy: appends extend it in place and any other change replaces it, so its first
        ``n`` entries stay those of the moment it was taken for as long as it is alive.
        """
        if not self.digests:
            if self._digests_asked:
                return self._exact_digests()
            raise RuntimeError("message_digests needs a fold made with keep_messages=False, digests=True")
        if self._derived_digests is None:
            projected = self._projected_digests
            digests, derives = self._digests, self._derives
            if not projected and derives.count(0) == 0:
                derived = Digests(digests)
            else:
                derived = Digests()
                for i, seq in enumerate(self.nodes):
                    digest = projected.get(seq) if projected else None
                    if digest is not None:
                        derived.append(digest)
                    elif derives[i]:
                        derived.append(digests[i << 4 : (i + 1) << 4])
            self._derived_digests = derived
        return self._derived_digests

    def _exact_digests(self) -> Digests:
        """:meth:`message_digests` of the exact mode: the derived messages digested, as the fast fold
        digests them when each is folded (the same list while only appends extend the messages)."""
        messages = self.messages()
        derived = cast("list[dict[str, Any]]", self._derived)
        if self._digested is None or self._digested[0] is not derived:
            self._digested = (derived, Digests())
        digests = self._digested[1]
        for message in messages[len(digests):]:
            digests.append(message_digest(message))
        return digests

    def node_info(self) -> list[dict[str, Any]]:
        """One record per current node: seq, type, role, id, empty, and its current message."""
        if not self.keep_messages:
            raise RuntimeError("a fold made with keep_messages=False keeps no messages")
        out: list[dict[str, Any]] = []
        payloads = cast("list[Any]", self._payloads)
        for i, seq in enumerate(self.nodes):
            etype, payload = _TYPES[self._types[i]], payloads[i]
            projected = self.projected.get(seq)
            message = projected if projected is not None else message_of(etype, payload)
            derived = derive_message(etype, payload, projected)
            out.append(
                {
                    "seq": seq,
                    "type": etype,
                    "role": message.get("role") if isinstance(message, dict) else None,
                    "id": message.get("id") if isinstance(message, dict) else None,
                    "empty": derived is None,
                    "message": message,
                }
            )
        return out

    # ------------------------------------------------------------------ planning (no mutation)

    def _plan(self, event: dict[str, Any], seq: int, etype: str, known: bool, ignorable: bool) -> Callable[[], None]:  # noqa: C901
        """Run every check of SEMANTICS §2.2 and return a closure that commits the event."""
        op = self._surface_op(event, seq, etype, known, ignorable)
        if op is not None and op != "append" and (op["startSeq"] >= seq or op["endSeq"] >= seq):
            raise SurfaceError(
                f"surface replace at seq {seq}: startSeq and endSeq must reference earlier events", seq=seq
            )
        if op is not None:
            self._check_sources(event, seq, etype, [])
        if etype == "developer/message":
            self._check_developer_header(event, seq)
        if etype in MESSAGE_PROJECTION_TYPES:
            updates = self._project_image_offload(event)

            digests = {seq: message_digest(message) for seq, message in updates.items()} if self.digests else None

            def commit_projection() -> None:
                self.projected.update(updates)
                if digests is not None:
                    self._projected_digests.update(digests)
                self.content_generation += 1
                self._derived = None
                self._derived_digests = None

            return commit_projection
        if op is None:
            return _noop
        data = event["data"]
        code = _CODES[etype]
        payload = key = None
        if self.keep_messages:
            payload = {"message": data.get("message") if isinstance(data, dict) else None} if etype == "assistant/message" else data
        else:
            payload, key = _lean_payload(etype, data)
        note = self.note(seq, etype, data) if self.note is not None else None
        digest = None
        if self.digests:
            derived = derive_message(etype, data)
            digest = message_digest(derived) if derived is not None else None
        if op == "append":

            def commit_append() -> None:
                self.nodes.append(seq)
                self._add(seq, code, payload, key, digest, note)
                self.surface_event_count += 1
                if self._derived is not None:
                    message = derive_message(etype, payload)
                    if message is not None:
                        self._derived.append(message)
                if digest is not None and self._derived_digests is not None:
                    self._derived_digests.append(digest)

            return commit_append
        start, end = op["startSeq"], op["endSeq"]
        a, b = self._locate(start, end)
        shadowed = list(self.nodes[a : b + 1])
        self._check_sources(event, seq, etype, shadowed)
        if etype == "tool/result":
            self._check_tool_result_rewrite(event, shadowed, a)
        if a == 0 and self.nodes and _TYPES[self._types[0]] == "system/message":
            if etype != "system/message" or len(shadowed) != 1:
                raise SurfaceError(
                    "surface replace: node 0 holds the system prompt and may be rewritten only by a "
                    "system/message over exactly that node",
                    seq=seq,
                )

        def commit_replace() -> None:
            nodes = self.nodes
            if isinstance(nodes, list):
                nodes[a : b + 1] = [seq]
            else:
                nodes[a : b + 1] = array("q", (seq,))
            projected, whole = self.projected, self._whole
            for old in shadowed:
                if whole:
                    whole.pop(old, None)
                if projected:
                    projected.pop(old, None)  # a projection only ever applies to a current node
                    self._projected_digests.pop(old, None)
            self._drop(a, b + 1)
            self._add(seq, code, payload, key, digest, note, a)
            self.replace_generation += 1
            self.content_generation += 1
            self._derived = None
            self._derived_digests = None
            self.shadowed_count += len(shadowed)
            self.surface_event_count += 1
            self.replacement_count += 1
            self._replacements.append((seq, start, end, array("q", shadowed)))

        return commit_replace

    def _add(self, seq: int, code: int, payload: Any, key: bytes | None, digest: bytes | None, note: Any,
             at: int | None = None) -> None:
        """Write a node's columns at position ``at`` (``None``: the end); its seq is placed already."""
        if self._payloads is None and payload is not None:
            self._whole[seq] = payload
        if at is None:  # an append: the common case, without slice assignments
            self._types.append(code)
            if self._payloads is not None:
                self._payloads.append(payload)
            else:
                self._keys += key if key is not None else _NO_DIGEST
            if self.digests:
                self._digests += digest if digest is not None else _NO_DIGEST
                self._derives.append(digest is not None)
            if self.note is not None:
                self._notes.append(note)
            return
        i = at
        self._types[i:i] = bytes((code,))
        if self._payloads is not None:
            self._payloads[i:i] = [payload]
        else:
            self._keys[i << 4 : i << 4] = key if key is not None else _NO_DIGEST
        if self.digests:
            self._digests[i << 4 : i << 4] = digest if digest is not None else _NO_DIGEST
            self._derives[i:i] = b"\x01" if digest is not None else b"\x00"
        if self.note is not None:
            self._notes[i:i] = [note]

    def _drop(self, start: int, stop: int) -> None:
        """Remove the columns of the nodes at positions ``start`` to ``stop - 1``."""
        del self._types[start:stop]
        if self._payloads is not None:
            del self._payloads[start:stop]
        else:
            del self._keys[start << 4 : stop << 4]
        if self.digests:
            del self._digests[start << 4 : stop << 4]
            del self._derives[start:stop]
        if self.note is not None:
            del self._notes[start:stop]

    def _message_at(self, i: int, seq: int) -> Any:
        """The stored message of the node at position ``i`` (the lean fold keeps only those with an image)."""
        etype = _TYPES[self._types[i]]
        if self._payloads is not None:
            return message_of(etype, self._payloads[i])
        return message_of(etype, self._whole.get(seq))

    def _surface_op(self, event: dict[str, Any], seq: int, etype: str, known: bool, ignorable: bool) -> Any:
        """Rule A (marker eligibility): the event's op, or ``None`` for log-only."""
        if etype not in SURFACE_TYPES_V4:
            if not known and ignorable:
                return None  # opaque metadata of an unknown ignorable event is never interpreted
            if "surfaceOp" in event:
                raise SurfaceError(f'session event "{etype}" is not surface-eligible and cannot carry surfaceOp', seq=seq)
            if "sourceEventSeqs" in event:
                raise SurfaceError(
                    f'session event "{etype}" is not surface-eligible and cannot carry sourceEventSeqs', seq=seq
                )
            return None
        if "surfaceOp" not in event:
            raise SurfaceError(f'session event "{etype}" is surface-eligible and requires a surfaceOp marker', seq=seq)
        op = event["surfaceOp"]
        if op == "append" and isinstance(op, str):
            return op
        if not isinstance(op, dict):
            raise SurfaceError(f'session event "{etype}" carries an invalid surfaceOp', seq=seq)
        if not (
            len(op) == 3
            and "op" in op
            and "startSeq" in op
            and "endSeq" in op
            and op["op"] == "replace"
            and isinstance(op["op"], str)
            and is_count(op["startSeq"])
            and is_count(op["endSeq"])
        ):
            raise SurfaceError(f'session event "{etype}" carries an invalid replace surfaceOp', seq=seq)
        return op

    def _check_sources(self, event: dict[str, Any], seq: int, etype: str, shadowed: list[int]) -> None:
        """Rule B: ``sourceEventSeqs`` shape, then coverage of every shadowed node."""
        present = "sourceEventSeqs" in event
        raw = event.get("sourceEventSeqs")
        if etype == "assistant/message" and present:
            raise SurfaceError("assistant/message embeds its source stream and cannot carry sourceEventSeqs", seq=seq)
        sources: set[int] = set()
        if present:
            if not isinstance(raw, list):
                raise SurfaceError(f"sourceEventSeqs on event at seq {seq} must be an array when present", seq=seq)
            if len(raw) == 0:
                raise SurfaceError("sourceEventSeqs must not be empty", seq=seq)
            non_earlier: Any = None
            for member in raw:
                if not is_count(member):
                    raise SurfaceError(
                        f'session event "{etype}" sourceEventSeqs must densely contain non-negative safe integers',
                        seq=seq,
                    )
                sources.add(member)
                if non_earlier is None and member >= seq:
                    non_earlier = member
            if len(sources) != len(raw):
                raise SurfaceError("sourceEventSeqs must not contain duplicates", seq=seq)
            if non_earlier is not None:
                raise SurfaceError(
                    f"sourceEventSeqs must reference earlier events: {js_string(non_earlier)} >= current seq {seq}", seq=seq
                )
        missing = [s for s in shadowed if s not in sources]
        if missing:
            raise SurfaceError(
                "surface replace: sourceEventSeqs must include every shadowed surface node; missing "
                + ", ".join(str(s) for s in missing),
                seq=seq,
            )

    def _locate(self, start: Any, end: Any) -> tuple[int, int]:
        """Rule C: positions of the declared span in the *current* surface."""
        try:
            a = self.nodes.index(start)
        except ValueError:
            raise SurfaceError(f"surface replace: start seq {js_string(start)} not found in surface", seq=self.next_seq) from None
        try:
            b = self.nodes.index(end)
        except ValueError:
            raise SurfaceError(f"surface replace: end seq {js_string(end)} not found in surface", seq=self.next_seq) from None
        if a > b:
            raise SurfaceError(
                f"surface replace: start seq {js_string(start)} (index {a}) is after end seq {js_string(end)} (index {b})",
                seq=self.next_seq,
            )
        return a, b

    def _check_tool_result_rewrite(self, event: dict[str, Any], shadowed: list[int], a: int) -> None:
        """Rule E: a tool/result may only rewrite the content of exactly one current tool/result (at position ``a``)."""
        seq = self.next_seq
        if len(shadowed) != 1:
            raise SurfaceError("tool/result surface replacement must rewrite exactly one current node", seq=seq)
        if _TYPES[self._types[a]] != "tool/result":
            raise SurfaceError("tool/result surface replacement must target a current tool/result", seq=seq)
        if self._payloads is not None:
            same = json_equal(_blank_content(self._payloads[a]), _blank_content(event["data"]))
        elif shadowed[0] in self._whole:
            same = json_equal(_blank_content(self._whole[shadowed[0]]), _blank_content(event["data"]))
        else:
            same = self._keys[a << 4 : (a + 1) << 4] == equality_digest(_blank_content(event["data"]))
        if not same:
            raise SurfaceError("tool/result surface replacement may change only content", seq=seq)

    def _check_developer_header(self, event: dict[str, Any], seq: int) -> None:
        """Rule D: tool additions must resolve to complete definitions of an earlier header.

        The shared data rules have run by now (here, or in a caller that folds only
        the events that pass them), so the message's tool-change blocks are sound.
        """
        data = event["data"]
        if not is_record(data) or "headerSeq" not in data:
            return
        header_seq = data["headerSeq"]
        if not (is_count(header_seq) and header_seq < seq and header_seq in self._header_tools):
            raise SurfaceError("developer/message headerSeq must reference an earlier request/header", seq=seq)
        tools = self._header_tools[header_seq]
        tools = tools if isinstance(tools, list) else []
        content = data["message"].get("content") if is_record(data.get("message")) else None
        for block in content if isinstance(content, list) else []:
            if not is_record(block) or block.get("type") != "tool-addition":
                continue
            name = block.get("toolName")
            definitions = [t for t in tools if is_record(t) and t.get("name") == name]
            if len(definitions) != 1:
                raise SurfaceError(
                    f'developer/message tool-addition "{name}" must name exactly one tool in headerSeq {js_string(header_seq)}',
                    seq=seq,
                )
            definition = definitions[0]
            if not isinstance(definition.get("description"), str) or not is_record(definition.get("parameters")):
                raise SurfaceError(
                    f'developer/message tool-addition "{name}" requires a complete tool definition in headerSeq '
                    f"{js_string(header_seq)}",
                    seq=seq,
                )
            if "deferLoading" in definition and definition["deferLoading"] is not True:
                raise SurfaceError("developer/message referenced tool deferLoading must be true when present", seq=seq)

    def _project_image_offload(self, event: dict[str, Any]) -> dict[int, dict[str, Any]]:
        """``image/offload`` projection: mark selected image occurrences ``offloaded: true``."""
        seq = self.next_seq
        data = event["data"]
        targets = data.get("targets") if is_record(data) else None
        if not is_record(data) or len(data) != 1 or not isinstance(targets, list) or len(targets) == 0:
            raise SurfaceError("image/offload: data must contain a nonempty targets array", seq=seq)
        updates: dict[int, dict[str, Any]] = {}
        for target in targets:
            if (
                not is_record(target)
                or len(target) != 2
                or not is_count(target.get("seq"))
                or not isinstance(target.get("imageIndexes"), list)
                or len(target["imageIndexes"]) == 0
            ):
                raise SurfaceError("image/offload: each target must contain a seq and nonempty imageIndexes", seq=seq)
            tseq = target["seq"]
            if tseq in updates:
                raise SurfaceError(f"image/offload: duplicate target seq {js_string(tseq)}", seq=seq)
            try:
                at = self.nodes.index(tseq)
            except ValueError:
                raise SurfaceError(f"image/offload: target seq {js_string(tseq)} is not a current surface node", seq=seq) from None
            if _TYPES[self._types[at]] not in ("user/message", "tool/result"):
                raise SurfaceError(f"image/offload: target seq {js_string(tseq)} must be user/message or tool/result", seq=seq)
            previous = -1
            for idx in target["imageIndexes"]:
                if not is_count(idx) or idx <= previous:
                    raise SurfaceError(
                        "image/offload: imageIndexes must be strictly increasing non-negative safe integers", seq=seq
                    )
                previous = idx
            current = self.projected.get(tseq)
            if current is None:
                current = self._message_at(at, tseq)
            updates[int(tseq)] = _offload_images(current, [int(i) for i in target["imageIndexes"]], seq)
        return updates


def _offload_images(message: dict[str, Any], indexes: list[int], seq: int) -> dict[str, Any]:
    """Copy ``message`` with the selected image occurrences (depth-first count) offloaded.

    Unchanged blocks stay the same objects; a changed block keeps its key order
    and gains ``offloaded`` as its last key (JS ``{...block, offloaded: true}``).
    """
    image_index = 0
    selected = 0
    # Not a record only when the caller skipped the shape checks (validate reports it there).
    content: Any = message.get("content") if is_record(message) and isinstance(message.get("content"), list) else []
    new_content: list[Any] | None = None
    for position, block in enumerate(content):
        projected = block
        if is_record(block) and block.get("type") == "image":
            if selected < len(indexes) and image_index == indexes[selected]:
                if block.get("offloaded") is True:
                    raise SurfaceError(f"image/offload: image index {image_index} is already offloaded", seq=seq)
                projected = {**block, "offloaded": True}
                selected += 1
            image_index += 1
        if projected is not block and new_content is None:
            new_content = list(content[:position])
        if new_content is not None:
            new_content.append(projected)
    if selected != len(indexes):
        raise SurfaceError(f"image/offload: image index {indexes[selected]} does not exist", seq=seq)
    return {**message, "content": new_content if new_content is not None else content}


def _has_image(message: Any) -> bool:
    """Whether ``message`` holds a top-level image block (what ``image/offload`` can select)."""
    content = message.get("content") if is_record(message) else None
    if not isinstance(content, list):
        return False
    for block in content:
        if is_record(block) and block.get("type") == "image":
            return True
    return False


def _lean_payload(etype: str, data: Any) -> tuple[Any, bytes | None]:
    """What the lean fold keeps of a node's data: ``(whole data or None, rewrite key or None)``.

    Later events read a current node's payload in two rules only.  A ``tool/result``
    rewrite (rule E) compares everything but ``message.content``, so a tool result
    keeps the digest of its data with the content blanked (equal exactly when
    :func:`json_equal` is).  ``image/offload`` reads the content of a ``user/message`` or
    ``tool/result``, and only its image blocks count: a message without one is
    refused with the same text whatever else it holds, so only a message with an
    image block is kept whole.  Every other node keeps nothing but its type.
    """
    if etype == "user/message":
        return (data if _has_image(data) else None), None
    if etype == "tool/result":
        return (data, None) if _has_image(message_of(etype, data)) else (None, equality_digest(_blank_content(data)))
    return None, None


def _blank_content(data: Any) -> Any:
    """``data`` with ``message.content`` set to null (rule E compares everything else)."""
    if not is_record(data):
        return data
    out = dict(data)
    message = data.get("message")
    out["message"] = {**message, "content": None} if is_record(message) else {"content": None}
    return out


def _noop() -> None:
    return None


def fold(events: Iterable[dict[str, Any]], *, until_seq: int | None = None, strict_unknown: bool = True) -> SurfaceFold:
    """Fold a log (any iterable of v4 events) in one pass.

    With ``until_seq`` the fold stops right after the event with that seq
    (inclusive) and reads nothing further, so ``surface --at`` on a huge log
    costs only the prefix.
    """
    state = SurfaceFold(strict_unknown=strict_unknown)
    if until_seq is not None and until_seq < 0:
        return state
    for event in events:
        state.apply(event)
        if until_seq is not None and state.next_seq > until_seq:
            break
    return state


def derive_messages(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The derived model messages of a whole log (or prefix), in surface order: what the model is shown
    after its last event.

    dsh never builds model messages, it *selects* them: a node's message is the exact object
    stored in the log (same keys, same order, same id), so a request rebuilt from it is
    byte-identical to what dsh sent.  One streaming pass: the fold keeps only the current nodes' messages.
    """
    return fold(events).messages()
