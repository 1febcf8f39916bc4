"""The one interface behind ``show`` and ``export``, and the pass that drives it.

A transcript is read once, in order, and never held: the reader
(:class:`dshlog.model.transcript.TranscriptReader`) yields items one at a time,
and a renderer writes each as it arrives.  So the interface is the shape of
that stream, three calls::

    renderer.begin(head)      # once: where the log is, its header facts, dsh's refusal (first, when it refuses it)
    renderer.item(item)       # for every transcript item, in order
    renderer.end(totals)      # once: title, turns, tokens of the whole log

Five renderers implement it: :class:`~dshlog.output.plain.PlainRenderer`
(``show`` piped), :class:`~dshlog.output.terminal.TerminalRenderer` (``show`` on a
terminal), and the exports :class:`~dshlog.output.markdown.MarkdownRenderer`,
:class:`~dshlog.output.html.HtmlRenderer`, :class:`~dshlog.output.jsonexport.JsonRenderer`.
A renderer owns its output (a byte sink or a Rich console) and its options
(``show --reasoning``); what to show and how much is decided before it, by the
reader's limits and redaction, so every target shows the same thing.

Why a stream of calls and not one ``render(items) -> str``: a session can be
hundreds of megabytes, and ``show`` must start printing, and an export start
writing, before the last event is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from ..model.transcript import FULL, Failure, Item, Limits, SessionHead, Totals, ToolResult, TranscriptReader, TurnEnd
from . import labels as L
from .screen import Write
from .text import sanitize

__all__ = ["Document", "Renderer", "Write", "problem_text", "render"]


def problem_text(item: Item) -> str | None:
    """What went wrong at ``item``, for a turn's list of problems (``None`` when nothing did).

    A failed tool, a model call that produced nothing, a turn that did not complete:
    what a person scanning a long session looks for first.  Worded from the labels;
    here, beside the item types, because it asks which type an item is.
    """
    if isinstance(item, ToolResult) and item.is_error:
        return f"{L.ERROR}: {item.name or L.RESULT_WORD}" + (f" ({item.error_code})" if item.error_code else "")
    if isinstance(item, Failure):
        return L.failure_text(item)
    if isinstance(item, TurnEnd) and item.outcome not in ("completed", "forked"):
        return item.label
    return None


class Renderer(Protocol):
    """A target for a transcript: ``begin``, ``item`` for each item, ``end``."""

    def begin(self, head: SessionHead) -> None: ...

    def item(self, item: Item) -> None: ...

    def end(self, totals: Totals) -> None: ...


class Document:
    """Base of the renderers that write text to a byte sink; every text passes the terminal sanitiser."""

    def __init__(self, write: Write) -> None:
        self._write = write

    def out(self, text: str) -> None:
        self._write(sanitize(text).encode("utf-8"))


def render(
    events: Iterable[dict[str, Any]],
    head: SessionHead,
    renderer: Renderer,
    *,
    full: bool = False,
    redact: Callable[[str], str] | None = None,
) -> Totals:
    """Read ``events`` once into ``renderer``; returns the totals it was given at the end.

    With ``redact`` every string (header facts, texts, names, labels) is masked
    before it is trimmed or rendered.
    """
    if redact is not None:
        refusal = head.refusal
        if refusal is not None:
            refusal = replace(refusal, reason=redact(refusal.reason), rescue=redact(refusal.rescue) if refusal.rescue is not None else None)
        head = replace(head, facts={k: redact(v) if isinstance(v, str) else v for k, v in head.facts.items()}, refusal=refusal)
    reader = TranscriptReader(limits=FULL if full else Limits(), redact=redact)
    renderer.begin(head)
    for item in reader.read(events):
        renderer.item(item)
    totals = reader.totals()
    renderer.end(totals)
    return totals
