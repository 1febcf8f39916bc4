"""Request reconstruction: the exact model request behind each settlement (SEMANTICS §4).

dsh's rule "model-visible ⟺ durably referenced" makes every request a pure
function of the log prefix before its settlement: the canonical current
``request/header`` supplies the config and tools, the surface supplies the
messages, and the header/developer events supply ``toolHistory``.  Requests
are numbered by settlements (``assistant/message`` or ``assistant/attempt``),
one per started model call.

Everything here folds the stream once.  :func:`rebuild` stops reading at the
requested settlement and holds only the messages it returns;
:func:`iter_requests` keeps just the previous request's messages to decide
whether each request extends the one before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .jsjson import dumps as _dumps

from dshlog.errors import CorruptLog, UsageError
from dshlog.surface import SETTLEMENT_TYPES, SurfaceFold, json_equal

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


def canonical_header(header: dict) -> dict:
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


def _markers(header: dict | None) -> tuple[Any, Any]:
    defaults = (header or {}).get("adapterDefaults")
    if not isinstance(defaults, dict):
        return (None, None)
    return (defaults.get("reasoningEffort"), defaults.get("maxTokens"))


def _tools_text(header: dict | None) -> list[bytes] | bytes | None:
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
        self._headers: dict[int, Any] = {}
        self._declared: dict[Any, bytes] = {}
        self._active: Any = []
        self._available: set[Any] = set()
        self._baseline_seq: int | None = None
        self._history: dict[str, Any] = {"tools": [], "updates": []}

    def apply(self, event: dict) -> None:
        """Consume the next event (only headers and developer messages matter)."""
        etype = event.get("type")
        if etype == "request/header":
            data = event["data"]
            tools = data["header"].get("tools")
            if tools is None:
                tools = []
            self._headers[event["seq"]] = tools
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

    def snapshot(self) -> dict:
        """``{tools, updates}`` for a request built now (a fresh outer object)."""
        active = self._active if isinstance(self._active, list) else []
        if len(active) != len(self._available) or any(_name(t) not in self._available for t in active):
            # Logs written before tool updates existed: headers without matching updates.
            return {"tools": self._active, "updates": []}
        return {"tools": self._history["tools"], "updates": list(self._history["updates"])}


def _name(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, dict) else None


# --------------------------------------------------------------------------- builder


@dataclass(slots=True)
class RequestInfo:
    """Summary of one request, as :func:`iter_requests` reports it."""

    number: int  # 1-based
    seq: int  # settlement seq; the request was built from log[0 .. seq-1]
    kind: str  # "assistant/message" or "assistant/attempt"
    turn: Any
    step: Any
    message_count: int
    extends: bool | None  # None for the first request
    reason: str | None  # why it does not extend (None when it does)
    changes: list[str] = field(default_factory=list)  # everything that changed since the previous request
    header_seq: int | None = None  # seq of the request/header in force
    header_reason: str | None = None  # reason of a header logged since the previous request
    interrupted: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    reasoning_tokens: int | None = None


class RequestBuilder:
    """One pass over a log that can produce, at every settlement, the request
    dsh dispatched for it.

    Call :meth:`apply` for each event in order.  :meth:`is_settlement` tells
    whether the next event settles a request; :meth:`build` (called *before*
    applying that settlement) returns the request of the prefix seen so far.
    """

    def __init__(self, *, session_id: str | None = None, strict_unknown: bool = True) -> None:
        self.session_id = session_id
        self.surface = SurfaceFold(strict_unknown=strict_unknown)
        self.tool_history = ToolHistory()
        self.header: dict | None = None  # canonical current header
        self.header_seq: int | None = None
        self.settlements = 0
        # What happened since the previous settlement (for iter_requests' reasons).
        self._since_headers: list[dict] = []
        self._since_replacements: list[str] = []  # type of each replacing node
        self._since_projection = False

    @staticmethod
    def is_settlement(event: dict) -> bool:
        return event.get("type") in SETTLEMENT_TYPES

    def apply(self, event: dict) -> None:
        """Fold the next event into surface, header and tool history."""
        replacements_before = len(self.surface.replacements)
        content_before = self.surface.content_generation
        self.surface.apply(event)  # validates; raises before anything else changes
        etype = event.get("type")
        if len(self.surface.replacements) != replacements_before:
            self._since_replacements.append(etype)
        elif self.surface.content_generation != content_before:
            self._since_projection = True
        if etype == "request/header":
            header = event["data"]["header"]
            self.header = canonical_header(header)
            self.header_seq = event["seq"]
            self._since_headers.append(event["data"])
        self.tool_history.apply(event)
        if etype in SETTLEMENT_TYPES:
            self.settlements += 1
            self._since_headers = []
            self._since_replacements = []
            self._since_projection = False

    def build(self, *, require_header: bool = True) -> dict:
        """The request of the prefix applied so far (SEMANTICS §4.1 key order).

        Without any header dsh could not have dispatched; ``require_header=False``
        builds the request anyway without config keys (for logs whose headers
        were stripped, e.g. some test fixtures).
        """
        if self.header is None and require_header:
            raise CorruptLog(
                f"no request header before request {self.settlements + 1} (settlement at seq {self.surface.next_seq})",
                seq=self.surface.next_seq,
            )
        request: dict[str, Any] = {}
        config = (self.header or {}).get("config")
        if isinstance(config, dict):
            request.update(config)
        request["messages"] = self.surface.messages()
        request["toolHistory"] = self.tool_history.snapshot()
        if self.header is not None and "tools" in self.header:
            request["tools"] = self.header["tools"]
        if self.session_id is not None:
            request["sessionId"] = self.session_id
        return request


def rebuild(
    events: Iterable[dict],
    n: int,
    *,
    session_id: str | None = None,
    require_header: bool = True,
    strict_unknown: bool = True,
) -> dict:
    """Request ``n`` (1-based) of the log, rebuilt from the prefix before its settlement.

    Reads the stream only up to that settlement.  Raises :class:`UsageError`
    when the log holds fewer requests.
    """
    builder = RequestBuilder(session_id=session_id, strict_unknown=strict_unknown)
    valid = isinstance(n, int) and not isinstance(n, bool) and n >= 1
    for event in events:
        if valid and builder.is_settlement(event) and builder.settlements + 1 == n:
            # The settlement itself must be a valid next event (contiguous seq).
            if event.get("seq") != builder.surface.next_seq:
                builder.apply(event)  # raises the contiguity error
            return builder.build(require_header=require_header)
        builder.apply(event)
    count = builder.settlements
    raise UsageError(f"request {n} does not exist: the log holds {count} request{'s' if count != 1 else ''}")


def _usage_of(event: dict) -> dict | None:
    """Token usage of a settlement: ``data.usage``, else the stream's last usage chunk."""
    data = event.get("data")
    if not isinstance(data, dict):
        return None
    usage = data.get("usage")
    if isinstance(usage, dict):
        return usage
    found = None
    stream = data.get("stream")
    for record in stream if isinstance(stream, list) else []:
        if isinstance(record, dict) and record.get("type") == "chunk":
            chunk = record.get("chunk")
            if isinstance(chunk, dict) and chunk.get("type") == "usage" and isinstance(chunk.get("usage"), dict):
                found = chunk["usage"]
    return found


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _extends(previous: list[Any], current: list[Any], previous_text: list[bytes | None]) -> bool:
    """Seed wording (SEMANTICS §4.6): ``current`` starts with all of ``previous``, byte for byte.

    Unchanged nodes hand back the very same stored object, so identity settles
    most comparisons without serializing anything.
    """
    if len(current) < len(previous):
        return False
    for i, before in enumerate(previous):
        after = current[i]
        if after is before:
            continue
        text = previous_text[i]
        if text is None:
            text = previous_text[i] = _js_text(before)
        if _js_text(after) != text:
            return False
    return True


def iter_requests(
    events: Iterable[dict],
    *,
    session_id: str | None = None,
    require_header: bool = False,
    strict_unknown: bool = True,
) -> Iterator[RequestInfo]:
    """Describe every request of the log in one pass (number, settlement, size,
    whether it extends its predecessor and, when not, why; token usage).

    Only the previous request's message list is retained between requests.
    """
    builder = RequestBuilder(session_id=session_id, strict_unknown=strict_unknown)
    previous: list[Any] | None = None
    previous_text: list[bytes | None] = []
    previous_header: dict | None = None
    previous_generation = -1
    for event in events:
        if not builder.is_settlement(event) or event.get("seq") != builder.surface.next_seq:
            builder.apply(event)
            continue
        request = builder.build(require_header=require_header)
        messages = request["messages"]
        header = builder.header
        changes: list[str] = []
        header_reason = None
        for logged in builder._since_headers:
            header_reason = logged.get("reason")
            if logged.get("reason") == "series" or logged.get("startsSeries") is True:
                if REASON_SERIES not in changes:
                    changes.append(REASON_SERIES)
        if previous is not None:
            for kind in builder._since_replacements:
                reason = REASON_SYSTEM if kind == "system/message" else REASON_COMPACTION
                if reason not in changes:
                    changes.append(reason)
            if previous_header is not None and header is not None:
                if not _config_equal(previous_header.get("config"), header.get("config")) or _markers(
                    previous_header
                ) != _markers(header):
                    changes.append(REASON_HEADER)
                if _tools_text(previous_header) != _tools_text(header):
                    changes.append(REASON_TOOLS)
            if builder._since_projection:
                changes.append(REASON_REWRITTEN)
            if builder.surface.content_generation == previous_generation:
                # Only appends since the previous request: its messages are a prefix
                # of these, object for object, so nothing needs comparing.
                extends: bool | None = len(messages) >= len(previous)
            else:
                extends = _extends(previous, messages, previous_text)
        else:
            extends = None
            changes = [c for c in changes if c != REASON_SERIES]
        order = [REASON_COMPACTION, REASON_SYSTEM, REASON_SERIES, REASON_HEADER, REASON_TOOLS, REASON_REWRITTEN]
        changes.sort(key=order.index)
        reason = None
        if extends is False:
            reason = changes[0] if changes else REASON_REWRITTEN
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        usage = _usage_of(event) or {}
        info = RequestInfo(
            number=builder.settlements + 1,
            seq=event["seq"],
            kind=event["type"],
            turn=data.get("turn"),
            step=data.get("step"),
            message_count=len(messages),
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
        previous = messages
        previous_text = [None] * len(messages)
        previous_header = header
        previous_generation = builder.surface.content_generation
        builder.apply(event)
        yield info
