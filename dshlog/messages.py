"""Message derivation: which stored JSON object each surface node contributes.

dsh never builds model messages: it *selects* them.  A node's message is the
exact object stored in the log (same keys, same order, same id), so a request
rebuilt here is byte-identical to what dsh sent.  This module holds the
per-node rule (SEMANTICS §3) and small display helpers; the fold that decides
which nodes exist lives in :mod:`dshlog.surface`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .protocol.vocabulary import message_of

# Types whose empty-content message stays a node but derives nothing.
_EMPTY_YIELDS_NOTHING = frozenset({"system/message", "developer/message", "assistant/message"})


def derive_message(event_type: str, data: Any, projected: Mapping[str, Any] | None = None) -> dict | None:
    """The message one surface node contributes, or ``None`` (SEMANTICS §3 step 2).

    ``projected`` is the node's entry from a message projection (``image/offload``);
    it wins even when its content is empty, because a projection only rewrites
    content of a message that already reached the model.
    """
    if projected is not None:
        return projected  # type: ignore[return-value]
    if event_type == "user/message":
        return data if isinstance(data, dict) else None
    if event_type in _EMPTY_YIELDS_NOTHING:
        message = message_of(event_type, data)
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        if isinstance(content, list) and len(content) == 0:
            return None
        return message
    if event_type == "tool/result":
        message = message_of(event_type, data)
        return message if isinstance(message, dict) else None
    return None


def derive(events: Iterable[dict]) -> list[dict]:
    """Derived model messages of a whole log (or prefix), in surface order.

    One streaming pass: the fold keeps only the current nodes' messages.
    """
    from dshlog.surface import fold  # local import: surface depends on this module

    return fold(events).messages()


def message_text(message: Any) -> str:
    """Concatenated visible text of a message, for previews.

    Text blocks are joined as-is and a tool call renders as ``[tool-call <name>]``
    (the rendering dsh's demo uses); reasoning is left out because the preview
    is about what the conversation says, not how the model thought.
    """
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "tool-call":
            parts.append(f"[tool-call {block.get('name')}]")
        elif kind == "image":
            parts.append("[image offloaded]" if block.get("offloaded") is True else "[image]")
        elif kind == "file":
            parts.append("[file]")
        elif kind in ("tool-addition", "tool-removal"):
            parts.append(f"[{kind} {block.get('toolName')}]")
    return "".join(parts)


def preview(message: Any, limit: int = 60) -> str:
    """Short one-line preview of a message (newlines flattened, ``…`` when cut)."""
    text = " ".join(message_text(message).split("\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"
