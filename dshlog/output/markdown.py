"""Markdown export: meant to be read as plain text too.

Headings per turn, tool arguments and output in fenced blocks whose fence is
longer than any backtick run inside, reasoning as a quoted block.  Every text
passes the terminal sanitiser (a Markdown file is often read with ``cat``).
"""

from __future__ import annotations

import re
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
from ..protocol.jsjson import dumps
from . import labels as L
from .renderer import Document
from .text import utc_seconds

__all__ = ["MarkdownRenderer", "facts", "title"]


def title(facts: dict[str, Any]) -> str:
    """``dsh session <id>``: the title of an exported transcript."""
    sid = facts.get("id")
    return f"dsh session {sid}" if isinstance(sid, str) and sid else "dsh session"


def facts(session: dict[str, Any]) -> list[tuple[str, str]]:
    """Header facts as (label, text) pairs for people (``createdAt`` as a UTC time)."""
    out: list[tuple[str, str]] = []
    for key, value in session.items():
        if key == "createdAt":
            text = utc_seconds(value) or str(value)
        elif isinstance(value, str):
            text = value
        else:
            text = dumps(value).decode("utf-8", "replace")
        out.append((key, text))
    return out


def _fence(text: str, info: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}\n\n"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.split("\n")) + "\n\n"


def _code(text: Any) -> str:
    s = str(text)
    fence = "``" if "`" in s else "`"
    return f"{fence}{s}{fence}"


class MarkdownRenderer(Document):
    def begin(self, head: SessionHead) -> None:
        self.out(f"# {title(head.facts)}\n\n")
        if head.refusal is not None:  # before the facts: what follows is not a session dsh opens
            r = head.refusal
            back = f"{L.TO_BRING_BACK}: {_code(L.rescue_command(r.rescue))}" if r.rescue is not None else L.bring_back(None)
            self.out(f"> **{L.DSH_REFUSES}:** {r.reason}\n>\n> {L.capital(L.SHOWN_AS_STORED)}; {back}\n\n")
        for label, text in facts(head.facts):
            self.out(f"- **{label}**: {text}\n")
        self.out("\n")

    def _cut(self, item: Any) -> None:
        if item.cut_chars:
            self.out(f"*{L.cut_note(item.cut_lines, item.cut_chars)}*\n\n")

    def item(self, item: Item) -> None:  # noqa: C901 - one branch per item kind
        o = self.out
        if isinstance(item, TurnStart):
            when = utc_seconds(item.time)
            o(f"## {L.capital(L.TURN)} {item.turn}" + (f" ({when})" if when else "") + "\n\n")
        elif isinstance(item, TurnEnd):
            o(f"*{L.capital(L.TURN)} {item.turn} {item.label}.*\n\n---\n\n")
        elif isinstance(item, SystemPrompt):
            o(f"**{L.capital(L.SYSTEM_PROMPT[item.change])}** (seq {item.seq})\n\n")
            if item.text:
                o(_quote(item.text))
            self._cut(item)
        elif isinstance(item, UserText):
            source = L.user_source(item.source)
            o(f"**{L.capital(L.USER)}**" + (f" ({source})" if source else "") + f":\n\n{item.text}\n\n")
        elif isinstance(item, AssistantText):
            o(f"**{L.capital(L.ASSISTANT)}**:\n\n{item.text}\n\n")
            if item.interrupted:
                o(f"*[{L.INTERRUPTED_TEXT}]*\n\n")
        elif isinstance(item, Reasoning):
            o(f"*{L.capital(L.REASONING)}*:\n\n" + _quote(item.text))
        elif isinstance(item, ToolCall):
            info = "json" if item.arguments.lstrip().startswith(("{", "[")) else ""
            o(f"**{L.capital(L.TOOL_CALL)}** {_code(item.name)} ({_code(item.call_id)}):\n\n" + _fence(item.arguments, info))
            self._cut(item)
        elif isinstance(item, ToolResult):
            err = f" — **{L.ERROR}** {_code(item.error_code) if item.error_code else ''}".rstrip() if item.is_error else ""
            o(f"**{L.capital(L.RESULT_WORD)}** of {_code(item.name or '?')} ({_code(item.call_id)}){err}:\n\n" + _fence(item.output))
            self._cut(item)
        elif isinstance(item, Failure):
            o(f"> {L.FAILURE.symbol} {L.failure_text(item)}\n\n")
        elif isinstance(item, Retry):
            o(f"> {L.RETRY.symbol} {L.retry_text(item)}\n\n")
        elif isinstance(item, Replacement):
            o(f"**{L.capital(L.replacement_title(item))}**:\n\n" + _quote(item.text))
        elif isinstance(item, ToolChange):
            o(f"*{L.capital(L.TOOLS_CHANGED)}: " + ", ".join(L.tool_changes(item)) + "*\n\n")
        elif isinstance(item, StepUsage):
            o(f"*{L.capital(L.usage_text(item.step, item.tokens))}*\n\n")
        elif isinstance(item, Note):
            o(f"*{item.text}*\n\n")

    def end(self, totals: Totals) -> None:
        self.out("*" + L.totals_text(totals.turns, totals.tokens) + ".*\n")
