"""Lifecycle rules: how events relate to the open turn, step and tool calls (FORMAT §5.2 item 7).

Turns open 1, 2, 3… and close with no step open and no unresolved tool call;
steps open 1, 2, … inside their turn; an ``assistant/message`` advertises its
tool calls, ``tool/call`` starts one and ``tool/result`` settles it (or is the
exact ``TOOL_NOT_STARTED`` repair); commands run once and finish after they ran;
a later ``system/message`` needs the protected head.  The relationships with
whole-log memory have their own modules (compaction, retries, titles, PTC), fed
from here in dsh's order.  Unfinished tails may stay open: :meth:`Lifecycle.finish`
describes them as information, not as a problem.
"""

from __future__ import annotations

from array import array
from typing import Any

from ..protocol.texts import CLOSER_ERROR, CLOSER_TEXT, TOOL_NOT_STARTED, closer_message_prefix
from ..protocol.values import MAX_SAFE_INTEGER, is_count
from ..protocol.vocabulary import OPEN_STEP_TYPES, PTC_DISPATCH_TYPES
from .common import DECIMAL, nonempty_str, seq_in
from .compaction import Compactions
from .problems import Problem, Reporter, Severity, report_lifecycle
from .ptc import Dispatches
from .retries import Retries
from .titles import Titles

__all__ = ["Lifecycle"]

NOT_STARTED_TEXT = CLOSER_TEXT["interrupted"]["notStarted"]
_NOT_STARTED_ERROR = CLOSER_ERROR[False]


class _Call:
    __slots__ = ("name", "arguments", "started")

    def __init__(self, name: Any, arguments: Any) -> None:
        self.name = name
        self.arguments = arguments
        self.started = False


class Lifecycle:
    """The open turn, step and tool calls of a log, and the relationship families fed from them.

    ``nodes`` gives the current surface (the fold's node list) when there is a
    fold; without one the rules that need it are skipped.
    """

    def __init__(self, fold: Any = None) -> None:
        self.fold = fold
        self.turn: int | None = None
        self.step: int | None = None
        self.next_turn = 1
        self.next_step = 1
        self.provider: Any = None
        self.calls: dict[str, _Call] = {}
        self.head: int | None = None  # protected system head (always surface node 0)
        self._commands: set[str] = set()
        self._command_seqs = array("q")  # seqs of command events, ascending
        self.compactions = Compactions()
        self.retries = Retries()
        self.titles = Titles()
        self.dispatches = Dispatches()

    # ------------------------------------------------------------------ helpers

    def _require_turn(self, etype: str, seq: int, report: Reporter) -> None:
        if self.turn is None:
            report_lifecycle(report, f"{etype} is outside an open turn", seq)

    def _require_step(self, etype: str, data: dict[str, Any], seq: int, report: Reporter) -> bool:
        if self.turn is None or self.step is None or data.get("turn") != self.turn or data.get("step") != self.step:
            report_lifecycle(report, f"{etype} does not match an open turn and step", seq)
            return False
        return True

    def _close_calls(self, etype: str, seq: int, report: Reporter) -> None:
        if self.calls:
            report_lifecycle(report, f"{etype} leaves unresolved tool call {next(iter(self.calls))}", seq)
        self.calls.clear()

    # ------------------------------------------------------------------ per event

    def check(  # noqa: C901
        self,
        etype: str,
        event: dict[str, Any],
        data: Any,
        seq: int,
        before: tuple[int, int | None],
        surfaced: bool,
        report: Reporter,
    ) -> None:
        """Relate one known event to the state so far; ``before`` is the surface (length, first node) before it."""
        if not isinstance(data, dict):
            return  # reported by the data rules; nothing to relate
        compactions = self.compactions
        if etype in OPEN_STEP_TYPES:
            self._require_step(etype, data, seq, report)
        if etype.startswith("turn/"):
            compactions.crossing(etype, seq)
        if etype == "system/message":
            length, first = before
            if length > 0 and (self.head is None or first != self.head):
                report_lifecycle(report, "system/message requires a protected first surface head", seq)
            nodes = self.fold.nodes if self.fold is not None else None
            if surfaced and nodes and nodes[0] == seq:
                self.head = seq
        if etype == "user/message":
            self.titles.user_message(data, seq)
            source = data.get("source")
            if event.get("surfaceOp") != "append" and isinstance(source, dict) and source.get("kind") == "compact-checkpoint":
                compactions.owner(source, "compaction checkpoint", seq, report)
            return
        if etype == "turn/start":
            turn = data.get("turn")
            if self.turn is not None or turn != self.next_turn:
                report_lifecycle(report, "turn/start does not open the expected turn", seq)
            self.turn = turn if is_count(turn) else self.next_turn
            self.step = None
            self.next_step = 1
            self.calls.clear()
        elif etype == "turn/end":
            if self.turn is None or data.get("turn") != self.turn or self.step is not None:
                report_lifecycle(report, "turn/end does not match the open turn with no open step", seq)
            self._close_calls(etype, seq, report)
            closed = self.turn if self.turn is not None else data.get("turn")
            self.turn = None
            self.step = None
            self.next_turn = (closed + 1) if is_count(closed) else self.next_turn + 1
        elif etype == "step/start":
            step = data.get("step")
            if self.turn is None or data.get("turn") != self.turn or self.step is not None or step != self.next_step:
                report_lifecycle(report, "step/start does not match the open turn and next step", seq)
            self.step = step if is_count(step) else self.next_step
            if self.turn is None and is_count(data.get("turn")):
                self.turn = data["turn"]
        elif etype == "step/end":
            self._require_step(etype, data, seq, report)
            self._close_calls(etype, seq, report)
            closed = self.step if self.step is not None else data.get("step")
            self.step = None
            self.next_step = (closed + 1) if is_count(closed) else self.next_step + 1
        elif etype in ("assistant/message", "tool/call", "tool/result"):
            self._tool(etype, event, data, seq, report)
        elif etype == "request/header":
            self._require_turn(etype, seq, report)
            header = data.get("header")
            config = header.get("config") if isinstance(header, dict) else None
            self.provider = config.get("provider") if isinstance(config, dict) else None
        elif etype == "request/context":
            self._require_turn(etype, seq, report)
        elif etype in PTC_DISPATCH_TYPES:
            self._require_turn(etype, seq, report)
            self.dispatches.check(etype, data, seq, report)
        elif etype in ("llm/retry", "llm/retry-started"):
            step = self.step if self.step is not None else self.next_step - 1
            self.retries.check(etype, data, seq, self.turn, step, self.provider, report)
        elif etype in ("session/title", "session/title-llm-request"):
            self.titles.check(etype, data, seq, report)
        elif etype in ("command/run", "command/done"):
            self._command(etype, data, seq, report)
        elif etype in ("compaction/start", "compaction/summary", "compaction/end", "compaction/prune"):
            nodes = self.fold.nodes if self.fold is not None else None
            compactions.check(etype, data, seq, self.turn, nodes, self.head, report)
        elif etype == "session/end-seed":
            compactions.forgive()

    def _command(self, etype: str, data: dict[str, Any], seq: int, report: Reporter) -> None:
        """Commands: a unique id per run; a done names a prior run and, on success, its source event."""
        cid = data.get("commandId")
        if etype == "command/run":
            if not nonempty_str(cid):
                report_lifecycle(report, "commandId requires a nonempty string", seq)
            elif cid in self._commands:
                report_lifecycle(report, f"command/run repeats commandId {cid}", seq)
            else:
                self._commands.add(cid)
            self._command_seqs.append(seq)
            return
        self._command_seqs.append(seq)
        if not nonempty_str(cid):
            report_lifecycle(report, "commandId requires a nonempty string", seq)
        elif cid not in self._commands:
            report_lifecycle(report, "command/done has no prior command/run", seq)
        if "sourceEventSeq" in data:
            source = data["sourceEventSeq"]
            if not is_count(source):
                report_lifecycle(report, "command sourceEventSeq must be a non-negative safe integer", seq)
            elif source >= seq:
                report_lifecycle(report, "command sourceEventSeq must name an earlier event", seq)
            elif data.get("kind") != "success" or seq_in(self._command_seqs, source):
                report_lifecycle(report, "command/done has invalid sourceEventSeq", seq)

    def _tool(self, etype: str, event: dict[str, Any], data: dict[str, Any], seq: int, report: Reporter) -> None:
        """Advertise (assistant tool-call blocks), start (tool/call), settle (tool/result)."""
        if etype == "tool/result" and event.get("surfaceOp") != "append":
            self._require_turn(etype, seq, report)
            return
        matched = self._require_step(etype, data, seq, report)
        if etype == "assistant/message":
            message = data.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool-call":
                    continue
                cid = block.get("id")
                if not nonempty_str(cid):
                    continue  # reported by the data rules
                if cid in self.calls:
                    report_lifecycle(report, f"assistant/message repeats advertised tool call {cid}", seq)
                    continue
                self.calls[cid] = _Call(block.get("name"), block.get("arguments"))
            return
        message = data.get("message") if etype == "tool/result" else None
        cid = data.get("callId") if etype == "tool/call" else (message.get("toolCallId") if isinstance(message, dict) else None)
        if not nonempty_str(cid):
            return
        pending = self.calls.get(cid)
        if pending is None:
            if matched or self.turn is not None:
                report_lifecycle(report, f"{etype} {cid} has no advertised tool lifecycle", seq)
            return
        if etype == "tool/call":
            if pending.started or pending.name != data.get("name") or pending.arguments != data.get("arguments"):
                report_lifecycle(report, f"tool/call {cid} does not match one advertised tool call", seq)
            pending.started = True
            return
        if not pending.started and not _not_started_repair(event, data, message, cid):
            report_lifecycle(report, f"tool/result {cid} is not the exact TOOL_NOT_STARTED repair", seq)
        del self.calls[cid]

    # ------------------------------------------------------------------ end of log

    def finish(self, report: Reporter) -> None:
        """A compaction crossing no end-seed forgave, then the open tail (information only)."""
        compactions = self.compactions
        compactions.report_crossings(report)
        comp = compactions.open
        tail: list[str] = []
        if self.turn is not None:
            tail.append(f"turn {self.turn}")
        if self.step is not None:
            tail.append(f"step {self.step}")
        if self.calls:
            tail.append("tool calls " + ", ".join(self.calls))
        if comp is not None:
            tail.append(f"compaction {comp.id} (seq {comp.seq})")
        if tail:
            report.report(Problem("open-tail", "open tail: " + "; ".join(tail), Severity.INFO))


def _not_started_repair(event: dict[str, Any], data: dict[str, Any], message: Any, cid: str) -> bool:
    """Whether a tool/result for a call that never started is dsh's exact ``TOOL_NOT_STARTED`` closer."""
    error = data.get("error")
    if not isinstance(error, dict) or not isinstance(message, dict):
        return False
    if (
        error.get("name") != _NOT_STARTED_ERROR["name"]
        or error.get("code") != TOOL_NOT_STARTED
        or message.get("isError") is not True
        or "sourceEventSeqs" in event
    ):
        return False
    mid = message.get("id")
    if not nonempty_str(mid):
        return False
    if mid.startswith(closer_message_prefix("forked", cid)):
        return True  # its exact identity is checked by the fork-result rule
    prefix = closer_message_prefix("interrupted", cid)
    suffix = mid[len(prefix):]
    content = message.get("content")
    block = content[0] if isinstance(content, list) and content else None
    return (
        mid.startswith(prefix)
        and bool(DECIMAL.fullmatch(suffix))
        and int(suffix) <= MAX_SAFE_INTEGER
        and isinstance(content, list)
        and len(content) == 1
        and isinstance(block, dict)
        and block.get("type") == "text"
        and block.get("text") == NOT_STARTED_TEXT
    )
