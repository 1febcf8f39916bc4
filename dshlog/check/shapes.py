"""Message shapes: the message a surface event stores (SEMANTICS §1.4).

Derivation hands these objects to the model verbatim, so dsh refuses a message
without an id, a role, a source or a content array when it loads a log.  Each
rule reports to a :class:`~dshlog.check.problems.Reporter` and says whether the
message passed.  :func:`check_message_shape` is the fold's composition (dsh's
order, the first problem only, ``seed <type> at index <i> ...`` texts);
``validate`` composes the same rules with dsh's v4 row admission in
:mod:`.admission`, so a defect has one text whichever command finds it.
"""

from __future__ import annotations

from typing import Any

from ..protocol.values import is_count
from ..protocol.vocabulary import ROLE_OF_TYPE, SETTLEMENT_TYPES, SURFACE_TYPES_V4, message_of
from .common import is_record, nonempty_str
from .problems import Problem, Reporter

__all__ = [
    "check_content",
    "check_identified",
    "check_message_shape",
    "check_role",
    "check_settlement",
    "check_typed_source",
    "settlement_ok",
]



def _seed(etype: str, index: int) -> str:
    return f"seed {etype} at index {index}"


def _report(report: Reporter, message: str, index: int, value: Any = None) -> bool:
    """Report one ``message``-code problem at ``index``; returns ``False`` (the rule failed)."""
    report.report(Problem("message", message, seq=index, value=value))
    return False


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


def check_role(etype: str, message: dict[str, Any], index: int, report: Reporter) -> bool:
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


def check_content(etype: str, message: dict[str, Any], index: int, report: Reporter) -> bool:
    content = message.get("content")
    if isinstance(content, list):
        return True
    return _report(report, f"{_seed(etype, index)} message has invalid content", index, content)


def check_typed_source(etype: str, source: dict[str, Any], index: int, report: Reporter) -> bool:
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


def check_message_shape(event: dict[str, Any], index: int, report: Reporter) -> None:
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
    if not check_identified(etype, message, index, report) or not isinstance(message, dict):
        return
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
