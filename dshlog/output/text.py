"""The visible text of a message, for previews and one-line descriptions."""

from __future__ import annotations

from typing import Any

__all__ = ["message_text", "preview"]


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
