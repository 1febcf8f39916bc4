"""Operations over the sessions of a store: finding the ones that mention a text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..output.render import message_text
from ..read.store import _loads, raw_lines

__all__ = ["grep_session", "message_texts"]


def message_texts(path: Path) -> Iterator[str]:
    """Text of every user and assistant message in a generation, streamed (only those lines are parsed)."""
    for raw in raw_lines(path):
        if b"user/message" not in raw and b"assistant/message" not in raw:
            continue
        obj = _loads(raw)
        if not isinstance(obj, dict) or obj.get("type") not in ("user/message", "assistant/message"):
            continue
        data = obj.get("data")
        if not isinstance(data, dict):
            continue
        msg = data.get("message") if isinstance(data.get("message"), dict) else data
        text = message_text(msg, tool_calls=False)
        if text:
            yield text


def grep_session(path: Path, needle: str) -> bool:
    """Whether any user/assistant message text contains ``needle`` (case-insensitive)."""
    n = needle.casefold()
    return any(n in t.casefold() for t in message_texts(path))
