"""``export``: a transcript to share, in one of three formats, with redaction on request.

The formats are renderers (:mod:`dshlog.output.renderer`): Markdown
(:mod:`~dshlog.output.markdown`), one self-contained HTML page
(:mod:`~dshlog.output.html`) and versioned JSON (:mod:`~dshlog.output.jsonexport`).
All three stream: they receive items one at a time and write as they go, so
exporting a long session never holds it in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import UsageError
from ..model.transcript import SessionHead, Totals
from ..protocol.layout import encode_segment
from .html import HtmlRenderer
from .jsonexport import JsonRenderer
from .markdown import MarkdownRenderer
from .redact import redact as mask
from .renderer import Renderer, Write, render

__all__ = ["FORMATS", "RENDERERS", "export", "export_name"]

RENDERERS: dict[str, Callable[[Write], Renderer]] = {"md": MarkdownRenderer, "html": HtmlRenderer, "json": JsonRenderer}
FORMATS = tuple(RENDERERS)


def export(events: Iterable[dict[str, Any]], head: SessionHead, fmt: str, write: Write, *, full: bool = False, redact: bool = False) -> Totals:
    """Write the transcript of ``events`` in ``fmt`` through ``write``; returns its totals.

    ``head.facts`` holds the header facts (:func:`dshlog.model.transcript.session_facts`).
    With ``redact`` every string, the header facts included, is masked
    (:func:`dshlog.output.redact.redact`) before it is trimmed or written.
    """
    if fmt not in RENDERERS:
        raise UsageError(f"unknown export format {fmt!r} (choose {', '.join(FORMATS)})")
    return render(events, head, RENDERERS[fmt](write), full=full, redact=mask if redact else None)


def export_name(head: SessionHead, fmt: str) -> str:
    """The file name of an export written into a directory: the session id (encoded as dsh names
    session directories, so it is a safe single name) and the format's extension."""
    return f"{encode_segment(head.session_id) if head.session_id else 'session'}.{fmt}"
