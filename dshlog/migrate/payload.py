"""dsh's semantic rules for released v0..v2 payloads (``payload-validation.ts``).

The v0→v1 edge checks every non-chunk event of a v0 log with these rules after its
legacy normalisations, the v1→v2 edge every event of a decoded v1 log, and the
v2→v3 edge every event of a v2 log but ``assistant/attempt``; a broken rule is a
plain format error the chain words ``<edge> refuses this format vN Session:
<rule>`` (``approval/policy 2 policy must be one of ask, never``).  Exact member
sets come first (each edge checks them itself); this module holds the rules on
member values, nested records and their member sets, with dsh's labels.

JavaScript value semantics throughout: ``1.0`` is the integer 1, ``-0`` is not a
count, ``true`` is never ``1`` (:func:`_same`).  A snapshot projection's
``"tools":"{{tools}}"`` placeholder stands for a tool array (dsh's test snapshots
write it so), and is not checked.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any
from collections.abc import Callable, Iterable

from .. import fastpaths
from ..protocol.jsjson import UNDEFINED, js_string, json_equal, stringify
from ..protocol.values import MAX_SAFE_INTEGER, is_count, is_placeholder, is_safe_integer, safe_int
from ._common import StageRefusal

__all__ = ["assert_payload_semantics"]

_MISSING: Any = object()  # ``undefined``: a member the record does not have


def _fail(text: str) -> StageRefusal:
    return StageRefusal(text)


def _same(a: Any, b: Any) -> bool:
    """JavaScript ``===`` between a JSON value and a literal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _get(record: dict[str, Any], key: str) -> Any:
    return record.get(key, _MISSING)


def record_of(value: Any, label: str) -> dict[str, Any]:
    """``releasedV0Record``."""
    if not isinstance(value, dict):
        raise _fail(f"{label} must be a JSON object")
    return value


def keys_of(record: dict[str, Any], required: Iterable[str], optional: Iterable[str] = (), label: str = "") -> None:
    """``assertReleasedV0Keys``: the first unexpected member, then the first missing one."""
    required = tuple(required)
    allowed = set(required) | set(optional)
    for key in record:
        if key not in allowed:
            raise _fail(f"{label} has unexpected member {stringify(key)}")
    for key in required:
        if key not in record:
            raise _fail(f"{label} lacks required member {stringify(key)}")


def _exact(value: Any, label: str, required: Iterable[str], optional: Iterable[str] = ()) -> dict[str, Any]:
    record = record_of(value, label)
    keys_of(record, required, optional, label)
    return record


def _string(value: Any, label: str) -> None:
    if not isinstance(value, str):
        raise _fail(f"{label} must be a string")


def _nonempty(value: Any, label: str) -> None:
    if not isinstance(value, str) or not value:
        raise _fail(f"{label} must be a non-empty string")


def _boolean(value: Any, label: str) -> None:
    if not isinstance(value, bool):
        raise _fail(f"{label} must be a boolean")


def _safe_integer(value: Any, label: str) -> int:
    if not is_safe_integer(value):
        raise _fail(f"{label} must be a safe integer")
    return safe_int(value)


def _count(value: Any, label: str) -> int:
    if not is_count(value):
        raise _fail(f"{label} must be a non-negative safe integer")
    return safe_int(value)


def _positive(value: Any, label: str) -> int:
    n = _count(value, label)
    if n == 0:
        raise _fail(f"{label} must be positive")
    return n


def _finite(value: Any, label: str) -> float:
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or
            (isinstance(value, float) and (not math.isfinite(value) or (value == 0 and math.copysign(1.0, value) < 0)))):
        raise _fail(f"{label} must be a finite number")
    return value


def _literal(value: Any, allowed: tuple[Any, ...], label: str) -> None:
    if not any(_same(value, c) for c in allowed):
        raise _fail(f"{label} must be one of {', '.join(js_string(c) for c in allowed)}")


def _array(value: Any, label: str, check: Callable[[Any, str], Any]) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(f"{label} must be an array")
    for i, member in enumerate(value):
        check(member, f"{label}[{i}]")
    return value


def _coordinates(data: dict[str, Any], label: str) -> None:
    _count(_get(data, "turn"), f"{label} turn")
    _count(_get(data, "step"), f"{label} step")


def _earlier(value: Any, seq: Any, label: str) -> int:
    n = _count(value, label)
    if not n < seq:
        raise _fail(f"{label} must identify an earlier event")
    return n


def _seq_array(value: Any, seq: Any, label: str, nonempty: bool) -> list[Any]:
    seen: set[int] = set()

    def member(m: Any, mlabel: str) -> None:
        n = _earlier(m, seq, mlabel)
        if n in seen:
            raise _fail(f"{label} repeats seq {n}")
        seen.add(n)

    values = _array(value, label, member)
    if nonempty and not values:
        raise _fail(f"{label} must be non-empty")
    return values


def _failure(value: Any, label: str) -> None:
    failure = _exact(value, label, ("message", "code"), ("status", "providerRetryAfterMs", "requestId"))
    _nonempty(_get(failure, "message"), f"{label} message")
    _nonempty(_get(failure, "code"), f"{label} code")
    if "status" in failure:
        status = _safe_integer(failure["status"], f"{label} status")
        if status < 100 or status > 599:
            raise _fail(f"{label} status must be 100 through 599")
    if "providerRetryAfterMs" in failure and _finite(failure["providerRetryAfterMs"], f"{label} providerRetryAfterMs") <= 0:
        raise _fail(f"{label} providerRetryAfterMs must be positive")
    if "requestId" in failure:
        _nonempty(failure["requestId"], f"{label} requestId")


def _usage(value: Any, label: str) -> None:
    usage = _exact(value, label, ("inputTokens", "outputTokens"),
                   ("totalTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"))
    for key, v in usage.items():
        _count(v, f"{label} {key}")


def _blocks(value: Any, label: str) -> None:
    _array(value, label, _block)


def _block(value: Any, label: str) -> None:
    block = record_of(value, label)
    t = _get(block, "type")
    if _same(t, "text") or _same(t, "reasoning"):
        keys_of(block, ("type", "text"), (), label)
        _string(_get(block, "text"), f"{label} text")
    elif _same(t, "image"):
        keys_of(block, ("type", "attachment"), (), label)
        _image(_get(block, "attachment"), f"{label} attachment")
    elif _same(t, "tool-call"):
        keys_of(block, ("type", "id", "name", "arguments"), (), label)
        _nonempty(_get(block, "id"), f"{label} id")
        _nonempty(_get(block, "name"), f"{label} name")
        _string(_get(block, "arguments"), f"{label} arguments")
    elif _same(t, "tool-result"):
        keys_of(block, ("type", "toolCallId", "content"), ("isError",), label)
        _nonempty(_get(block, "toolCallId"), f"{label} toolCallId")
        _blocks(_get(block, "content"), f"{label} content")
        if "isError" in block:
            _boolean(block["isError"], f"{label} isError")
    else:
        _nonempty(t, f"{label} type")


def _image(value: Any, label: str) -> None:
    a = _exact(value, label, ("attachmentId", "mediaType", "bytes", "width", "height"), ("name", "originalDimensions"))
    _nonempty(_get(a, "attachmentId"), f"{label} attachmentId")
    _literal(_get(a, "mediaType"), ("image/png", "image/jpeg", "image/webp", "image/gif"), f"{label} mediaType")
    _count(_get(a, "bytes"), f"{label} bytes")
    _positive(_get(a, "width"), f"{label} width")
    _positive(_get(a, "height"), f"{label} height")
    if "name" in a:
        _string(a["name"], f"{label} name")
    if "originalDimensions" in a:
        d = _exact(a["originalDimensions"], f"{label} originalDimensions", ("width", "height"))
        _positive(_get(d, "width"), f"{label} original width")
        _positive(_get(d, "height"), f"{label} original height")


class _Checker:
    """``assertReleasedPayloadSemantics`` of one version (see the module docstring).

    ``projection``: the ``{{tools}}`` placeholder of a snapshot is not checked.
    """

    def __init__(self, version: int, projection: bool) -> None:
        self.version = version
        self.projection = projection

    # ------------------------------------------------------------------ messages
    def message(self, value: Any, label: str, expected: str | None = None) -> None:
        message = _exact(value, label, ("id", "role", "content", "source"))
        _nonempty(_get(message, "id"), f"{label} id")
        role = "assistant" if expected == "assistant" else "user" if expected in ("user", "tool") else None
        if role is None:
            _literal(_get(message, "role"), ("system", "user", "assistant"), f"{label} role")
        else:
            _literal(_get(message, "role"), (role,), f"{label} role")
        _blocks(_get(message, "content"), f"{label} content")
        source = record_of(_get(message, "source"), f"{label} source")
        if self.version < 2 and expected == "user" and _same(_get(source, "kind"), "goal") and "change" in source:
            self.legacy_goal(message, source, label)
        else:
            self.source(source, f"{label} source", expected)
        if expected == "tool":
            content = message["content"]
            block = record_of(content[0], f"{label} tool result") if isinstance(content, list) and len(content) == 1 else None
            source = record_of(message["source"], f"{label} source")
            if block is None or not _same(_get(block, "type"), "tool-result") or not _js_equal(_get(block, "toolCallId"), _get(source, "callId")):
                raise _fail(f"{label} must contain exactly one tool-result block")

    def legacy_goal(self, message: dict[str, Any], source: dict[str, Any], label: str) -> None:
        keys_of(source, ("kind", "goalId", "revision", "round", "change"), (), f"{label} source")
        _nonempty(_get(source, "goalId"), f"{label} source goalId")
        _positive(_get(source, "revision"), f"{label} source revision")
        if not _same(_get(source, "round"), 0):
            raise _fail(f"{label} legacy goal source round must be 0")
        change = record_of(source["change"], f"{label} source change")
        self.goal_change(change, f"{label} source change")
        clear = _same(_get(change, "operation"), "clear")
        ref = record_of(_get(change, "cleared" if clear else "goal"), f"{label} source change ref")
        if not _js_equal(source["goalId"], _get(ref, "id")) or not _js_equal(source["revision"], _get(ref, "revision")):
            raise _fail(f"{label} legacy goal source does not match its change")
        names = ("cleared", "clearedAt") if clear else ("goal", "roundsStarted", "createdAt", "updatedAt")
        payload = {k: change[k] for k in names if k in change}  # JSON.stringify drops undefined members
        expected = [{"type": "text", "text": f"<goal_state>{stringify(payload)}</goal_state>"}]
        if not json_equal(message["content"], expected):
            raise _fail(f"{label} legacy goal content does not match its change")

    def source(self, value: Any, label: str, expected: str | None) -> None:  # noqa: C901 - one case per kind, as dsh
        source = record_of(value, label)
        kind = _get(source, "kind")
        if expected == "assistant" and not _same(kind, "model"):
            raise _fail(f"{label} must be model source")
        if expected == "tool" and not _same(kind, "tool"):
            raise _fail(f"{label} must be tool source")
        if _same(kind, "user"):
            keys_of(source, ("kind",), ("rpcId", "clientTimeZone"), label)
            if "rpcId" in source:
                _nonempty(source["rpcId"], f"{label} rpcId")
            if "clientTimeZone" in source:
                _nonempty(source["clientTimeZone"], f"{label} clientTimeZone")
        elif _same(kind, "plugin"):
            self.plugin_source(source, label)
        elif _same(kind, "model"):
            keys_of(source, ("kind", "provider", "model"), ("replayState",), label)
            _nonempty(_get(source, "provider"), f"{label} provider")
            _nonempty(_get(source, "model"), f"{label} model")
        elif _same(kind, "tool"):
            keys_of(source, ("kind", "callId"), (), label)
            _nonempty(_get(source, "callId"), f"{label} callId")
        elif _same(kind, "agent-instructions"):
            keys_of(source, ("kind", "form", "changes"), ("baseline", "baselineIdentity"), label)
            _literal(_get(source, "form"), ("instructions",), f"{label} form")
            if "baseline" in source:
                _literal(source["baseline"], (True,), f"{label} baseline")
            if "baselineIdentity" in source:
                _nonempty(source["baselineIdentity"], f"{label} baselineIdentity")

            def change(member: Any, mlabel: str) -> None:
                c = _exact(member, mlabel, ("action", "scope", "path"), ("digest",))
                _literal(_get(c, "action"), ("set", "replace", "remove"), f"{mlabel} action")
                _string(_get(c, "scope"), f"{mlabel} scope")
                _string(_get(c, "path"), f"{mlabel} path")
                if "digest" in c:
                    _string(c["digest"], f"{mlabel} digest")

            _array(_get(source, "changes"), f"{label} changes", change)
        elif _same(kind, "session-reference"):
            self.session_reference(source, label)
        elif _same(kind, "team-message"):
            keys_of(source, ("kind", "teamId", "messageId", "senderId", "senderName"), (), label)
            for key in ("teamId", "messageId", "senderId"):
                _nonempty(_get(source, key), f"{label} {key}")
            _string(_get(source, "senderName"), f"{label} senderName")
        elif _same(kind, "goal"):
            keys_of(source, ("kind", "goalId", "revision", "round"), (), label)
            _nonempty(_get(source, "goalId"), f"{label} goalId")
            _positive(_get(source, "revision"), f"{label} revision")
            _positive(_get(source, "round"), f"{label} round")
        elif _same(kind, "skill-invocation"):
            keys_of(source, ("kind", "name", "form"), (), label)
            _nonempty(_get(source, "name"), f"{label} name")
            _literal(_get(source, "form"), ("instructions",), f"{label} form")
        elif _same(kind, "skill-catalog"):
            keys_of(source, ("kind", "form", "entries"), ("update",), label)
            _literal(_get(source, "form"), ("catalog",), f"{label} form")
            if "update" in source:
                _literal(source["update"], (True,), f"{label} update")

            def entry(member: Any, mlabel: str) -> None:
                e = _exact(member, mlabel, ("name", "description"))
                _nonempty(_get(e, "name"), f"{mlabel} name")
                _string(_get(e, "description"), f"{mlabel} description")

            _array(_get(source, "entries"), f"{label} entries", entry)
        elif _same(kind, "coordinator") or _same(kind, "subagent-report"):
            keys_of(source, ("kind", "form", "senderSessionId"), (), label)
            _literal(_get(source, "form"), ("relay",), f"{label} form")
            _nonempty(_get(source, "senderSessionId"), f"{label} senderSessionId")
        elif _same(kind, "subagent-settled"):
            keys_of(source, ("kind", "form", "summary", "senderSessionId"), (), label)
            _literal(_get(source, "form"), ("notice",), f"{label} form")
            _string(_get(source, "summary"), f"{label} summary")
            _nonempty(_get(source, "senderSessionId"), f"{label} senderSessionId")
        elif _same(kind, "webhook"):
            keys_of(source, ("kind", "provider", "source", "deliveryId", "ruleId", "form", "summary"), (), label)
            for key in ("provider", "source", "deliveryId", "ruleId"):
                _nonempty(_get(source, key), f"{label} {key}")
            _literal(_get(source, "form"), ("notice",), f"{label} form")
            _string(_get(source, "summary"), f"{label} summary")
        else:
            _nonempty(kind, f"{label} kind")

    @staticmethod
    def plugin_source(source: dict[str, Any], label: str) -> None:
        optional = ["form", "sections", "summary"]
        compact = _same(_get(source, "plugin"), "compact")
        if compact:
            optional += ["compactionId", "sourceCommandId"]
        keys_of(source, ("kind", "plugin"), optional, label)
        _nonempty(_get(source, "plugin"), f"{label} plugin")
        if compact:
            _nonempty(_get(source, "compactionId"), f"{label} compactionId")
            if "sourceCommandId" in source:
                _nonempty(source["sourceCommandId"], f"{label} sourceCommandId")
        if "form" not in source:
            return
        form = source["form"]
        _literal(form, ("instructions", "catalog", "snapshot", "notice", "relay", "recall"), f"{label} form")
        if _same(form, "snapshot"):
            def section(member: Any, mlabel: str) -> None:
                s = _exact(member, mlabel, ("name", "text"))
                _nonempty(_get(s, "name"), f"{mlabel} name")
                _string(_get(s, "text"), f"{mlabel} text")

            _array(_get(source, "sections"), f"{label} sections", section)
        elif "sections" in source:
            raise _fail(f"{label} sections require snapshot form")
        if _same(form, "notice"):
            _string(_get(source, "summary"), f"{label} summary")
        elif "summary" in source:
            raise _fail(f"{label} summary requires notice form")

    def session_reference(self, source: dict[str, Any], label: str) -> None:
        version = self.version
        keys_of(source, ("kind", "form", "version", "references"), (), label)
        _literal(_get(source, "form"), ("recall",), f"{label} form")
        _literal(_get(source, "version"), (1,), f"{label} version")
        state = {"index": 0}
        session_ids: set[str] = set()

        def reference(member: Any, mlabel: str) -> None:
            r = _exact(member, mlabel, ("sessionId", "label", "capturedThroughSeq", "compacted", "originalMessages",
                                        "retainedMessages", "omittedMessages", "omittedBytes", "truncated", "inputIndex"),
                       ("capturedFormatVersion",) if version >= 1 else ())
            _nonempty(_get(r, "sessionId"), f"{mlabel} sessionId")
            _string(_get(r, "label"), f"{mlabel} label")
            if _get(r, "capturedThroughSeq") is not None:
                _count(_get(r, "capturedThroughSeq"), f"{mlabel} capturedThroughSeq")
            if "capturedFormatVersion" in r:
                captured = _count(r["capturedFormatVersion"], f"{mlabel} capturedFormatVersion")
                if captured < 1 or captured > version:
                    raise _fail(f"{mlabel} capturedFormatVersion must be between 1 and {version}")
            _boolean(_get(r, "compacted"), f"{mlabel} compacted")
            original = _count(_get(r, "originalMessages"), f"{mlabel} originalMessages")
            retained = _count(_get(r, "retainedMessages"), f"{mlabel} retainedMessages")
            omitted = _count(_get(r, "omittedMessages"), f"{mlabel} omittedMessages")
            omitted_bytes = _count(_get(r, "omittedBytes"), f"{mlabel} omittedBytes")
            index = _count(_get(r, "inputIndex"), f"{mlabel} inputIndex")
            truncated = _get(r, "truncated")
            _boolean(truncated, f"{mlabel} truncated")
            if retained > original or omitted != original - retained:
                raise _fail(f"{mlabel} message counts are inconsistent")
            if truncated != (omitted > 0 or omitted_bytes > 0):
                raise _fail(f"{mlabel} truncated disagrees with omitted content")
            if index != state["index"]:
                raise _fail(f"{label} inputIndex must match reference position")
            state["index"] += 1
            sid = r["sessionId"]
            if sid in session_ids:
                raise _fail(f"{label} repeats sessionId {sid}")
            session_ids.add(sid)

        references = _array(_get(source, "references"), f"{label} references", reference)
        if not references:
            raise _fail(f"{label} references must be non-empty")

    # ------------------------------------------------------------------ stream chunks
    def chunk(self, value: Any, label: str) -> None:
        chunk = record_of(value, label)
        t = _get(chunk, "type")
        if _same(t, "block-start"):
            keys_of(chunk, ("type", "index", "blockType"), (), label)
            _count(_get(chunk, "index"), f"{label} index")
            _nonempty(_get(chunk, "blockType"), f"{label} blockType")
        elif _same(t, "text-delta") or _same(t, "reasoning-delta"):
            keys_of(chunk, ("type", "index", "text"), (), label)
            _count(_get(chunk, "index"), f"{label} index")
            _string(_get(chunk, "text"), f"{label} text")
        elif _same(t, "tool-call-delta"):
            keys_of(chunk, ("type", "index", "id", "argumentsDelta"), ("name",), label)
            _count(_get(chunk, "index"), f"{label} index")
            _nonempty(_get(chunk, "id"), f"{label} id")
            if "name" in chunk:
                _string(chunk["name"], f"{label} name")
            _string(_get(chunk, "argumentsDelta"), f"{label} argumentsDelta")
        elif _same(t, "block-end"):
            keys_of(chunk, ("type", "index", "block"), (), label)
            _count(_get(chunk, "index"), f"{label} index")
            _block(_get(chunk, "block"), f"{label} block")
        elif _same(t, "usage"):
            keys_of(chunk, ("type", "usage"), (), label)
            _usage(_get(chunk, "usage"), f"{label} usage")
        elif _same(t, "finish"):
            keys_of(chunk, ("type", "reason"), ("replayState",), label)
            self.finish_reason(_get(chunk, "reason"), f"{label} reason")
            if "replayState" in chunk:
                replay = _exact(chunk["replayState"], f"{label} replayState", ("response",), ("blocks",))
                if "blocks" in replay and not isinstance(replay["blocks"], list):
                    raise _fail(f"{label} replayState blocks must be an array")
        else:
            raise _fail(f"{label} has unknown stream chunk type {'undefined' if t is _MISSING else stringify(t)}")

    @staticmethod
    def finish_reason(value: Any, label: str) -> None:
        reason = record_of(value, label)
        kind = _get(reason, "kind")
        if _same(kind, "aborted") or _same(kind, "error"):
            keys_of(reason, ("kind", "failure"), (), label)
            _failure(_get(reason, "failure"), f"{label} failure")
            return
        if _same(kind, "stop") or _same(kind, "tool-calls") or _same(kind, "max-tokens"):
            keys_of(reason, ("kind",), (), label)
        _nonempty(kind, f"{label} kind")

    @staticmethod
    def turn_end_reason(value: Any, label: str) -> None:
        reason = record_of(value, label)
        kind = _get(reason, "kind")
        if any(_same(kind, k) for k in ("completed", "blocked", "max-tokens", "interrupted")):
            keys_of(reason, ("kind",), (), label)
        elif _same(kind, "aborted"):
            keys_of(reason, ("kind", "reason"), (), label)
            cause = record_of(_get(reason, "reason"), f"{label} abort cause")
            if _same(_get(cause, "kind"), "hook"):
                keys_of(cause, ("kind", "reason"), (), f"{label} abort cause")
                _string(_get(cause, "reason"), f"{label} abort reason")
            else:
                keys_of(cause, ("kind",), (), f"{label} abort cause")
                _literal(_get(cause, "kind"), ("user", "parent", "disposed", "legacy"), f"{label} abort kind")
        elif _same(kind, "error"):
            keys_of(reason, ("kind", "error"), (), label)
            _failure(_get(reason, "error"), f"{label} error")
        else:
            _nonempty(kind, f"{label} kind")

    # ------------------------------------------------------------------ request headers and shadows
    def request_header(self, value: Any, label: str) -> None:
        header = _exact(value, label, ("config",), ("adapterDefaults", "system", "tools"))
        config = _exact(_get(header, "config"), f"{label} config", ("provider", "model"),
                        ("reasoningEffort", "temperature", "maxTokens", "stop"))
        _nonempty(_get(config, "provider"), f"{label} provider")
        _nonempty(_get(config, "model"), f"{label} model")
        if "reasoningEffort" in config:
            _nonempty(config["reasoningEffort"], f"{label} reasoningEffort")
        if "temperature" in config:
            _finite(config["temperature"], f"{label} temperature")
        if "maxTokens" in config:
            _positive(config["maxTokens"], f"{label} maxTokens")
        if "stop" in config:
            _array(config["stop"], f"{label} stop", _string)
        if "adapterDefaults" in header:
            defaults = _exact(header["adapterDefaults"], f"{label} adapterDefaults", (), ("reasoningEffort", "maxTokens"))
            for key, marker in defaults.items():
                _literal(marker, (True,), f"{label} adapterDefaults {key}")
                if key not in config:
                    raise _fail(f"{label} adapter default {key} lacks config value")
        if "system" in header:
            _string(header["system"], f"{label} system")
        if "tools" in header and not (self.projection and is_placeholder(header["tools"])):
            _array(header["tools"], f"{label} tools", _tool_schema)

    @staticmethod
    def shadowed(data: dict[str, Any], seq: Any, label: str) -> None:
        rng = _exact(_get(data, "shadowedRange"), f"{label} shadowedRange", ("start", "end"))
        start = _earlier(_get(rng, "start"), seq, f"{label} shadowedRange start")
        end = _earlier(_get(rng, "end"), seq, f"{label} shadowedRange end")
        seqs = _seq_array(_get(data, "shadowedSeqs"), seq, f"{label} shadowedSeqs", True)
        if not _js_equal(seqs[0], start) or not _js_equal(seqs[-1], end):
            raise _fail(f"{label} shadowedRange must match shadowedSeqs endpoints")
        _count(_get(data, "shadowedTokenCount"), f"{label} shadowedTokenCount")

    # ------------------------------------------------------------------ goals, schedules, teams
    @staticmethod
    def goal_change(data: dict[str, Any], label: str) -> None:
        _literal(_get(data, "kind"), ("goal/change",), f"{label} kind")
        _literal(_get(data, "version"), (1,), f"{label} version")
        if _same(_get(data, "operation"), "clear"):
            keys_of(data, ("kind", "version", "operation", "cleared", "clearedAt"), (), f"{label} data")
            ref = _exact(_get(data, "cleared"), f"{label} cleared", ("id", "revision"))
            _nonempty(_get(ref, "id"), f"{label} cleared id")
            _positive(_get(ref, "revision"), f"{label} cleared revision")
            _count(_get(data, "clearedAt"), f"{label} clearedAt")
            return
        keys_of(data, ("kind", "version", "operation", "goal", "roundsStarted", "createdAt", "updatedAt"), (), f"{label} data")
        _literal(_get(data, "operation"), ("create", "edit", "pause", "resume", "complete", "block"), f"{label} operation")
        goal = _exact(_get(data, "goal"), f"{label} goal", ("id", "revision", "objective", "phase", "maxGoalRounds"), ("blockedReason",))
        glabel = f"{label} goal"
        _nonempty(_get(goal, "id"), f"{glabel} id")
        _positive(_get(goal, "revision"), f"{glabel} revision")
        _nonempty(_get(goal, "objective"), f"{glabel} objective")
        _literal(_get(goal, "phase"), ("active", "paused", "blocked", "complete"), f"{glabel} phase")
        _positive(_get(goal, "maxGoalRounds"), f"{glabel} maxGoalRounds")
        if _same(_get(goal, "phase"), "blocked"):
            reason = _exact(_get(goal, "blockedReason"), f"{glabel} blockedReason", ("code", "message"))
            _nonempty(_get(reason, "code"), f"{glabel} blocked code")
            _nonempty(_get(reason, "message"), f"{glabel} blocked message")
        elif "blockedReason" in goal:
            raise _fail(f"{glabel} blockedReason requires blocked phase")
        _count(_get(data, "roundsStarted"), f"{label} roundsStarted")
        _count(_get(data, "createdAt"), f"{label} createdAt")
        _count(_get(data, "updatedAt"), f"{label} updatedAt")

    @staticmethod
    def schedule_change(data: dict[str, Any], label: str) -> None:
        _literal(_get(data, "version"), (1,), f"{label} version")
        if _same(_get(data, "operation"), "create"):
            keys_of(data, ("version", "operation", "schedule"), (), f"{label} data")
            _schedule(_get(data, "schedule"), f"{label} schedule")
            return
        keys_of(data, ("version", "operation", "id"), ("acceptedAt",) if _same(_get(data, "operation"), "dispatch") else (), f"{label} data")
        _literal(_get(data, "operation"), ("delete", "dispatch"), f"{label} operation")
        _schedule_id(_get(data, "id"), f"{label} id")
        if "acceptedAt" in data:
            _instant(data["acceptedAt"], f"{label} acceptedAt")

    def team_message(self, value: Any, label: str) -> None:
        message = _exact(value, label, ("id", "senderId", "senderName", "targetId", "delivery", "content"))
        for key in ("id", "senderId", "targetId"):
            _nonempty(_get(message, key), f"{label} {key}")
        _string(_get(message, "senderName"), f"{label} senderName")
        _literal(_get(message, "delivery"), ("quiet", "wakeup"), f"{label} delivery")
        _blocks(_get(message, "content"), f"{label} content")

    @staticmethod
    def subagent_descriptor(data: dict[str, Any], label: str) -> None:
        _literal(_get(data, "version"), (3,), f"{label} version")
        _nonempty(_get(data, "provider"), f"{label} provider")
        if _same(_get(data, "mode"), "one-shot"):
            keys_of(data, ("mode", "version", "provider"), ("label",), f"{label} data")
            if "label" in data:
                _string(data["label"], f"{label} label")
            return
        _literal(_get(data, "mode"), ("continuable",), f"{label} mode")
        _nonempty(_get(data, "label"), f"{label} label")
        for key in ("agentProvider", "agentModel", "agentReasoningEffort", "persona"):
            if key in data:
                _nonempty(data[key], f"{label} {key}")
        if ("agentProvider" in data) != ("agentModel" in data):
            raise _fail(f"{label} agentProvider and agentModel must be paired")
        if "toolFilter" in data:
            f = _exact(data["toolFilter"], f"{label} toolFilter", (), ("allow", "deny"))
            if "allow" not in f and "deny" not in f:
                raise _fail(f"{label} toolFilter requires allow or deny")
            if "allow" in f:
                _array(f["allow"], f"{label} allow", _nonempty)
            if "deny" in f:
                _array(f["deny"], f"{label} deny", _nonempty)

    # ------------------------------------------------------------------ the switch
    def check(self, event: dict[str, Any]) -> None:  # noqa: C901 - dsh's switch, one case per type
        etype = event.get("type")
        seq = event.get("seq", UNDEFINED)
        label = f"{js_string(etype)} {js_string(seq)}"
        data = record_of(event.get("data", _MISSING), f"{label} data")
        version = self.version
        g = data.get
        if etype == "agent-preset/selected":
            _string(_get(data, "agentPreset"), f"{label} agentPreset")
        elif etype == "agent/inbox/spliced":
            _literal(_get(data, "target"), ("next-turn", "next-step"), f"{label} target")
            _count(_get(data, "start"), f"{label} start")
            if "removedCount" in data:
                _count(data["removedCount"], f"{label} removedCount")
            _array(_get(data, "inserted"), f"{label} inserted", lambda v, _l: self.message(v, f"{label} inserted message", "user"))
            if "outcome" in data:
                _literal(data["outcome"], ("canceled",), f"{label} outcome")
        elif etype == "approval/asked":
            _nonempty(_get(data, "id"), f"{label} id")
            _nonempty(_get(data, "toolName"), f"{label} toolName")
            if "callId" in data:
                _nonempty(data["callId"], f"{label} callId")
            if "reason" in data:
                _string(data["reason"], f"{label} reason")
        elif etype == "approval/decided":
            _nonempty(_get(data, "id"), f"{label} id")
            _literal(_get(data, "outcome"), ("allowed-once", "rejected", "cancelled", "unavailable"), f"{label} outcome")
        elif etype == "approval/policy":
            _literal(_get(data, "policy"), ("ask", "never"), f"{label} policy")
            if "source" in data:
                _literal(data["source"], ("delegation",), f"{label} source")
        elif etype == "assistant/chunk":
            _coordinates(data, label)
            self.chunk(_get(data, "chunk"), f"{label} chunk")
        elif etype == "assistant/message":
            _coordinates(data, label)
            self.message(_get(data, "message"), f"{label} message", "assistant")
            if "usage" in data:
                _usage(data["usage"], f"{label} usage")
            if "interrupted" in data:
                _literal(data["interrupted"], (True,), f"{label} interrupted")
        elif etype == "command/done":
            _nonempty(_get(data, "commandId"), f"{label} commandId")
            _literal(_get(data, "kind"), ("success", "error"), f"{label} kind")
            if "text" in data:
                _string(data["text"], f"{label} text")
            if "sourceEventSeq" in data:
                _earlier(data["sourceEventSeq"], seq, f"{label} sourceEventSeq")
        elif etype == "command/run":
            _nonempty(_get(data, "commandId"), f"{label} commandId")
            _nonempty(_get(data, "name"), f"{label} name")
            if "args" in data:
                _string(data["args"], f"{label} args")
            source = _exact(_get(data, "source"), f"{label} source", ("kind",))
            _literal(_get(source, "kind"), ("user",), f"{label} source kind")
        elif etype in ("compaction/start", "compaction/end"):
            _nonempty(_get(data, "compactionId"), f"{label} compactionId")
            if "sourceCommandId" in data:
                _nonempty(data["sourceCommandId"], f"{label} sourceCommandId")
            if _get(data, "turn") is not None:
                _count(_get(data, "turn"), f"{label} turn")
            if "error" in data:
                _string(data["error"], f"{label} error")
        elif etype == "compaction/prune":
            self.shadowed(data, seq, label)
        elif etype == "compaction/summary":
            if g("llmStreamCall") is True and "rawOutput" not in data:
                raise _fail(f"{label} llmStreamCall requires rawOutput")
            _nonempty(_get(data, "compactionId"), f"{label} compactionId")
            if "sourceCommandId" in data:
                _nonempty(data["sourceCommandId"], f"{label} sourceCommandId")
            _blocks(_get(data, "summary"), f"{label} summary")
            self.shadowed(data, seq, label)
            _nonempty(_get(data, "provider"), f"{label} provider")
            _nonempty(_get(data, "model"), f"{label} model")
            if "maxTokens" in data:
                _count(data["maxTokens"], f"{label} maxTokens")
            if "usage" in data:
                _usage(data["usage"], f"{label} usage")
            if "rawOutput" in data:
                _blocks(data["rawOutput"], f"{label} rawOutput")
            if "llmStreamCall" in data:
                _literal(data["llmStreamCall"], (True,), f"{label} llmStreamCall")
        elif etype == "feedback/record":
            _nonempty(_get(data, "text"), f"{label} text")
        elif etype == "goal/change":
            self.goal_change(data, label)
        elif etype == "hook/invoked":
            _count(_get(data, "turn"), f"{label} turn")
            _nonempty(_get(data, "point"), f"{label} point")
            _literal(_get(data, "dialect"), ("claude-code", "codex"), f"{label} dialect")
            if "matcher" in data:
                _string(data["matcher"], f"{label} matcher")
            _nonempty(_get(data, "handlerId"), f"{label} handlerId")
        elif etype == "hook/result":
            _count(_get(data, "turn"), f"{label} turn")
            _nonempty(_get(data, "point"), f"{label} point")
            _nonempty(_get(data, "handlerId"), f"{label} handlerId")
            _nonempty(_get(data, "decision"), f"{label} decision")
            if "exitCode" in data:
                _safe_integer(data["exitCode"], f"{label} exitCode")
            if "stderrSummary" in data:
                _string(data["stderrSummary"], f"{label} stderrSummary")
            if _finite(_get(data, "durationMs"), f"{label} durationMs") < 0:
                raise _fail(f"{label} durationMs must be non-negative")
        elif etype == "llm/retry":
            _nonempty(_get(data, "retryId"), f"{label} retryId")
            _coordinates(data, label)
            _nonempty(_get(data, "provider"), f"{label} provider")
            _literal(_get(data, "mode"), ("normal", "always"), f"{label} mode")
            _nonempty(_get(data, "policyKey"), f"{label} policyKey")
            retry = _positive(_get(data, "retry"), f"{label} retry")
            if _same(_get(data, "mode"), "normal"):
                if retry > _positive(_get(data, "maxRetries"), f"{label} maxRetries"):
                    raise _fail(f"{label} retry exceeds maxRetries")
            elif "maxRetries" in data:
                raise _fail(f"{label} always mode must omit maxRetries")
            delay = _finite(_get(data, "delayMs"), f"{label} delayMs")
            if delay < 0:
                raise _fail(f"{label} delayMs must be non-negative")
            if delay > 2147483647:
                raise _fail(f"{label} delayMs exceeds the timer range")
            _failure(_get(data, "failure"), f"{label} failure")
        elif etype == "llm/retry-started":
            _nonempty(_get(data, "retryId"), f"{label} retryId")
            _coordinates(data, label)
            _positive(_get(data, "retry"), f"{label} retry")
        elif etype == "model/selection":
            _nonempty(_get(data, "provider"), f"{label} provider")
            _nonempty(_get(data, "model"), f"{label} model")
            if "reasoningEffort" in data:
                _nonempty(data["reasoningEffort"], f"{label} reasoningEffort")
        elif etype == "permission/preset":
            _nonempty(_get(data, "preset"), f"{label} preset")
        elif etype == "plan/mode":
            _boolean(_get(data, "active"), f"{label} active")
        elif etype == "request/context":
            _nonempty(_get(data, "provider"), f"{label} provider")
            _nonempty(_get(data, "model"), f"{label} model")
            if "contextWindow" in data:
                _positive(data["contextWindow"], f"{label} contextWindow")
        elif etype == "request/header":
            self.request_header(_get(data, "header"), f"{label} header")
            _literal(_get(data, "reason"), ("initial", "resume", "change", "series"), f"{label} reason")
            if "startsSeries" in data:
                _literal(data["startsSeries"], (True,), f"{label} startsSeries")
        elif etype == "sandbox/mode":
            _literal(_get(data, "mode"), ("read-only", "workspace-write", "danger-full-access"), f"{label} mode")
            if "source" in data:
                _literal(data["source"], ("delegation",), f"{label} source")
        elif etype == "schedule/change":
            self.schedule_change(data, label)
        elif etype == "session-log-deepseek/delivery-accepted":
            accepted = 0 if "sessionFormatVersion" not in data else _count(data["sessionFormatVersion"], f"{label} sessionFormatVersion")
            if accepted == version:
                _nonempty(_get(data, "sessionId"), f"{label} sessionId")
                _earlier(_get(data, "throughSeq"), seq, f"{label} throughSeq")
        elif etype == "session/end-seed":
            pass
        elif etype == "session/title":
            _nonempty(_get(data, "title"), f"{label} title")
            _seq_array(_get(data, "messageSeqs"), seq, f"{label} messageSeqs", False)
            _title_source(_get(data, "source"), f"{label} source")
        elif etype == "session/title-llm-request":
            _nonempty(_get(data, "titleProvider"), f"{label} titleProvider")
            _seq_array(_get(data, "messageSeqs"), seq, f"{label} messageSeqs", True)
            _route(_get(data, "route"), f"{label} route")
            _string(_get(data, "system"), f"{label} system")
            _array(_get(data, "messages"), f"{label} messages", lambda v, _l: self.message(v, f"{label} message"))
            _positive(_get(data, "maxTokens"), f"{label} maxTokens")
        elif etype in ("step/end", "step/start"):
            _coordinates(data, label)
        elif etype == "subagent/descriptor":
            self.subagent_descriptor(data, label)
        elif etype == "subagent/model-selection-policy":
            _allowed_models(_get(data, "allowedModels"), f"{label} allowedModels")
        elif etype == "team/member":
            _team(data, label)
            m = _exact(_get(data, "member"), f"{label} member", ("id", "name", "description", "provider", "context", "phase"), ("error",))
            mlabel = f"{label} member"
            _nonempty(_get(m, "id"), f"{mlabel} id")
            for key in ("name", "description", "provider"):
                _string(_get(m, key), f"{mlabel} {key}")
            _literal(_get(m, "context"), ("fresh", "fork"), f"{mlabel} context")
            _literal(_get(m, "phase"), ("provisioning", "active", "failed"), f"{mlabel} phase")
            if "error" in m:
                _string(m["error"], f"{mlabel} error")
        elif etype == "team/message/delivered":
            _team(data, label)
            _nonempty(_get(data, "messageId"), f"{label} messageId")
            _nonempty(_get(data, "targetId"), f"{label} targetId")
        elif etype == "team/message/queued":
            _team(data, label)
            self.team_message(_get(data, "message"), f"{label} message")
        elif etype == "team/task":
            _team(data, label)
            _team_task(_get(data, "task"), f"{label} task")
        elif etype == "todo/write":
            def todo(value: Any, ilabel: str) -> None:
                item = _exact(value, ilabel, ("content", "status"))
                _string(_get(item, "content"), f"{ilabel} content")
                _literal(_get(item, "status"), ("pending", "in_progress", "completed"), f"{ilabel} status")

            _array(_get(data, "todos"), f"{label} todos", todo)
        elif etype == "tool-workflow/agent-end":
            _workflow(data, label)
            _literal(_get(data, "outcome"), ("completed", "failed", "cancelled"), f"{label} outcome")
        elif etype == "tool-workflow/agent-start":
            _workflow(data, label)
            _string(_get(data, "label"), f"{label} label")
            if "phase" in data:
                _string(data["phase"], f"{label} phase")
            _nonempty(_get(data, "childId"), f"{label} childId")
        elif etype == "tool-workflow/run-end":
            _nonempty(_get(data, "runId"), f"{label} runId")
            _literal(_get(data, "stopReason"), ("completed", "cancelled", "error"), f"{label} stopReason")
        elif etype == "tool-workflow/run-start":
            _nonempty(_get(data, "runId"), f"{label} runId")
            _nonempty(_get(data, "name"), f"{label} name")
        elif etype == "tool/call":
            _coordinates(data, label)
            _nonempty(_get(data, "callId"), f"{label} callId")
            _nonempty(_get(data, "name"), f"{label} name")
            _string(_get(data, "arguments"), f"{label} arguments")
        elif etype in ("tool/code-dispatch", "tool/code-dispatch-start"):
            for key in ("rootCallId", "parentCallId", "subCallId", "name"):
                _nonempty(_get(data, key), f"{label} {key}")
            if etype == "tool/code-dispatch":
                _boolean(_get(data, "isError"), f"{label} isError")
                _blocks(_get(data, "content"), f"{label} content")
        elif etype == "tool/result":
            _coordinates(data, label)
            self.message(_get(data, "message"), f"{label} message", "tool")
            if "error" in data:
                error = _exact(data["error"], f"{label} error", ("name", "code"))
                _nonempty(_get(error, "name"), f"{label} error name")
                _nonempty(_get(error, "code"), f"{label} error code")
        elif etype == "turn/end":
            _count(_get(data, "turn"), f"{label} turn")
            self.turn_end_reason(_get(data, "reason"), f"{label} reason")
        elif etype == "turn/start":
            _count(_get(data, "turn"), f"{label} turn")
        elif etype == "user/message":
            self.message(data, label, "user")
        elif etype == "web/deepseek-search-llm-request":
            _nonempty(_get(data, "endpoint"), f"{label} endpoint")
            _nonempty(_get(data, "apiVersion"), f"{label} apiVersion")
            _search_body(_get(data, "body"), f"{label} body")
        else:
            raise _fail(f"released payload validator is missing event {stringify(etype)}")


def _js_equal(a: Any, b: Any) -> bool:
    """``===`` between two values read from a log: records by identity, ``undefined`` only to itself."""
    if a is _MISSING or b is _MISSING:
        return a is b
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    return _same(a, b)


def _tool_schema(value: Any, label: str) -> None:
    schema = _exact(value, label, ("name", "description", "parameters"))
    _nonempty(_get(schema, "name"), f"{label} name")
    _string(_get(schema, "description"), f"{label} description")
    record_of(_get(schema, "parameters"), f"{label} parameters")


def _title_source(value: Any, label: str) -> None:
    source = record_of(value, label)
    if _same(_get(source, "kind"), "provider"):
        keys_of(source, ("kind", "provider"), ("model",), label)
        _nonempty(_get(source, "provider"), f"{label} provider")
        if "model" in source:
            _route(source["model"], f"{label} model")
        return
    keys_of(source, ("kind",), (), label)
    _literal(_get(source, "kind"), ("fallback", "user"), f"{label} kind")


def _route(value: Any, label: str) -> None:
    route = _exact(value, label, ("provider", "model"))
    _nonempty(_get(route, "provider"), f"{label} provider")
    _nonempty(_get(route, "model"), f"{label} model")


def _allowed_models(value: Any, label: str) -> None:
    seen: set[str] = set()

    def member(m: Any, mlabel: str) -> None:
        route = _exact(m, mlabel, ("provider", "model"))
        _nonempty(_get(route, "provider"), f"{mlabel} provider")
        _nonempty(_get(route, "model"), f"{mlabel} model")
        key = f"{route['provider']}\0{route['model']}"
        if key in seen:
            raise _fail(f"{label} repeats route {key}")
        seen.add(key)

    if not _array(value, label, member):
        raise _fail(f"{label} must be non-empty")


def _team(data: dict[str, Any], label: str) -> None:
    _literal(_get(data, "version"), (1,), f"{label} version")
    _nonempty(_get(data, "teamId"), f"{label} teamId")


def _team_task(value: Any, label: str) -> None:
    task = _exact(value, label, ("id", "revision", "subject", "description", "status", "blockedBy", "writeScopes"), ("ownerId",))
    _nonempty(_get(task, "id"), f"{label} id")
    _positive(_get(task, "revision"), f"{label} revision")
    _string(_get(task, "subject"), f"{label} subject")
    _string(_get(task, "description"), f"{label} description")
    _literal(_get(task, "status"), ("pending", "in_progress", "completed", "deleted"), f"{label} status")
    if "ownerId" in task:
        _nonempty(task["ownerId"], f"{label} ownerId")
    _array(_get(task, "blockedBy"), f"{label} blockedBy", _nonempty)
    _array(_get(task, "writeScopes"), f"{label} writeScopes", _string)


def _workflow(data: dict[str, Any], label: str) -> None:
    _nonempty(_get(data, "runId"), f"{label} runId")
    _positive(_get(data, "seq"), f"{label} seq")


_INSTANT = re.compile(r"(?!0000)\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z\Z")


def _instant(value: Any, label: str) -> None:
    ok = isinstance(value, str) and _INSTANT.match(value) is not None
    if ok:
        try:
            datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")  # Date.parse round trip: a real calendar day
        except ValueError:
            ok = False
    if not ok:
        raise _fail(f"{label} must be a canonical UTC instant")


def _schedule_id(value: Any, label: str) -> None:
    _nonempty(value, label)
    if value.strip() != value:
        raise _fail(f"{label} must not have surrounding whitespace")


def _schedule(value: Any, label: str) -> None:
    record = record_of(value, label)
    kind = _get(record, "kind")
    if _same(kind, "after"):
        keys_of(record, ("id", "kind", "prompt", "afterSeconds", "scheduledAt"), (), label)
        _positive(_get(record, "afterSeconds"), f"{label} afterSeconds")
    elif _same(kind, "at"):
        keys_of(record, ("id", "kind", "prompt", "scheduledAt"), (), label)
    elif _same(kind, "every"):
        keys_of(record, ("id", "kind", "prompt", "everySeconds", "scheduledAt"), (), label)
        if _positive(_get(record, "everySeconds"), f"{label} everySeconds") < 300:
            raise _fail(f"{label} everySeconds must be at least 300")
    else:
        raise _fail(f"{label} has unknown schedule kind")
    _schedule_id(_get(record, "id"), f"{label} id")
    _nonempty(_get(record, "prompt"), f"{label} prompt")
    _instant(_get(record, "scheduledAt"), f"{label} scheduledAt")


def _search_body(value: Any, label: str) -> None:
    body = _exact(value, label, ("model", "max_tokens", "messages", "tools"))
    _nonempty(_get(body, "model"), f"{label} model")
    _positive(_get(body, "max_tokens"), f"{label} max_tokens")

    def message(m: Any, mlabel: str) -> None:
        msg = _exact(m, mlabel, ("role", "content"))
        _literal(_get(msg, "role"), ("user",), f"{mlabel} role")

        def text(b: Any, blabel: str) -> None:
            t = _exact(b, blabel, ("type", "text"))
            _literal(_get(t, "type"), ("text",), f"{blabel} type")
            _string(_get(t, "text"), f"{blabel} text")

        if len(_array(_get(msg, "content"), f"{mlabel} content", text)) != 1:
            raise _fail(f"{mlabel} content must contain one text block")

    if len(_array(_get(body, "messages"), f"{label} messages", message)) != 1:
        raise _fail(f"{label} messages must contain one user message")

    def tool(m: Any, mlabel: str) -> None:
        t = _exact(m, mlabel, ("type", "name", "max_uses"))
        _literal(_get(t, "type"), ("web_search_20250305",), f"{mlabel} type")
        _literal(_get(t, "name"), ("web_search",), f"{mlabel} name")
        _positive(_get(t, "max_uses"), f"{mlabel} max_uses")

    if len(_array(_get(body, "tools"), f"{label} tools", tool)) != 1:
        raise _fail(f"{label} tools must contain one web search tool")


# ---------------------------------------------------------------------- the lean pass
# A fast path (``fastpaths.py``): the commonest payloads of a long log are accepted here
# without a label made per member.  Each predicate answers True only where the switch
# above certainly passes (a narrower reading: ints only, exact types, the common block
# and source kinds); anything else, broken or merely unusual, goes to the switch, which
# decides it and words the refusal.

_TEXT_KEYS = frozenset(("type", "text"))
_CALL_KEYS = frozenset(("type", "id", "name", "arguments"))
_RESULT_KEYS = frozenset(("type", "toolCallId", "content", "isError"))
_MESSAGE_KEYS = frozenset(("id", "role", "content", "source"))
_MODEL_KEYS = frozenset(("kind", "provider", "model", "replayState"))
_TOOL_SOURCE_KEYS = frozenset(("kind", "callId"))
_USER_SOURCE_KEYS = frozenset(("kind", "rpcId", "clientTimeZone"))
_PLUGIN_SOURCE_KEYS = frozenset(("kind", "plugin", "form", "sections", "summary"))
_SECTION_KEYS = frozenset(("name", "text"))
_USAGE_KEYS = frozenset(("inputTokens", "outputTokens", "totalTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"))


def _lean_nonempty(value: Any) -> bool:
    return type(value) is str and value != ""


def _lean_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _lean_blocks(value: Any) -> bool:
    """``_blocks`` passes: text, reasoning, tool-call and tool-result blocks only."""
    if type(value) is not list:
        return False
    for block in value:
        if type(block) is not dict:
            return False
        t = block.get("type")
        if type(t) is not str:
            return False
        if t == "text" or t == "reasoning":
            if block.keys() != _TEXT_KEYS or type(block["text"]) is not str:
                return False
        elif t == "tool-call":
            if (block.keys() != _CALL_KEYS or not _lean_nonempty(block["id"]) or not _lean_nonempty(block["name"])
                    or type(block["arguments"]) is not str):
                return False
        elif t == "tool-result":
            keys = block.keys()
            if (not keys <= _RESULT_KEYS or "toolCallId" not in block or "content" not in block
                    or not _lean_nonempty(block["toolCallId"]) or not _lean_blocks(block["content"])
                    or ("isError" in block and type(block["isError"]) is not bool)):
                return False
        else:
            return False
    return True


def _lean_user_source(source: dict[str, Any]) -> bool:
    """``_Checker.source`` passes for a user's message: a ``user`` source, or a plugin's bare or snapshot one."""
    kind = source.get("kind")
    if kind == "user" and type(kind) is str:
        return (source.keys() <= _USER_SOURCE_KEYS and ("rpcId" not in source or _lean_nonempty(source["rpcId"]))
                and ("clientTimeZone" not in source or _lean_nonempty(source["clientTimeZone"])))
    if kind != "plugin" or type(kind) is not str or not source.keys() <= _PLUGIN_SOURCE_KEYS:
        return False
    plugin = source.get("plugin")
    if not _lean_nonempty(plugin) or plugin == "compact":
        return False
    if "form" not in source:
        return True
    sections = source.get("sections")
    return (source["form"] == "snapshot" and type(source["form"]) is str and "summary" not in source
            and type(sections) is list
            and all(type(m) is dict and m.keys() == _SECTION_KEYS and _lean_nonempty(m["name"]) and type(m["text"]) is str
                    for m in sections))


def _lean_message(value: Any, expected: str) -> bool:
    """``_Checker.message`` passes for an ``assistant`` (model source), ``tool`` or ``user`` message."""
    if type(value) is not dict or value.keys() != _MESSAGE_KEYS or not _lean_nonempty(value["id"]):
        return False
    if value["role"] != ("assistant" if expected == "assistant" else "user") or type(value["role"]) is not str:
        return False
    content = value["content"]
    if not _lean_blocks(content):
        return False
    source = value["source"]
    if type(source) is not dict:
        return False
    if expected == "user":
        return _lean_user_source(source)
    if expected == "assistant":
        return (source.get("kind") == "model" and type(source["kind"]) is str and source.keys() <= _MODEL_KEYS
                and "provider" in source and "model" in source
                and _lean_nonempty(source["provider"]) and _lean_nonempty(source["model"]))
    call = source.get("callId")
    return (source.get("kind") == "tool" and type(source["kind"]) is str and source.keys() == _TOOL_SOURCE_KEYS
            and _lean_nonempty(call) and len(content) == 1 and content[0].get("type") == "tool-result"
            and content[0]["toolCallId"] == call)


def _lean_usage(value: Any) -> bool:
    return (type(value) is dict and "inputTokens" in value and "outputTokens" in value and value.keys() <= _USAGE_KEYS
            and all(_lean_count(v) for v in value.values()))


def _lean_passes(event: dict[str, Any]) -> bool:
    """The switch certainly passes ``event`` (False: it has to decide)."""
    data = event.get("data")
    if type(data) is not dict:
        return False
    t = event.get("type")
    if t == "user/message":
        return _lean_message(data, "user")
    if t == "agent/inbox/spliced":
        target = data.get("target")
        return ((target == "next-turn" or target == "next-step") and type(target) is str and _lean_count(data.get("start"))
                and ("removedCount" not in data or _lean_count(data["removedCount"])) and "outcome" not in data
                and type(data.get("inserted")) is list and all(_lean_message(m, "user") for m in data["inserted"]))
    if not (_lean_count(data.get("turn")) and _lean_count(data.get("step"))):
        return False
    if t == "assistant/message":
        return (_lean_message(data.get("message"), "assistant") and ("usage" not in data or _lean_usage(data["usage"]))
                and ("interrupted" not in data or data["interrupted"] is True))
    if t == "tool/result":
        return _lean_message(data.get("message"), "tool") and "error" not in data
    if t == "tool/call":
        return (_lean_nonempty(data.get("callId")) and _lean_nonempty(data.get("name"))
                and type(data.get("arguments")) is str)
    return t == "step/start" or t == "step/end"


def assert_payload_semantics(event: dict[str, Any], version: int, *, projection: bool = False) -> None:
    """dsh's ``assertReleasedPayloadSemantics(event, version)``; raises a plain :class:`StageRefusal`.

    ``event`` is a released v0..v2 event whose exact member sets were checked already.
    With the fast paths the commonest payloads are accepted by a lean pass first
    (:func:`_lean_passes`); the rest, and every payload in exact mode, go through dsh's switch.
    """
    if fastpaths.fast() and _lean_passes(event):
        return
    try:
        _Checker(version, projection).check(event)
    except StageRefusal as refusal:
        refusal.with_context(seq=event.get("seq") if is_count(event.get("seq")) else None)
        raise
