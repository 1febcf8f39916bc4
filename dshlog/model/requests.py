"""Request reconstruction: the exact model request behind each settlement (SEMANTICS §4).

dsh's rule "model-visible ⟺ durably referenced" makes every request a pure
function of the log prefix before its settlement: the canonical current
``request/header`` supplies the config and tools, the surface supplies the
messages, and the header/developer events supply ``toolHistory``.  Requests
are numbered by settlements (``assistant/message`` or ``assistant/attempt``),
one per started model call.

Everything here folds the stream once; a reader of dsh's view does not even fold it
itself, but follows the restore's fold (:class:`SharedSurface`).  :func:`rebuild` stops reading at the
requested settlement and holds only the messages it returns;
:func:`iter_requests` keeps just the previous request's messages to decide
whether each request extends the one before it.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from ..protocol.jsjson import dumps as _dumps

from dshlog.errors import CorruptLog, UsageError
from dshlog.check.surface import (
    SETTLEMENT_TYPES,
    Digests,
    HeaderTools,
    NodeNote,
    SurfaceFold,
    SurfaceShare,
    derive_message,
    json_equal,
)

from .summary import settlement_usage

# Reasons a request may not extend its predecessor, most specific first.
REASON_COMPACTION = "compaction replace"
REASON_SYSTEM = "system prompt change"
REASON_SERIES = "new series"
REASON_HEADER = "header change"
REASON_TOOLS = "tool change"
REASON_REWRITTEN = "history rewritten"


def _js_text(value: Any) -> bytes:
    """Compact JSON bytes for equality tests (key order significant, like ``JSON.stringify``)."""
    return _dumps(value)


# --------------------------------------------------------------------------- header


def request_header(header: dict[str, Any]) -> dict[str, Any]:
    """Canonical form of a logged header (SEMANTICS §4.3).

    ``config`` as stored; ``adapterDefaults`` only when one of its markers is
    ``true``; ``tools`` only when non-empty.  Fixture placeholders such as
    ``"tools": "{{tools}}"`` are non-empty values and are kept verbatim.
    """
    out: dict[str, Any] = {"config": header.get("config")}
    defaults = header.get("adapterDefaults")
    if isinstance(defaults, dict) and (defaults.get("reasoningEffort") is True or defaults.get("maxTokens") is True):
        out["adapterDefaults"] = defaults
    tools = header.get("tools")
    if tools is not None and not (isinstance(tools, (list, str)) and len(tools) == 0):
        out["tools"] = tools
    return out


def _config_equal(a: Any, b: Any) -> bool:
    """Config equality by value (SEMANTICS §4.3 compares the fields, not their order)."""
    return json_equal(a, b)


def _markers(header: dict[str, Any] | None) -> tuple[Any, Any]:
    defaults = (header or {}).get("adapterDefaults")
    if not isinstance(defaults, dict):
        return (None, None)
    return (defaults.get("reasoningEffort"), defaults.get("maxTokens"))


def _tools_text(header: dict[str, Any] | None) -> list[bytes] | bytes | None:
    tools = (header or {}).get("tools")
    if tools is None:
        return None
    if isinstance(tools, list):
        return [_js_text(t) for t in tools]
    return _js_text(tools)


# --------------------------------------------------------------------------- tool history


class ToolHistory:
    """Fold of ``toolHistory`` (SEMANTICS §4.4): the tools of the current series
    baseline plus every resolved ``developer/message`` tool update since."""

    def __init__(self) -> None:
        # Every header stays citable by later developer messages; equal tool lists are shared.
        self._headers = HeaderTools()
        self._declared: dict[Any, bytes] = {}
        self._active: Any = []
        self._available: set[Any] = set()
        self._baseline_seq: int | None = None
        self._history: dict[str, Any] = {"tools": [], "updates": []}

    def apply(self, event: dict[str, Any]) -> None:
        """Consume the next event (only headers and developer messages matter)."""
        etype = event.get("type")
        if etype == "request/header":
            data = event["data"]
            tools = data["header"].get("tools")
            if tools is None:
                tools = []
            self._headers.add(event["seq"], tools)
            listed = tools if isinstance(tools, list) else []
            redeclared = any(
                _name(t) in self._declared and self._declared[_name(t)] != _js_text(t) for t in listed
            )
            if (
                self._baseline_seq is None
                or data.get("reason") == "series"
                or bool(data.get("startsSeries"))
                or redeclared
            ):
                self._baseline_seq = event["seq"]
                self._declared = {_name(t): _js_text(t) for t in listed}
                self._history = {"tools": tools, "updates": []}
                self._available = {_name(t) for t in listed}
            self._active = tools
        elif etype == "developer/message":
            data = event["data"]
            message = data["message"]
            header_seq = data.get("headerSeq")
            definitions = [] if header_seq is None else self._headers.get(header_seq)
            if definitions is not None and not isinstance(definitions, list):
                definitions = []
            additions: list[Any] = []
            content = message.get("content") if isinstance(message.get("content"), list) else []
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool-addition":
                    continue
                tool = next((t for t in definitions or [] if _name(t) == block.get("toolName")), None)
                if tool is None:
                    raise CorruptLog(f"tool history: missing definition for {block.get('toolName')}", seq=event.get("seq"))
                additions.append(tool)
            for tool in additions:
                self._declared[_name(tool)] = _js_text(tool)
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool-addition":
                    self._available.add(block.get("toolName"))
                elif block.get("type") == "tool-removal":
                    self._available.discard(block.get("toolName"))
            self._history = {
                "tools": self._history["tools"],
                "updates": [*self._history["updates"], {"messageId": message.get("id"), "additions": additions}],
            }

    def snapshot(self) -> dict[str, Any]:
        """``{tools, updates}`` for a request built now (a fresh outer object)."""
        active = self._active if isinstance(self._active, list) else []
        if len(active) != len(self._available) or any(_name(t) not in self._available for t in active):
            # Logs written before tool updates existed: headers without matching updates.
            return {"tools": self._active, "updates": []}
        return {"tools": self._history["tools"], "updates": list(self._history["updates"])}


def _name(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, dict) else None


# --------------------------------------------------------------------------- builder


# RequestInfo's numeric fields, in constructor order, and its coded fields.
_NUMERIC = (
    "number", "seq", "turn", "step", "message_count", "header_seq",
    "input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens",
)
_FIELDS = (
    "number", "seq", "kind", "turn", "step", "message_count", "extends", "reason", "changes",
    "header_seq", "header_reason", "interrupted", "input_tokens", "output_tokens", "cache_read_tokens",
    "reasoning_tokens",
)
_CHANGE_ORDER = (REASON_COMPACTION, REASON_SYSTEM, REASON_SERIES, REASON_HEADER, REASON_TOOLS, REASON_REWRITTEN)
_CODES: dict[str, tuple[Any, ...]] = {
    "kind": tuple(sorted(SETTLEMENT_TYPES)),
    "extends": (None, True, False),
    "reason": (None, *_CHANGE_ORDER),
    "interrupted": (False, True),
    "header_reason": (None,),
}
_CODED = tuple(_CODES)
_OTHER = 255  # code byte: the value is in ``_extra``
# Packed rows: the ten numbers as int32 when they all fit, else int64, then one code byte per
# coded field and a bitmask of ``changes``.
_NARROW = struct.Struct(f"<{len(_NUMERIC)}i{len(_CODED) + 1}B")
_WIDE = struct.Struct(f"<{len(_NUMERIC)}q{len(_CODED) + 1}B")
_NARROW_MIN, _WIDE_MIN = -(2**31), -(2**63)  # this value marks None, the next one "in _extra"
_OTHER_NUMBER: Any = object()
_INT32, _INT64 = struct.Struct("<i"), struct.Struct("<q")

_NUMERIC_INDEX = {name: i for i, name in enumerate(_NUMERIC)}
_CODED_INDEX = {name: i for i, name in enumerate(_CODED)}
# Where each packed field sits in a row of values (constructor order).
_NUMERIC_POS = tuple(_FIELDS.index(name) for name in _NUMERIC)
_CODED_POS = tuple(_FIELDS.index(name) for name in _CODED)
_CHANGES_POS = _FIELDS.index("changes")
_NUMBERS_OF, _CODED_OF = operator.itemgetter(*_NUMERIC_POS), operator.itemgetter(*_CODED_POS)
# The common rows' codes by dict lookup.  Keyed by (type, value) so that only a value of the
# known one's exact type matches: ``True`` never takes the code of ``1`` (nor the reverse).
_PLAIN_CODED_TYPES = frozenset({str, bool, type(None)})
_CODE_OF = tuple({(type(known), known): i for i, known in enumerate(_CODES[name])} for name in _CODED)
# ``changes`` bitmask <-> the changes it stands for, in _CHANGE_ORDER (all 64 ordered subsets).
_MASK_CHANGES = tuple(
    tuple(c for i, c in enumerate(_CHANGE_ORDER) if mask >> i & 1) for mask in range(1 << len(_CHANGE_ORDER))
)
_CHANGES_MASK = {changes: mask for mask, changes in enumerate(_MASK_CHANGES)}


def _pack_common(values: tuple[Any, ...]) -> bytes | None:
    """The narrow packed row of ``values`` (constructor order) when it needs no ``_extra``.

    This is what nearly every request gives (small ints or None, known codes), found with a
    few dict lookups instead of :func:`_pack_any`'s scans; None sends anything else there.
    """
    row: list[int] = []
    for value in _NUMBERS_OF(values):
        if value is None:
            row.append(_NARROW_MIN)
        elif type(value) is int and _NARROW_MIN + 2 <= value < -_NARROW_MIN:
            row.append(value)
        else:
            return None
    for value, table in zip(_CODED_OF(values), _CODE_OF):
        code = table.get((type(value), value)) if type(value) in _PLAIN_CODED_TYPES else None
        if code is None:
            return None
        row.append(code)
    changes = values[_CHANGES_POS]
    if type(changes) is not list:
        return None
    mask = 0
    if changes:
        if any(type(c) is not str for c in changes):
            return None
        found = _CHANGES_MASK.get(tuple(changes))  # an ordered subset of _CHANGE_ORDER, no repeats
        if found is None:
            return None
        mask = found
    row.append(mask)
    return _NARROW.pack(*row)


def _pack_any(values: tuple[Any, ...]) -> tuple[bytes, dict[str, Any] | None]:
    """Packed row and ``_extra`` of any ``values`` (constructor order)."""
    extra: dict[str, Any] = {}
    numbers: list[int | None] = []  # None: the value is None; _OTHER_NUMBER: in ``extra``
    wide = False
    for name, pos in zip(_NUMERIC, _NUMERIC_POS):
        value = values[pos]
        if type(value) is int and _WIDE_MIN + 2 <= value < -_WIDE_MIN:
            numbers.append(value)
            wide = wide or not (_NARROW_MIN + 2 <= value < -_NARROW_MIN)
        else:
            numbers.append(None if value is None else _OTHER_NUMBER)
            if value is not None:
                extra[name] = value
    codes: list[int] = []
    for name, pos in zip(_CODED, _CODED_POS):
        value = values[pos]
        table = _CODES[name]
        # ``is`` first: True == 1 must not pick another value's code.
        code = next((i for i, known in enumerate(table) if known is value), None)
        if code is None and isinstance(value, str) and value in table:
            code = table.index(value)
        if code is None:
            code = _OTHER
            extra[name] = value
        codes.append(code)
    changes = values[_CHANGES_POS]
    mask = 0
    if type(changes) is list and all(type(c) is str and c in _CHANGE_ORDER for c in changes) and changes == [
        c for c in _CHANGE_ORDER if c in changes
    ]:
        for c in changes:
            mask |= 1 << _CHANGE_ORDER.index(c)
    else:
        mask = _OTHER
        extra["changes"] = changes
    codes.append(mask)
    layout, low = (_WIDE, _WIDE_MIN) if wide else (_NARROW, _NARROW_MIN)
    packed = layout.pack(*(low if n is None else low + 1 if n is _OTHER_NUMBER else n for n in numbers), *codes)
    return packed, extra or None


class RequestInfo:
    """Summary of one request, as :func:`iter_requests` reports it.

    Behaves like a plain record with the fields below (readable and assignable,
    compared by value).  ``dshlog requests`` keeps one per request of the log,
    so each is packed into one small ``bytes`` (about 130 bytes a request
    instead of about 500 for separate attribute objects); a value that does not
    fit the packing (a non-integer turn, an unknown reason…) is kept as is.

    Fields: ``number`` (1-based); ``seq`` (settlement seq; the request was built
    from log[0 .. seq-1]); ``kind`` ("assistant/message" or "assistant/attempt");
    ``turn``; ``step``; ``message_count``; ``extends`` (None for the first
    request); ``reason`` (why it does not extend, None when it does);
    ``changes`` (everything that changed since the previous request);
    ``header_seq`` (seq of the request/header in force); ``header_reason``
    (reason of a header logged since the previous request); ``interrupted``;
    token counts ``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
    ``reasoning_tokens``.
    """

    __slots__ = ("_packed", "_extra")

    if TYPE_CHECKING:  # the fields: properties over the packed bytes, installed below (_field)
        number: int
        seq: int
        kind: str
        turn: Any
        step: Any
        message_count: int
        extends: bool | None
        reason: str | None
        changes: list[str]
        header_seq: int | None
        header_reason: str | None
        interrupted: bool
        input_tokens: int | None
        output_tokens: int | None
        cache_read_tokens: int | None
        reasoning_tokens: int | None

    def __init__(
        self,
        number: int,
        seq: int,
        kind: str,
        turn: Any,
        step: Any,
        message_count: int,
        extends: bool | None,
        reason: str | None,
        changes: list[str] | None = None,
        header_seq: int | None = None,
        header_reason: str | None = None,
        interrupted: bool = False,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ) -> None:
        self._pack(
            (
                number, seq, kind, turn, step, message_count, extends, reason,
                [] if changes is None else changes, header_seq, header_reason, interrupted,
                input_tokens, output_tokens, cache_read_tokens, reasoning_tokens,
            )
        )

    def _pack(self, values: tuple[Any, ...]) -> None:
        """Store ``values`` (one per field, in ``_FIELDS`` order)."""
        packed = _pack_common(values)
        if packed is not None:
            self._packed, self._extra = packed, None
        else:
            self._packed, self._extra = _pack_any(values)

    def _get(self, name: str) -> Any:
        return _READERS[name](self)

    def _set(self, name: str, value: Any) -> None:
        values = [self._get(f) for f in _FIELDS]
        values[_FIELDS.index(name)] = value
        self._pack(tuple(values))

    def _values(self) -> tuple[Any, ...]:
        return tuple(self._get(f) for f in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return "RequestInfo(" + ", ".join(f"{f}={self._get(f)!r}" for f in _FIELDS) + ")"


def _number_reader(name: str) -> Callable[[RequestInfo], Any]:
    """Reads numeric field ``name`` from either layout."""
    narrow_at, wide_at = 4 * _NUMERIC_INDEX[name], 8 * _NUMERIC_INDEX[name]
    narrow_size = _NARROW.size

    def read(self: RequestInfo) -> Any:
        packed = self._packed
        if len(packed) == narrow_size:
            value, low = _INT32.unpack_from(packed, narrow_at)[0], _NARROW_MIN
        else:
            value, low = _INT64.unpack_from(packed, wide_at)[0], _WIDE_MIN
        if value > low + 1:
            return value
        return None if value == low else self._extra[name]  # type: ignore[index]  # _OTHER values live in _extra

    return read


def _code_reader(name: str) -> Callable[[RequestInfo], Any]:
    """Reads coded field ``name``: the code bytes end the row in either layout."""
    at, table = _CODED_INDEX[name] - len(_CODED) - 1, _CODES[name]

    def read(self: RequestInfo) -> Any:
        code = self._packed[at]
        return self._extra[name] if code == _OTHER else table[code]  # type: ignore[index]  # _OTHER values live in _extra

    return read


def _read_changes(self: RequestInfo) -> list[str]:
    mask = self._packed[-1]  # the last byte in either layout
    if mask == _OTHER:
        extra = cast("dict[str, Any]", self._extra)  # _OTHER: the value is kept in _extra
        changes: list[str] = extra["changes"]
        return changes
    return list(_MASK_CHANGES[mask])  # a fresh list on every read


# One reader per field, used directly as the property getter (``dshlog requests`` reads about a
# dozen fields of every row, so the getter skips any dispatch on the name).
_READERS: dict[str, Callable[[RequestInfo], Any]] = {
    name: _number_reader(name) if name in _NUMERIC_INDEX else _read_changes if name == "changes" else _code_reader(name)
    for name in _FIELDS
}


def _field(name: str) -> property:
    return property(_READERS[name], lambda self, value: self._set(name, value))


for _f in _FIELDS:
    setattr(RequestInfo, _f, _field(_f))
del _f


class SharedSurface:
    """A surface fold another reader folds, as it stood before each settlement: what a request is built from.

    ``dshlog requests`` and ``rebuild`` read dsh's view, whose restore folds the surface
    to check it (:meth:`~dshlog.read.view.V4View.share_surface`); they follow that fold
    instead of folding every event again.  :attr:`share` is what they ask of it: with
    ``digests``, the digests of the derived messages and the content generation are
    kept at each settlement (:func:`iter_requests`); with ``request``, the node notes
    (``note``) at that settlement (:func:`settle`), and nothing is noted after it (the
    fold goes on only to check the rest of the log).  :attr:`fold` is the fold given
    back, or ``None`` when there is none to follow (the builder then folds its own).
    """

    __slots__ = ("share", "fold", "settlements", "digests", "count", "generation", "request", "notes", "_note")

    def __init__(self, *, digests: bool = False, note: NodeNote | None = None, request: int | None = None) -> None:
        self._note = note
        self.share = SurfaceShare(digests=digests, note=self._noted if note is not None else None,
                                  settling=self._settling)
        self.fold: SurfaceFold | None = None
        self.settlements = 0
        self.digests: Digests | None = None
        self.count = 0  # of the digests, those of the surface then (appends extend the fold's list in place)
        self.generation = 0
        self.request = request
        self.notes: tuple[tuple[int, str, Any, dict[str, Any] | None], ...] | None = None

    def _settling(self, fold: SurfaceFold) -> None:
        """The fold is about to take a settlement: keep what its request is built from."""
        self.settlements += 1
        if self.share.digests:
            self.digests, self.generation = fold.message_digests(), fold.content_generation
            self.count = len(self.digests)
        if self.settlements == self.request:
            self.notes = tuple(fold.node_notes())

    def _noted(self, seq: int, etype: str, data: Any) -> Any:
        """The caller's note of a node, until the request's notes are kept."""
        return self._note(seq, etype, data) if self._note is not None and self.notes is None else None


class RequestBuilder:
    """One pass over a log that can produce, at every settlement, the request
    dsh dispatched for it.

    Call :meth:`apply` for each event in order.  :meth:`is_settlement` tells
    whether the next event settles a request; :meth:`build` (called *before*
    applying that settlement) returns the request of the prefix seen so far.
    """

    def __init__(self, *, session_id: str | None = None, strict_unknown: bool = True, lean: bool = False,
                 note: NodeNote | None = None, shared: SharedSurface | None = None) -> None:
        """``lean``: keep a digest of each message instead of the message; :meth:`message_digests`
        then stands in for :meth:`messages` and :meth:`build` is unavailable.

        ``note``: keep the caller's note of each surface node instead of its message (the
        surface's :meth:`~dshlog.check.surface.SurfaceFold.node_notes`), for a caller that
        writes the messages from what it noted (``rebuild``, whose request may hold every
        message of the log); :meth:`document` then takes the messages as that caller gives them.

        ``shared``: follow that fold (when it has one) instead of folding: its owner has
        folded each event before :meth:`apply` is given it, and the surface before a
        settlement is the one :class:`SharedSurface` kept then.
        """
        self.session_id = session_id
        self._shared = shared if shared is not None and shared.fold is not None else None
        # Requests need to know that a replacement happened, never the records.
        self.surface = self._shared.fold if self._shared is not None and self._shared.fold is not None else \
            SurfaceFold(strict_unknown=strict_unknown, keep_replacements=False,
                        keep_messages=not lean and note is None, digests=lean, note=note)
        # a shared fold's counts when the previous event was given (it is one event ahead)
        self._replacements_seen = self._content_seen = 0
        self.tool_history = ToolHistory()
        self.header: dict[str, Any] | None = None  # canonical current header
        self.header_seq: int | None = None
        self.settlements = 0
        # What happened since the previous settlement (for iter_requests' reasons), kept as the
        # few facts the reasons need so a long stretch without settlements holds nothing more.
        self._since_header_reason: Any = None  # reason of the last request/header logged
        self._since_series = False  # one of them started a series
        self._since_replacements: list[str] = []  # distinct types of the replacing nodes, first seen first
        self._since_projection = False

    @staticmethod
    def is_settlement(event: dict[str, Any]) -> bool:
        return event.get("type") in SETTLEMENT_TYPES

    @property
    def next_seq(self) -> int:
        """The seq the next event given to :meth:`apply` must carry."""
        return self.surface.next_seq - 1 if self._shared is not None else self.surface.next_seq

    @property
    def shared(self) -> SharedSurface | None:
        """The shared fold followed, or ``None`` (the builder folds its own)."""
        return self._shared

    def apply(self, event: dict[str, Any]) -> None:
        """Fold the next event into surface, header and tool history."""
        if self._shared is None:
            replacements_before = self.surface.replacement_count
            content_before = self.surface.content_generation
            self.surface.apply(event)  # validates; raises before anything else changes
        else:  # folded already: compare with the counts after the previous event
            replacements_before, content_before = self._replacements_seen, self._content_seen
            self._replacements_seen = self.surface.replacement_count
            self._content_seen = self.surface.content_generation
        etype: Any = event.get("type")
        if self.surface.replacement_count != replacements_before:
            if etype not in self._since_replacements:
                self._since_replacements.append(etype)
        elif self.surface.content_generation != content_before:
            self._since_projection = True
        if etype == "request/header":
            data = event["data"]
            self.header = request_header(data["header"])
            self.header_seq = event["seq"]
            self._since_header_reason = data.get("reason")
            if data.get("reason") == "series" or data.get("startsSeries") is True:
                self._since_series = True
        if etype == "request/header" or etype == "developer/message":
            self.tool_history.apply(event)  # it ignores every other event
        if etype in SETTLEMENT_TYPES:
            self.settlements += 1
            self._since_header_reason = None
            self._since_series = False
            self._since_replacements = []
            self._since_projection = False

    def build(self, *, require_header: bool = True) -> dict[str, Any]:
        """The request of the prefix applied so far (SEMANTICS §4.1 key order).

        Without any header dsh could not have dispatched; ``require_header=False``
        builds the request anyway without config keys (for logs whose headers
        were stripped, e.g. some test fixtures).
        """
        return self.document(self.surface.messages(), require_header=require_header)

    def document(self, messages: Any, *, require_header: bool = True) -> dict[str, Any]:
        """:meth:`build`'s request with ``messages`` as its messages, same checks and key order.

        A caller that writes the messages itself passes a stand-in for them (an
        :class:`~dshlog.protocol.jsjson.Items` of their texts), placed where the
        messages are: after the config keys, or where the config holds a key of that name.
        """
        if self.header is None and require_header:
            raise self._missing_header()
        request: dict[str, Any] = {}
        config = (self.header or {}).get("config")
        if isinstance(config, dict):
            request.update(config)
        request["messages"] = messages
        request["toolHistory"] = self.tool_history.snapshot()
        if self.header is not None and "tools" in self.header:
            request["tools"] = self.header["tools"]
        if self.session_id is not None:
            request["sessionId"] = self.session_id
        return request

    def messages(self, *, require_header: bool = True) -> list[dict[str, Any]]:
        """``build(require_header=...)["messages"]``, same checks, without building the rest
        (config, ``toolHistory``): all :func:`iter_requests` needs at every settlement."""
        if self.header is None and require_header:
            raise self._missing_header()
        return self.surface.messages()

    def message_digests(self, *, require_header: bool = True) -> Digests:
        """:meth:`messages` as digests, same checks (a lean builder; see
        :meth:`~dshlog.check.surface.SurfaceFold.message_digests` for how long the list holds)."""
        if self.header is None and require_header:
            raise self._missing_header()
        if self._shared is not None:
            return cast("Digests", self._shared.digests)  # kept as the settlement came
        return self.surface.message_digests()

    def message_count(self, digests: Digests) -> int:
        """How many of :meth:`message_digests`' ``digests`` are the surface's before the settlement at hand
        (a shared fold's list may have been extended by the settlement since)."""
        return self._shared.count if self._shared is not None else len(digests)

    def content_generation(self) -> int:
        """The surface's content generation before the settlement at hand (:meth:`message_digests`'s moment)."""
        return self._shared.generation if self._shared is not None else self.surface.content_generation

    def node_notes(self) -> Iterable[tuple[int, str, Any, dict[str, Any] | None]]:
        """The surface's node notes (a builder made with ``note``, or following a fold that notes) before the
        settlement :func:`settle` stopped at."""
        if self._shared is not None:
            return self._shared.notes or ()
        return self.surface.node_notes()

    def _missing_header(self) -> CorruptLog:
        return CorruptLog(
            f"no request header before request {self.settlements + 1} (settlement at seq {self.next_seq})",
            seq=self.next_seq,
        )


def rebuild(
    events: Iterable[dict[str, Any]],
    n: int,
    *,
    session_id: str | None = None,
    require_header: bool = True,
    strict_unknown: bool = True,
    shared: SharedSurface | None = None,
) -> dict[str, Any]:
    """Request ``n`` (1-based) of the log, rebuilt from the prefix before its settlement.

    Reads the stream only up to that settlement.  Raises :class:`UsageError`
    when the log holds fewer requests.  ``shared``: follow that fold instead of
    folding (a :class:`SharedSurface` made with ``note=message_note, request=n``).
    """
    if shared is None or shared.fold is None:
        builder = RequestBuilder(session_id=session_id, strict_unknown=strict_unknown)
        return settle(builder, events, n).build(require_header=require_header)
    builder = RequestBuilder(session_id=session_id, strict_unknown=strict_unknown, shared=shared)
    notes = settle(builder, events, n).node_notes()
    messages = [projected if projected is not None else note for _seq, _etype, note, projected in notes
                if projected is not None or note is not None]
    return builder.document(messages, require_header=require_header)


def message_note(seq: int, etype: str, data: Any) -> dict[str, Any] | None:
    """A node's note that is its derived message itself (the stored object), for :func:`rebuild` to follow a shared fold."""
    return derive_message(etype, data)


def settle(builder: RequestBuilder, events: Iterable[dict[str, Any]], n: Any) -> RequestBuilder:
    """``builder`` fed the prefix of ``events`` before request ``n``'s settlement (1-based).

    :func:`rebuild` builds the request from it; a caller that noted the messages
    (``RequestBuilder(note=...)``) writes them from its notes.  Raises
    :class:`UsageError` when the log holds fewer requests.
    """
    valid = isinstance(n, int) and not isinstance(n, bool) and n >= 1
    for event in events:
        if valid and builder.is_settlement(event) and builder.settlements + 1 == n:
            # The settlement itself must be a valid next event (contiguous seq); a shared
            # fold's owner checks that, and refuses the log where it is not.
            if builder.shared is None and event.get("seq") != builder.surface.next_seq:
                builder.apply(event)  # raises the contiguity error
            return builder
        builder.apply(event)
    raise UsageError(no_such_request(n, builder.settlements))


def no_such_request(n: object, count: int) -> str:
    """The refusal of request ``n`` of a log that holds ``count`` requests."""
    return f"request {n} does not exist: the log holds {count} request{'s' if count != 1 else ''}"


def _usage_of(event: dict[str, Any]) -> dict[str, Any] | None:
    """Token usage of a settlement: ``data.usage``, else the stream's last usage chunk."""
    data = event.get("data")
    return settlement_usage(data) if isinstance(data, dict) else None


def _int_or_none(value: Any) -> int | None:
    if type(value) is int:  # the usual token count, as int() would give it back
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _extends(previous: list[Any], current: list[Any]) -> bool:
    """Seed wording (SEMANTICS §4.6): ``current`` starts with all of ``previous``, byte for byte.

    Unchanged nodes hand back the very same stored object, so identity settles
    most comparisons without serializing anything.  Each pair is compared once,
    so no serialized text is kept.
    """
    if len(current) < len(previous):
        return False
    for before, after in zip(previous, current):
        if after is not before and _js_text(after) != _js_text(before):
            return False
    return True


def iter_requests(
    events: Iterable[dict[str, Any]],
    *,
    session_id: str | None = None,
    require_header: bool = False,
    strict_unknown: bool = True,
    shared: SharedSurface | None = None,
) -> Iterator[RequestInfo]:
    """Describe every request of the log in one pass (number, settlement, size,
    whether it extends its predecessor and, when not, why; token usage).

    Messages are compared by digests of their JSON text (equal exactly when the texts
    are), so a long surface costs 16 bytes a message, not the messages; only a
    reference to the previous request's digest list and its length are retained.

    ``shared``: follow that fold (made with ``digests``) instead of folding the events again.
    """
    builder = RequestBuilder(session_id=session_id, strict_unknown=strict_unknown, lean=True, shared=shared)
    previous: Digests | None = None
    previous_count = 0
    previous_header: dict[str, Any] | None = None
    previous_generation = -1
    # The header changes found for the last (previous header, header) pair of objects compared.
    # Headers are logged rarely, so nearly every request compares the very pair its predecessor
    # did; serializing both tool lists again each time was most of this loop's cost.  The result
    # depends only on the two objects (canonical headers share the logged config and tools,
    # which nothing modifies), and a new pair is compared in full exactly where it was before.
    compared: tuple[dict[str, Any] | None, dict[str, Any] | None, list[str]] = (None, None, [])
    # _tools_text of the newest header compared, which the next new pair starts with.
    text_of: tuple[dict[str, Any] | None, Any] = (None, None)
    reason: str | None
    for event in events:
        # builder.is_settlement(event), inlined: this test runs for every event of the log.
        if event.get("type") not in SETTLEMENT_TYPES or event.get("seq") != builder.next_seq:
            builder.apply(event)
            continue
        messages = builder.message_digests(require_header=require_header)
        count = builder.message_count(messages)
        header = builder.header
        changes: list[str] = []
        header_reason = builder._since_header_reason
        if builder._since_series:
            changes.append(REASON_SERIES)
        if previous is not None:
            for kind in builder._since_replacements:
                reason = REASON_SYSTEM if kind == "system/message" else REASON_COMPACTION
                if reason not in changes:
                    changes.append(reason)
            if previous_header is not None and header is not None:
                if compared[0] is not previous_header or compared[1] is not header:
                    header_changes: list[str] = []
                    if not _config_equal(previous_header.get("config"), header.get("config")) or _markers(
                        previous_header
                    ) != _markers(header):
                        header_changes.append(REASON_HEADER)
                    # _tools_text(previous_header) != _tools_text(header), each text made once.
                    before = text_of[1] if text_of[0] is previous_header else _tools_text(previous_header)
                    after = before if header is previous_header else _tools_text(header)
                    text_of = (header, after)
                    if before != after:
                        header_changes.append(REASON_TOOLS)
                    compared = (previous_header, header, header_changes)
                changes.extend(compared[2])
            if builder._since_projection:
                changes.append(REASON_REWRITTEN)
            if builder.content_generation() == previous_generation:
                # Only appends since the previous request: its messages are a prefix
                # of these, so nothing needs comparing.
                extends: bool | None = count >= previous_count
            else:
                # Seed wording (SEMANTICS §4.6): these start with all of the previous
                # messages, byte for byte (the list taken then still holds them: only
                # appends extend a digest list in place).
                extends = count >= previous_count and messages[:previous_count] == previous[:previous_count]
        else:
            extends = None
            changes = [c for c in changes if c != REASON_SERIES]
        order = [REASON_COMPACTION, REASON_SYSTEM, REASON_SERIES, REASON_HEADER, REASON_TOOLS, REASON_REWRITTEN]
        changes.sort(key=order.index)
        reason = None
        if extends is False:
            reason = changes[0] if changes else REASON_REWRITTEN
        data: Any = event.get("data") if isinstance(event.get("data"), dict) else {}
        usage = _usage_of(event) or {}
        info = RequestInfo(
            number=builder.settlements + 1,
            seq=event["seq"],
            kind=event["type"],
            turn=data.get("turn"),
            step=data.get("step"),
            message_count=count,
            extends=extends,
            reason=reason,
            changes=changes,
            header_seq=builder.header_seq,
            header_reason=header_reason,
            interrupted=data.get("interrupted") is True,
            input_tokens=_int_or_none(usage.get("inputTokens")),
            output_tokens=_int_or_none(usage.get("outputTokens")),
            cache_read_tokens=_int_or_none(usage.get("cacheReadTokens")),
            reasoning_tokens=_int_or_none(usage.get("reasoningTokens")),
        )
        previous, previous_count = messages, count
        previous_header = header
        previous_generation = builder.content_generation()
        builder.apply(event)
        yield info
