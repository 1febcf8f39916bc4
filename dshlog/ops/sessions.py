"""Operations over the sessions of a store: finding the ones that mention a text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..model.content import SEARCH, message_text
from ..protocol.vocabulary import ROLE_OF_TYPE
from ..read.store import _loads, raw_lines

__all__ = ["grep_session", "message_texts"]

#: The events whose message text ``ls --grep`` searches: what the user and the model wrote.
_SEARCHED: frozenset[str] = frozenset(t for t, role in ROLE_OF_TYPE.items() if role in ("user", "assistant"))
_NEEDLES: tuple[bytes, ...] = tuple(t.encode() for t in sorted(_SEARCHED))


def message_texts(path: Path) -> Iterator[str]:
    """Text of every user and assistant message in a generation, streamed (only those lines are parsed).

    The text is the one extractor's :data:`~dshlog.model.content.SEARCH` rule:
    reasoning included, tool markers left out, one block per line.
    """
    for raw in raw_lines(path):
        if not any(n in raw for n in _NEEDLES):
            continue
        obj = _loads(raw)
        if not isinstance(obj, dict) or obj.get("type") not in _SEARCHED:
            continue
        data = obj.get("data")
        if not isinstance(data, dict):
            continue
        msg = data.get("message") if isinstance(data.get("message"), dict) else data
        text = message_text(msg, SEARCH)
        if text:
            yield text


def grep_session(path: Path, needle: str) -> bool:
    """Whether any user/assistant message text contains ``needle`` (case-insensitive)."""
    n = needle.casefold()
    return any(n in t.casefold() for t in message_texts(path))
