"""dsh's shared event-data rules (``validateSessionEventData``, SEMANTICS §1.4).

The rule set dsh applies on both its append and its load path: developer roles
and tool-change blocks, ``headerSeq``, request/header shapes, tool/result error
metadata.  The fold applies it with a raising reporter; ``validate`` collects
every problem, and adds dsh's v4 row admission (:mod:`.admission`).  Texts are
``<subject> <rule>``, the subject naming the event the way its caller does.

A defect both layers know is reported once.  This rule set's retired-syntax
problems (``header.system``, a request/header without object data) carry the
code ``retired``; ``validate`` reports those through the admission rule, with the
text dsh's v4 reader prints, and drops this copy.
"""

from __future__ import annotations

from typing import Any

from ..protocol.values import is_count
from ..protocol.vocabulary import SURFACE_TYPES_V4, TOOL_CHANGE_BLOCKS
from .common import is_record, nonempty_str
from .problems import Problem, Reporter

__all__ = ["check_event_data"]

# A tuple: a block's type may be any JSON value, hashable or not.
_TOOL_CHANGES = tuple(sorted(TOOL_CHANGE_BLOCKS))


def check_event_data(event: dict[str, Any], subject: str, report: Reporter) -> None:
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


def _fail(report: Reporter, event: dict[str, Any], subject: str, rule: str, code: str = "message") -> None:
    seq = event.get("seq")
    report.report(Problem(code, f"{subject} {rule}", seq=seq if is_count(seq) else None))
