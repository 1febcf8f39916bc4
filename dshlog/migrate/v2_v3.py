"""Edge v2 → v3 (``@deepseek-ai/dsh-session-format-v2-to-v3``), FORMAT §4.4.

The system prompt moves from ``request/header.data.header.system`` onto the
surface: an empty head ``system/message`` right after the first ``step/start``
and a replacement of the head wherever the prompt changes.  Those insertions
shift seqs, so references are remapped; replace objects get their v3 spelling.
State: the current head, the current prompt, the open step and a run map.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from ..protocol.jsjson import dumps
from ..protocol.values import is_count
from ..protocol.vocabulary import (
    CODE_DISPATCH_RENAMES,
    PTC_DISPATCH_TYPES,
    RELEASED_V0_PAYLOADS,
    SURFACE_TYPES_V0,
    SYSTEM_PROMPT_PLUGIN,
    V1_V2_MADE_TYPES,
    V2_TYPES,
    VERSION_BLIND_PAYLOAD_TYPES,
)
from ._common import SeqMap, StageRefusal, UnsupportedStageRefusal, record
from .payload import assert_payload_semantics

NAME: Final = "@deepseek-ai/dsh-session-format-v2-to-v3"
SYNTHETIC_PREFIX: Final = "v2-to-v3-system-"
#: The types whose payload check a v0 log's event has passed already, unchanged, when it
#: reaches this edge (see :attr:`V2ToV3.v0_checked`).
_CHECKED_AT_V0: Final = VERSION_BLIND_PAYLOAD_TYPES - V1_V2_MADE_TYPES



def synthetic_id(session_id: Any, anchor_seq: int, anchor_type: str) -> str:
    """``v2-to-v3-system-`` + SHA-256 hex of the JS JSON text of the anchor tuple."""
    text = dumps(["session-format-v2-to-v3", session_id, anchor_seq, anchor_type])
    return SYNTHETIC_PREFIX + hashlib.sha256(text).hexdigest()


def _rename_code_source(source: Any) -> Any:
    if isinstance(source, dict) and source.get("kind") == "plugin" and source.get("plugin") == "tools-code-mode":
        return {**source, "plugin": "tools-ptc"}
    return source


class V2ToV3:
    """Streaming v2 → v3 stage."""

    name = NAME
    source_version = 2
    target_version = 3

    def __init__(self, source_header: dict[str, Any], *, projection: bool = False) -> None:
        self._projection = projection
        self._sid = source_header.get("id")
        self._seeded = bool(source_header.get("isSeeded"))
        self._parent = "parentSession" in source_header
        self._map = SeqMap()
        self._next = 0
        self._count = 0
        self._head: int | None = None  # target seq of the current system head
        self._prompt = ""
        self._step: tuple[Any, Any] | None = None  # open step (turn, step)
        self._seen_step = False
        self._synthetic: set[str] = set()
        self._seen_synthetic_like: set[str] = set()  # message ids that look synthetic
        self._marker_src: int | None = None
        self._marker_tgt: int | None = None
        self._foreign: list[int] = []  # source seqs of foreign generation-2 delivery markers
        #: set by the chain (fast paths) when the log is v0: the v0->v1 edge ran dsh's payload
        #: check on every event but the chunks, v1->v2 passes the members it reads on unchanged
        #: (it rewrites seq references only, which no version-blind check reads), so an event of
        #: a version-blind type that v1->v2 did not write itself passes here too
        self.v0_checked = False
        self.cut: int | None = None
        self.source_cut: int | None = None

    @staticmethod
    def header(h: dict[str, Any]) -> dict[str, Any]:
        if h.get("version") != 2:
            raise StageRefusal("expected format v2 header")
        out = dict(h)
        out["version"] = 3
        if out.get("agentPreset") == "code":
            out["agentPreset"] = "ptc"
        return out

    # ------------------------------------------------------------------------------
    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seq = event.get("seq")
        if seq != self._count:
            raise StageRefusal("format v2 source events must be dense", seq=self._count)
        self._count += 1
        t = event.get("type")
        self._admit(event)
        data = record(event.get("data"))
        self._watch_ids(t, data)

        if t in SURFACE_TYPES_V0 and not self._seen_step:
            raise UnsupportedStageRefusal("format v2 surface before first step cannot acquire a system head without "
                               "changing chronology", seq=seq)
        if t == "request/header":
            self._prompt_change(event, data, out)
        ev = self._transform(event, data)
        self._emit(seq, ev, out)
        if t == "step/start":
            self._step = (data.get("turn"), data.get("step"))
            if not self._seen_step:
                self._seen_step = True
                self._head = self._next
                self._emit(None, self._system(event, seq, "step/start", [], None), out)
        elif t == "step/end":
            self._step = None
        elif t == "session/end-seed" and data.get("inherited") is True:
            self._marker_src, self._marker_tgt = seq, self._map.get(seq)
        return out

    def finish(self) -> list[dict[str, Any]]:
        if self._seeded and self._marker_tgt is None:
            raise StageRefusal("released v2 seeded Session lacks an inherited end-seed marker")
        if not self._seeded and self._marker_tgt is not None:
            raise StageRefusal("released v2 unseeded Session contains an inherited end-seed marker")
        cut_src = self._marker_src if self._marker_src is not None else 0
        for s in self._foreign:
            if not (self._parent and s < cut_src):
                raise StageRefusal("current-generation delivery marker names the wrong Session", seq=s)
        self.cut = self._marker_tgt if self._marker_tgt is not None else 0
        return []

    # admission --------------------------------------------------------------------------
    def _admit(self, event: dict[str, Any]) -> None:
        t = event.get("type")
        seq = event.get("seq")
        if t in PTC_DISPATCH_TYPES or t not in V2_TYPES:
            raise UnsupportedStageRefusal(f"format v2 to v3 cannot safely transform unclassified event {t}", seq=seq)
        surface = t in SURFACE_TYPES_V0
        for k in event:
            if k in ("type", "seq", "time", "data", "ignorable"):
                continue
            if surface and k in ("sourceEventSeqs", "surfaceOp"):
                continue
            raise StageRefusal(f"format v2 event {seq} has unexpected member {k}", seq=seq)
        if surface and "surfaceOp" not in event:
            raise StageRefusal(f"{t} requires a surfaceOp marker", seq=seq)
        if t == "session-log-deepseek/delivery-accepted":
            data = record(event.get("data"))
            gen = data.get("sessionFormatVersion", 0)
            if gen == 3:
                raise StageRefusal("format v2 delivery marker claims target format v3", seq=seq)
            if gen == 2 and data.get("sessionId") != self._sid:
                self._foreign.append(seq)  # type: ignore[arg-type]  # the envelope rules ran first: seq is a count here
        if t != "assistant/attempt" and t in RELEASED_V0_PAYLOADS and not (self.v0_checked and t in _CHECKED_AT_V0):
            assert_payload_semantics(event, 2, projection=self._projection)

    def _watch_ids(self, t: Any, data: dict[str, Any]) -> None:
        """Remember message ids that could collide with a synthetic id (either order)."""
        ids: list[Any] = []
        if t == "user/message":
            ids.append(data.get("id"))
        elif t in ("assistant/message", "tool/result"):
            ids.append(record(data.get("message")).get("id"))
        elif t == "agent/inbox/spliced" and isinstance(data.get("inserted"), list):
            ids.extend(record(m).get("id") for m in data["inserted"])
        elif t == "session/title-llm-request" and isinstance(data.get("messages"), list):
            ids.extend(record(m).get("id") for m in data["messages"])
        for mid in ids:
            if isinstance(mid, str) and mid.startswith(SYNTHETIC_PREFIX):
                if mid in self._synthetic:
                    raise UnsupportedStageRefusal(f"format v2 message id {mid} collides with a synthetic system message id")
                self._seen_synthetic_like.add(mid)

    # transformations --------------------------------------------------------------------
    def _system(self, anchor: dict[str, Any], anchor_seq: int, anchor_type: str, content: list[Any],
                replaces: int | None) -> dict[str, Any]:
        mid = synthetic_id(self._sid, anchor_seq, anchor_type)
        if mid in self._seen_synthetic_like or mid in self._synthetic:
            raise UnsupportedStageRefusal(f"format v2 message id {mid} collides with a synthetic system message id")
        self._synthetic.add(mid)
        turn, step = self._step if self._step is not None else (None, None)
        ev: dict[str, Any] = {
            "type": "system/message",
            "seq": -1,
            "time": anchor.get("time"),
            "data": {"turn": turn, "step": step, "message": {
                "id": mid, "role": "system", "source": {"kind": "plugin", "plugin": SYSTEM_PROMPT_PLUGIN},
                "content": content}},
        }
        if replaces is None:
            ev["surfaceOp"] = "append"
        else:
            ev["surfaceOp"] = {"op": "replace", "startSeq": replaces, "endSeq": replaces}
            ev["sourceEventSeqs"] = [replaces]
        return ev

    def _prompt_change(self, event: dict[str, Any], data: dict[str, Any], out: list[dict[str, Any]]) -> None:
        header = record(data.get("header"))
        system = header.get("system")
        prompt = system if isinstance(system, str) else ""
        if prompt == self._prompt:
            return
        if self._step is None or self._head is None:
            raise UnsupportedStageRefusal("format v2 changed request prompt outside an open step cannot retain source "
                               "chronology", seq=event.get("seq"))
        content = [{"type": "text", "text": prompt}] if prompt else []
        head = self._next
        self._emit(None, self._system(event, event["seq"], "request/header", content, self._head), out)
        self._head = head
        self._prompt = prompt

    def _transform(self, event: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        t = event["type"]
        ev = event
        if t in CODE_DISPATCH_RENAMES:
            ev = {**ev, "type": CODE_DISPATCH_RENAMES[t]}
        elif t == "request/header" and isinstance(data.get("header"), dict):
            header = {k: v for k, v in data["header"].items()
                      if not (k == "system" or (k == "tools" and v == [])
                              or (k == "adapterDefaults" and v == {}))}
            ev = {**ev, "data": {**data, "header": header}}
        elif t == "agent-preset/selected" and data.get("agentPreset") == "code":
            ev = {**ev, "data": {**data, "agentPreset": "ptc"}}
        elif t == "user/message" and "source" in data:
            src = _rename_code_source(data["source"])
            if src is not data["source"]:
                ev = {**ev, "data": {**data, "source": src}}
        elif t == "agent/inbox/spliced" and isinstance(data.get("inserted"), list):
            ins = [{**m, "source": _rename_code_source(m["source"])} if isinstance(m, dict) and "source" in m else m
                   for m in data["inserted"]]
            ev = {**ev, "data": {**data, "inserted": ins}}
        elif t == "session/title-llm-request" and isinstance(data.get("messages"), list):
            msgs = [{**m, "source": _rename_code_source(m["source"])} if isinstance(m, dict) and "source" in m else m
                    for m in data["messages"]]
            ev = {**ev, "data": {**data, "messages": msgs}}
        return ev

    # renumbering -------------------------------------------------------------------------
    def _one(self, value: Any, src: int) -> int:
        if not is_count(value) or value >= src:
            raise StageRefusal("reference must name an earlier source event", seq=src)
        mapped = self._map.get(value)
        if mapped is None:
            raise StageRefusal("reference must name an earlier source event", seq=src)
        return mapped

    def _emit(self, src: int | None, ev: dict[str, Any], out: list[dict[str, Any]]) -> None:
        target = self._next
        self._next += 1
        new = dict(ev)
        new["seq"] = target
        if src is not None:
            if "sourceEventSeqs" in ev and isinstance(ev["sourceEventSeqs"], list):
                new["sourceEventSeqs"] = [self._one(v, src) for v in ev["sourceEventSeqs"]]
            op = ev.get("surfaceOp")
            if isinstance(op, dict):
                new["surfaceOp"] = {"op": "replace", "startSeq": self._one(op.get("start"), src),
                                    "endSeq": self._one(op.get("end"), src)}
            new["data"] = self._remap_data(ev.get("type"), ev.get("data"), src)
            self._map.record(src, target)
        out.append(new)

    def _remap_data(self, t: Any, data: Any, src: int) -> Any:
        if not isinstance(data, dict):
            return data
        if t == "command/done" and "sourceEventSeq" in data:
            return {**data, "sourceEventSeq": self._one(data["sourceEventSeq"], src)}
        if t in ("compaction/prune", "compaction/summary"):
            new = dict(data)
            rng = data.get("shadowedRange")
            if isinstance(rng, dict):
                new["shadowedRange"] = {**rng, "start": self._one(rng.get("start"), src),
                                        "end": self._one(rng.get("end"), src)}
            if isinstance(data.get("shadowedSeqs"), list):
                new["shadowedSeqs"] = [self._one(v, src) for v in data["shadowedSeqs"]]
            return new
        if t in ("session/title", "session/title-llm-request") and isinstance(data.get("messageSeqs"), list):
            return {**data, "messageSeqs": [self._one(v, src) for v in data["messageSeqs"]]}
        return data
