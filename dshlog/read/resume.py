"""Resuming the read of a log that grew: the state a read leaves, kept, and the read that continues from it.

dsh's logs only grow: a session appends a few events to a log of many megabytes.  The
verified cache (:mod:`dshlog.read.cache`) serves an unchanged file; a grown one would be
read whole again.  Instead, a read that reaches the end of a plain JSONL v4 body keeps
*where it stands* there: the byte offset and line number of the first line it has not
taken (the start of a torn last line, which is read again once completed), and the
live state of everything that judged the rows so far -- the reader's notes and row
decoder (seq continuity, dsh's recovering read), and the consumer's own state (dsh's
v4 restore with its surface fold, or ``validate``'s rules and findings).  A later read
of the same file, grown, opens it as usual (the header decided again), takes that
state back and reads only the new lines; what it answers is then the answer of a cold
read of the whole file, because it is the same computation, stopped and continued.

What is kept is a plain form (msgpack through msgspec, as the cache keeps everything),
never pickle: :class:`StateCodec` writes an object graph of *known* classes only
(:data:`KNOWN`: the rules' and reader's own state classes), of plain values, and of
the few functions and constants a caller names (``externals``), with shared objects
written once and referred to; decoding builds nothing else and calls no code of the
stored data's choosing.  Anything else met while encoding (an exception object, an
unknown class, a lone surrogate msgpack cannot hold) makes the state not kept; a
state that does not decode into exactly the expected shape is not used (a full read).
:data:`STATE_VERSION` is bumped whenever a kept class changes its fields
(:data:`LAYOUT`; ``tests/test_resume.py`` holds it to the version), and
an object whose fields are not exactly its class's layout is neither written nor read.

Only a strict or lenient read of a plain JSONL v4 body after a header resumes: a zstd
body, a wrapped stream or a document, and a v0..v3 log (migrated in memory through
the chain, whose state is a generator's) are read whole, as before.
"""

from __future__ import annotations

import enum
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..check.compaction import Compactions, OpenCompaction
from ..check.lifecycle import Lifecycle, _Call
from ..check.ownership import Ownership
from ..check.problems import Problem, Problems, Severity
from ..check.ptc import Dispatches
from ..check.retries import Retries
from ..check.surface import Digests, HeaderTools, SurfaceFold
from ..check.titles import Titles
from ..check.validate import Validator, _Collector, _Gather
from ..errors import Location
from ..protocol.jsjson import UNDEFINED
from ..protocol.vocabulary import CURRENT_VERSION, V4_TYPES
from .cache import Kind
from .container import Container
from .rows import RowDecoder
from .session import SessionLog
from .view import V4View

__all__ = ["KNOWN", "LAYOUT", "STATE_VERSION", "Checkpoint", "StateCodec", "resume_read", "resume_view", "state_kind",
           "view_checkpoint"]

#: The version of a kept state's layout: bump it when a class of :data:`KNOWN` (or what
#: :class:`Checkpoint` keeps) changes, so a state an older build kept is never taken back.
STATE_VERSION = 3

#: The classes a kept state may hold, by name: the reader's and the rules' own state.
KNOWN: dict[str, type] = {cls.__name__: cls for cls in (
    Validator, _Collector, _Gather, Ownership, Lifecycle, _Call, Compactions, OpenCompaction, Retries, Titles,
    Dispatches, SurfaceFold, HeaderTools, Digests, Problem, Problems, Severity, Location, RowDecoder,
)}

#: The fields of the kept classes that have a ``__dict__`` (a slotted class's are its slots): an
#: object is written and read back only with exactly these, so a class that changed its fields
#: is never filled from a state an older build kept (bump :data:`STATE_VERSION` with this table).
LAYOUT: dict[str, frozenset[str]] = {name: frozenset(fields) for name, fields in {
    "Validator": ("_data", "_finished", "_fold", "_report", "_settling", "count", "header", "inherited_cut", "known",
                  "lifecycle", "ownership", "projection", "skipped", "typed"),
    "_Gather": (),
    "Ownership": ("_catalog_after_marker", "_catalog_ids", "_foreign_deliveries", "has_header", "has_parent",
                  "header_id", "inherited_cut", "last_marker", "seeded"),
    "Lifecycle": ("_command_seqs", "_commands", "calls", "compactions", "dispatches", "fold", "head", "next_step",
                  "next_turn", "provider", "retries", "step", "titles", "turn"),
    "SurfaceFold": ("_derived", "_derived_digests", "_derives", "_digested", "_digests", "_digests_asked", "_header_tools",
                    "_keys", "_notes",
                    "_payloads", "_projected_digests", "_replacements", "_types", "_whole", "check_data",
                    "check_messages", "content_generation", "digests", "keep_messages", "keep_replacements", "next_seq",
                    "nodes", "note", "projected", "replace_generation", "replacement_count", "shadowed_count",
                    "strict_unknown", "surface_event_count", "unknown_types"),
    "Problems": ("counts", "items", "keep"),
    "RowDecoder": ("compact", "dropped", "inherited_marker", "issue", "issue_loc", "next_seq", "notes", "path",
                   "projection", "recoverable", "rows", "seq_offset", "strict", "version"),
}.items()}

#: Values a state refers to by name rather than by content (shared constants).
CONSTANTS: dict[str, Any] = {"V4_TYPES": V4_TYPES, "UNDEFINED": UNDEFINED}


class StateError(Exception):
    """A state that cannot be kept (while encoding) or taken back (while decoding)."""


def _layout(cls: type) -> frozenset[str]:
    """The fields an object of a kept class holds: its slots, or :data:`LAYOUT`'s entry."""
    fields = _fields(cls)
    return frozenset(fields) if fields is not None else LAYOUT[cls.__name__]


def _fields(cls: type) -> tuple[str, ...] | None:
    """The slots of a class without a ``__dict__`` (along its bases), or ``None`` for one with it."""
    names: list[str] = []
    for base in cls.__mro__:
        if base is object:
            continue
        slots = base.__dict__.get("__slots__")
        if slots is None:
            return None
        names.extend((slots,) if isinstance(slots, str) else slots)
    return tuple(n for n in names if n != "__weakref__")


class StateCodec:
    """An object graph of known classes and plain values to a msgpack-ready plain form, and back.

    Every container is a list headed by a one-letter tag (so a plain list is never
    mistaken for one); a mutable container or an object is numbered when first met
    and written as a reference (``["r", n]``) after that, so shared objects stay
    shared (the lifecycle's fold is the validator's).  ``externals`` names the
    functions and constants the graph may refer to (a fold's note function); they
    are written by name.  ``limit`` bounds the bytes of text a form may hold.
    """

    def __init__(self, externals: Mapping[str, Any] | None = None, *, limit: int = 1 << 62) -> None:
        self._by_name: dict[str, Any] = {**CONSTANTS, **(externals or {})}
        self._names = {id(v): k for k, v in self._by_name.items()}
        self._limit = limit

    # ------------------------------------------------------------------ encoding

    def encode(self, value: Any) -> Any:
        """The plain form of ``value``; raises :class:`StateError` on anything it cannot keep."""
        memo: dict[int, int] = {}
        self._size = 0
        try:
            return self._enc(value, memo)
        except RecursionError:
            raise StateError("the state nests too deeply") from None

    def _enc(self, v: Any, memo: dict[int, int]) -> Any:  # noqa: C901 - one branch per kind of value
        t = type(v)
        if v is None or t is bool or t is float:
            return v
        if t is int:
            return v if -(1 << 63) <= v < (1 << 64) else ["i", str(v)]
        if t is str or t is bytes:
            self._size += len(v)
            if self._size > self._limit:
                raise StateError("the state is larger than the cache keeps")
            return v
        name = self._names.get(id(v))
        if name is not None:
            return ["x", name]
        if t is tuple:
            return ["t", *[self._enc(x, memo) for x in v]]
        if t is frozenset:
            return ["f", *[self._enc(x, memo) for x in v]]
        if isinstance(v, enum.Enum):
            if KNOWN.get(t.__name__) is not t:
                raise StateError(f"{t.__name__} is not a kept class")
            return ["e", t.__name__, self._enc(v.value, memo)]
        n = memo.get(id(v))
        if n is not None:
            return ["r", n]
        n = memo[id(v)] = len(memo)
        if t is list:
            return ["l", n, *[self._enc(x, memo) for x in v]]
        if t is dict:
            out: list[Any] = ["d", n]
            for k, x in v.items():
                out.append(self._enc(k, memo))
                out.append(self._enc(x, memo))
            return out
        if t is set:
            return ["s", n, *[self._enc(x, memo) for x in v]]
        if t is bytearray:
            self._size += len(v)
            return ["b", n, bytes(v)]
        if t is array:
            self._size += len(v) * v.itemsize
            return ["a", n, v.typecode, v.tobytes()]
        if t is deque:
            return ["q", n, v.maxlen, *[self._enc(x, memo) for x in v]]
        if KNOWN.get(t.__name__) is not t:
            raise StateError(f"{t.__name__} is not a kept class")
        fields = _fields(t)
        pairs = [(f, getattr(v, f)) for f in fields if hasattr(v, f)] if fields is not None else list(vars(v).items())
        if {f for f, _x in pairs} != _layout(t):
            raise StateError(f"{t.__name__} holds other fields than its kept layout")
        out = ["o", n, t.__name__, [self._enc(x, memo) for x in v] if isinstance(v, list) else None]
        for f, x in pairs:
            out.append(f)
            out.append(self._enc(x, memo))
        return out

    # ------------------------------------------------------------------ decoding

    def decode(self, form: Any) -> Any:
        """:meth:`encode` back; raises :class:`StateError` on anything it did not write."""
        try:
            return self._dec(form, {})
        except StateError:
            raise
        except (RecursionError, LookupError, TypeError, ValueError, AttributeError) as exc:
            raise StateError(f"not a kept state: {exc}") from None

    def _dec(self, v: Any, memo: dict[int, Any]) -> Any:  # noqa: C901 - one branch per tag
        if type(v) is not list:
            if v is None or type(v) in (bool, int, float, str, bytes):
                return v
            raise StateError(f"a kept state holds no {type(v).__name__}")
        tag = v[0]
        if tag == "r":
            return memo[v[1]]
        if tag == "i":
            return int(v[1])
        if tag == "x":
            return self._by_name[v[1]]
        if tag == "t":
            return tuple(self._dec(x, memo) for x in v[1:])
        if tag == "f":
            return frozenset(self._dec(x, memo) for x in v[1:])
        if tag == "e":
            return self._known(v[1])(self._dec(v[2], memo))
        n = v[1]
        if type(n) is not int or n != len(memo):
            raise StateError("a kept state's objects are numbered in order")
        if tag == "l":
            out: list[Any] = []
            memo[n] = out
            out.extend(self._dec(x, memo) for x in v[2:])
            return out
        if tag == "d":
            d: dict[Any, Any] = {}
            memo[n] = d
            items = v[2:]
            if len(items) % 2:
                raise StateError("a map's items come in pairs")
            for i in range(0, len(items), 2):
                k = self._dec(items[i], memo)
                d[k] = self._dec(items[i + 1], memo)
            return d
        if tag == "s":
            s: set[Any] = set()
            memo[n] = s
            s.update(self._dec(x, memo) for x in v[2:])
            return s
        if tag == "b":
            memo[n] = bytearray(v[2])
            return memo[n]
        if tag == "a":
            arr = array(v[2])
            arr.frombytes(v[3])
            memo[n] = arr
            return arr
        if tag == "q":
            q: deque[Any] = deque(maxlen=v[2])
            memo[n] = q
            q.extend(self._dec(x, memo) for x in v[3:])
            return q
        if tag == "o":
            cls = self._known(v[2])
            make: Any = cls.__new__  # object's, or list's for a kept list (no __init__ runs)
            obj = make(cls)
            memo[n] = obj
            if v[3] is not None:
                obj.extend(self._dec(x, memo) for x in v[3])
            pairs = v[4:]
            names = pairs[::2]
            if len(pairs) % 2 or len(names) != len(set(names)) or set(names) != _layout(cls):
                raise StateError(f"not the fields of {cls.__name__}")
            for i in range(0, len(pairs), 2):
                object.__setattr__(obj, pairs[i], self._dec(pairs[i + 1], memo))
            return obj
        raise StateError(f"unknown tag {tag!r}")

    @staticmethod
    def _known(name: Any) -> type:
        cls = KNOWN.get(name) if type(name) is str else None
        if cls is None:
            raise StateError(f"{name!r} is not a kept class")
        return cls


# ----------------------------------------------------------------------------- a read, stopped and continued


def _as_is(value: Any) -> Any:
    """A state's plain form is kept as :class:`Checkpoint` made it, and decoded when it is taken back."""
    return value


def state_kind(name: str) -> Kind:
    """The cache's kind for what the reads of the command ``name`` leave to go on from (versioned by :data:`STATE_VERSION`)."""
    return Kind(f"{name}-state", STATE_VERSION, _as_is, _as_is)


def plain_v4(log: SessionLog) -> bool:
    """Whether ``log`` is a body this module resumes: plain JSONL v4 after a header, not read yet."""
    return (log.info.container == Container.JSONL and log.version == CURRENT_VERSION and log.header is not None
            and log.header_raw is not None and log.resumable)


class Checkpoint:
    """Takes the state of a read when its rows end (before the end-of-log findings change it).

    ``parts`` says what to keep besides the reader's notes and decoder (``None``:
    nothing may be kept now); it is asked once, when the last row has been judged.
    After the read, :attr:`state` is the plain form to keep, or ``None``.
    """

    def __init__(self, log: SessionLog, parts: Callable[[], list[Any] | None], codec: StateCodec) -> None:
        self.state: list[Any] | None = None
        self._log = log
        self._parts = parts
        self._codec = codec
        if plain_v4(log):
            log.at_end = self._take

    def _take(self) -> None:
        log = self._log
        unread = log.unread
        parts = self._parts()
        if unread is None or parts is None or log.decoder.issue is not None:
            return
        try:
            graph = self._codec.encode([log.notes, log.decoder, *parts])
        except StateError:
            return
        line, offset = unread
        self.state = [STATE_VERSION, line, offset, log.header_raw, log.snapshot, graph]


def resume_read(log: SessionLog, state: Any, codec: StateCodec, count: int) -> list[Any] | None:
    """Continue ``log`` (opened afresh, its body not read) from a kept ``state``; the consumer's ``count`` parts back.

    Installs the reader's notes and decoder and moves the body to the first line the
    kept read had not taken.  ``None`` when the state does not fit this log (another
    layout, another header, a snapshot judged otherwise now that the file is longer,
    anything that does not decode exactly): ``log`` may then have been peeked at,
    and the caller reads the log afresh.
    """
    if not plain_v4(log) or type(state) is not list or len(state) != 6 or state[0] != STATE_VERSION:
        return None
    _version, line, offset, header_raw, snapshot, graph = state
    if header_raw != log.header_raw or type(line) is not int or type(offset) is not int or snapshot is not log.snapshot:
        return None  # ``snapshot`` samples the body's start: a short log's appended lines may change it
    try:
        decoded = codec.decode(graph)
    except StateError:
        return None
    if type(decoded) is not list or len(decoded) != 2 + count:
        return None
    notes, decoder, *parts = decoded
    if type(notes) is not Problems or type(decoder) is not RowDecoder or decoder.notes is not notes \
            or decoder.version != log.version or decoder.issue is not None:
        return None
    if not log.resume_at(line, offset, notes, decoder):
        return None
    return parts


def resume_view(log: SessionLog, view: V4View, state: Any, codec: StateCodec) -> bool:
    """Continue dsh's view of ``log`` from a kept state (see :func:`resume_read`): its restore's rules back."""
    parts = resume_read(log, state, codec, 1)
    if parts is None or type(parts[0]) is not Validator:
        return False
    return view.resume_rules(parts[0])


def view_checkpoint(log: SessionLog, view: V4View, codec: StateCodec) -> Checkpoint:
    """The checkpoint of dsh's view: kept only while the restore has found nothing (its decision is still open)."""

    def parts() -> list[Any] | None:
        rules = view.open_rules
        return None if rules is None else [rules]

    return Checkpoint(log, parts, codec)


def known_fields(values: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    """The kept classes met in ``values`` and their fields (what :data:`STATE_VERSION` must be bumped for)."""
    seen: dict[str, tuple[str, ...]] = {}
    stack = list(values)
    visited: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in visited or v is None or type(v) in (bool, int, float, str, bytes):
            continue
        visited.add(id(v))
        t = type(v)
        if isinstance(v, (list, tuple, set, frozenset, deque)) and t.__name__ not in KNOWN:
            stack.extend(v)
        elif t is dict:
            stack.extend(v.keys())
            stack.extend(v.values())
        elif t.__name__ in KNOWN and not isinstance(v, enum.Enum):
            fields = _fields(t)
            names = fields if fields is not None else tuple(vars(v))
            seen[t.__name__] = tuple(sorted(names))
            stack.extend(getattr(v, f) for f in names if hasattr(v, f))
            if isinstance(v, list):
                stack.extend(v)
    return seen
