"""One-pass counters over a log: what ``info`` and ``stats`` report.

Works on events of any stored version (v0 chunk rows and v2+ embedded streams
alike), so ``info`` can describe a log without migrating it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from itertools import accumulate
from typing import Any
from collections.abc import Iterable

import msgspec
from msgspec import UNSET, UnsetType

from ..protocol.packed import PackedRun


#: What stands for a provider or a model a log does not name (a report's key, a stats row).
UNKNOWN_MODEL_PART = "unknown"


def model_name(provider: object, model: object) -> str:
    """``provider/model``, as dsh names a model; a part the log leaves out is ``unknown`` (never Python's ``None``)."""

    def part(v: object) -> str:
        return UNKNOWN_MODEL_PART if v is None or v == "" else str(v)

    return f"{part(provider)}/{part(model)}"


# What :meth:`Summary.feed` reads of the payloads, the two that hold most of a log's bytes
# (a message's text, a tool's output) included, as Structs the lazy reader decodes in C: every other
# key is skipped, an absent key stays absent (``UNSET``), and a value of another JSON type
# than the one feed() looks into (a ``message`` that is not an object, ``content`` that is
# not an array of objects) makes the decoder refuse the row, so the exact reader reads it.


class _BlockView(msgspec.Struct):
    type: Any = UNSET
    id: Any = UNSET
    name: Any = UNSET
    isError: Any = UNSET
    toolCallId: Any = UNSET


class _MessageView(msgspec.Struct):
    source: Any = UNSET
    content: list[_BlockView] | UnsetType = UNSET
    isError: Any = UNSET
    toolCallId: Any = UNSET


class _DataView(msgspec.Struct):
    """The keys feed() reads of the payloads of the types in :data:`DATA_VIEWS` (one Struct for all)."""

    turn: Any = UNSET
    step: Any = UNSET
    interrupted: Any = UNSET
    message: _MessageView | UnsetType = UNSET
    provenance: Any = UNSET
    usage: Any = UNSET
    callId: Any = UNSET
    isError: Any = UNSET
    name: Any = UNSET
    reason: Any = UNSET
    title: Any = UNSET


#: The payload view by event type (the lazy reader's ``views``; one Struct for all, so a
#: row is decoded in one pass).  The other types of ``SUMMARY_DATA_TYPES`` are read whole
#: by the exact reader: ``request/header`` (feed() reads into the header's config) and
#: ``assistant/attempt`` (its stream), both rare.
DATA_VIEWS: dict[str, type[msgspec.Struct]] = {
    "turn/start": _DataView,
    "turn/end": _DataView,
    "step/start": _DataView,
    "assistant/message": _DataView,
    "llm/retry": _DataView,
    "tool/call": _DataView,
    "tool/result": _DataView,
    "session/title": _DataView,
}


def _blocks(msg: dict[str, Any]) -> list[Any]:
    """A message's content blocks; anything but a list (a damaged log) has none."""
    content = msg.get("content")
    return content if isinstance(content, list) else []


def _add_usage(total: dict[str, int], usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    for k, v in usage.items():
        if type(v) is int:
            total[k] = total.get(k, 0) + v


def stream_usage(stream: Any) -> dict[str, Any] | None:
    """The usage of the last usage chunk of an embedded stream that holds one.

    An attempt's stream is its only usage record (and a message without ``usage``
    falls back to its stream), so ``stats`` and a transcript read it here, once:
    the counters and the transcript's token line cannot disagree on a damaged stream.
    """
    last = None
    if isinstance(stream, list):
        for rec in stream:
            if isinstance(rec, dict) and rec.get("type") == "chunk":
                ch = rec.get("chunk")
                if isinstance(ch, dict) and ch.get("type") == "usage" and isinstance(ch.get("usage"), dict):
                    last = ch["usage"]
    return last


def settlement_usage(data: dict[str, Any]) -> dict[str, Any] | None:
    """A settlement's token usage: its ``usage``, else its stream's last usage chunk (:func:`stream_usage`)."""
    usage = data.get("usage")
    return usage if isinstance(usage, dict) else stream_usage(data.get("stream"))


@dataclass
class Summary:
    """Counts and totals for one log."""

    events: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    first_time: int | None = None
    last_time: int | None = None
    by_type: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    turns_open: bool = False
    steps: int = 0
    model_calls: int = 0
    attempts: int = 0
    interrupted: int = 0
    retries: int = 0
    cancellations: int = 0
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_errors: Counter[str] = field(default_factory=Counter)
    tokens: dict[str, int] = field(default_factory=dict)
    tokens_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    turn_end_reasons: Counter[str] = field(default_factory=Counter)
    title: str | None = None
    llm_retry_events: int = 0
    redispatches: int = 0
    _open_turn: Any = None
    _model: str | None = None
    _call_names: dict[str, str] = field(default_factory=dict)
    _last_settlement: tuple[str, Any, Any] | None = None

    def feed(self, ev: Any) -> None:
        if type(ev) is PackedRun:  # a v0/v1 packed row read whole: `count` assistant/chunk events
            self._feed_run(ev)
            return
        t = ev.get("type")
        seq = ev.get("seq")
        time = ev.get("time")
        self.events += 1
        if self.first_seq is None:
            self.first_seq = seq
        self.last_seq = seq
        if type(time) is int and time:
            if self.first_time is None:
                self.first_time = time
            self.last_time = time
        self.by_type[t] += 1
        if t == "assistant/chunk":  # v0/v1 logs hold millions; only the counts above matter
            return
        data = ev.get("data")
        if not isinstance(data, dict):
            return
        if t == "turn/start":
            self.turns += 1
            self._open_turn = data.get("turn")
            self._call_names.clear()
        elif t == "turn/end":
            self._open_turn = None
            reason = data.get("reason")
            kind = reason.get("kind") if isinstance(reason, dict) else reason
            self.turn_end_reasons[str(kind)] += 1
            if kind == "aborted":
                self.cancellations += 1
        elif t == "step/start":
            self.steps += 1
        elif t == "request/header":
            cfg = (data.get("header") or {}).get("config") if isinstance(data.get("header"), dict) else None
            if isinstance(cfg, dict):
                self._model = model_name(cfg.get("provider"), cfg.get("model"))
        elif t == "assistant/message":
            self.model_calls += 1
            self._settled(t, data)
            if data.get("interrupted"):
                self.interrupted += 1
            msg = data.get("message")
            model = self._model
            if isinstance(msg, dict):
                src = msg.get("source")
                if isinstance(src, dict) and src.get("provider"):
                    model = model_name(src.get("provider"), src.get("model"))
                for block in _blocks(msg):
                    if isinstance(block, dict) and block.get("type") == "tool-call":
                        self._call_names[str(block.get("id"))] = str(block.get("name"))
            elif "provenance" in data:  # legacy v0 wrapper
                prov = data.get("provenance")
                if isinstance(prov, dict) and prov.get("provider"):
                    model = model_name(prov.get("provider"), prov.get("model"))
            self._usage(data.get("usage"), model)
        elif t == "assistant/attempt":
            self.model_calls += 1
            self.attempts += 1
            self._settled(t, data)
            self._usage(stream_usage(data.get("stream")), self._model)
        elif t == "llm/retry":
            self.llm_retry_events += 1
        elif t == "tool/call":
            name = str(data.get("name"))
            self.tool_calls[name] += 1
            self._call_names[str(data.get("callId"))] = name
        elif t == "tool/result":
            msg = data.get("message")
            is_err = False
            call_id = None
            if isinstance(msg, dict):
                is_err = msg.get("isError") is True
                src = msg.get("source")
                call_id = src.get("callId") if isinstance(src, dict) else msg.get("toolCallId")
                for block in _blocks(msg):  # v0-v3 wrapper block
                    if isinstance(block, dict) and block.get("type") == "tool-result":
                        is_err = is_err or block.get("isError") is True
                        call_id = call_id or block.get("toolCallId")
            elif "callId" in data:
                call_id, is_err = data.get("callId"), data.get("isError") is True
            if is_err:
                self.tool_errors[self._call_names.get(str(call_id), "?")] += 1
        elif t == "session/title":
            if isinstance(data.get("title"), str):
                self.title = data["title"]

    def _settled(self, t: str, data: dict[str, Any]) -> None:
        """A model call that follows a failed attempt of the same step is a retry.

        dsh's MockAdapter retries log no ``llm/retry`` event, so the re-dispatch
        itself is what counts; logs from providers carry both and agree.
        """
        key = (data.get("turn"), data.get("step"))
        prev = self._last_settlement
        if prev is not None and prev[0] == "assistant/attempt" and (prev[1], prev[2]) == key and key != (None, None):
            self.redispatches += 1
        self._last_settlement = (t, key[0], key[1])

    @property
    def duration_ms(self) -> int:
        """First to last event time; 0 for projections (their events carry time 0)."""
        if self.first_time is None or self.last_time is None:
            return 0
        return max(0, self.last_time - self.first_time)

    def _feed_run(self, run: PackedRun) -> None:
        self.events += run.count
        if self.first_seq is None:
            self.first_seq = run.seq
        self.last_seq = run.seq + run.count - 1
        # as feed() would: the first and last members with a non-zero time
        nonzero: list[int] = []
        if self.first_time is None or not run.last_time:
            nonzero = [t for t in accumulate(run.dt, initial=run.time) if t]
        if self.first_time is None and nonzero:
            self.first_time = nonzero[0]
        last = run.last_time or (nonzero[-1] if nonzero else None)
        if last:
            self.last_time = last
        self.by_type["assistant/chunk"] += run.count

    def _usage(self, usage: Any, model: str | None) -> None:
        if not isinstance(usage, dict):
            return
        _add_usage(self.tokens, usage)
        _add_usage(self.tokens_by_model.setdefault(model or "?", {}), usage)

    def finish(self) -> Summary:
        self.turns_open = self._open_turn is not None
        self.retries = max(self.llm_retry_events, self.redispatches)
        return self

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "firstSeq": self.first_seq,
            "lastSeq": self.last_seq,
            "firstTime": self.first_time,
            "lastTime": self.last_time,
            "turns": self.turns,
            "openTurn": self.turns_open,
            "steps": self.steps,
            "modelCalls": self.model_calls,
            "attempts": self.attempts,
            "interrupted": self.interrupted,
            "retries": self.retries,
            "cancellations": self.cancellations,
            "turnEndReasons": dict(self.turn_end_reasons),
            "toolCalls": dict(self.tool_calls),
            "toolErrors": dict(self.tool_errors),
            "tokens": dict(self.tokens),
            "tokensByModel": {k: dict(v) for k, v in self.tokens_by_model.items()},
            "title": self.title,
            "durationMs": self.duration_ms,
            "byType": dict(sorted(self.by_type.items())),
        }


def summary_record(s: Summary) -> list[Any]:
    """A summary as a plain list (the cache's form, :mod:`dshlog.read.cache`): every field in
    declaration order, a counter as its ``[key, count]`` pairs in its order, a tuple as a list."""
    return [[[k, n] for k, n in v.items()] if isinstance(v, Counter) else list(v) if isinstance(v, tuple) else v
            for v in (getattr(s, f.name) for f in fields(Summary))]


def summary_of(rec: list[Any]) -> Summary:
    """:func:`summary_record` back, equal to the summary it was made of; raises on anything it did not write."""
    names = [f.name for f in fields(Summary)]
    if len(rec) != len(names):
        raise ValueError("not a summary's record")
    values: dict[str, Any] = {}
    for f, v in zip(fields(Summary), rec):
        if f.default_factory is Counter:
            counter: Counter[Any] = Counter()
            for k, n in v:
                counter[k] = n
            v = counter
        values[f.name] = v
    if values["_last_settlement"] is not None:
        values["_last_settlement"] = tuple(values["_last_settlement"])
    return Summary(**values)


def summarize(events: Iterable[dict[str, Any]]) -> Summary:
    s = Summary()
    for ev in events:
        s.feed(ev)
    return s.finish()
