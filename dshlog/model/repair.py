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

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import CorruptLog
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

    call_id: str
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


def _field(obj: Any, key: str, event: dict, what: str) -> Any:
    """Read ``obj[key]`` or explain which event is malformed.

    dsh scans only validated logs; an unvalidated input that lacks a structure the
    scan needs is reported as corruption instead of crashing with a KeyError.
    """
    if not isinstance(obj, dict) or key not in obj:
        raise CorruptLog(f"{event.get('type')} event lacks {what}", seq=_seq_or_none(event))
    return obj[key]


def _seq_or_none(event: dict) -> int | None:
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

    def feed(self, event: dict) -> None:
        """Advance the scan by one event (never mutates it)."""
        if not isinstance(event, dict):
            raise CorruptLog("event is not an object")
        kind = event.get("type")
        data = event.get("data")
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

    def feed_all(self, events: Iterable[dict]) -> "TailState":
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

    def closers(self, cause: Cause) -> list[dict]:
        """The closer events for the events fed so far (empty when balanced)."""
        if cause not in CLOSER_TEXT:
            raise ValueError(f"unknown closer cause {cause!r}")
        if self.open_turn is None or self.count == 0:
            return []
        seq = _next_seq(self.last_seq)
        time = self.last_time
        texts = CLOSER_TEXT[cause]
        out: list[dict] = []
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


def scan_tail(events: Iterable[dict]) -> TailReport:
    """Describe what is open at the end of ``events`` (one pass, small state)."""
    return TailState().feed_all(events).report()


def open_turn_closers(events: Iterable[dict], cause: Cause) -> list[dict]:
    """Synthetic events that balance a log ending inside a turn (dsh ``openTurnClosers``).

    Returns ``[]`` for a balanced or empty log.  Otherwise: one error ``tool/result``
    per pending call of the open turn (map order), ``step/end`` when a step is open,
    and always ``turn/end`` with reason ``{kind: cause}``; seqs continue the log and
    every closer carries the last event's time.
    """
    return TailState().feed_all(events).closers(cause)


def interrupted_turn_closers(events: Iterable[dict]) -> list[dict]:
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
    "TailReport",
    "TailState",
    "interrupted_turn_closers",
    "open_turn_closers",
    "scan_tail",
]


# --------------------------------------------------------------------------- repairing a file
#
# The closers above are pure.  What follows applies them to a log on disk: plan
# (read-only), write a repaired copy, or repair in place under ``session.lock``.


@dataclass
class RepairPlan:
    """What ``dshlog repair`` found: the tail state and the exact events it would append."""

    path: str
    version: int
    container: str
    report: TailReport
    closers: list[dict]
    torn_bytes: int
    event_count: int
    open_compaction: int | None = None  # seq of a compaction/start the tail leaves open

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


def open_compaction_of(events: Iterable[dict]) -> int | None:
    """Seq of a ``compaction/start`` with no ``compaction/end`` (a ``session/end-seed`` closes it)."""
    open_seq = None
    for ev in events:
        t = ev.get("type")
        if t == "compaction/start":
            open_seq = ev.get("seq")
        elif t in ("compaction/end", "session/end-seed"):
            open_seq = None
    return open_seq


@dataclass
class RepairResult:
    plan: RepairPlan
    written: str | None = None  # the file that now holds the repaired log
    sidecar: str | None = None  # where the cut torn bytes were kept
    in_place: bool = False


def plan_repair(target: str, *, select: str | None = None, format_version: int | None = None,
                system_prompt_plugins: tuple[str, ...] = ()) -> RepairPlan:
    """Read a log (any version, migrated in memory) and compute its interrupted-turn closers."""
    from ..read.session import open_session

    with open_session(target, select=select, format_version=format_version, system_prompt_plugins=system_prompt_plugins) as log:
        state = TailState()
        n = 0
        comp: int | None = None
        for ev in log.v4():
            state.feed(ev)
            t = ev.get("type")
            if t == "compaction/start":
                comp = ev.get("seq")
            elif t in ("compaction/end", "session/end-seed"):
                comp = None
            n += 1
        torn = log.info.torn.length if log.info.torn else 0
        return RepairPlan(log.path, log.version, log.info.container, state.report(), state.closers("interrupted"), torn, n, comp)


def _identity(path: Path) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _same_bytes(path: Path, data: bytes) -> bool:
    """True when ``path`` is a regular file holding exactly ``data``."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def repair_copy(target: str, out: Path, *, select: str | None = None, format_version: int | None = None,
                system_prompt_plugins: tuple[str, ...] = ()) -> RepairResult:
    """Write ``prefix + closers`` as a new v4 log at ``out`` (never overwriting); the input is untouched."""
    from ..write.atomic import publish_no_overwrite, stage_file, temp_affixes
    from ..read.session import open_session
    from ..write.writer import LogWriter

    out = Path(out)
    compressed = out.name.endswith(".zstd")
    with open_session(target, select=select, format_version=format_version, system_prompt_plugins=system_prompt_plugins) as log:
        header = log.v4().header
        prefix, suffix = temp_affixes(out)
        with stage_file(out.parent, prefix, suffix) as staged:
            w = LogWriter(staged, compressed=compressed)
            if header is not None:
                w.header(log.header_raw if log.version == 4 and log.header_raw is not None else header)
            state = TailState()
            n = 0
            for ev, raw in log.v4().records():
                state.feed(ev)
                w.event(ev, raw)
                n += 1
            closers = state.closers("interrupted")
            for c in closers:
                w.event(c)
            w.close()
            publish_no_overwrite(staged, out)
        plan = RepairPlan(log.path, log.version, log.info.container, state.report(), closers, log.info.torn.length if log.info.torn else 0, n)
    return RepairResult(plan, written=str(out))


def repair_in_place(target: str) -> RepairResult:
    """Close an interrupted tail in the log file itself, under ``session.lock``.

    The torn final line (or torn zstd frame) is cut first and its bytes are kept in
    a sidecar file next to the log; the repaired log is staged in full, verified by
    reading it back, and swapped in atomically, so a crash at any point leaves
    either the untouched log or the fully repaired one.
    """
    from ..write.atomic import publish_no_overwrite, replace_atomically, stage_file, temp_affixes
    from ..errors import Refused, UsageError
    from ..write.lock import session_lock
    from ..read.session import open_session
    from ..read.container import Container
    from ..write.writer import frame

    if target == "-":
        raise UsageError("repair --write needs a file, not standard input (use -o OUT)")
    from ..read.container import resolve_path

    if not resolve_path(target).is_file():  # a pipe would be drained by the probe below
        raise UsageError("repair --write needs a regular file, not a pipe or device (use -o OUT)", path=target)
    with open_session(target) as probe:
        path = Path(probe.path)
        version, container = probe.version, probe.info.container
        sid = probe.session_id
    if version != 4:
        raise UsageError(f"repair --write rewrites only v4 logs; this log is v{version}: run `dshlog migrate` first, or use -o OUT for a repaired v4 copy", path=str(path))
    if container not in (Container.JSONL, Container.ZSTD):
        raise UsageError(f"repair --write needs a session generation file, not a {container} input (use -o OUT)", path=str(path))
    with session_lock(path.parent, session_id=sid):
        from ..write.atomic import cleanup_leftovers

        cleanup_leftovers(path.parent)  # temps of a killed earlier run; the lock proves they are dead
        before = _identity(path)
        with open_session(str(path)) as log:
            state = TailState()
            n = 0
            torn_frame_lines: list[bytes] = []
            torn = None
            # dsh's read: rows after a damaged one that no later turn/end commits are not part of
            # the log, and dsh's write open cuts them before it appends (kept in the sidecar here)
            for ev, _raw in log.v4().records():
                state.feed(ev)
                n += 1
            torn = log.info.torn
            dropped = log.decoder.issue_loc if log.decoder.issue is not None else None
            if dropped is not None and container != Container.JSONL:
                raise Refused(f"rows after the accepted prefix are damaged ({log.decoder.issue.message}); "
                              "repair --write cuts them only from plain logs (use -o OUT)", path=str(path))
            closers = state.closers("interrupted")
            plan = RepairPlan(str(path), version, container, state.report(), closers, torn.length if torn else 0, n)
        if not closers:
            return RepairResult(plan)
        # where the committed bytes end (file offset)
        size = before[2]
        if dropped is not None and dropped.offset is not None:
            cut = dropped.offset
        elif torn is None:
            cut = size
        elif container == Container.JSONL:
            cut = torn.offset
        else:
            cut = torn.frame_offset if torn.frame_offset is not None else size
        sidecar = None
        if cut < size:
            with open(path, "rb") as fh:
                fh.seek(cut)
                torn_raw = fh.read()
            side = path.with_name(f"{path.name}.torn-{before[3] // 1_000_000}")
            sidecar = str(side)
            if container == Container.ZSTD:
                # complete lines recovered from the torn frame go into the new frame, as dsh does
                with open_session(str(path)) as log2:
                    torn_frame_lines = [r.raw + b"\n" for r in log2.stored() if r.loc.frame == torn.frame and r.raw is not None]
        prefix, suffix = temp_affixes(path)
        with stage_file(path.parent, prefix, suffix) as staged:
            with open(path, "rb") as fh:
                remaining = cut
                while remaining:
                    chunk = fh.read(min(remaining, 1 << 20))
                    if not chunk:
                        break
                    staged.write(chunk)
                    remaining -= len(chunk)
            from ..protocol.jsjson import dumps

            batch = b"".join(torn_frame_lines) + b"".join(dumps(c) + b"\n" for c in closers)
            staged.write(frame(batch) if container == Container.ZSTD else batch)
            staged.sync_and_close()
            # verify: the staged log reads strictly, holds every event plus the closers, and is balanced
            with open_session(str(staged.path)) as check:
                st2 = TailState()
                m = 0
                for ev in check.v4():
                    st2.feed(ev)
                    m += 1
            if m != n + len(closers) or st2.closers("interrupted"):
                raise Refused("repaired log did not verify; the original is untouched", path=str(path))
            if _identity(path) != before:
                raise Refused("the log changed while it was being repaired; nothing was written", path=str(path))
            os.chmod(staged.path, os.stat(path).st_mode & 0o7777)  # the log keeps its permissions
            # the torn bytes are kept only once the repaired log is ready (a failed staging leaves nothing)
            if sidecar is not None and not _same_bytes(side, torn_raw):  # identical: a killed earlier run kept it
                p2, s2 = temp_affixes(side)
                with stage_file(path.parent, p2, s2) as st:
                    st.write(torn_raw)
                    publish_no_overwrite(st, side)
            replace_atomically(staged, path)
    return RepairResult(plan, written=str(path), sidecar=sidecar, in_place=True)
