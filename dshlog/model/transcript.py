"""The conversation as a person reads it: v4 events in, display items out.

``show`` and ``export`` both need the same reading of a log: which turn we are
in, what the user and the model said, which tools ran with which arguments and
what came back, where a call failed and was retried, where the user cancelled,
and where a compaction summary took the place of earlier history.  This module
does that reading once, in a single pass that never holds more than the current
surface's seq list and a few per-step counters, and yields small dataclass
items.  The renderers (:mod:`dshlog.output`: plain text, terminal, Markdown,
HTML, JSON) only format items; they never look at events, and this module
never formats for a target: the words and marks a person reads are theirs.

What is decided here is what a reader is shown at all: the text of each message
(by the one extractor, :mod:`dshlog.model.content`), tool arguments in JS's own
JSON (:mod:`dshlog.protocol.jsjson`: what dsh would print, never Python's
``1e-07``), how much long text is kept (:class:`Limits`), and the masking of
secrets before anything is cut (``redact``).

The reader is deliberately lenient: test-snapshot projections (no real seq or
time), legacy data shapes that survived migration and half-written tails are
displayed as well as possible instead of refused; checking a log is the job of
``validate``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from ..protocol.jsjson import JsonError, dumps_pretty, loads
from .content import TRANSCRIPT, content_text
from .summary import model_name, settlement_usage, stream_usage

# --------------------------------------------------------------------------- limits and trimming

TOOL_LINES = 40  # lines of tool output (and arguments) shown before trimming
TOOL_CHARS = 4000  # characters of tool output shown before trimming
PROMPT_LINES = 6  # system prompts are long and rarely the point: show their start


@dataclass(frozen=True, slots=True)
class Limits:
    """How much long text a transcript keeps (``None`` = everything)."""

    lines: int | None = TOOL_LINES
    chars: int | None = TOOL_CHARS
    prompt_lines: int | None = PROMPT_LINES


FULL = Limits(None, None, None)


def trim(text: str, lines: int | None, chars: int | None) -> tuple[str, int, int]:
    """``(kept, cut_lines, cut_chars)``: the head of ``text`` within both limits.

    Cuts at a line boundary when one is near, so output is not split mid-line.
    """
    kept = text
    if lines is not None:
        parts = kept.split("\n")
        if len(parts) > lines:
            kept = "\n".join(parts[:lines])
    if chars is not None and len(kept) > chars:
        cut = kept.rfind("\n", 0, chars)
        kept = kept[: cut if cut > chars // 2 else chars]
    if len(kept) == len(text):
        return text, 0, 0
    rest = text[len(kept) :]
    body = rest[1:] if rest.startswith("\n") else rest  # a partly shown line counts as cut
    lines_cut = body.count("\n") + 1 - (1 if body.endswith("\n") else 0) if body else 0
    return kept, lines_cut, len(rest)


# --------------------------------------------------------------------------- items


@dataclass(slots=True)
class Item:
    """One thing a reader sees; ``seq`` is the event it comes from (None when unknown)."""

    kind: ClassVar[str] = "item"
    seq: int | None

    def as_dict(self) -> dict[str, Any]:
        """Stable JSON form: ``kind`` first, then the fields in declaration order."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            out[f.name] = getattr(self, f.name)
        return out


@dataclass(slots=True)
class TurnStart(Item):
    kind: ClassVar[str] = "turn-start"
    turn: Any = None
    time: int | None = None  # epoch ms; None in projections (time 0)


@dataclass(slots=True)
class TurnEnd(Item):
    """How a turn ended: completed, aborted, error, max-tokens, interrupted, forked, blocked, or open."""

    kind: ClassVar[str] = "turn-end"
    turn: Any = None
    outcome: str = "completed"
    label: str = "completed"  # for people: "aborted by user", "error: busy (RATE_LIMIT)"


@dataclass(slots=True)
class SystemPrompt(Item):
    kind: ClassVar[str] = "system-prompt"
    text: str = ""
    change: str = "set"  # set | replaced | appended | cleared
    cut_lines: int = 0
    cut_chars: int = 0


@dataclass(slots=True)
class UserText(Item):
    kind: ClassVar[str] = "user"
    text: str = ""
    source: str | None = None  # user, runtime-context, goal, ...


@dataclass(slots=True)
class AssistantText(Item):
    kind: ClassVar[str] = "assistant"
    text: str = ""
    interrupted: bool = False  # cancelled mid-stream: this is the delivered prefix
    model: str | None = None


@dataclass(slots=True)
class Reasoning(Item):
    """The model's reasoning; renderers fold it by default."""

    kind: ClassVar[str] = "reasoning"
    text: str = ""


@dataclass(slots=True)
class ToolCall(Item):
    kind: ClassVar[str] = "tool-call"
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""  # pretty-printed when the model's string is a JSON object
    cut_lines: int = 0
    cut_chars: int = 0


@dataclass(slots=True)
class ToolResult(Item):
    kind: ClassVar[str] = "tool-result"
    call_id: str | None = None
    name: str | None = None
    output: str = ""
    is_error: bool = False
    error_code: str | None = None
    cut_lines: int = 0
    cut_chars: int = 0


@dataclass(slots=True)
class Failure(Item):
    """A model call that produced nothing model-visible (``assistant/attempt``)."""

    kind: ClassVar[str] = "failure"
    outcome: str = "error"  # error | aborted | no-output
    code: str | None = None
    message: str = ""


@dataclass(slots=True)
class Retry(Item):
    """A retried model call: logged (``llm/retry``) or inferred from a second settlement in one step."""

    kind: ClassVar[str] = "retry"
    number: int = 1
    max_retries: int | None = None
    delay_ms: int | None = None
    code: str | None = None
    message: str | None = None
    logged: bool = True


@dataclass(slots=True)
class Replacement(Item):
    """A message that took the place of earlier surface nodes (compaction summary, revision, rewrite)."""

    kind: ClassVar[str] = "replacement"
    reason: str = "compaction"  # compaction | revision | tool-result-rewrite
    replaced: list[int] = field(default_factory=list)  # the shadowed seqs, in surface order
    start: Any = None
    end: Any = None
    text: str = ""


@dataclass(slots=True)
class ToolChange(Item):
    kind: ClassVar[str] = "tool-change"
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StepUsage(Item):
    """Token usage of one step (summed over its model calls)."""

    kind: ClassVar[str] = "usage"
    turn: Any = None
    step: Any = None
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Note(Item):
    """A log-only event worth a line: title, approval, hook decision, fork marker, todo list."""

    kind: ClassVar[str] = "note"
    event: str = ""
    text: str = ""


def map_text(item: Item, fn: Callable[[str], str]) -> Item:
    """A copy of ``item`` with ``fn`` applied to every string it holds (lists and dicts included)."""

    def conv(v: Any) -> Any:
        if isinstance(v, str):
            return fn(v)
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v

    return replace(item, **{f.name: conv(getattr(item, f.name)) for f in fields(item) if f.name != "seq"})


@dataclass(frozen=True, slots=True)
class RefusalNotice:
    """dsh's refusal of a log whose transcript is shown anyway: what a reader is told before anything else.

    ``kind`` is the error's kind (``corrupt``, ``unsupported``), ``reason`` dsh's
    own words, ``rescue`` what ``dshlog rescue`` takes to bring the session back
    (its id where the log sits in a persistence root, where ids are looked up;
    else its path), ``None`` where dsh refuses the session for where it sits,
    which a rescued successor beside it would not change.
    """

    kind: str
    reason: str
    rescue: str | None


@dataclass(frozen=True, slots=True)
class SessionHead:
    """What a transcript starts with: where the log is, and the header facts a reader cares about.

    ``facts`` is :func:`session_facts` (exports print it; ``show`` prints one line
    from the other fields).  ``refusal`` is set when dsh refuses the log: the
    transcript is then its stored rows, and every renderer opens with the refusal.
    """

    session_id: str | None
    version: int | None
    path: str
    projection: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    refusal: RefusalNotice | None = None


@dataclass(frozen=True, slots=True)
class Totals:
    """What a transcript ends with: the session title, turns read, tokens summed over every model call."""

    title: str | None
    turns: int
    tokens: dict[str, int]
    first_time: int | None = None  # epoch ms of the first and last event with a real time
    last_time: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON export's ``summary`` (shape 1: the times are the HTML header's, not part of it)."""
        return {"title": self.title, "turns": self.turns, "tokens": dict(self.tokens)}


# --------------------------------------------------------------------------- reading helpers


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _message(etype: str, data: Any) -> dict[str, Any]:
    if etype == "user/message":
        return _dict(data)
    msg = _dict(data).get("message")
    if isinstance(msg, dict):
        return msg
    # legacy wrapper (web seeds): the message fields sit in data itself
    return _dict(data)


def _failure_of(stream: Any) -> tuple[str, str | None, str]:
    """(outcome, code, message) of a settlement stream's finish chunk."""
    finish = None
    for rec in stream if isinstance(stream, list) else []:
        ch = _dict(_dict(rec).get("chunk"))
        if ch.get("type") == "finish":
            finish = _dict(ch.get("reason"))
    if finish is None:
        return "no-output", None, "the stream ended without output"
    kind = str(finish.get("kind"))
    fail = _dict(finish.get("failure"))
    code: str | None = fail["code"] if isinstance(fail.get("code"), str) else None
    msg: str = fail["message"] if isinstance(fail.get("message"), str) else ""
    if kind == "aborted":
        return "aborted", code, msg or "cancelled before any visible output"
    if kind == "error":
        return "error", code, msg
    return "no-output", code, msg or f"finished ({kind}) without model-visible output"


def _one_line(pretty: str) -> str:
    """``JSON.stringify(v, null, 2)`` text folded onto one line, ``{"a": 1, "b": [2, 3]}``.

    Strings never hold a raw newline in JSON, so every line break is structural:
    after a comma it becomes one space, elsewhere nothing.
    """
    out: list[str] = []
    for line in pretty.split("\n"):
        if out and out[-1].endswith(","):
            out.append(" ")
        out.append(line.lstrip(" "))
    return "".join(out)


def pretty_arguments(raw: Any) -> str:
    """A tool call's argument string for reading: JSON on one line when short, indented when long.

    Parsed and written by the project's JSON owner, so numbers read as JS writes
    them (``1e-7``, not ``1e-07``) and what JSON cannot hold (``NaN``, ``1e400``)
    is shown exactly as the model wrote it instead of being "fixed".
    """
    if not isinstance(raw, str):
        return dumps_pretty(raw).decode("utf-8") if raw is not None else ""
    s = raw.strip()
    if s.startswith(("{", "[")):
        try:
            value = loads(s)
        except JsonError:
            return raw  # half-written (max-tokens, cancelled) or not JSON: show as written
        pretty = dumps_pretty(value).decode("utf-8")
        one_line = _one_line(pretty)
        return one_line if len(one_line) <= 100 and "\\n" not in one_line else pretty
    return raw


def _turn_end(data: dict[str, Any]) -> tuple[str, str]:
    reason = data.get("reason")
    if isinstance(reason, str):
        return reason, reason
    r = _dict(reason)
    kind = str(r.get("kind", "unknown"))
    if kind == "aborted":
        inner = r.get("reason")
        who = _dict(inner).get("kind") if isinstance(inner, dict) else inner
        if who == "user":
            return kind, "aborted by user"
        if who == "hook":
            why = _dict(inner).get("reason")
            return kind, f"aborted by hook{': ' + why if isinstance(why, str) else ''}"
        return kind, f"aborted ({who})" if who else "aborted"
    if kind == "error":
        err = _dict(r.get("error"))
        msg, code = err.get("message"), err.get("code")
        detail = " ".join(str(x) for x in (msg, f"({code})" if code else None) if x)
        return kind, f"error: {detail}" if detail else "error"
    labels = {
        "interrupted": "interrupted (closed after a crash)",
        "forked": "forked (cut here when this branch was created)",
        "max-tokens": "stopped at the output token limit",
        "blocked": "blocked",
    }
    return kind, labels.get(kind, kind)


# --------------------------------------------------------------------------- the reader


class TranscriptReader:
    """One pass over v4 events yielding display items (see module docstring).

    ``redact`` is applied to every text *before* trimming, so a secret is never
    cut in half at the trim boundary and left partly visible.
    """

    def __init__(self, *, limits: Limits = Limits(), redact: Callable[[str], str] | None = None) -> None:
        self.limits = limits
        self.redact = redact or (lambda s: s)
        self._redacting = redact is not None
        self.title: str | None = None
        self.turns = 0
        self.tokens: dict[str, int] = {}
        self._nodes: list[int] = []  # current surface seqs (lenient: no validation)
        self._system_seen = False
        self._turn: Any = None
        self._step_key: tuple[Any, Any] | None = None
        self._step_usage: dict[str, int] = {}
        self._settlements_in_step = 0
        self._failed_since_settlement = False
        self._retry_logged = False
        self._retry_count = 0
        self._call_names: dict[str, str] = {}
        self._calls_shown: set[str] = set()
        self._position = -1
        self._first_time: int | None = None
        self._last_time: int | None = None

    # -- small helpers
    def _text(self, s: str) -> str:
        return self.redact(s)

    def _trimmed(self, s: str, *, prompt: bool = False) -> tuple[str, int, int]:
        s = self._text(s)
        if prompt:
            return trim(s, self.limits.prompt_lines, None)
        return trim(s, self.limits.lines, self.limits.chars)

    def _usage_flush(self, seq: int | None) -> Iterator[Item]:
        if self._step_usage:
            turn, step = self._step_key or (self._turn, None)
            yield StepUsage(seq, turn=turn, step=step, tokens=dict(self._step_usage))
        self._step_usage = {}

    def _add_usage(self, usage: Any) -> None:
        for k, v in _dict(usage).items():
            if type(v) is int:
                self._step_usage[k] = self._step_usage.get(k, 0) + v
                self.tokens[k] = self.tokens.get(k, 0) + v

    def _surface(self, ev: dict[str, Any], seq: int | None) -> tuple[str | None, list[int], Any, Any]:
        """Apply ``surfaceOp`` to the seq list: (op, shadowed seqs, start, end)."""
        op = ev.get("surfaceOp")
        if op == "append":
            if seq is not None:
                self._nodes.append(seq)
            return "append", [], None, None
        if isinstance(op, dict):
            start: Any = op.get("startSeq", op.get("start"))  # not a node: the ValueError below
            end: Any = op.get("endSeq", op.get("end"))
            try:
                a, b = self._nodes.index(start), self._nodes.index(end)
            except ValueError:
                a = b = -1
            shadowed: list[int] = []
            if 0 <= a <= b:
                shadowed = self._nodes[a : b + 1]
                self._nodes[a : b + 1] = [seq] if seq is not None else []
            elif seq is not None:
                self._nodes.append(seq)
            return "replace", shadowed, start, end
        return None, [], None, None

    def _settled(self, seq: int | None, turn: Any, step: Any) -> Iterator[Item]:
        """Bookkeeping shared by both settlement types; yields an inferred Retry when due."""
        key = (turn, step)
        if key != self._step_key:
            self._step_key = key
            self._settlements_in_step = 0
            self._failed_since_settlement = False
            self._retry_count = 0
        if self._settlements_in_step and self._failed_since_settlement and not self._retry_logged:
            self._retry_count += 1
            yield Retry(seq, number=self._retry_count, logged=False)
        self._settlements_in_step += 1
        self._retry_logged = False

    def totals(self) -> Totals:
        """Title, turns and tokens of what has been read so far (complete once :meth:`read` is exhausted)."""
        return Totals(self.title, self.turns, dict(self.tokens), self._first_time, self._last_time)

    # -- the pass
    def read(self, events: Iterable[dict[str, Any]]) -> Iterator[Item]:
        last_seq: int | None = None
        for ev in events:
            if not isinstance(ev, dict):
                continue
            self._position += 1
            seq = _int(ev.get("seq"))
            if seq is None:
                seq = self._position  # projections without seq: display by position
            last_seq = seq
            time = _int(ev.get("time"))
            if time is not None and time > 0:  # projections carry time 0
                if self._first_time is None:
                    self._first_time = time
                self._last_time = time
            yield from self._finish(self._event(ev, seq))
        yield from self._usage_flush(last_seq)
        if self._turn is not None:
            yield TurnEnd(None, turn=self._turn, outcome="open", label="still open: no turn/end (running, or the process died)")
            self._turn = None

    def _finish(self, items: Iterator[Item]) -> Iterator[Item]:
        """Texts were masked before trimming; mask every other string too (names, ids, labels)."""
        if self._redacting:
            for item in items:
                yield map_text(item, self.redact)
        else:
            yield from items

    def _event(self, ev: dict[str, Any], seq: int) -> Iterator[Item]:  # noqa: C901 - one dispatch table
        t = ev.get("type")
        data = ev.get("data")
        d = _dict(data)
        if t == "turn/start":
            yield from self._usage_flush(seq)
            if self._turn is not None:
                yield TurnEnd(None, turn=self._turn, outcome="open", label="no turn/end before the next turn started")
            self._turn = d.get("turn")
            self.turns += 1
            time = _int(ev.get("time"))
            yield TurnStart(seq, turn=self._turn, time=time or None)
        elif t == "turn/end":
            yield from self._usage_flush(seq)
            outcome, label = _turn_end(d)
            yield TurnEnd(seq, turn=d.get("turn", self._turn), outcome=outcome, label=label)
            self._turn = None
        elif t == "step/start":
            yield from self._usage_flush(seq)
            self._step_key = (d.get("turn"), d.get("step"))
            self._settlements_in_step = 0
            self._failed_since_settlement = False
            self._retry_logged = False
            self._retry_count = 0
        elif t == "step/end":
            yield from self._usage_flush(seq)
        elif t == "system/message":
            op, shadowed, _, _ = self._surface(ev, seq)
            text = content_text(_message(t, data).get("content"), TRANSCRIPT)
            if op == "replace":
                change = "replaced" if text else "cleared"
            elif not self._system_seen:
                change = "set"
            else:
                change = "appended"
            self._system_seen = True
            kept, cl, cc = self._trimmed(text, prompt=True)
            yield SystemPrompt(seq, text=kept, change=change, cut_lines=cl, cut_chars=cc)
        elif t == "developer/message":
            self._surface(ev, seq)
            msg = _message(t, data)
            added = [str(b.get("toolName")) for b in _blocks(msg.get("content")) if b.get("type") == "tool-addition"]
            removed = [str(b.get("toolName")) for b in _blocks(msg.get("content")) if b.get("type") == "tool-removal"]
            text = content_text(msg.get("content"), TRANSCRIPT)
            if added or removed:
                yield ToolChange(seq, added=added, removed=removed)
            if text:
                yield Note(seq, event=t, text=self._text(text))
        elif t == "user/message":
            op, shadowed, start, end = self._surface(ev, seq)
            msg = _message(t, data)
            src = _dict(msg.get("source")).get("kind")
            text = self._text(content_text(msg.get("content"), TRANSCRIPT))
            if op == "replace":
                reason = "compaction" if src == "compact-checkpoint" else "revision"
                yield Replacement(seq, reason=reason, replaced=shadowed, start=start, end=end, text=text)
            else:
                yield UserText(seq, text=text, source=src if isinstance(src, str) else None)
        elif t == "assistant/message":
            self._surface(ev, seq)
            yield from self._settled(seq, d.get("turn"), d.get("step"))
            msg = _message(t, data)
            src = _dict(msg.get("source"))
            model: str | None
            if src.get("provider") or src.get("model"):
                model = model_name(src.get("provider"), src.get("model"))
            else:
                prov = _dict(d.get("provenance"))
                model = model_name(prov.get("provider"), prov.get("model")) if prov.get("provider") else None
            self._add_usage(settlement_usage(d))
            interrupted = d.get("interrupted") is True
            run: list[dict[str, Any]] = []  # the blocks since the last tool call: one text item
            for b in _blocks(msg.get("content")):
                bt = b.get("type")
                if bt == "reasoning":
                    if isinstance(b.get("text"), str) and b["text"].strip():
                        yield Reasoning(seq, text=self._text(b["text"]))
                elif bt == "tool-call":
                    if run:
                        yield AssistantText(seq, text=self._text(content_text(run, TRANSCRIPT)), interrupted=interrupted, model=model)
                        run = []
                    yield self._call(seq, b.get("id"), b.get("name"), b.get("arguments"))
                elif bt == "text" and isinstance(b.get("text"), str) or bt in ("image", "file"):
                    run.append(b)
            if run or interrupted:
                yield AssistantText(seq, text=self._text(content_text(run, TRANSCRIPT)), interrupted=interrupted, model=model)
            self._failed_since_settlement = False
        elif t == "assistant/attempt":
            yield from self._settled(seq, d.get("turn"), d.get("step"))
            self._add_usage(stream_usage(d.get("stream")))
            outcome, code, message = _failure_of(d.get("stream"))
            yield Failure(seq, outcome=outcome, code=code, message=self._text(message))
            self._failed_since_settlement = True
        elif t == "llm/retry":
            fail = _dict(d.get("failure"))
            self._retry_logged = True
            self._retry_count = _int(d.get("retry")) or self._retry_count + 1
            yield Retry(
                seq,
                number=self._retry_count,
                max_retries=_int(d.get("maxRetries")),
                delay_ms=_int(d.get("delayMs")),
                code=fail.get("code") if isinstance(fail.get("code"), str) else None,
                message=self._text(fail["message"]) if isinstance(fail.get("message"), str) else None,
            )
        elif t == "tool/call":
            call_id = d.get("callId")
            if isinstance(call_id, str) and call_id not in self._calls_shown:
                # a call the model's message did not show (e.g. legacy shapes): show it here
                yield self._call(seq, call_id, d.get("name"), d.get("arguments"))
        elif t == "tool/result":
            op, shadowed, start, end = self._surface(ev, seq)
            msg = _message(t, data)
            call_id = msg.get("toolCallId") or _dict(msg.get("source")).get("callId") or d.get("callId")
            is_error = msg.get("isError") is True or d.get("isError") is True
            content = msg.get("content")
            for b in _blocks(content):  # v0..v3 wrapper block
                if b.get("type") == "tool-result":
                    call_id = call_id or b.get("toolCallId")
                    is_error = is_error or b.get("isError") is True
            err = _dict(d.get("error"))
            code = err.get("code") if isinstance(err.get("code"), str) else None
            kept, cl, cc = self._trimmed(content_text(content, TRANSCRIPT))
            name = self._call_names.get(str(call_id))
            if op == "replace":
                yield Replacement(seq, reason="tool-result-rewrite", replaced=shadowed, start=start, end=end, text=kept)
            else:
                yield ToolResult(seq, call_id=call_id, name=name, output=kept, is_error=is_error, error_code=code, cut_lines=cl, cut_chars=cc)
        elif t == "session/title":
            if isinstance(d.get("title"), str):
                self.title = self._text(d["title"])
                yield Note(seq, event=t, text=f"title: {self.title}")
        elif t == "session/end-seed":
            if d.get("inherited") is True:
                yield Note(seq, event=t, text="branch point: everything above is inherited from the parent session")
        elif t == "approval/asked":
            why = d.get("reason")
            yield Note(seq, event=t, text=self._text(f"approval asked for {d.get('toolName')}" + (f": {why}" if isinstance(why, str) else "")))
        elif t == "approval/decided":
            yield Note(seq, event=t, text=f"approval {d.get('outcome')}")
        elif t == "hook/result":
            decision = d.get("decision")
            if decision and decision not in ("allow", "continue", "none"):
                summary = d.get("stderrSummary") or d.get("reason") or ""
                yield Note(seq, event=t, text=self._text(f"hook {d.get('point')} {decision}" + (f": {summary}" if summary else "")))
        elif t == "todo/write":
            listed: Any = d.get("todos") if isinstance(d.get("todos"), list) else []
            todos = [f"[{_dict(x).get('status')}] {_dict(x).get('content')}" for x in listed if isinstance(x, dict)]
            yield Note(seq, event=t, text=self._text("todo: " + "; ".join(todos)))
        elif t in ("image/offload",):
            yield Note(seq, event=t, text="images offloaded from earlier messages")

    def _call(self, seq: int, call_id: Any, name: Any, arguments: Any) -> ToolCall:
        cid = call_id if isinstance(call_id, str) else None
        if cid is not None:
            self._call_names[cid] = str(name)
            self._calls_shown.add(cid)
        kept, cl, cc = self._trimmed(pretty_arguments(arguments))
        return ToolCall(seq, call_id=cid, name=name if isinstance(name, str) else None, arguments=kept, cut_lines=cl, cut_chars=cc)


def transcript(
    events: Iterable[dict[str, Any]], *, full: bool = False, redact: Callable[[str], str] | None = None, limits: Limits | None = None
) -> Iterator[Item]:
    """Display items of a v4 event stream (one pass; see :class:`TranscriptReader`)."""
    reader = TranscriptReader(limits=FULL if full else (limits or Limits()), redact=redact)
    return reader.read(events)


def session_facts(header: dict[str, Any] | None, *, path: str | None = None, version: int | None = None) -> dict[str, Any]:
    """The header facts an export starts with (the keys a reader cares about, in a fixed order)."""
    h = _dict(header)
    out: dict[str, Any] = {}
    for key in ("id", "version", "createdAt", "cwd", "parentSession", "origin", "agentPreset", "delegationDepth", "isSeeded"):
        if key in h:
            out[key] = h[key]
    if version is not None:
        out["storedVersion"] = version
    if path is not None:
        out["file"] = path
    return out
