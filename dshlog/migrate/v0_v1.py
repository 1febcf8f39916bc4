"""Edge v0 → v1 (``@deepseek-ai/dsh-session-format-v0-to-v1``), FORMAT §4.2.

v1 has the v0 physical layout, so the edge is an identity on well-formed
events; its real work is the closed list of *legacy normalisations* that lift
shapes written by early v0 builds into the released v0 shape, followed by the
frozen-inventory payload check.  Every other edge assumes that shape.
"""

from __future__ import annotations

from typing import Any, Final

from ..protocol.jsjson import dumps, js_string, stringify
from ..protocol.texts import unknown_event_type
from ..protocol.values import is_count
from ..protocol.vocabulary import (
    REFUSED_LEGACY_TYPES,
    COMPACT_RENAMES,
    RELEASED_V0_PAYLOADS,
    SURFACE_TYPES_V0,
    V0_V1_COMPACTION_STEP_TYPES,
    V0_V1_EARLY_STEP_TYPES,
)
from ._common import SeqStrings, StageRefusal, UnsupportedStageRefusal, record
from .payload import assert_payload_semantics

NAME: Final = "@deepseek-ai/dsh-session-format-v0-to-v1"


_LEGACY_SOURCE_KEY: Final = "provenance"
#: Envelope members an ``assistant/chunk`` may carry (check_v01_event's rule for non-surface events).
_CHUNK_ENVELOPE: Final = frozenset(("type", "seq", "time", "data", "ignorable"))


def _keys(obj: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...], label: str) -> None:
    """dsh's exact-member rule: no unknown member, then every required one."""
    allowed = set(required) | set(optional)
    for key in obj:
        if key not in allowed:
            raise StageRefusal(f"{label} has unexpected member {stringify(key)}")
    for key in required:
        if key not in obj:
            raise StageRefusal(f"{label} lacks required member {stringify(key)}")


def _obj(value: Any, label: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StageRefusal(f"{label} must be a JSON object")
    return value


def check_v01_event(event: dict[str, Any], version: int, *, projection: bool = False) -> None:
    """Frozen released v0/v1 checks shared by the v0→v1 and v1→v2 stages.

    Type inventory (refused even when ignorable), envelope members, exact
    top-level payload members, then dsh's payload semantics
    (:mod:`~dshlog.migrate.payload`).  ``assistant/chunk`` payloads are deferred like dsh does.
    """
    type_ = event.get("type")
    seq = event.get("seq")
    if type_ not in RELEASED_V0_PAYLOADS:
        if version == 0:
            raise UnsupportedStageRefusal(
                f"format v0 contains unknown historical event type {stringify(str(type_))} at seq {seq}; "
                "migration refuses unknown historical events even when ignorable",
                seq=seq,
            )
        raise UnsupportedStageRefusal(unknown_event_type(1, stringify(str(type_)), seq), seq=seq)
    surface = type_ in SURFACE_TYPES_V0
    for key in event:
        if key in ("type", "seq", "time", "data", "ignorable"):
            continue
        if surface and key in ("sourceEventSeqs", "surfaceOp"):
            continue
        raise StageRefusal(f"Session event {seq} has unexpected member {stringify(key)}", seq=seq)
    if type_ == "assistant/chunk":
        return
    data = _obj(event.get("data"), f"{type_} {seq} data")
    if type_ == "subagent/descriptor" and not (is_count(data.get("version")) and data["version"] == 3):
        if not is_count(data.get("version")):
            raise StageRefusal(f"{type_} {seq} version must be a non-negative safe integer", seq=seq)
        if version == 0:
            raise UnsupportedStageRefusal(f"{type_} {seq} uses unsupported descriptor version {js_string(data['version'])}",
                                          seq=seq)
        return  # a v1 descriptor of another version: dsh checks nothing more
    required, optional = RELEASED_V0_PAYLOADS[type_]
    if type_ == "session-log-deepseek/delivery-accepted" and version >= 1:
        optional = optional + ("sessionFormatVersion",)
    _keys(data, required, optional, f"{type_} {seq} data")
    assert_payload_semantics(event, version, projection=projection)


class V0ToV1:
    """Streaming v0 → v1 stage: legacy normalisation plus frozen-inventory checks."""

    name = NAME
    source_version = 0
    target_version = 1

    def __init__(self, source_header: dict[str, Any], *, projection: bool = False) -> None:
        self._sid: str = str(source_header.get("id", ""))
        self._parent = "parentSession" in source_header
        seed = source_header.get("seedLength")
        self._cut_src: int = seed if is_count(seed) else 0
        self._projection = projection
        # seq -> message id, needed only when a legacy tool/result replacement
        # inherits the id of the message it replaces.
        self._message_ids = SeqStrings()
        self._retry_ids: dict[bytes, str] = {}
        self._compaction_id: str | None = None
        self.cut: int | None = None
        self.source_cut: int | None = None

    # header ---------------------------------------------------------------------------
    @staticmethod
    def header(h: dict[str, Any]) -> dict[str, Any]:
        if h.get("version") != 0:
            raise StageRefusal("expected format v0 header")
        out = dict(h)
        out["version"] = 1
        return out

    # events ---------------------------------------------------------------------------
    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        ev = event
        t = ev.get("type")
        if t == "assistant/chunk" and _CHUNK_ENVELOPE.issuperset(ev):
            # most v0 events: no normalisation applies and the payload check is deferred,
            # so this is check_v01_event's whole verdict on a chunk
            return [ev]
        seq = ev.get("seq")
        if t in COMPACT_RENAMES:
            ev = {**ev, "type": COMPACT_RENAMES[t]}
            t = ev["type"]
        if t in REFUSED_LEGACY_TYPES:
            raise UnsupportedStageRefusal(f"session {stringify(self._sid)} contains unsupported legacy {t} event at seq {seq}",
                               seq=seq)
        if t == "request/header" and record(ev.get("data")).get("reason") == "fallback":
            raise UnsupportedStageRefusal(
                f'session {stringify(self._sid)} contains unsupported request/header reason "fallback" at seq {seq}',
                seq=seq)
        if t != "assistant/chunk" and t in RELEASED_V0_PAYLOADS or t == "steering/message":
            ev = self._normalise(ev)
        check_v01_event(ev, 0, projection=self._projection)
        self._remember_id(ev)
        self._delivery_guard(ev)
        return [ev]

    def feed_run(self, run: Any) -> list[Any] | None:
        """A compact chunk run (FORMAT §4.2) passes through untouched: chunk payload checks are deferred."""
        return [run]

    def finish(self) -> list[dict[str, Any]]:
        self.cut = self._cut_src
        return []

    # normalisations (FORMAT §4.2, in dsh's order) -----------------------------------
    def _normalise(self, ev: dict[str, Any]) -> dict[str, Any]:
        # each step acts only on its own types; skipping the others by type is the same
        # result without seven calls per event (only _steering changes the type)
        if ev["type"] in V0_V1_EARLY_STEP_TYPES:
            ev = self._turn_start(ev)
            ev = self._turn_end(ev)
            ev = self._request_header(ev)
            ev = self._steering(ev)
            ev = self._retry(ev)
        t = ev["type"]
        if t in V0_V1_COMPACTION_STEP_TYPES:
            ev = self._compaction(ev)
        if t in SURFACE_TYPES_V0:
            ev = self._message(ev)
        return ev

    def _malformed(self, type_: str, seq: Any) -> StageRefusal:
        return StageRefusal(f"session {stringify(self._sid)} contains malformed pre-react-loop {type_} at seq {seq}",
                            seq=seq)

    def _turn_start(self, ev: dict[str, Any]) -> dict[str, Any]:
        if ev["type"] != "turn/start":
            return ev
        seq = ev.get("seq")
        data = _obj(ev.get("data"), f"turn/start {seq} data")
        if "trigger" not in data:
            return ev
        _keys(data, ("turn", "trigger"), (), f"turn/start {seq} data")
        turn = data["turn"]
        trigger = _obj(data["trigger"], f"turn/start {seq} trigger")
        if not is_count(turn) or turn < 1 or not isinstance(trigger.get("kind"), str) or not trigger["kind"]:
            raise self._malformed("turn/start", seq)
        return {**ev, "data": {"turn": turn}}

    def _turn_end(self, ev: dict[str, Any]) -> dict[str, Any]:
        if ev["type"] != "turn/end":
            return ev
        seq = ev.get("seq")
        data = _obj(ev.get("data"), f"turn/end {seq} data")
        _keys(data, ("turn", "reason"), (), f"turn/end {seq} data")
        if not is_count(data["turn"]) or data["turn"] < 1:
            raise self._malformed("turn/end", seq)
        reason = _obj(data["reason"], f"turn/end {seq} reason")
        kind = reason.get("kind")
        if not isinstance(kind, str):
            raise self._malformed("turn/end", seq)
        if kind in ("completed", "blocked", "max-tokens", "interrupted"):
            _keys(reason, ("kind",), (), f"turn/end {seq} reason")
            return ev
        if kind == "aborted":
            if "reason" in reason:
                return ev
            _keys(reason, ("kind",), (), f"turn/end {seq} reason")
            new: dict[str, Any] = {"kind": "aborted", "reason": {"kind": "legacy"}}
        elif kind == "disposed":
            _keys(reason, ("kind",), (), f"turn/end {seq} reason")
            new = {"kind": "aborted", "reason": {"kind": "disposed"}}
        elif kind == "error":
            if "error" in reason:
                return ev
            if not is_count(reason.get("step")):
                raise StageRefusal(f"turn/end {seq} error step must be a non-negative safe integer", seq=seq)
            if "failure" in reason:
                _keys(reason, ("kind", "step", "failure"), (), f"turn/end {seq} reason")
                failure = _obj(reason["failure"], f"turn/end {seq} failure")
                _keys(failure, ("message", "code"), ("status", "providerRetryAfterMs", "requestId"),
                      f"turn/end {seq} failure")
                if not isinstance(failure["message"], str) or not isinstance(failure["code"], str):
                    raise self._malformed("turn/end", seq)
                new = {"kind": "error", "error": failure}
            else:
                _keys(reason, ("kind", "step", "message"), ("code",), f"turn/end {seq} reason")
                code = reason.get("code")
                if not isinstance(reason["message"], str) or (code is not None and not isinstance(code, str)):
                    raise self._malformed("turn/end", seq)
                new = {"kind": "error", "error": {"message": reason["message"],
                                                  "code": code if isinstance(code, str) else "UNKNOWN"}}
        else:
            return ev
        return {**ev, "data": {**data, "reason": new}}

    def _request_header(self, ev: dict[str, Any]) -> dict[str, Any]:
        if ev["type"] != "request/header":
            return ev
        seq = ev.get("seq")
        data = _obj(ev.get("data"), f"request/header {seq} data")
        header = _obj(data.get("header"), f"request/header {seq} header")
        if "messagePrefix" not in header:
            return ev
        if not isinstance(header["messagePrefix"], list):
            raise StageRefusal(
                f"session {stringify(self._sid)} contains malformed request/header messagePrefix at seq {seq}", seq=seq)
        new_header = {k: v for k, v in header.items() if k != "messagePrefix"}
        return {**ev, "data": {**data, "header": new_header}}

    def _steering(self, ev: dict[str, Any]) -> dict[str, Any]:
        if ev["type"] != "steering/message":
            return ev
        seq = ev.get("seq")
        data = _obj(ev.get("data"), f"steering/message {seq} data")
        if "message" in data:
            _keys(data, ("turn", "message"), (), f"steering/message {seq} data")
            if not is_count(data["turn"]):
                raise StageRefusal(f"steering/message {seq} turn must be a non-negative safe integer", seq=seq)
            return {**ev, "type": "user/message", "data": data["message"]}
        _keys(data, ("turn", "content", "source"), (), f"steering/message {seq} data")
        if not is_count(data["turn"]):
            raise StageRefusal(f"steering/message {seq} turn must be a non-negative safe integer", seq=seq)
        message = {k: v for k, v in data.items() if k != "turn"}
        message["id"] = f"legacy-message:{self._sid}:{seq}"
        message["role"] = "user"
        return {**ev, "type": "user/message", "data": message}

    def _retry(self, ev: dict[str, Any]) -> dict[str, Any]:
        if ev["type"] != "llm/retry":
            return ev
        seq = ev.get("seq")
        data = _obj(ev.get("data"), f"llm/retry {seq} data")
        chain = b"\0".join(dumps(data.get(k)) if k in data else b"undefined"
                           for k in ("turn", "step", "provider", "policyKey"))
        rid = data.get("retryId")
        if isinstance(rid, str) and rid:
            self._retry_ids[chain] = rid
            return ev
        if "retryId" in data:
            return ev
        new_id = self._retry_ids.get(chain, f"legacy-retry:{self._sid}:{seq}")
        self._retry_ids[chain] = new_id
        return {**ev, "data": {**data, "retryId": new_id}}

    def _compaction(self, ev: dict[str, Any]) -> dict[str, Any]:
        t = ev["type"]
        seq = ev.get("seq")
        if t == "session/end-seed":
            self._compaction_id = None
            return ev
        if t == "compaction/start":
            data = _obj(ev.get("data"), f"compaction/start {seq} data")
            existing = data.get("compactionId")
            if isinstance(existing, str) and existing:
                self._compaction_id = existing
                return ev
            if "compactionId" in data:
                return ev
            new_id = f"legacy-compaction:{self._sid}:{seq}"
            self._compaction_id = new_id
            return {**ev, "data": {**data, "compactionId": new_id}}
        cid = self._compaction_id
        if cid is None:
            return ev
        if t in ("compaction/summary", "compaction/end"):
            data = _obj(ev.get("data"), f"{t} {seq} data")
            if t == "compaction/end":
                self._compaction_id = None
            if "compactionId" in data:
                return ev
            return {**ev, "data": {**data, "compactionId": cid}}
        if t != "user/message":
            return ev
        data = _obj(ev.get("data"), f"user/message {seq} data")
        source = data.get("source")
        if (not isinstance(source, dict) or source.get("kind") != "plugin" or source.get("plugin") != "compact"
                or "compactionId" in source):
            return ev
        return {**ev, "data": {**data, "source": {**source, "compactionId": cid}}}

    def _message(self, ev: dict[str, Any]) -> dict[str, Any]:
        t = ev["type"]
        seq = ev.get("seq")
        if t not in SURFACE_TYPES_V0:
            return ev
        data = _obj(ev.get("data"), f"{t} {seq} data")
        legacy_id = f"legacy-message:{self._sid}:{seq}"
        if t == "user/message":
            if "id" in data or "role" in data or "message" in data or "content" not in data or "source" not in data:
                return ev
            return {**ev, "data": {**data, "id": legacy_id, "role": "user"}}
        if t == "assistant/message":
            if "message" in data or "content" not in data or _LEGACY_SOURCE_KEY not in data:
                return ev
            rest = {k: v for k, v in data.items() if k not in ("content", _LEGACY_SOURCE_KEY)}
            source = dict(_obj(data[_LEGACY_SOURCE_KEY], f"assistant/message {seq} legacy source"))
            source["kind"] = "model"
            rest["message"] = {"id": legacy_id, "role": "assistant", "content": data["content"], "source": source}
            return {**ev, "data": rest}
        # tool/result
        if "message" in data or "callId" not in data or "content" not in data or "isError" not in data:
            return ev
        call_id, is_error = data["callId"], data["isError"]
        if not isinstance(call_id, str) or not isinstance(is_error, bool):
            return ev
        rest = {k: v for k, v in data.items() if k not in ("callId", "content", "isError")}
        op = ev.get("surfaceOp")
        if isinstance(op, dict) and op.get("op") == "replace":
            message_id = self._message_ids.get(op.get("start"))
            if message_id is None:
                raise StageRefusal(f"tool/result {seq} replacement cites a message without identity", seq=seq)
        else:
            message_id = legacy_id
        rest["message"] = {
            "id": message_id,
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": call_id, "content": data["content"], "isError": is_error}],
            "source": {"kind": "tool", "callId": call_id},
        }
        return {**ev, "data": rest}

    def _remember_id(self, ev: dict[str, Any]) -> None:
        t = ev.get("type")
        if t not in SURFACE_TYPES_V0:
            return
        data = record(ev.get("data"))
        message = data if t == "user/message" else record(data.get("message"))
        mid = message.get("id")
        if isinstance(mid, str) and isinstance(ev.get("seq"), int):
            self._message_ids[ev["seq"]] = mid

    def _delivery_guard(self, ev: dict[str, Any]) -> None:
        if ev.get("type") != "session-log-deepseek/delivery-accepted":
            return
        data = record(ev.get("data"))
        generation = data.get("sessionFormatVersion", 0)
        seq = ev.get("seq")
        inherited = self._parent and isinstance(seq, int) and seq < self._cut_src
        if generation == 0 and not inherited and data.get("sessionId") != self._sid:
            raise StageRefusal("current-generation delivery marker names the wrong Session", seq=seq)
