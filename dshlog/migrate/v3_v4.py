"""Edge v3 → v4 (``@deepseek-ai/dsh-session-format-v3-to-v4``), released behaviour, FORMAT §4.5.

Tool results become first-class ``role:"tool"`` messages, ``kind:"plugin"``
message sources become producer-owned kinds, unknown ignorable events and
content tags are namespaced ``plugin:``, a restarted turn gets its missing
``interrupted`` close, and at the end the parent's ``subagent/catalog`` is
completed from explicit child facts.  Only seqs move (after insertions), so a
run map keeps the reference remapping bounded.
"""

from __future__ import annotations

from typing import Any, Final
from collections.abc import Iterable

from ..protocol.jsjson import js_string, stringify
from ..protocol.texts import unknown_event_type
from ..protocol.values import is_count
from ..protocol.vocabulary import PLUGIN_PREFIX, SYSTEM_PROMPT_PLUGIN, V3_TYPES, WRAPPED_MESSAGE_TYPES
from ._common import SeqMap, StageRefusal, UnsupportedStageRefusal, record

NAME: Final = "@deepseek-ai/dsh-session-format-v3-to-v4"
NEED_FACTS: Final = ("V3 catalog migration requires explicit historical child facts, including an empty array for "
                     "a parent without children")

#: The system-prompt producers upstream's edge knows: its own package alone.  A fork
#: build's edge knows its own spelling instead (``@x1a0f3n9/dsh-system-prompt``...);
#: ``system_prompt_plugins`` adds such names (README: ``--system-prompt-plugin``).
UPSTREAM_SYSTEM_PROMPT_PLUGINS: Final = frozenset({SYSTEM_PROMPT_PLUGIN})
_RENAMED: Final = {
    "compact": "compact-checkpoint",
    "tools-code-mode": "ptc-mode",
    "tools-ptc": "ptc-mode",
    "dsh-compaction-basic": "compact-basic",
}
_SAME_NAME: Final = frozenset({
    "agent-instructions", "session-reference", "team-message", "goal", "skill-invocation", "skill-catalog",
    "coordinator", "subagent-report", "subagent-settled", "webhook", "agent-message", "model-selection",
    "plan-mode", "time-context", "tmux-context", "user-approval", "repeat-tool-reminder", "tool-cordis",
    "cordis-host-runner", "tool-goal", "tool-jobs", "hooks-codex", "hooks-claude-code", "schedule",
    "dsh-session-title-llm",
})
_BLOCK_KINDS: Final = frozenset({"text", "reasoning", "image", "file", "tool-call", "tool-result"})


def producer_kind(plugin: str, role: Any, system_prompt_plugins: frozenset[str] = UPSTREAM_SYSTEM_PROMPT_PLUGINS) -> str:
    """The v4 source ``kind`` of a v3 plugin source (FORMAT §4.5 step 10).

    ``system_prompt_plugins``: the package names taken for dsh's system-prompt
    producer (upstream's own by default; any other name becomes ``plugin:<name>``).
    """
    if plugin in system_prompt_plugins:
        return "system-prompt" if role == "system" else "runtime-context"
    if plugin in _RENAMED:
        return _RENAMED[plugin]
    if plugin in _SAME_NAME:
        return plugin
    return PLUGIN_PREFIX + plugin


def rewrite_source(source: dict[str, Any], seq: int, role: Any,
                   system_prompt_plugins: frozenset[str] = UPSTREAM_SYSTEM_PROMPT_PLUGINS) -> dict[str, Any]:
    """Direct sources stay verbatim; plugin sources lose ``plugin`` and get a producer kind in place."""
    kind = source.get("kind")
    if not isinstance(kind, str) or not kind:
        raise StageRefusal(f"message source at seq {seq} requires a nonempty kind", seq=seq)
    if kind != "plugin":
        return source
    plugin = source.get("plugin")
    if not isinstance(plugin, str):
        raise StageRefusal(f"plugin source at seq {seq} is not canonical: plugin requires a string", seq=seq)
    new_kind = producer_kind(plugin, role, system_prompt_plugins)
    if len(source) == 2:
        return {"kind": new_kind}
    return {k: (new_kind if k == "kind" else v) for k, v in source.items() if k != "plugin"}


def _message(message: Any, seq: int, system_prompt_plugins: frozenset[str]) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("source"), dict):
        return message
    src = rewrite_source(message["source"], seq, message.get("role"), system_prompt_plugins)
    return message if src is message["source"] else {**message, "source": src}


def _tag_blocks(blocks: Any, seq: int) -> Any:
    """Rename unknown content block kinds to ``plugin:<type>`` (other fields unchanged)."""
    if not isinstance(blocks, list):
        return blocks
    out = []
    changed = False
    for b in blocks:
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            raise StageRefusal(f"format v3 content block at seq {seq} requires a string type", seq=seq)
        if b["type"] not in _BLOCK_KINDS:
            b = {**b, "type": PLUGIN_PREFIX + b["type"]}
            changed = True
        out.append(b)
    return out if changed else blocks


def _tag_message(message: Any, seq: int) -> Any:
    if isinstance(message, dict) and "content" in message:
        c = _tag_blocks(message["content"], seq)
        if c is not message["content"]:
            return {**message, "content": c}
    return message


def _tag_stream(stream: Any) -> Any:
    if not isinstance(stream, list):
        return stream
    out = []
    changed = False
    for rec in stream:
        if isinstance(rec, dict) and rec.get("type") == "chunk" and isinstance(rec.get("chunk"), dict):
            chunk = rec["chunk"]
            if chunk.get("type") == "block-end" and isinstance(chunk.get("block"), dict):
                bt = chunk["block"].get("type")
                if isinstance(bt, str) and bt not in _BLOCK_KINDS:
                    rec = {**rec, "chunk": {**chunk, "block": {**chunk["block"], "type": PLUGIN_PREFIX + bt}}}
                    changed = True
            elif chunk.get("type") == "block-start":
                bt = chunk.get("blockType")
                if isinstance(bt, str) and bt not in _BLOCK_KINDS:
                    rec = {**rec, "chunk": {**chunk, "blockType": PLUGIN_PREFIX + bt}}
                    changed = True
        out.append(rec)
    return out if changed else stream


def lift_tool_result(message: dict[str, Any], seq: int) -> dict[str, Any]:
    """User-role tool result → ``role:"tool"`` message with dsh's exact key order."""
    bad = f"format v3 tool/result at seq {seq} requires exactly one tool-result wrapper matching its tool source"
    source = message.get("source")
    content = message.get("content")
    mid = message.get("id")
    if (not isinstance(mid, str) or not mid or not isinstance(source, dict) or set(source) != {"kind", "callId"}
            or source.get("kind") != "tool" or not isinstance(source.get("callId"), str) or not source["callId"]
            or not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict)
            or content[0].get("type") != "tool-result" or content[0].get("toolCallId") != source["callId"]):
        raise StageRefusal(bad, seq=seq)
    wrapper = content[0]
    if "isError" in wrapper and not isinstance(wrapper["isError"], bool):
        raise StageRefusal(bad, seq=seq)
    inner = wrapper.get("content")
    if not isinstance(inner, list):
        raise StageRefusal(bad, seq=seq)
    if any(isinstance(b, dict) and b.get("type") == "tool-result" for b in inner):
        raise UnsupportedStageRefusal(f"format v3 tool/result at seq {seq} contains a nested tool-result unsupported by this "
                           "converter", seq=seq)
    out: dict[str, Any] = {"role": "tool", "source": source, "toolCallId": wrapper["toolCallId"], "content": inner}
    if "isError" in wrapper:
        out["isError"] = wrapper["isError"]
    out["id"] = mid
    for k, v in message.items():
        if k not in ("id", "role", "source", "content"):
            out[PLUGIN_PREFIX + "message:" + k] = v
    for k, v in wrapper.items():
        if k not in ("type", "toolCallId", "content", "isError"):
            out[PLUGIN_PREFIX + "result:" + k] = v
    return out


def _fact_error(subject: str) -> StageRefusal:
    return StageRefusal(f"{subject} requires a supported versioned catalog fact")


def catalog_fact(value: Any, subject: str = "subagent/catalog") -> dict[str, Any]:
    """Validate a catalog payload (versions 0, 1 and the October builds' 2/external)."""
    if not isinstance(value, dict) or not isinstance(value.get("childId"), str):
        raise _fact_error(subject)
    version, mode, label = value.get("version"), value.get("mode"), value.get("label", None)
    ok_mode = {0: ("continuable", "one-shot"), 1: ("continuable", "one-shot", "unknown"), 2: ("external",)}
    if version not in ok_mode or isinstance(version, bool) or mode not in ok_mode[version]:
        raise _fact_error(subject)
    if (mode == "continuable" and not isinstance(label, str)) or ("label" in value and not isinstance(label, str)):
        raise _fact_error(subject)
    if not is_count(value.get("childCreatedAt")):
        raise StageRefusal("catalog child creation time must be a non-negative safe integer")
    return value


def child_subject(fact: dict[str, Any]) -> str:
    path = fact.get("sourcePath")
    return f"Session {fact.get('childId')}" + (f" (raw log: {path})" if isinstance(path, str) else "")


def check_child_source(value: Any) -> dict[str, Any]:
    """A supplied child fact needs ``childId``, counts and a ``descriptor`` key."""
    if not isinstance(value, dict) or not isinstance(value.get("childId"), str) or "descriptor" not in value:
        raise UnsupportedStageRefusal("catalog migration requires historical child identity and descriptor evidence")
    if not is_count(value.get("childCreatedAt")):
        raise StageRefusal("catalog child creation time must be a non-negative safe integer")
    if not is_count(value.get("descriptorCount")):
        raise StageRefusal("child descriptor count must be a non-negative safe integer")
    return value


def child_catalog_fact(source: dict[str, Any]) -> dict[str, Any] | None:
    """The complete catalog entry a child's single own descriptor implies, if any."""
    d = source.get("descriptor")
    if source.get("descriptorCount") != 1 or not isinstance(d, dict) or d.get("version") not in (1, 2, 3) \
            or isinstance(d.get("version"), bool):
        return None
    subject = child_subject(source)
    if not isinstance(d.get("provider"), str):
        raise UnsupportedStageRefusal(f"{subject} has an invalid subagent descriptor provider")
    if d["version"] != 1 and d.get("mode") not in ("continuable", "one-shot"):
        raise UnsupportedStageRefusal(f"{subject} has an invalid subagent descriptor mode")
    entry: dict[str, Any] = {"version": 0, "childId": source["childId"], "childCreatedAt": source["childCreatedAt"],
                             "mode": "continuable" if d["version"] == 1 else d["mode"]}
    if "label" in d:
        entry["label"] = d["label"]
    return catalog_fact(entry, subject)


def _utf16_key(s: str) -> bytes:
    """JavaScript string order (UTF-16 code units) as a byte key."""
    return s.encode("utf-16-be", "surrogatepass")


class V3ToV4:
    """Streaming v3 → v4 stage; needs the explicit child facts of §4.5.7."""

    name = NAME
    source_version = 3
    target_version = 4

    def __init__(self, source_header: dict[str, Any], *, child_facts: list[dict[str, Any]] | None,
                 projection: bool = False, system_prompt_plugins: Iterable[str] = ()) -> None:
        if child_facts is None:
            raise UnsupportedStageRefusal(NEED_FACTS)
        self._prompt = UPSTREAM_SYSTEM_PROMPT_PLUGINS | frozenset(system_prompt_plugins)
        facts = [check_child_source(f) for f in child_facts]
        self._facts = sorted(facts, key=lambda f: (f["childCreatedAt"], _utf16_key(f["childId"])))
        self._sid = source_header.get("id")
        self._seeded = bool(source_header.get("isSeeded"))
        self._parent = "parentSession" in source_header
        self._time: Any = source_header.get("createdAt")
        self._map = SeqMap()
        self._next = 0
        self._count = 0
        self._turn: Any = None
        self._step_open = False
        self._spliced = False
        self._cut_src: int | None = None if self._seeded else 0
        self._cut_tgt: int | None = None if self._seeded else 0
        self._catalogs: list[tuple[int, Any]] = []
        self._foreign: int | None = None
        self.cut: int | None = None
        self.source_cut: int | None = None

    @staticmethod
    def header(h: dict[str, Any]) -> dict[str, Any]:
        if h.get("version") != 3:
            raise StageRefusal("expected format v3 header")
        out = dict(h)
        out["version"] = 4
        return out

    # ------------------------------------------------------------------------------
    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seq = event.get("seq")
        if seq != self._count:
            raise StageRefusal("V3 source events must be dense", seq=self._count)
        self._count += 1
        t = event.get("type")
        data = event.get("data")
        rec = record(data)
        interrupted = self._observe_restart(t, rec)
        if interrupted is not None:
            out.append({"type": "turn/end", "seq": self._next, "time": event.get("time"),
                        "data": {"turn": interrupted, "reason": {"kind": "interrupted"}}})
            self._next += 1
        target = self._next
        self._next += 1
        self._time = event.get("time")
        if t == "session/end-seed" and rec.get("inherited") is True and isinstance(data, dict):
            if not self._seeded:
                raise StageRefusal("unseeded format v3 Session contains an inherited end-seed marker", seq=seq)
            self._cut_src, self._cut_tgt = seq, target
            self._catalogs.clear()
        elif t == "subagent/catalog":
            self._catalogs.append((seq, data))
        if t == "session-log-deepseek/delivery-accepted":
            self._delivery(seq, rec)

        if t not in V3_TYPES:
            if event.get("ignorable") is True:
                self._map.record(seq, target)
                new = dict(event)
                new["type"] = PLUGIN_PREFIX + str(t)
                new["ignorable"] = True
                new["seq"] = target
                out.append(new)
                return out
            raise UnsupportedStageRefusal(unknown_event_type(3, _js(t), seq), seq=seq)

        new = self._remap(event, target, seq)
        self._map.record(seq, target)
        new = self._messages(new, seq)
        new = self._content(new, seq)
        if t == "request/header":
            self._defer_loading(new, seq)
        out.append(new)
        return out

    def finish(self) -> list[dict[str, Any]]:
        if self._cut_tgt is None or self._cut_src is None:
            raise StageRefusal("V3 inherited event count must be a non-negative safe integer")
        existing: dict[str, dict[str, Any]] = {}
        for _seq, data in self._catalogs:
            fact = catalog_fact(data)
            cid = fact["childId"]
            if cid in existing:
                raise UnsupportedStageRefusal(f"duplicate catalog child {cid}")
            existing[cid] = fact
        if self.source_cut is not None and self.source_cut != self._cut_src:
            raise StageRefusal("format v3 inherited cut disagrees with its source marker")
        if self._foreign is not None and (not self._parent or self._foreign >= self._cut_src):
            raise StageRefusal("current-generation delivery marker names the wrong Session", seq=self._foreign)
        out: list[dict[str, Any]] = []
        for source in self._facts:
            cid = source["childId"]
            have = existing.get(cid)
            child_fact = child_catalog_fact(source)
            if have is not None:
                if have.get("childCreatedAt") != source["childCreatedAt"] or (
                        child_fact is not None and any(have.get(k) != child_fact.get(k) for k in ("mode", "label"))):
                    raise UnsupportedStageRefusal(f"{child_subject(source)} conflicts with its parent catalog")
                continue
            entry = child_fact if child_fact is not None else {"version": 1, "childId": cid,
                                                   "childCreatedAt": source["childCreatedAt"], "mode": "unknown"}
            existing[cid] = entry
            out.append({"type": "subagent/catalog", "seq": self._next, "time": self._time, "data": entry})
            self._next += 1
        self.cut = self._cut_tgt
        return out

    # per-event rules ---------------------------------------------------------------------
    def _observe_restart(self, t: Any, data: dict[str, Any]) -> Any:
        turn = data.get("turn")
        interrupted = None
        if (t == "turn/start" and self._turn is not None and not self._step_open and self._spliced
                and isinstance(turn, int) and not isinstance(turn, bool) and turn == self._turn + 1):
            interrupted = self._turn
        inserted = data.get("inserted")
        self._spliced = (t == "agent/inbox/spliced" and data.get("target") == "next-turn"
                         and isinstance(inserted, list) and len(inserted) > 0)
        if t == "turn/start" and isinstance(turn, (int, float)) and not isinstance(turn, bool):
            self._turn = turn
        elif t == "turn/end":
            self._turn = None
        elif t == "step/start":
            self._step_open = True
        elif t == "step/end":
            self._step_open = False
        return interrupted

    def _delivery(self, seq: int, data: dict[str, Any]) -> None:
        gen = data.get("sessionFormatVersion", 0)
        if not is_count(gen):
            raise StageRefusal("format v3 delivery marker generation must be a non-negative safe integer", seq=seq)
        if gen == 4:
            raise UnsupportedStageRefusal("format v3 delivery marker claims target format v4", seq=seq)
        if gen != 3:
            return
        through, sid = data.get("throughSeq"), data.get("sessionId")
        if not is_count(through) or through >= seq or not isinstance(sid, str) or not sid:
            raise StageRefusal(f"format v3 delivery marker at seq {seq} is malformed", seq=seq)
        if sid != self._sid:
            self._foreign = seq

    def _one(self, value: Any, src: int) -> int:
        if not is_count(value) or value >= src:
            raise StageRefusal("V3 reference must name an earlier source event", seq=src)
        mapped = self._map.get(value)
        if mapped is None:  # pragma: no cover - every earlier source seq is recorded
            raise StageRefusal("V3 reference must name an earlier source event", seq=src)
        return mapped

    def _remap(self, event: dict[str, Any], target: int, src: int) -> dict[str, Any]:
        new = dict(event)
        new["seq"] = target
        if target == src:
            return new
        if isinstance(event.get("sourceEventSeqs"), list):
            new["sourceEventSeqs"] = [self._one(v, src) for v in event["sourceEventSeqs"]]
        op = event.get("surfaceOp")
        if isinstance(op, dict):
            new["surfaceOp"] = {**op, "startSeq": self._one(op.get("startSeq"), src),
                                "endSeq": self._one(op.get("endSeq"), src)}
        data = event.get("data")
        t = event.get("type")
        if not isinstance(data, dict):
            return new
        if t == "command/done" and "sourceEventSeq" in data:
            new["data"] = {**data, "sourceEventSeq": self._one(data["sourceEventSeq"], src)}
        elif t in ("compaction/prune", "compaction/summary"):
            d = dict(data)
            rng = data.get("shadowedRange")
            if isinstance(rng, dict):
                d["shadowedRange"] = {**rng, "start": self._one(rng.get("start"), src),
                                      "end": self._one(rng.get("end"), src)}
            if isinstance(data.get("shadowedSeqs"), list):
                d["shadowedSeqs"] = [self._one(v, src) for v in data["shadowedSeqs"]]
            new["data"] = d
        elif t in ("session/title", "session/title-llm-request") and isinstance(data.get("messageSeqs"), list):
            new["data"] = {**data, "messageSeqs": [self._one(v, src) for v in data["messageSeqs"]]}
        elif t == "image/offload" and isinstance(data.get("targets"), list):
            new["data"] = {**data, "targets": [
                {**tg, "seq": self._one(tg.get("seq"), src)} if isinstance(tg, dict) and "seq" in tg else tg
                for tg in data["targets"]]}
        return new

    def _messages(self, ev: dict[str, Any], seq: int) -> dict[str, Any]:
        """Source renames in the declared message slots, then the tool-result lift."""
        t = ev.get("type")
        data = ev.get("data")
        if not isinstance(data, dict):
            return ev
        if t == "user/message":
            m = _message(data, seq, self._prompt)
            return ev if m is data else {**ev, "data": m}
        if t in WRAPPED_MESSAGE_TYPES:
            if not isinstance(data.get("message"), dict):
                raise StageRefusal(f"{t} requires a message", seq=seq)
            m = _message(data["message"], seq, self._prompt)
            if t == "tool/result" and m.get("role") == "user":
                m = lift_tool_result(m, seq)
            return ev if m is data["message"] else {**ev, "data": {**data, "message": m}}
        key = "inserted" if t == "agent/inbox/spliced" else "messages" if t == "session/title-llm-request" else None
        if key is None:
            return ev
        msgs = data.get(key)
        if not isinstance(msgs, list):
            raise StageRefusal(f"{t} requires message array", seq=seq)
        mapped = []
        for m in msgs:
            if not isinstance(m, dict):
                raise StageRefusal(f"{t} requires message objects", seq=seq)
            mapped.append(_message(m, seq, self._prompt))
        if all(a is b for a, b in zip(mapped, msgs)):
            return ev
        return {**ev, "data": {**data, key: mapped}}

    def _content(self, ev: dict[str, Any], seq: int) -> dict[str, Any]:
        t = ev.get("type")
        data = ev.get("data")
        if not isinstance(data, dict):
            return ev
        d = data
        if t == "user/message":
            d = _tag_message(data, seq)
        elif t in WRAPPED_MESSAGE_TYPES and isinstance(data.get("message"), dict):
            m = _tag_message(data["message"], seq)
            if m is not data["message"]:
                d = {**data, "message": m}
        elif t in ("agent/inbox/spliced", "session/title-llm-request"):
            key = "inserted" if t == "agent/inbox/spliced" else "messages"
            msgs = data.get(key)
            if isinstance(msgs, list):
                mapped = [_tag_message(m, seq) for m in msgs]
                if any(a is not b for a, b in zip(mapped, msgs)):
                    d = {**data, key: mapped}
        elif t == "compaction/summary":
            for key in ("summary", "rawOutput"):
                if key in d:
                    v = _tag_blocks(d[key], seq)
                    if v is not d[key]:
                        d = {**d, key: v}
        elif t == "tool/ptc-dispatch" and "content" in data:
            v = _tag_blocks(data["content"], seq)
            if v is not data["content"]:
                d = {**data, "content": v}
        elif t == "team/message/queued" and isinstance(data.get("message"), dict):
            m = _tag_message(data["message"], seq)
            if m is not data["message"]:
                d = {**data, "message": m}
        if t in ("assistant/message", "assistant/attempt") and "stream" in d:
            s = _tag_stream(d["stream"])
            if s is not d["stream"]:
                d = {**d, "stream": s}
        return ev if d is data else {**ev, "data": d}

    def _defer_loading(self, ev: dict[str, Any], seq: int) -> None:
        tools = record(record(ev.get("data")).get("header")).get("tools")
        if isinstance(tools, list):
            for tool in tools:
                if isinstance(tool, dict) and "deferLoading" in tool:
                    raise StageRefusal(f"format v3 request/header at seq {seq} declares deferLoading, which only "
                                       "exists in format v4", seq=seq)


def _js(value: Any) -> str:
    """``JSON.stringify(String(value))``: how dsh quotes a value inside a refusal."""
    return stringify(js_string(value))
