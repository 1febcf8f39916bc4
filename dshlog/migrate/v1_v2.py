"""Edge v1 → v2 (``@deepseek-ai/dsh-session-format-v1-to-v2``), FORMAT §4.3 — chunk folding.

Top-level ``assistant/chunk`` events disappear: each model call's chunks (an
*attempt*) are packed into the ``stream`` of the ``assistant/message`` that
settled it, or into a log-only ``assistant/attempt``.  Because that changes
cardinality, every later event is renumbered densely and every seq reference is
remapped.  The stage holds only the pending attempt (as packed records), the
events that arrived after its last chunk, and a run-length seq map.  A v0/v1
packed row may arrive whole as a compact run (:meth:`V1ToV2.feed_run`), which is
appended to the attempt's stream without expanding its members.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Final

from ..protocol.values import is_count
from ..protocol.vocabulary import V1_V2_SETTLING_TYPES
from ._common import CONSUMED, SeqMap, StageRefusal, UnsupportedStageRefusal, record
from .streams import StreamBuilder
from .v0_v1 import check_v01_event

NAME: Final = "@deepseek-ai/dsh-session-format-v1-to-v2"

_HEADER_ORDER: Final = ("type", "version", "id", "createdAt", "cwd", "parentSession", "isSeeded", "origin",
                        "delegationDepth", "agentPreset")


class _Attempt:
    """The chunks of one model call that have not been settled yet."""

    __slots__ = ("turn", "step", "seqs", "stream", "terminal", "last_time")

    def __init__(self, turn: Any, step: Any) -> None:
        self.turn = turn
        self.step = step
        self.seqs: list[range] = []  # the chunk seqs, one range per chunk or compact run
        self.stream = StreamBuilder()
        self.terminal = False
        self.last_time: Any = 0


def v2_header(h: dict[str, Any], version: int) -> dict[str, Any]:
    """Physical header in writer order with ``isSeeded`` in place of ``seedLength``."""
    src = dict(h)
    seeded = "seedLength" in src if "isSeeded" not in src else bool(src["isSeeded"])
    src.pop("seedLength", None)
    src["isSeeded"] = seeded
    src["version"] = version
    out: dict[str, Any] = {k: src[k] for k in _HEADER_ORDER if k in src}
    for k, v in src.items():  # unexpected keys are kept (validation reports them)
        if k not in out:
            out[k] = v
    return out


class V1ToV2:
    """Streaming v1 → v2 stage."""

    name = NAME
    source_version = 1
    target_version = 2

    def __init__(self, source_header: dict[str, Any], *, projection: bool = False) -> None:
        self._sid = source_header.get("id")
        self._created = source_header.get("createdAt", 0)
        self._parent = "parentSession" in source_header
        seed = source_header.get("seedLength")
        self._seeded = "seedLength" in source_header
        self._cut_src: int = seed if is_count(seed) else 0
        self._cut_done = not self._seeded
        self._projection = projection
        self._map = SeqMap()
        self._next = 0  # next target seq
        self._count = 0  # source events seen
        self._last_time: Any = None
        self._pending: _Attempt | None = None
        self._buffer: list[tuple[int | None, dict[str, Any]]] = []
        self._open_turn: Any = None
        self._step_open = False
        self._prev_splice = False
        #: set by the chain when the v0->v1 stage ran first: it already applied the
        #: stricter v0 form of :func:`check_v01_event` to every event it passes on
        self.inputs_checked = False
        self.cut: int | None = 0 if not self._seeded else None
        self.source_cut: int | None = None

    @staticmethod
    def header(h: dict[str, Any]) -> dict[str, Any]:
        if h.get("version") != 1:
            raise StageRefusal("expected format v1 header")
        return v2_header(h, 2)

    # ------------------------------------------------------------------------------
    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seq = event.get("seq")
        if seq != self._count:
            raise StageRefusal(f"Session event {self._count} has non-dense seq {seq}", seq=self._count)
        if not self.inputs_checked:
            check_v01_event(event, 1, projection=self._projection)
        self._count += 1
        self._last_time = event.get("time")
        t = event["type"]
        data = record(event.get("data"))

        if not self._cut_done and seq >= self._cut_src:
            event = self._cross_cut(event, out)

        if t == "assistant/chunk":
            self._chunk(event, data, out)
        elif t == "assistant/message":
            self._message(event, data, out)
        else:
            if t in V1_V2_SETTLING_TYPES:
                self._settle(out)
            if t == "turn/start":
                self._turn_start(event, data, out)
            elif t == "turn/end":
                self._open_turn = None
            elif t == "step/start":
                self._step_open = True
            elif t == "step/end":
                self._step_open = False
            if t == "session-log-deepseek/delivery-accepted":
                self._delivery_guard(event, data)
            if t == "user/message" and isinstance(data.get("source"), dict) \
                    and data["source"].get("kind") == "goal" and "change" in data["source"]:
                self._out(None, {"type": "goal/change", "seq": -1, "time": event.get("time"),
                                 "data": data["source"]["change"]}, out)
                event = {**event, "data": {**data, "source": {"kind": "plugin", "plugin": "goal"}}}
            self._out(seq, event, out)
        inserted = data.get("inserted")
        self._prev_splice = (t == "agent/inbox/spliced" and data.get("target") == "next-turn"
                             and isinstance(inserted, list) and len(inserted) > 0)
        return out

    def feed_run(self, run: Any) -> list[dict[str, Any]] | None:
        """Fold a compact chunk run (:class:`~dshlog.read.rows.PackedRun`) like its ``count`` chunks.

        Returns ``None`` when the members must be fed one by one instead (a seq that
        is not dense, or the inherited cut at or inside the run): those rare paths
        then raise or place the marker exactly as for expanded chunks.  Otherwise the
        run joins the pending attempt of its turn/step (settling a different or
        terminal one first) and its seqs are recorded as consumed.
        """
        seq = run.seq
        count = run.count
        if seq != self._count or (not self._cut_done and seq + count > self._cut_src):
            return None
        out: list[dict[str, Any]] = []
        self._count += count
        last_time = run.last_time
        self._last_time = last_time
        turn, step = run.turn, run.step
        p = self._join_attempt(turn, step, out)
        self._map.record_consumed(seq, count)
        p.seqs.append(range(seq, seq + count))
        p.stream.push_run(run)
        p.last_time = last_time
        self._prev_splice = False
        return out

    def finish(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self._settle(out)
        if not self._cut_done:
            if self._cut_src > self._count:
                raise StageRefusal("Session inheritedEventCount exceeds its event count")
            time = self._last_time if self._count else self._created
            self.cut = self._next
            self._out(None, {"type": "session/end-seed", "seq": -1, "time": time, "data": {"inherited": True}}, out)
            self._cut_done = True
        return out

    # attempts -----------------------------------------------------------------------
    def _join_attempt(self, turn: Any, step: Any, out: list[dict[str, Any]]) -> _Attempt:
        """The pending attempt a chunk (or run) of ``turn``/``step`` belongs to, settling the old one if needed."""
        p = self._pending
        if p is not None and (p.terminal or p.turn != turn or p.step != step):
            self._settle(out)
            p = None
        if p is None:
            p = self._pending = _Attempt(turn, step)
        elif self._buffer:
            self._flush(out)  # events between chunks precede the settlement
        return p

    def _chunk(self, event: dict[str, Any], data: dict[str, Any], out: list[dict[str, Any]]) -> None:
        turn, step = data.get("turn"), data.get("step")
        p = self._join_attempt(turn, step, out)
        self._map.record(event["seq"], CONSUMED)
        p.seqs.append(range(event["seq"], event["seq"] + 1))
        chunk = data.get("chunk")
        p.stream.push(event.get("time"), chunk)
        p.last_time = event.get("time")
        if isinstance(chunk, dict) and chunk.get("type") == "finish":
            p.terminal = True

    def _message(self, event: dict[str, Any], data: dict[str, Any], out: list[dict[str, Any]]) -> None:
        seq = event["seq"]
        turn, step = data.get("turn"), data.get("step")
        sources = event.get("sourceEventSeqs")
        p = self._pending
        stream: list[dict[str, Any]] = []
        if isinstance(sources, list) and sources:
            if p is None or p.turn != turn or p.step != step or [*chain.from_iterable(p.seqs)] != sources:
                raise UnsupportedStageRefusal(f"assistant/message {seq} chunk references are not one complete ordered attempt",
                                   seq=seq)
            stream = p.stream.records
            self._pending = None
            self._flush(out)
        elif isinstance(sources, list):
            self._settle(out)
        else:
            if p is not None and p.turn == turn and p.step == step:
                raise UnsupportedStageRefusal(f"assistant/message {seq} does not cite its complete v1 chunk attempt", seq=seq)
            self._settle(out)
        msg = {k: v for k, v in event.items() if k != "sourceEventSeqs"}
        new_data = dict(data)
        new_data["stream"] = stream
        msg["data"] = new_data
        self._out(seq, msg, out)

    def _settle(self, out: list[dict[str, Any]]) -> None:
        """Close the pending attempt as a log-only ``assistant/attempt``."""
        p = self._pending
        if p is None:
            return
        self._pending = None
        self._emit(None, {"type": "assistant/attempt", "seq": -1, "time": p.last_time,
                          "data": {"turn": p.turn, "step": p.step, "stream": p.stream.records}}, out)
        self._flush(out)

    def _flush(self, out: list[dict[str, Any]]) -> None:
        buffered, self._buffer = self._buffer, []
        for src, ev in buffered:
            self._emit(src, ev, out)

    def _out(self, src: int | None, ev: dict[str, Any], out: list[dict[str, Any]]) -> None:
        if self._pending is not None:
            self._buffer.append((src, ev))
        else:
            self._emit(src, ev, out)

    # turn repair and cut --------------------------------------------------------------
    def _turn_start(self, event: dict[str, Any], data: dict[str, Any], out: list[dict[str, Any]]) -> None:
        turn = data.get("turn")
        if self._open_turn is not None:
            if (isinstance(turn, int) and isinstance(self._open_turn, int) and turn == self._open_turn + 1
                    and not self._step_open and self._prev_splice):
                self._settle(out)
                self._out(None, {"type": "turn/end", "seq": -1, "time": event.get("time"),
                                 "data": {"turn": self._open_turn, "reason": {"kind": "interrupted"}}}, out)
            else:
                raise UnsupportedStageRefusal(f"turn/start {event['seq']} does not close the prior turn", seq=event["seq"])
        self._open_turn = turn

    def _cross_cut(self, event: dict[str, Any], out: list[dict[str, Any]]) -> dict[str, Any]:
        """First source event at or after the inherited cut: place the tagged marker."""
        p = self._pending
        if p is not None:
            data = record(event.get("data"))
            same = data.get("turn") == p.turn and data.get("step") == p.step
            splits = (event["type"] == "assistant/chunk" and same and not p.terminal) or (
                event["type"] == "assistant/message" and same and isinstance(event.get("sourceEventSeqs"), list)
                and bool(event["sourceEventSeqs"]))
            if splits:
                raise UnsupportedStageRefusal(f"inherited Session cut {self._cut_src} splits one Assistant attempt")
            self._settle(out)
        self._cut_done = True
        self.cut = self._next
        if event["type"] == "session/end-seed" and event["seq"] == self._cut_src:
            return {**event, "data": {"inherited": True}}
        self._emit(None, {"type": "session/end-seed", "seq": -1, "time": event.get("time"),
                          "data": {"inherited": True}}, out)
        return event

    def _delivery_guard(self, event: dict[str, Any], data: dict[str, Any]) -> None:
        if data.get("sessionFormatVersion") != 1 or data.get("sessionId") == self._sid:
            return
        if self._parent and self._seeded and event["seq"] < self._cut_src:
            return
        raise UnsupportedStageRefusal("current-generation delivery marker names the wrong Session", seq=event["seq"])

    # renumbering ----------------------------------------------------------------------
    def _emit(self, src: int | None, ev: dict[str, Any], out: list[dict[str, Any]]) -> None:
        target = self._next
        self._next += 1
        out.append(self._remap(ev, target, src))
        if src is not None:
            self._map.record(src, target)

    def _one(self, value: Any, label: str) -> int:
        mapped = self._map.get(value) if isinstance(value, int) and not isinstance(value, bool) else None
        if mapped is None or mapped == CONSUMED:
            raise UnsupportedStageRefusal(f"{label} targets consumed assistant/chunk {value}")
        return mapped

    def _remap(self, ev: dict[str, Any], target: int, src: int | None) -> dict[str, Any]:
        """Rebuild as ``type, seq, time, data, [ignorable], sourceEventSeqs?, surfaceOp?``."""
        t = ev.get("type")
        label = f"{t} {src}"
        out: dict[str, Any] = {}
        for k, v in ev.items():
            if k in ("sourceEventSeqs", "surfaceOp"):
                continue
            out[k] = v
        out["seq"] = target
        if src is not None:
            out["data"] = self._remap_data(t, ev.get("data"), label)
            if "sourceEventSeqs" in ev:
                s = ev["sourceEventSeqs"]
                out["sourceEventSeqs"] = [self._one(v, f"{label} sources") for v in s] if isinstance(s, list) else s
            if "surfaceOp" in ev:
                op = ev["surfaceOp"]
                if isinstance(op, dict):
                    op = {"op": "replace", "start": self._one(op.get("start"), f"{label} surface start"),
                          "end": self._one(op.get("end"), f"{label} surface end")}
                out["surfaceOp"] = op
        return out

    def _remap_data(self, t: Any, data: Any, label: str) -> Any:
        if not isinstance(data, dict):
            return data
        if t == "command/done" and "sourceEventSeq" in data:
            return {**data, "sourceEventSeq": self._one(data["sourceEventSeq"], f"{label} sourceEventSeq")}
        if t in ("compaction/prune", "compaction/summary"):
            new = dict(data)
            rng = data.get("shadowedRange")
            if isinstance(rng, dict):
                new["shadowedRange"] = {"start": self._one(rng.get("start"), f"{label} shadowedRange start"),
                                        "end": self._one(rng.get("end"), f"{label} shadowedRange end")}
            if isinstance(data.get("shadowedSeqs"), list):
                new["shadowedSeqs"] = [self._one(v, f"{label} shadowedSeqs") for v in data["shadowedSeqs"]]
            return new
        if t in ("session/title", "session/title-llm-request") and isinstance(data.get("messageSeqs"), list):
            return {**data, "messageSeqs": [self._one(v, f"{label} messageSeqs") for v in data["messageSeqs"]]}
        return data
