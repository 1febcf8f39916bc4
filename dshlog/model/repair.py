"""Closers for a log whose last turn is still open (dsh ``openTurnClosers``).

A crash can leave a session log ending inside a turn: an assistant message asked
for tool calls, maybe one ``tool/call`` was recorded, and then the process died.
A provider rejects such a transcript (every tool call needs a result), so dsh
appends synthetic *closer* events before it resumes: one error ``tool/result``
per unanswered call of the open step, then ``step/end`` and ``turn/end``.  Fork
uses the same mechanism when a cut lands inside a turn, with different wording.

The scan keeps only the open turn/step and the open turn's pending calls, so it
runs in one pass over logs of any size.  Closers reuse the last event's time (no
clock is read), which keeps repair deterministic and byte-identical to dsh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable

from ..errors import CorruptLog, InvalidArgument
from ..protocol.jsjson import UNDEFINED, js_string
from ..protocol.texts import (
    CLOSER_CAUSES,
    CLOSER_ERROR,
    CLOSER_TEXT,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    CloserCause,
    closer_message_id,
)

Cause = CloserCause
CAUSES = CLOSER_CAUSES
#: Stands for a JavaScript ``undefined`` field (absent key), distinct from JSON ``null``.
MISSING: Any = UNDEFINED


@dataclass(slots=True)
class PendingCall:
    """One tool call of the open turn that has no ``tool/result`` yet.

    ``call_seq`` is the seq of the ``tool/call`` that recorded the call as started
    (``None`` when it never started).  ``name`` is kept for display only.
    """

    call_id: Any  # a string in a well-formed log; kept as logged, as dsh's map keys it
    step: Any
    call_seq: int | None = None
    name: str | None = None

    @property
    def started(self) -> bool:
        return self.call_seq is not None


@dataclass(frozen=True, slots=True)
class TailReport:
    """What is open at the end of a log, for display (``dshlog repair --check``)."""

    event_count: int
    last_seq: int | None
    last_time: int | None
    open_turn: Any | None
    open_step: Any | None
    pending: tuple[PendingCall, ...]

    @property
    def balanced(self) -> bool:
        """True when nothing needs closing (no open turn, or an empty log)."""
        return self.open_turn is None or self.event_count == 0

    @property
    def closer_count(self) -> int:
        """How many events :func:`open_turn_closers` would append."""
        if self.balanced:
            return 0
        return len(self.pending) + (1 if self.open_step is not None else 0) + 1


def _field(obj: Any, key: str, event: dict[str, Any], what: str) -> Any:
    """Read ``obj[key]`` or explain which event is malformed.

    dsh scans only validated logs; an unvalidated input that lacks a structure the
    scan needs is reported as corruption instead of crashing with a KeyError.
    """
    if not isinstance(obj, dict) or key not in obj:
        raise CorruptLog(f"{event.get('type')} event lacks {what}", seq=_seq_or_none(event))
    return obj[key]


def _seq_or_none(event: dict[str, Any]) -> int | None:
    seq = event.get("seq") if isinstance(event, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


class TailState:
    """Incremental form of dsh's closer scan: feed events one by one, ask at any point.

    State is the open turn (``None`` = closed; :data:`MISSING` mimics an absent
    ``data.turn``, which dsh treats as open), the open step, and the pending calls
    of the open turn in first-registration order.  A Python ``dict`` assignment to
    an existing key keeps its position, exactly like JavaScript ``Map.set``.
    """

    __slots__ = ("open_turn", "open_step", "pending", "count", "last_seq", "last_time")

    def __init__(self) -> None:
        self.open_turn: Any = None
        self.open_step: Any = None
        self.pending: dict[Any, PendingCall] = {}
        self.count = 0
        self.last_seq: Any = None
        self.last_time: Any = None

    def feed(self, event: dict[str, Any]) -> None:
        """Advance the scan by one event (never mutates it)."""
        if not isinstance(event, dict):
            raise CorruptLog("event is not an object")
        kind = event.get("type")
        data: Any = event.get("data")
        if kind == "turn/start":
            self.open_turn = data.get("turn", MISSING) if isinstance(data, dict) else MISSING
            self.open_step = None
            self.pending.clear()
        elif kind == "turn/end":
            self.open_turn = None
            self.open_step = None
            self.pending.clear()
        elif kind == "step/start":
            self.open_step = data.get("step", MISSING) if isinstance(data, dict) else MISSING
        elif kind == "step/end":
            self.pending.clear()
            self.open_step = None
        elif kind == "assistant/message":
            message = _field(data, "message", event, "data.message")
            content = _field(message, "content", event, "message.content")
            if not isinstance(content, list):
                raise CorruptLog("assistant/message content is not an array", seq=_seq_or_none(event))
            step = data.get("step", MISSING)
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool-call":
                    call_id = block.get("id")
                    key = _hashable(call_id)
                    name = block.get("name")
                    # Map.set: a re-registered id gets a fresh entry (no callSeq) in its old slot.
                    self.pending[key] = PendingCall(call_id, step, None, name if isinstance(name, str) else None)
        elif kind == "tool/call":
            if isinstance(data, dict) and "callId" in data:
                entry = self.pending.get(_hashable(data["callId"]))
                if entry is not None:
                    entry.call_seq = event.get("seq")
        elif kind == "tool/result":
            message = _field(data, "message", event, "data.message")
            source = _field(message, "source", event, "message.source")
            call_id = source.get("callId") if isinstance(source, dict) else None
            self.pending.pop(_hashable(call_id), None)
        self.count += 1
        self.last_seq = event.get("seq")
        self.last_time = event.get("time")

    def feed_all(self, events: Iterable[dict[str, Any]]) -> TailState:
        for event in events:
            self.feed(event)
        return self

    def report(self) -> TailReport:
        """Snapshot of what is open, with pending calls copied (safe to keep)."""
        return TailReport(
            event_count=self.count,
            last_seq=self.last_seq,
            last_time=self.last_time,
            open_turn=self.open_turn,
            open_step=self.open_step,
            pending=tuple(
                PendingCall(p.call_id, p.step, p.call_seq, p.name) for p in self.pending.values()
            ),
        )

    def closers(self, cause: Cause) -> list[dict[str, Any]]:
        """The closer events for the events fed so far (empty when balanced)."""
        if cause not in CLOSER_TEXT:
            raise InvalidArgument(f"unknown closer cause {cause!r} (choose {', '.join(map(repr, CLOSER_TEXT))})")
        if self.open_turn is None or self.count == 0:
            return []
        seq = _next_seq(self.last_seq)
        time = self.last_time
        texts = CLOSER_TEXT[cause]
        out: list[dict[str, Any]] = []
        for call in self.pending.values():
            started = call.call_seq is not None
            message = {
                "id": closer_message_id(cause, js_string(call.call_id), seq),
                "role": "tool",
                "toolCallId": call.call_id,
                "isError": True,
                "source": {"kind": "tool", "callId": call.call_id},
                "content": [{"type": "text", "text": texts["started" if started else "notStarted"]}],
            }
            data = _compact({"turn": self.open_turn, "step": call.step})
            data["message"] = message
            data["error"] = dict(CLOSER_ERROR[started])
            event: dict[str, Any] = {"type": "tool/result", "seq": seq, "time": time, "data": data,
                                     "surfaceOp": "append"}
            if started:
                event["sourceEventSeqs"] = [call.call_seq]
            out.append(event)
            seq += 1
        if self.open_step is not None:
            out.append({"type": "step/end", "seq": seq, "time": time,
                        "data": _compact({"turn": self.open_turn, "step": self.open_step})})
            seq += 1
        turn_data = _compact({"turn": self.open_turn})
        turn_data["reason"] = {"kind": cause}
        out.append({"type": "turn/end", "seq": seq, "time": time, "data": turn_data})
        return out


def _hashable(value: Any) -> Any:
    """Map key for a call id; ids are strings in valid logs, anything else still keys stably."""
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _compact(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop :data:`MISSING` values, as ``JSON.stringify`` drops ``undefined`` members."""
    return {k: v for k, v in obj.items() if v is not MISSING}


def _next_seq(last_seq: Any) -> int:
    if isinstance(last_seq, bool) or not isinstance(last_seq, (int, float)):
        raise CorruptLog(f"last event has no numeric seq (got {js_string(last_seq)})")
    return int(last_seq) + 1


def scan_tail(events: Iterable[dict[str, Any]]) -> TailReport:
    """Describe what is open at the end of ``events`` (one pass, small state)."""
    return TailState().feed_all(events).report()


def open_turn_closers(events: Iterable[dict[str, Any]], cause: Cause) -> list[dict[str, Any]]:
    """Synthetic events that balance a log ending inside a turn (dsh ``openTurnClosers``).

    Returns ``[]`` for a balanced or empty log.  Otherwise: one error ``tool/result``
    per pending call of the open turn (map order), ``step/end`` when a step is open,
    and always ``turn/end`` with reason ``{kind: cause}``; seqs continue the log and
    every closer carries the last event's time.
    """
    return TailState().feed_all(events).closers(cause)


def interrupted_turn_closers(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Crash-recovery closers (dsh ``interruptedTurnClosers``)."""
    return open_turn_closers(events, "interrupted")


__all__ = [
    "CAUSES",
    "CLOSER_TEXT",
    "Cause",
    "MISSING",
    "PendingCall",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "RepairPlan",
    "TailReport",
    "TailState",
    "interrupted_turn_closers",
    "open_compaction_of",
    "open_turn_closers",
    "scan_tail",
]


# --------------------------------------------------------------------------- the plan of a repair
#
# What ``dshlog repair`` reports; reading the log and writing the repaired one is
# :mod:`dshlog.ops.repair`'s.


@dataclass
class RepairPlan:
    """What ``dshlog repair`` found: the tail state and the exact events it would append."""

    path: str
    version: int
    container: str
    report: TailReport
    closers: list[dict[str, Any]]
    torn_bytes: int  # bytes on disk a write cuts: a torn last line, or the whole torn zstd frame
    event_count: int
    open_compaction: int | None = None  # seq of a compaction/start the tail leaves open
    torn_frame: int | None = None  # zstd: the index of the torn last frame
    torn_note: str | None = None  # what the torn tail is, for people

    @property
    def healthy(self) -> bool:
        return not self.closers

    @property
    def warnings(self) -> list[str]:
        """What dsh will still refuse after these closers (the closers stay exactly dsh's)."""
        if self.open_compaction is not None and self.closers:
            return [
                f"the tail is inside the compaction transaction opened at seq {self.open_compaction}; "
                "dsh closes only the turn, and its reader refuses a turn/end that crosses an open compaction"
            ]
        return []


def open_compaction_of(events: Iterable[dict[str, Any]]) -> int | None:
    """Seq of a ``compaction/start`` with no ``compaction/end`` (a ``session/end-seed`` closes it)."""
    open_seq = None
    for ev in events:
        t = ev.get("type")
        if t == "compaction/start":
            open_seq = ev.get("seq")
        elif t in ("compaction/end", "session/end-seed"):
            open_seq = None
    return open_seq
