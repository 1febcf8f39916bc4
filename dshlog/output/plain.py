"""Plain text: ``show`` when piped (the tables are :mod:`.table`'s, the request diff :mod:`.diff`'s).

ASCII marks (:class:`dshlog.output.labels.Mark` ``.plain``), no styling, one
item after another, so the output reads in a pager, diffs cleanly and greps.
Every line passes :func:`dshlog.output.text.sanitize` before it is written.
"""

from __future__ import annotations

from typing import Any

from ..model.transcript import (
    AssistantText,
    Failure,
    Item,
    Note,
    Reasoning,
    Replacement,
    Retry,
    SessionHead,
    SystemPrompt,
    ToolCall,
    ToolChange,
    ToolResult,
    Totals,
    TurnEnd,
    TurnStart,
    StepUsage,
    UserText,
)
from . import labels as L
from .renderer import Document, Write

__all__ = ["PlainRenderer", "item_lines", "session_line"]


def session_line(head: SessionHead) -> str:
    """``session loop-0001 (v4) fixtures/v4/loop/session.v4.jsonl``: what ``show`` prints first."""
    return f"session {head.session_id or '?'} (v{head.version}{', projection' if head.projection else ''}) {head.path}"


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line if line else prefix.rstrip() for line in text.split("\n")]


def _cut(item: Any, prefix: str) -> list[str]:
    return [prefix + L.cut_note(item.cut_lines, item.cut_chars, L.FULL_HINT)] if item.cut_chars else []


def item_lines(item: Item, *, reasoning: bool = False) -> list[str]:  # noqa: C901 - one branch per item kind
    """The plain-text lines of one transcript item (unsanitised: the caller writes them)."""
    if isinstance(item, TurnStart):
        return ["", f"=== {L.TURN} {item.turn} ".ljust(60, "=")]
    if isinstance(item, TurnEnd):
        return [f"--- {L.TURN} {item.turn} {item.label}"]
    if isinstance(item, SystemPrompt):
        out = [f"[{L.SYSTEM_PROMPT[item.change]}]"] + (_indent(item.text, "  | ") if item.text else [f"  {L.EMPTY}"])
        return out + _cut(item, "  ")
    if isinstance(item, UserText):
        source = L.user_source(item.source)
        return [(f"{L.USER} ({source})" if source else L.USER) + ":"] + _indent(item.text, "  ")
    if isinstance(item, AssistantText):
        out = [f"{L.ASSISTANT}:"] + (_indent(item.text, "  ") if item.text else [])
        if item.interrupted:
            out.append(f"  [{L.INTERRUPTED_TEXT}]")
        return out
    if isinstance(item, Reasoning):
        if not reasoning:
            return [f"  ({L.REASONING}, {L.reasoning_fold(item.text)})"]
        return [f"  {L.REASONING}:"] + _indent(item.text, "  ~ ")
    if isinstance(item, ToolCall):
        return [f"  {L.CALL.plain} {item.name} [{item.call_id}]"] + _indent(item.arguments, "     ") + _cut(item, "     ")
    if isinstance(item, ToolResult):
        status = f" {L.ERROR.upper()} {item.error_code or ''}".rstrip() if item.is_error else ""
        head = f"  {L.RESULT.plain} {item.name or L.RESULT_WORD} [{item.call_id}]{status}"
        return [head] + _indent(item.output, "     ") + _cut(item, "     ")
    if isinstance(item, Failure):
        return [f"  {L.FAILURE.plain} {L.failure_text(item)}"]
    if isinstance(item, Retry):
        return [f"  {L.RETRY.plain} {L.retry_text(item)}"]
    if isinstance(item, Replacement):
        return [f"[{L.replacement_title(item)}]"] + _indent(item.text, "  | ")
    if isinstance(item, ToolChange):
        return [f"  [{L.TOOLS} {' '.join(L.tool_changes(item))}]"]
    if isinstance(item, StepUsage):
        return [f"  ({L.usage_text(item.step, item.tokens)})"]
    if isinstance(item, Note):
        return [f"  {L.NOTE.plain} {item.text}"]
    return []


class PlainRenderer(Document):
    """``show`` when piped: the session line, then each item's lines; nothing at the end."""

    def __init__(self, write: Write, *, reasoning: bool = False) -> None:
        super().__init__(write)
        self.reasoning = reasoning

    def begin(self, head: SessionHead) -> None:
        if head.refusal is not None:  # before anything else: what follows is not a session dsh opens
            self.out("".join(f"!!! {line}\n" for line in L.refusal_lines(head.refusal.reason, head.refusal.rescue)))
        self.out(session_line(head) + "\n")

    def item(self, item: Item) -> None:
        self.out("\n".join(item_lines(item, reasoning=self.reasoning)) + "\n")

    def end(self, totals: Totals) -> None:
        pass

    def mark(self, text: str) -> None:
        """A line of dshlog's own about the transcript (where dsh's decision stopped it)."""
        self.out(f"\n!!! {text}\n")
