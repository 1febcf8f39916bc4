"""The terminal: Rich styling for ``show`` (the tables are :mod:`.table`'s).

Session text is data.  Nothing from a log ever reaches Rich as a markup string:
every text is a :class:`rich.text.Text` built from sanitised text
(:func:`dshlog.output.text.sanitize`), and the console itself is made with
markup, emoji codes and highlighting off, so ``[red]``, ``[/x]`` or ``:smile:`` in
a message print as written instead of being eaten or crashing the command.

Rich is imported inside the functions that need it: it is heavy, and the
commands that print plain lines should start without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

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
from . import plain
from .screen import text
from .text import sanitize

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.console import Console
    from rich.text import Text

__all__ = ["PIECE_LINES", "TerminalRenderer", "pieces", "renderable"]

_TURN_END_STYLE = {"completed": "green", "aborted": "yellow", "error": "red", "max-tokens": "yellow", "open": "red"}


def _append(t: Text, value: str, style: str | None = None) -> None:
    t.append(sanitize(value), style=style)


def _styled(value: str, style: str) -> Text:
    """A ``Text`` whose first part is styled and whose later parts (appended) are not."""
    t = text()
    _append(t, value, style)
    return t


def _cut(t: Text, item: Any, hint: str) -> None:
    if item.cut_chars:
        _append(t, "\n" + L.cut_note(item.cut_lines, item.cut_chars, hint), "italic dim")


def renderable(item: Item, *, reasoning: bool = False, hints: L.Hints = L.SHOW_HINTS) -> Any:  # noqa: C901 - one branch per item kind
    """A Rich renderable for one transcript item; ``hints`` say how its reader unfolds what is folded (flags, or keys)."""
    from rich.padding import Padding  # lazy: heavy, only for terminal output
    from rich.panel import Panel
    from rich.rule import Rule

    if isinstance(item, TurnStart):
        return Rule(text(f"{L.TURN} {item.turn}", "bold"), style="cyan")
    if isinstance(item, TurnEnd):
        return text(f"{L.TURN_END} {L.TURN} {item.turn} {item.label}", _TURN_END_STYLE.get(item.outcome, "magenta"))
    if isinstance(item, SystemPrompt):
        t = text(item.text or L.EMPTY, "dim")
        _cut(t, item, hints.full)
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
            return text(f"  {L.FOLDED} {L.REASONING} ({L.reasoning_fold(item.text, hints.reasoning)})", "dim italic")
        return Padding(text(item.text, "dim italic"), (0, 0, 0, 2))
    if isinstance(item, ToolCall):
        t = _styled(f"{L.CALL.symbol} {item.name} ", "bold cyan")
        _append(t, f"[{item.call_id}]\n", "dim")
        _append(t, item.arguments)
        _cut(t, item, hints.full)
        return Padding(t, (0, 0, 0, 2))
    if isinstance(item, ToolResult):
        t = _styled(f"{L.RESULT.symbol} {item.name or L.RESULT_WORD} ", "bold red" if item.is_error else "bold cyan")
        status = f" {L.ERROR} {item.error_code or ''}".rstrip() if item.is_error else ""
        _append(t, f"[{item.call_id}]{status}\n", "dim")
        _append(t, item.output)
        _cut(t, item, hints.full)
        return Padding(Panel(t, border_style="red" if item.is_error else "bright_black"), (0, 0, 0, 2))
    if isinstance(item, Failure):
        return text(f"  {L.FAILURE.symbol} {L.failure_text(item)}", "red")
    if isinstance(item, Retry):
        return text(f"  {L.RETRY.symbol} {L.retry_text(item)}", "yellow")
    if isinstance(item, Replacement):
        return Panel(text(item.text), title=text(L.replacement_title(item)), title_align="left", border_style="yellow")
    if isinstance(item, ToolChange):
        return text(f"  {L.TOOLS} " + " ".join(L.tool_changes(item)), "blue")
    if isinstance(item, StepUsage):
        return text(f"  {L.usage_text(item.step, item.tokens)}", "dim")
    if isinstance(item, Note):
        return text(f"  {L.NOTE.symbol} {item.text}", "dim")
    return text("")


#: Lines of one text laid out at a time.  Rich lays a ``Text`` out whole before it
#: writes a byte: an answer of 400,000 lines took 16 s and 410 MB before the first
#: screen; in pieces it streams into the pager at a piece's cost.
PIECE_LINES = 2000


def pieces(r: Any, lines: int = PIECE_LINES) -> Iterable[Any]:
    """``r`` as consecutive renderables of at most ``lines`` lines each, printing as ``r`` prints.

    Only a ``Text`` (or a padded one) is split, at its own newlines, keeping its
    styles; anything else (a panel, a rule) is one piece.  Wrapping is per line, so
    the pieces print exactly what the whole would.
    """
    from rich.padding import Padding  # lazy: heavy, only for terminal output
    from rich.text import Text

    inner, pad = (r.renderable, r) if isinstance(r, Padding) else (r, None)
    if not isinstance(inner, Text):
        yield r
        return
    plain_text = inner.plain
    cuts: list[int] = []
    at = -1
    while True:
        for _ in range(lines):
            at = plain_text.find("\n", at + 1)
            if at < 0:
                break
        if at < 0:
            break
        cuts.append(at + 1)
    if not cuts:
        yield r
        return
    parts = list(inner.divide(cuts))
    for k, part in enumerate(parts):
        if k < len(parts) - 1:
            part.right_crop(1)  # the newline the next print's own line end stands for
        if pad is None:
            yield part
        else:
            yield Padding(part, (pad.top if k == 0 else 0, pad.right, pad.bottom if k == len(parts) - 1 else 0, pad.left))


class TerminalRenderer:
    """``show`` on a terminal: the session line in bold, then each item's renderable, long texts in pieces."""

    def __init__(self, con: Console, *, reasoning: bool = False) -> None:
        self.console = con
        self.reasoning = reasoning

    def begin(self, head: SessionHead) -> None:
        if head.refusal is not None:  # before anything else: what follows is not a session dsh opens
            from rich.panel import Panel  # lazy: heavy, only for terminal output

            self.console.print(Panel(text("\n".join(L.refusal_lines(head.refusal.reason, head.refusal.rescue)), "bold red"),
                                     border_style="red"))
        self.console.print(text(plain.session_line(head), "bold"))

    def item(self, item: Item) -> None:
        for piece in pieces(renderable(item, reasoning=self.reasoning)):
            self.console.print(piece)

    def end(self, totals: Totals) -> None:
        pass

    def mark(self, text_: str) -> None:
        """A line of dshlog's own about the transcript (where dsh's decision stopped it)."""
        self.console.print(text(text_, "bold red"))
