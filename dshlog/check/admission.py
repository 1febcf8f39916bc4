"""dsh's v4 row admission, per event type (FORMAT §5.1), as ``validate`` applies it.

What a released reader checks of every v4 row before anything else: message
slots with producer-owned sources, retired syntax (``tool-result`` wrappers,
``header.system``), system message block fields, tool/result tool roles, fork
closer identities, request headers; plus the settlement, stream and turn fields.
Composed from the message-shape rules (:mod:`.shapes`) where both check the same
thing, so one defect has one text.  ``validate`` alone runs these (the fold's
commands do not import this module).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Union

import msgspec

from ..protocol.jsjson import js_string
from ..protocol.texts import CLOSER_ERROR, TOOL_NOT_STARTED, closer_message_prefix
from ..protocol.values import TypedCount, TypedPositive, is_count, is_safe_integer
from ..protocol.vocabulary import (
    IMAGE_MEDIA_TYPES,
    OBJECT_DATA_TYPES,
    REQUEST_REASONS,
    SETTLEMENT_TYPES,
    TOOL_CHANGE_BLOCKS,
    TURN_END_KINDS,
)
from .common import DECIMAL, NOT_PROVEN, NonEmptyStr, is_record, nonempty_str, typed_converter, typed_none_of, typed_one_of
from .envelope import typed_envelope
from .problems import Problem, Reporter, Severity
from .shapes import check_content, check_identified, check_role, check_settlement, check_typed_source
from .streams import STREAM_SHAPE, check_stream, check_stream_blocks, runs_aligned, stream_clean

__all__ = ["check_data", "check_request_header", "typed_clean", "typed_event"]

_NOT_STARTED_ERROR = CLOSER_ERROR[False]
_FORKED_PREFIX = closer_message_prefix("forked", "")[:-1]  # "forked-tool-result-"


def _report(report: Reporter, message: str, index: int) -> None:
    report.report(Problem("message", message, seq=index))


def retired_wrapper_text(etype: str, index: int) -> str:
    """dsh's v4 refusal of a released ``tool-result`` wrapper inside ``etype``'s content."""
    return f"format v4 {etype} at seq {index} content must not contain a released tool-result wrapper"


# --------------------------------------------------------------------------- message slots


def check_producer_source(message: dict[str, Any], index: int, report: Reporter) -> None:
    """dsh's v4 source rule: a nonempty kind that is not the retired ``plugin``."""
    source = message.get("source")
    if not is_record(source) or not nonempty_str(source.get("kind")) or source.get("kind") == "plugin":
        _report(report, "format v4 message requires a producer-owned source kind", index)


def check_blocks(content: Any, index: int, retired: str, report: Reporter, *, tool_changes: bool = True) -> None:
    """Content blocks: objects with a type; no retired wrappers; tool changes only for developers.

    ``tool_changes=False`` where the shared data rule already judges tool-change
    blocks (the five surface slots), so each is reported once.
    """
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            _report(report, f"format v4 content block at seq {index} requires an object with a string type", index)
            continue
        kind = block["type"]
        if kind == "tool-result":
            report.report(Problem("retired", retired, seq=index))
        elif tool_changes and kind in TOOL_CHANGE_BLOCKS:
            _report(report, f"format v4 {kind} requires developer role", index)


def _check_role_unless_developer(etype: str, message: dict[str, Any], index: int, report: Reporter) -> None:
    """``validate``'s role check: a developer role is the shared data rule's to report, once."""
    if message.get("role") != "developer":
        check_role(etype, message, index, report)


def check_ordinary_message(etype: str, message: dict[str, Any], index: int, report: Reporter) -> None:
    """Identity, role, source and content of the message of a user or assistant event."""
    check_identified(etype, message, index, report)
    _check_role_unless_developer(etype, message, index, report)
    check_producer_source(message, index, report)
    if check_content(etype, message, index, report):
        check_blocks(message["content"], index, retired_wrapper_text(etype, index), report, tool_changes=False)


def check_slot_message(etype: str, message: dict[str, Any], index: int, retired: str, report: Reporter) -> None:
    """Messages embedded in log-only events (inbox insertions, title requests)."""
    check_producer_source(message, index, report)
    if message.get("role") == "developer":
        _report(report, "format v4 developer/message and developer role must occur together", index)
    check_blocks(message.get("content"), index, retired, report)


def _positive_counts(subject: str, data: dict[str, Any], index: int, report: Reporter) -> None:
    for field in ("turn", "step"):
        if not is_count(data.get(field)):
            _report(report, f"{subject} {field} must be a non-negative safe integer", index)
        elif data[field] == 0:
            _report(report, f"{subject} {field} must be positive", index)


def check_system_message(data: dict[str, Any], index: int, report: Reporter) -> None:
    """``system/message``: positive turn and step, the message shape, and known block fields."""
    etype = "system/message"
    _positive_counts("format v4 system/message", data, index, report)
    message = data.get("message")
    check_identified(etype, message, index, report)
    if not isinstance(message, dict):
        return
    _check_role_unless_developer(etype, message, index, report)
    check_producer_source(message, index, report)
    source = message.get("source")
    if is_record(source) and nonempty_str(source.get("kind")):
        check_typed_source(etype, source, index, report)
    if not check_content(etype, message, index, report):
        return
    for block in message["content"]:
        if not isinstance(block, dict):
            _report(report, "format v4 system content block requires an object", index)
            continue
        kind = block.get("type")
        if not nonempty_str(kind):
            _report(report, "format v4 system content type requires a string with content", index)
        elif kind in ("text", "reasoning"):
            if not isinstance(block.get("text"), str):
                _report(report, "format v4 system content text requires a string", index)
        elif kind == "tool-call":
            if not nonempty_str(block.get("id")):
                _report(report, "format v4 system tool-call id requires a string with content", index)
            if not nonempty_str(block.get("name")):
                _report(report, "format v4 system tool-call name requires a string with content", index)
            if not isinstance(block.get("arguments"), str):
                _report(report, "format v4 system tool-call arguments requires a string", index)
        elif kind == "image":
            _check_image(block.get("attachment"), index, report)
        elif kind == "tool-result":
            report.report(Problem("retired", "format v4 system content rejects retired tool-result wrappers", seq=index))


def _check_image(attachment: Any, index: int, report: Reporter) -> None:
    if not isinstance(attachment, dict):
        _report(report, "format v4 system image attachment requires an object", index)
        return
    if not nonempty_str(attachment.get("attachmentId")):
        _report(report, "format v4 system image attachmentId requires a string with content", index)
    media = attachment.get("mediaType")
    if not isinstance(media, str) or media not in IMAGE_MEDIA_TYPES:
        _report(report, "format v4 system image requires a supported mediaType", index)
    if not is_count(attachment.get("bytes")):
        _report(report, "system image bytes must be a non-negative safe integer", index)
    for field in ("width", "height"):
        if not is_count(attachment.get(field)) or attachment.get(field) == 0:
            _report(report, f"format v4 system image {field} must be positive", index)
    if "name" in attachment and not isinstance(attachment["name"], str):
        _report(report, "format v4 system image name requires a string", index)
    if "originalDimensions" in attachment:
        original = attachment["originalDimensions"]
        if not isinstance(original, dict):
            _report(report, "format v4 system image originalDimensions requires an object", index)
        else:
            for field in ("width", "height"):
                if not is_count(original.get(field)) or original.get(field) == 0:
                    _report(report, f"format v4 system image original {field} must be positive", index)


def check_developer_message(data: dict[str, Any], index: int, report: Reporter) -> None:
    """Developer data beyond the shared data rules (toolName, inline tools, headerSeq are theirs)."""
    message = data.get("message")
    _positive_counts("developer/message", data, index, report)
    if not isinstance(message, dict):
        _report(report, "format v4 developer/message requires turn, step, and a developer message", index)
        return
    source = message.get("source")
    if (
        not nonempty_str(message.get("id"))
        or not isinstance(message.get("content"), list)
        or not isinstance(source, dict)
        or not nonempty_str(source.get("kind"))
        or source.get("kind") == "plugin"
    ):
        _report(report, "format v4 developer message requires id, role, content, and a producer-owned source", index)
    check_blocks(message.get("content"), index, retired_wrapper_text("developer/message", index), report, tool_changes=False)


def check_tool_result_message(event: dict[str, Any], data: dict[str, Any], index: int, report: Reporter) -> None:
    """``tool/result``: the message shape, dsh's v4 tool-role rules, and the fork closer identity."""
    etype = "tool/result"
    subject = f"format v4 tool/result at seq {index}"
    message = data.get("message")
    check_identified(etype, message, index, report)
    if not isinstance(message, dict):
        return
    source = message.get("source")
    tcid = message.get("toolCallId")
    _check_role_unless_developer(etype, message, index, report)
    if not nonempty_str(tcid) or not isinstance(source, dict) or source.get("callId") != tcid:
        _report(report, f"{subject} requires toolCallId matching its tool source", index)
    check_typed_source(etype, source if isinstance(source, dict) else {}, index, report)
    check_producer_source(message, index, report)
    if check_content(etype, message, index, report):
        check_blocks(message["content"], index, f"{subject} content must not contain a released tool-result wrapper", report, tool_changes=False)
    if "isError" in message and not isinstance(message["isError"], bool):
        _report(report, f"{subject} isError must be boolean when present", index)
    if "error" in data and message.get("isError") is not True:
        _report(report, f"{subject} carries error metadata for a non-error tool result", index)
    for field in ("turn", "step"):
        if not is_count(data.get(field)):
            _report(report, f"{subject} {field} must be a non-negative safe integer", index)
    _check_fork_result(event, data, message, index, report)


def _check_fork_result(event: dict[str, Any], data: dict[str, Any], message: dict[str, Any], index: int, report: Reporter) -> None:
    """A fork's not-started closer has one exact identity (FORMAT §5.1)."""
    error = data.get("error")
    mid = message.get("id")
    if not (isinstance(error, dict) and error.get("code") == TOOL_NOT_STARTED):
        return
    if not (isinstance(mid, str) and mid.startswith(_FORKED_PREFIX)):
        return
    source = message.get("source")
    call_id = source.get("callId") if isinstance(source, dict) else None
    prefix = closer_message_prefix("forked", js_string(call_id))
    suffix = mid[len(prefix):] if mid.startswith(prefix) else ""
    op = event.get("surfaceOp")
    replacement = isinstance(op, dict) and op.get("op") == "replace"
    number = int(suffix) if DECIMAL.fullmatch(suffix) else None
    sources = event.get("sourceEventSeqs")
    content = message.get("content")
    text = content[0] if isinstance(content, list) and len(content) == 1 else None
    ok = (
        isinstance(call_id, str)
        and mid.startswith(prefix)
        and number is not None
        and is_safe_integer(number)
        and (number < index if replacement else number == index)
        and error.get("name") == _NOT_STARTED_ERROR["name"]
        and (replacement or ("sourceEventSeqs" not in event and op == "append"))
        and (not replacement or (isinstance(sources, list) and sources == [number]))
        and message.get("role") == "tool"
        and message.get("isError") is True
        and message.get("toolCallId") == call_id
        and isinstance(source, dict)
        and source.get("kind") == "tool"
        and isinstance(text, dict)
        and text.get("type") == "text"
        and isinstance(text.get("text"), str)
    )
    if not ok:
        _report(report, "invalid V4 not-started fork result", index)


# --------------------------------------------------------------------------- typed decoders

# The data of the most common event types as msgspec shapes: a value they accept is one every
# rule of :func:`check_data` and of the shared data rules (``data.check_event_data``) for its
# type passes silently (the converse need not hold: a stricter shape only sends an event to
# the exact rules).  Each shape is written next to the
# rules it mirrors and from their sets; tests/test_typed.py mutates every field of real events
# and requires "accepted => no problem".


def _shape(name: str, fields: Iterable[tuple[Any, ...]]) -> type[msgspec.Struct]:
    """A ``Struct`` that ignores the fields no rule reads (the rules ignore them too)."""
    return msgspec.defstruct(name, list(fields), gc=False)


def _optional(name: str, shape: Any) -> tuple[str, Any, Any]:
    return (name, shape | msgspec.UnsetType, msgspec.UNSET)


#: check_blocks: an object with a string type, neither a released wrapper nor a tool change
#: (outside a developer message the shared rule refuses those, so no shape lets one pass)
_BLOCK = _shape("block", [("type", typed_none_of({"tool-result", *TOOL_CHANGE_BLOCKS}))])
_BLOCKS: Any = list[_BLOCK]  # type: ignore[valid-type]  # a Struct made by defstruct is a value to mypy
#: check_producer_source: a nonempty kind that is not the retired plugin
_PRODUCER = _shape("producer-source", [("kind", typed_none_of({"", "plugin"}))])
#: check_typed_source for assistant/message: a model source with provider and model
_MODEL_SOURCE = _shape("model-source", [("kind", Literal["model"]), ("provider", NonEmptyStr), ("model", NonEmptyStr)])
#: check_typed_source for tool/result: a tool source with a call id (matched to toolCallId after)
_TOOL_SOURCE = _shape("tool-source", [("kind", Literal["tool"]), ("callId", NonEmptyStr)])
#: an assistant message's blocks: the kinds a model writes; a tool call has id, name, arguments
_ASSISTANT_BLOCK_KINDS = (
    msgspec.defstruct("text-block", [], tag_field="type", tag="text", gc=False),
    msgspec.defstruct("reasoning-block", [], tag_field="type", tag="reasoning", gc=False),
    msgspec.defstruct("tool-call-block", [("id", NonEmptyStr), ("name", str), ("arguments", str)], tag_field="type", tag="tool-call", gc=False),
)
_ASSISTANT_BLOCKS: Any = list[Union[_ASSISTANT_BLOCK_KINDS]]  # type: ignore[valid-type]  # noqa: UP007 - a union built from a tuple, at run time


def _message(name: str, role: str, source: Any, blocks: Any) -> type[msgspec.Struct]:
    """check_identified, check_role, the source rules and check_content + check_blocks."""
    return _shape(name, [("id", NonEmptyStr), ("role", Literal[role]), ("source", source), ("content", blocks)])


_SLOT_MESSAGE = _shape("slot-message", [
    ("source", _PRODUCER),
    _optional("role", typed_none_of({"developer"})),
    _optional("content", _BLOCKS),
])
_POSITIVE_TURN = [("turn", TypedPositive)]
_POSITIVE_STEP = [("turn", TypedPositive), ("step", TypedPositive)]

_TOOL_CALL_DATA = _shape("tool-call-data", [("callId", NonEmptyStr), ("name", str), ("arguments", str)])
_STEP_DATA = _shape("step-data", _POSITIVE_STEP)
_TURN_DATA = _shape("turn-data", _POSITIVE_TURN)
_TURN_END_DATA = _shape("turn-end-data", [*_POSITIVE_TURN, ("reason", _shape("turn-end-reason", [("kind", typed_one_of(TURN_END_KINDS))]))])
_USER_DATA = _message("user-message-data", "user", _PRODUCER, _BLOCKS)
_TOOL_RESULT_DATA = _shape("tool-result-data", [
    ("turn", TypedCount),
    ("step", TypedCount),
    ("message", _shape("tool-result-message", [
        ("id", NonEmptyStr),
        ("role", Literal["tool"]),
        ("source", _TOOL_SOURCE),
        ("toolCallId", NonEmptyStr),
        ("content", _BLOCKS),
        _optional("isError", bool),
    ])),
])
_ASSISTANT_DATA = _shape("assistant-message-data", [
    *_POSITIVE_STEP,
    ("stream", STREAM_SHAPE),
    ("message", _message("assistant-message", "assistant", _MODEL_SOURCE, _ASSISTANT_BLOCKS)),
    _optional("interrupted", Literal[True]),
])
_ATTEMPT_DATA = _shape("assistant-attempt-data", [*_POSITIVE_STEP, ("stream", STREAM_SHAPE)])
_INBOX_DATA = _shape("inbox-data", [_optional("inserted", list[_SLOT_MESSAGE])])  # type: ignore[valid-type]  # a Struct made by defstruct is a value to mypy

#: event type -> the shape of its data, for the types the typed decoder decides
_TYPED_DATA: dict[str, Any] = {
    "tool/call": _TOOL_CALL_DATA,
    "step/start": _STEP_DATA,
    "step/end": _STEP_DATA,
    "turn/start": _TURN_DATA,
    "turn/end": _TURN_END_DATA,
    "user/message": _USER_DATA,
    "tool/result": _TOOL_RESULT_DATA,
    "assistant/message": _ASSISTANT_DATA,
    "assistant/attempt": _ATTEMPT_DATA,
    "agent/inbox/spliced": _INBOX_DATA,
}


#: the typed events: each type's envelope with its data shape, one tagged union (one C call per event)
_TYPED_EVENT = typed_converter(Union[tuple(typed_envelope(etype, shape) for etype, shape in _TYPED_DATA.items())])  # noqa: UP007 - a union built from a tuple


def typed_clean(etype: str, data: Any) -> bool:
    """Whether :func:`check_data` and ``check_event_data`` certainly report nothing for this data.

    ``etype`` is a known v4 type (an unknown one is never proven): the roles the
    shapes demand are not ``developer``, the blocks they let pass are no tool
    changes, a proven ``tool/result`` has no error metadata, so the shared rules
    have nothing to say either.  For a JSON value only (``jsjson.loads``'s: msgspec
    takes a tuple for an array).  ``False`` means "not proven": the exact rules run
    and word what they find.
    """
    shape = _TYPED_DATA.get(etype)
    if shape is None:
        return False
    try:
        proven = msgspec.convert(data, shape)
    except NOT_PROVEN:
        return False
    return _cross_fields(etype, data, proven)


def typed_event(event: Any, seq: int) -> bool:
    """:func:`typed_clean` of the event's data and ``envelope.well_formed(event, seq)``, in one conversion."""
    try:
        proven = _TYPED_EVENT(event)
    except NOT_PROVEN:
        return False
    return event["seq"] == seq and _cross_fields(event["type"], event["data"], proven.data)


def _cross_fields(etype: str, data: dict[str, Any], proven: Any) -> bool:
    """The rules no shape can say, of data a shape accepted (``proven``, the converted data)."""
    if etype == "tool/result":
        message = data["message"]
        return "error" not in data and message["source"]["callId"] == message["toolCallId"]
    if etype in SETTLEMENT_TYPES:
        return runs_aligned(proven.stream)
    return True


# --------------------------------------------------------------------------- per event


def check_request_header(data: Any, index: int, report: Reporter) -> None:
    """``request/header`` rules: shape, retired ``system``, route, reason, defaults, tools."""

    def problem(text: str, code: str = "message", value: Any = None) -> None:
        report.report(Problem(code, text, seq=index, value=value))

    if not isinstance(data, dict) or not isinstance(data.get("header"), dict):
        problem("format v4 request/header requires data and header objects", "retired")
        return
    header = data["header"]
    if "system" in header:
        problem("format v4 request/header rejects retired header.system", "retired")
    config = header.get("config")
    cfg = config if isinstance(config, dict) else {}
    if not nonempty_str(cfg.get("provider")) or not nonempty_str(cfg.get("model")):
        problem(f"seed request/header at index {index} lacks provider/model")
    reason = data.get("reason")
    if not isinstance(reason, str) or reason not in REQUEST_REASONS:
        problem(f"request/header at seq {index} has an invalid reason {reason!r}")
    if "startsSeries" in data and data["startsSeries"] is not True:
        problem(f"request/header at seq {index} startsSeries must be true when present")
    if "reasoningEffort" in cfg and not nonempty_str(cfg["reasoningEffort"]):
        problem(f"request/header at seq {index} reasoningEffort must be a nonempty string")
    if "adapterDefaults" in header:
        defaults = header["adapterDefaults"]
        if not isinstance(defaults, dict) or any(
            key not in ("reasoningEffort", "maxTokens") or value is not True or key not in cfg
            for key, value in defaults.items()
        ):
            problem(f"request/header at seq {index} has invalid adapterDefaults")
    if "tools" in header:
        tools = header["tools"]
        if not isinstance(tools, list):
            problem(f"request/header at seq {index} tools must be an array", value=tools)
        else:
            for tool in tools:
                if isinstance(tool, dict) and "deferLoading" in tool and tool["deferLoading"] is not True:
                    problem("format v4 tool deferLoading must be true when present")


def check_data(etype: str, event: dict[str, Any], data: Any, index: int, report: Reporter, *, typed: bool = False) -> None:  # noqa: C901
    """``validate``'s per-type data rules for a known event (beyond :func:`check_event_data`).

    ``typed``: the event is a JSON value (``jsjson.loads``'s), so the typed stream
    decoder may prove a settlement's stream clean and skip its rules (they would
    report nothing).  The whole data is :func:`typed_clean`'s, which the caller asks first.
    """
    subject = f"{etype} at seq {index}"

    def problem(text: str, severity: Severity = Severity.ERROR) -> None:
        report.report(Problem("message", text, severity=severity, seq=index))

    if etype == "request/header":
        check_request_header(data, index, report)
        return
    if not isinstance(data, dict):
        if etype in OBJECT_DATA_TYPES:
            problem(f"{etype} requires an object")
        return
    # the retired-wrapper text is worded only where a branch below can report it
    if etype == "user/message":
        check_ordinary_message(etype, data, index, report)
    elif etype == "system/message":
        check_system_message(data, index, report)
    elif etype == "developer/message":
        check_developer_message(data, index, report)
    elif etype == "assistant/message":
        stream_proven = _check_settlement(etype, data, index, report, typed)
        message = data.get("message")
        if not isinstance(message, dict):
            check_identified(etype, message, index, report)
        else:
            check_ordinary_message(etype, message, index, report)
            source = message.get("source")
            if isinstance(source, dict):
                check_typed_source(etype, source, index, report)
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool-call":
                    if not nonempty_str(block.get("id")):
                        problem(f"{subject}: tool call id requires a nonempty string")
                    if not isinstance(block.get("name"), str) or not isinstance(block.get("arguments"), str):
                        problem(f"{subject}: tool-call blocks need a string name and arguments")
        if "interrupted" in data and data["interrupted"] is not True:
            problem(f"{subject}: interrupted must be true when present")
        if not stream_proven:
            check_stream_blocks(data, index, retired_wrapper_text(etype, index), report)
    elif etype == "assistant/attempt":
        if not _check_settlement(etype, data, index, report, typed):
            check_stream_blocks(data, index, retired_wrapper_text(etype, index), report)
    elif etype == "tool/result":
        check_tool_result_message(event, data, index, report)
    elif etype in ("agent/inbox/spliced", "session/title-llm-request"):
        messages = data.get("inserted" if etype == "agent/inbox/spliced" else "messages")
        retired = retired_wrapper_text(etype, index)
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict):
                check_slot_message(etype, message, index, retired, report)
    elif etype == "team/message/queued":
        message = data.get("message")
        if isinstance(message, dict):
            check_blocks(message.get("content"), index, retired_wrapper_text(etype, index), report)
    elif etype == "compaction/summary":
        retired = retired_wrapper_text(etype, index)
        check_blocks(data.get("summary"), index, retired, report)
        check_blocks(data.get("rawOutput"), index, retired, report)
    elif etype == "tool/ptc-dispatch":
        check_blocks(data.get("content"), index, retired_wrapper_text(etype, index), report)
    elif etype in ("turn/start", "step/start", "step/end", "turn/end"):
        if not is_count(data.get("turn")) or data.get("turn") == 0:
            problem(f"{subject}: turn must be a positive safe integer")
        if etype.startswith("step/") and (not is_count(data.get("step")) or data.get("step") == 0):
            problem(f"{subject}: step must be a positive safe integer")
        if etype == "turn/end":
            reason = data.get("reason")
            if not isinstance(reason, dict) or not nonempty_str(reason.get("kind")):
                problem(f"{subject}: reason must be an object with a kind")
            elif reason["kind"] not in TURN_END_KINDS:
                problem(f"{subject}: unknown turn/end reason kind {reason['kind']!r}", Severity.WARNING)
    elif etype == "tool/call":
        if not nonempty_str(data.get("callId")):
            problem(f"{subject}: tool call id requires a nonempty string")
        if not isinstance(data.get("name"), str) or not isinstance(data.get("arguments"), str):
            problem(f"{subject}: tool/call needs a string name and arguments")


def _check_settlement(etype: str, data: dict[str, Any], index: int, report: Reporter, typed: bool) -> bool:
    """Settlement fields (positive counts) and the records of the embedded stream.

    Returns whether the typed decoder proved the stream clean (its block rule too).
    """
    if check_settlement(etype, data, index, report) and (data["turn"] == 0 or data["step"] == 0):
        report.report(Problem("message", f"{etype} at seq {index}: turn and step must be positive", seq=index))
    stream = data.get("stream")
    if isinstance(stream, list):
        if typed and stream_clean(stream):
            return True
        check_stream(stream, index, report)
    return False
