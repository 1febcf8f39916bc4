"""Message rules: the shape of the message a surface event stores (SEMANTICS §1.4, FORMAT §5.1).

Derivation hands these objects to the model verbatim, so dsh refuses a message
without an id, a role, a source or a content array when it loads a log.  Each
rule is a function that reports to a :class:`~dshlog.check.problems.Reporter`
and says whether the message passed; two compositions use them:

* :func:`check_message_shape`, the fold's load-time check (dsh's order, the
  first problem only, ``seed <type> at index <i> ...`` texts);
* the ``check_*_message`` functions ``validate`` runs, which report every
  problem and add the rules of dsh's v4 row admission (producer-owned sources,
  retired wrappers, system block fields, fork results).

Where the two check the same thing they call the same rule, so a defect has one
text whichever command finds it.
"""

from __future__ import annotations

from typing import Any

from ..protocol.jsjson import js_string
from ..protocol.texts import CLOSER_ERROR, TOOL_NOT_STARTED, closer_message_prefix
from ..protocol.values import is_count, is_safe_integer
from ..protocol.vocabulary import (
    IMAGE_MEDIA_TYPES,
    ROLE_OF_TYPE,
    SETTLEMENT_TYPES,
    SURFACE_TYPES_V4,
    TOOL_CHANGE_BLOCKS,
    message_of,
)
from .common import DECIMAL, is_record, nonempty_str
from .problems import Problem, Reporter

__all__ = [
    "check_blocks",
    "check_developer_message",
    "check_message_shape",
    "check_ordinary_message",
    "check_settlement",
    "check_slot_message",
    "check_system_message",
    "check_tool_result_message",
    "retired_wrapper_text",
    "settlement_ok",
]

_NOT_STARTED_ERROR = CLOSER_ERROR[False]
_FORKED_PREFIX = closer_message_prefix("forked", "")[:-1]  # "forked-tool-result-"


def _seed(etype: str, index: int) -> str:
    return f"seed {etype} at index {index}"


def _report(report: Reporter, message: str, index: int, value: Any = None) -> bool:
    """Report one ``message``-code problem at ``index``; returns ``False`` (the rule failed)."""
    report.report(Problem("message", message, seq=index, value=value))
    return False


def retired_wrapper_text(etype: str, index: int) -> str:
    """dsh's v4 refusal of a released ``tool-result`` wrapper inside ``etype``'s content."""
    return f"format v4 {etype} at seq {index} content must not contain a released tool-result wrapper"


# --------------------------------------------------------------------------- shared rules


def settlement_ok(data: Any) -> bool:
    """The settlement fields of ``assistant/message``/``assistant/attempt``: counts and a stream array."""
    return (
        is_record(data)
        and is_count(data.get("turn"))
        and is_count(data.get("step"))
        and isinstance(data.get("stream"), list)
    )


def check_settlement(etype: str, data: Any, index: int, report: Reporter) -> bool:
    if settlement_ok(data):
        return True
    return _report(report, f"{_seed(etype, index)} has invalid settlement fields", index)


def check_identified(etype: str, message: Any, index: int, report: Reporter) -> bool:
    """A message object with a nonempty string id."""
    if is_record(message) and nonempty_str(message.get("id")):
        return True
    value = message.get("id") if is_record(message) else None
    return _report(report, f"{_seed(etype, index)} lacks an identified message", index, value)


def check_role(etype: str, message: dict, index: int, report: Reporter) -> bool:
    """The role of the event type.

    For ``tool/result`` the text is dsh's v4 reader's (what dsh says first when it
    reads such a file); the other types keep the load-time text.
    """
    role = ROLE_OF_TYPE[etype]
    if message.get("role") == role:
        return True
    if etype == "tool/result":
        return _report(report, f"format v4 tool/result at seq {index} requires a tool-role message", index)
    return _report(report, f'{_seed(etype, index)} message must have role "{role}"', index)


def check_content(etype: str, message: dict, index: int, report: Reporter) -> bool:
    content = message.get("content")
    if isinstance(content, list):
        return True
    return _report(report, f"{_seed(etype, index)} message has invalid content", index, content)


def check_typed_source(etype: str, source: dict, index: int, report: Reporter) -> bool:
    """What the event type demands of a valid source: system prompt, model, or tool."""
    kind = source.get("kind")
    if etype == "system/message" and kind != "system-prompt":
        return _report(report, f"{_seed(etype, index)} message must have system-prompt source", index)
    if etype == "assistant/message" and (
        kind != "model" or not nonempty_str(source.get("provider")) or not nonempty_str(source.get("model"))
    ):
        return _report(report, f"{_seed(etype, index)} message must have model source", index)
    if etype == "tool/result" and (kind != "tool" or not nonempty_str(source.get("callId"))):
        return _report(report, f"{_seed(etype, index)} message must have tool source", index)
    return True


# --------------------------------------------------------------------------- the fold's composition


def check_message_shape(event: dict, index: int, report: Reporter) -> None:
    """Load-time message checks dsh applies to the five message types (SEMANTICS §1.4).

    dsh's order; stops at the first problem whatever the reporter does.
    """
    etype = event.get("type")
    if etype not in SURFACE_TYPES_V4 and etype != "assistant/attempt":
        return
    data = event.get("data")
    if etype in SETTLEMENT_TYPES and not settlement_ok(data):
        # A settlement without its message is reported as missing the message first.
        if etype == "assistant/message" and not (is_record(data) and is_record(data.get("message"))):
            check_identified(etype, None, index, report)
            return
        check_settlement(etype, data, index, report)
        return
    if etype == "assistant/attempt":
        return
    message = message_of(etype, data)
    if not check_identified(etype, message, index, report):
        return
    assert isinstance(message, dict)
    if etype != "developer/message" and not check_role(etype, message, index, report):
        return
    source = message.get("source")
    if not is_record(source) or not nonempty_str(source.get("kind")):
        _report(report, f"{_seed(etype, index)} message has invalid source", index)
        return
    if not check_content(etype, message, index, report):
        return
    if not check_typed_source(etype, source, index, report):
        return
    if etype == "tool/result" and message.get("toolCallId") != source.get("callId"):
        _report(report, f"{_seed(etype, index)} message has mismatched tool call ids", index)


# --------------------------------------------------------------------------- validate's compositions


def check_producer_source(message: dict, index: int, report: Reporter) -> None:
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


def _check_role_unless_developer(etype: str, message: dict, index: int, report: Reporter) -> None:
    """``validate``'s role check: a developer role is the shared data rule's to report, once."""
    if message.get("role") != "developer":
        check_role(etype, message, index, report)


def check_ordinary_message(etype: str, message: dict, index: int, report: Reporter) -> None:
    """Identity, role, source and content of the message of a user or assistant event."""
    check_identified(etype, message, index, report)
    _check_role_unless_developer(etype, message, index, report)
    check_producer_source(message, index, report)
    if check_content(etype, message, index, report):
        check_blocks(message["content"], index, retired_wrapper_text(etype, index), report, tool_changes=False)


def check_slot_message(etype: str, message: dict, index: int, retired: str, report: Reporter) -> None:
    """Messages embedded in log-only events (inbox insertions, title requests)."""
    check_producer_source(message, index, report)
    if message.get("role") == "developer":
        _report(report, "format v4 developer/message and developer role must occur together", index)
    check_blocks(message.get("content"), index, retired, report)


def _positive_counts(subject: str, data: dict, index: int, report: Reporter) -> None:
    for field in ("turn", "step"):
        if not is_count(data.get(field)):
            _report(report, f"{subject} {field} must be a non-negative safe integer", index)
        elif data[field] == 0:
            _report(report, f"{subject} {field} must be positive", index)


def check_system_message(data: dict, index: int, report: Reporter) -> None:
    """``system/message``: positive turn and step, the message shape, and known block fields."""
    etype = "system/message"
    _positive_counts("format v4 system/message", data, index, report)
    message = data.get("message")
    if not check_identified(etype, message, index, report) and not is_record(message):
        return
    assert isinstance(message, dict)
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


def check_developer_message(data: dict, index: int, report: Reporter) -> None:
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


def check_tool_result_message(event: dict, data: dict, index: int, report: Reporter) -> None:
    """``tool/result``: the message shape, dsh's v4 tool-role rules, and the fork closer identity."""
    etype = "tool/result"
    subject = f"format v4 tool/result at seq {index}"
    message = data.get("message")
    if not check_identified(etype, message, index, report) and not is_record(message):
        return
    assert isinstance(message, dict)
    source = message.get("source")
    tcid = message.get("toolCallId")
    _check_role_unless_developer(etype, message, index, report)
    if not nonempty_str(tcid) or not isinstance(source, dict) or source.get("callId") != tcid:
        _report(report, f"{subject} requires toolCallId matching its tool source", index)
    if isinstance(source, dict):
        check_typed_source(etype, source, index, report)
    else:
        _report(report, f"{_seed(etype, index)} message must have tool source", index)
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


def _check_fork_result(event: dict, data: dict, message: dict, index: int, report: Reporter) -> None:
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
