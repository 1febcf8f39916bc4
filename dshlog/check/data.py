"""Event-data rules: what each event type's ``data`` must hold (SEMANTICS §1.4, FORMAT §5.1).

Two layers, as in dsh:

* :func:`check_event_data` is dsh's own append/load rule set
  (``validateSessionEventData``), shared by the fold and ``validate``; texts are
  ``<subject> <rule>``, the subject naming the event the way its caller does.
* :func:`check_data` is the rest of what ``validate`` checks per event: dsh's v4
  row admission (message slots, request headers, tool results, retired syntax)
  and the settlement and turn fields, composed from :mod:`.shapes` and
  :mod:`.streams`.

A defect both layers know is reported once.  The shared rule set's retired-syntax
problems (``header.system``, a request/header without object data) carry the
code ``retired``; ``validate`` reports those through its own retired-syntax rule,
with the text dsh's v4 reader prints, and drops the shared copy.
"""

from __future__ import annotations

from typing import Any

from ..protocol.values import is_count
from ..protocol.vocabulary import REQUEST_REASONS, SURFACE_TYPES_V4, TOOL_CHANGE_BLOCKS, TURN_END_KINDS
from .common import is_record, nonempty_str
from .problems import Problem, Reporter, Severity
from .shapes import (
    check_blocks,
    check_developer_message,
    check_identified,
    check_ordinary_message,
    check_settlement,
    check_slot_message,
    check_system_message,
    check_tool_result_message,
    check_typed_source,
    retired_wrapper_text,
)
from .streams import check_stream, check_stream_blocks

__all__ = ["check_data", "check_event_data", "check_request_header"]

# A tuple: a block's type may be any JSON value, hashable or not.
_TOOL_CHANGES = tuple(sorted(TOOL_CHANGE_BLOCKS))
# Types whose non-object data ``check_data`` reports ("<type> requires an object"); a
# tool/result's is the shared rule's to report.
_OBJECT_DATA = (SURFACE_TYPES_V4 - {"tool/result"}) | {
    "assistant/attempt",
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "tool/call",
}


# --------------------------------------------------------------------------- dsh's shared rule set


def check_event_data(event: dict, subject: str, report: Reporter) -> None:
    """Event-data rules shared by dsh's append and load paths (SEMANTICS §1.4).

    Reports ``<subject> <rule>`` problems; safe to carry on after each (``validate``
    collects them), in dsh's order (the fold's raising reporter stops at the first).
    Runs for every event the fold sees, so nothing is built until a rule fails.
    """
    etype = event.get("type")
    data = event.get("data")
    if etype in SURFACE_TYPES_V4 and is_record(data):
        message = data if etype == "user/message" else data.get("message")
        if is_record(message):
            if (etype == "developer/message") != (message.get("role") == "developer"):
                _fail(report, event, subject, "developer/message and developer role must occur together")
            content = message.get("content")
            if (
                message.get("role") != "developer"
                and isinstance(content, list)
                and any(is_record(b) and b.get("type") in _TOOL_CHANGES for b in content)
            ):
                _fail(report, event, subject, "tool-change blocks require developer role")
            if etype == "developer/message" and isinstance(content, list):
                has_additions = False
                for block in content:
                    if not is_record(block) or block.get("type") not in _TOOL_CHANGES:
                        continue
                    if not nonempty_str(block.get("toolName")):
                        _fail(report, event, subject, f"{block['type']} requires a nonempty toolName")
                    if block["type"] == "tool-addition":
                        has_additions = True
                        if "tool" in block:
                            _fail(report, event, subject, "tool-addition must omit inline tool definitions")
                if (not is_count(data.get("headerSeq"))) if has_additions else ("headerSeq" in data):
                    _fail(report, event, subject, "requires headerSeq exactly when tool additions are present")
    if etype == "request/header":
        if not is_record(data):
            _fail(report, event, subject, "data must be an object", "retired")
            return
        header = data.get("header")
        if not is_record(header):
            _fail(report, event, subject, "header must be an object", "retired")
            return
        if "system" in header:
            _fail(report, event, subject, "must omit header.system; use system/message", "retired")
        if isinstance(header.get("tools"), list) and len(header["tools"]) == 0:
            _fail(report, event, subject, "must omit empty tools")
        defaults = header.get("adapterDefaults")
        if is_record(defaults) and len(defaults) == 0:
            _fail(report, event, subject, "must omit empty adapterDefaults")
    elif etype == "tool/result":
        if not is_record(data):
            _fail(report, event, subject, "data must be an object")
            return
        if "error" not in data:
            return
        message = data.get("message")
        if not is_record(message) or message.get("isError") is not True:
            _fail(report, event, subject, "error requires message.isError === true")


def _fail(report: Reporter, event: dict, subject: str, rule: str, code: str = "message") -> None:
    seq = event.get("seq")
    report.report(Problem(code, f"{subject} {rule}", seq=seq if is_count(seq) else None))


# --------------------------------------------------------------------------- validate's per-event rules


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


def check_data(etype: str, event: dict, data: Any, index: int, report: Reporter) -> None:  # noqa: C901
    """``validate``'s per-type data rules for a known event (beyond :func:`check_event_data`)."""
    subject = f"{etype} at seq {index}"

    def problem(text: str, severity: Severity = Severity.ERROR) -> None:
        report.report(Problem("message", text, severity=severity, seq=index))

    if etype == "request/header":
        check_request_header(data, index, report)
        return
    if not isinstance(data, dict):
        if etype in _OBJECT_DATA:
            problem(f"{etype} requires an object")
        return
    retired = retired_wrapper_text(etype, index)
    if etype == "user/message":
        check_ordinary_message(etype, data, index, report)
    elif etype == "system/message":
        check_system_message(data, index, report)
    elif etype == "developer/message":
        check_developer_message(data, index, report)
    elif etype == "assistant/message":
        _check_settlement(etype, data, index, report)
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
        check_stream_blocks(data, index, retired, report)
    elif etype == "assistant/attempt":
        _check_settlement(etype, data, index, report)
        check_stream_blocks(data, index, retired, report)
    elif etype == "tool/result":
        check_tool_result_message(event, data, index, report)
    elif etype in ("agent/inbox/spliced", "session/title-llm-request"):
        messages = data.get("inserted" if etype == "agent/inbox/spliced" else "messages")
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict):
                check_slot_message(etype, message, index, retired, report)
    elif etype == "team/message/queued":
        message = data.get("message")
        if isinstance(message, dict):
            check_blocks(message.get("content"), index, retired, report)
    elif etype == "compaction/summary":
        check_blocks(data.get("summary"), index, retired, report)
        check_blocks(data.get("rawOutput"), index, retired, report)
    elif etype == "tool/ptc-dispatch":
        check_blocks(data.get("content"), index, retired, report)
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


def _check_settlement(etype: str, data: dict, index: int, report: Reporter) -> None:
    """Settlement fields (positive counts) and the records of the embedded stream."""
    if check_settlement(etype, data, index, report) and (data["turn"] == 0 or data["step"] == 0):
        report.report(Problem("message", f"{etype} at seq {index}: turn and step must be positive", seq=index))
    stream = data.get("stream")
    if isinstance(stream, list):
        check_stream(stream, index, report)
