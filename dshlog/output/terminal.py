"""The terminal: Rich styling for ``show`` and the tables, and the choice between it and plain text.

Session text is data.  Nothing from a log ever reaches Rich as a markup string:
every text is a :class:`rich.text.Text` built from sanitised text
(:func:`dshlog.output.text.sanitize`), and the console itself is made with
markup, emoji codes and highlighting off, so ``[red]``, ``[/x]`` or ``:smile:`` in
a message print as written instead of being eaten or crashing the command.

Rich is imported inside the functions that need it: it is heavy, and the
commands that print plain lines should start without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

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
    Usage,
    UserText,
)
from . import labels as L
from . import plain
from .text import sanitize

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.console import Console, JustifyMethod
    from rich.text import Text

__all__ = ["TerminalRenderer", "console", "on_terminal", "renderable", "table", "use_color"]

_TURN_END_STYLE = {"completed": "green", "aborted": "yellow", "error": "red", "max-tokens": "yellow", "open": "red"}


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal, honouring NO_COLOR and FORCE_COLOR."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def on_terminal() -> bool:
    """Whether stdout gets the terminal renderer (a terminal, or FORCE_COLOR) rather than plain text."""
    return sys.stdout.isatty() or bool(os.environ.get("FORCE_COLOR"))


def console(stderr: bool = False) -> Console:
    """A Rich console on stdout (or stderr) that never interprets text: no markup, no emoji codes, no highlighting."""
    from rich.console import Console  # lazy: heavy, only for terminal output

    stream = sys.stderr if stderr else sys.stdout
    color = use_color(stream)
    return Console(
        file=stream,
        no_color=not color,
        force_terminal=True if os.environ.get("FORCE_COLOR") else None,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=not stream.isatty() if hasattr(stream, "isatty") else True,
    )


def text(value: Any = "", style: str = "") -> Text:
    """A Rich ``Text`` of ``value`` as data: sanitised, never parsed as markup."""
    from rich.text import Text  # lazy: heavy, only for terminal output

    return Text(sanitize(str(value)), style=style)


def _append(t: Text, value: str, style: str | None = None) -> None:
    t.append(sanitize(value), style=style)


def _styled(value: str, style: str) -> Text:
    """A ``Text`` whose first part is styled and whose later parts (appended) are not."""
    t = text()
    _append(t, value, style)
    return t


def _cut(t: Text, item: Any) -> None:
    if item.cut_chars:
        _append(t, "\n" + L.cut_note(item.cut_lines, item.cut_chars, L.FULL_HINT), "italic dim")


def renderable(item: Item, *, reasoning: bool = False) -> Any:  # noqa: C901 - one branch per item kind
    """A Rich renderable for one transcript item."""
    from rich.padding import Padding  # lazy: heavy, only for terminal output
    from rich.panel import Panel
    from rich.rule import Rule

    if isinstance(item, TurnStart):
        return Rule(text(f"{L.TURN} {item.turn}", "bold"), style="cyan")
    if isinstance(item, TurnEnd):
        return text(f"{L.TURN_END} {L.TURN} {item.turn} {item.label}", _TURN_END_STYLE.get(item.outcome, "magenta"))
    if isinstance(item, SystemPrompt):
        t = text(item.text or L.EMPTY, "dim")
        _cut(t, item)
        return Panel(t, title=text(L.SYSTEM_PROMPT[item.change]), title_align="left", border_style="blue")
    if isinstance(item, UserText):
        source = L.user_source(item.source)
        t = _styled(L.USER + (f"{L.SOURCE_JOIN}{source}" if source else "") + "\n", "bold green")
        _append(t, item.text)
        return t
    if isinstance(item, AssistantText):
        t = _styled(L.ASSISTANT + (f"{L.SOURCE_JOIN}{item.model}" if item.model else "") + "\n", "bold magenta")
        _append(t, item.text)
        if item.interrupted:
            _append(t, f"\n{L.STOPPED} {L.INTERRUPTED_TEXT}", "yellow")
        return t
    if isinstance(item, Reasoning):
        if not reasoning:
            return text(f"  {L.FOLDED} {L.REASONING} ({L.reasoning_fold(item.text)})", "dim italic")
        return Padding(text(item.text, "dim italic"), (0, 0, 0, 2))
    if isinstance(item, ToolCall):
        t = _styled(f"{L.CALL.symbol} {item.name} ", "bold cyan")
        _append(t, f"[{item.call_id}]\n", "dim")
        _append(t, item.arguments)
        _cut(t, item)
        return Padding(t, (0, 0, 0, 2))
    if isinstance(item, ToolResult):
        t = _styled(f"{L.RESULT.symbol} {item.name or L.RESULT_WORD} ", "bold red" if item.is_error else "bold cyan")
        status = f" {L.ERROR} {item.error_code or ''}".rstrip() if item.is_error else ""
        _append(t, f"[{item.call_id}]{status}\n", "dim")
        _append(t, item.output)
        _cut(t, item)
        return Padding(Panel(t, border_style="red" if item.is_error else "bright_black"), (0, 0, 0, 2))
    if isinstance(item, Failure):
        return text(f"  {L.FAILURE.symbol} {L.failure_text(item)}", "red")
    if isinstance(item, Retry):
        return text(f"  {L.RETRY.symbol} {L.retry_text(item)}", "yellow")
    if isinstance(item, Replacement):
        return Panel(text(item.text), title=text(L.replacement_title(item)), title_align="left", border_style="yellow")
    if isinstance(item, ToolChange):
        return text(f"  {L.TOOLS} " + " ".join(L.tool_changes(item)), "blue")
    if isinstance(item, Usage):
        return text(f"  {L.usage_text(item.step, item.tokens)}", "dim")
    if isinstance(item, Note):
        return text(f"  {L.NOTE.symbol} {item.text}", "dim")
    return text("")


class TerminalRenderer:
    """``show`` on a terminal: the session line in bold, then one renderable per item."""

    def __init__(self, con: Console, *, reasoning: bool = False) -> None:
        self.console = con
        self.reasoning = reasoning

    def begin(self, head: SessionHead) -> None:
        self.console.print(text(plain.session_line(head), "bold"))

    def item(self, item: Item) -> None:
        self.console.print(renderable(item, reasoning=self.reasoning))

    def end(self, totals: Totals) -> None:
        pass


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, justify: dict[int, str] | None = None) -> None:
    """Print a table: Rich on a terminal, tab-separated plain text when piped (streamed, row by row)."""
    if not on_terminal():
        plain.table(title, columns, rows)
        return
    rows = list(rows)
    from rich.table import Table  # lazy: heavy, only for terminal output

    t = Table(title=text(title, "table.title") if title else None, show_edge=False, header_style="bold")
    for i, c in enumerate(columns):
        # callers name rich's justify methods ("left", "right", "center")
        t.add_column(text(c), justify=cast("JustifyMethod", (justify or {}).get(i, "left")), overflow="fold")
    for r in rows:
        t.add_row(*(text("" if v is None else v) for v in r))
    console().print(t)
