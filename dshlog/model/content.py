"""The text a person sees in a message's content: the one extractor.

Every place that turns content blocks into text (surface and diff previews, the
``events`` line, ``show`` and ``export``, ``ls --grep``) calls :func:`content_text`
or :func:`message_text`, so a block reads the same everywhere.  What differs
between those uses is said by a :class:`TextRule`, never by a block rule of
their own:

* ``text`` blocks give their text;
* ``reasoning`` blocks give their text when the rule asks for reasoning;
* ``tool-call`` blocks give ``[tool-call NAME]``, and ``tool-addition`` /
  ``tool-removal`` blocks ``[tool-addition NAME]`` / ``[tool-removal NAME]``,
  when the rule asks for tool markers (a transcript shows calls and tool
  changes as items of their own, so it leaves them out);
* a ``tool-result`` block (the v0..v3 wrapper) gives the text of its nested
  content, by the same rule;
* ``image`` gives ``[image]`` (``[image offloaded]`` once dsh moved it out of the
  log), ``file`` gives ``[file NAME]`` (``[file]`` when it has no name);
* a string where the content array should be is read as one text block; other
  blocks and non-dict entries give nothing.

Non-empty pieces are joined with the rule's separator.  The placeholder
spellings live here, with the rule that produces them; every other word a
renderer prints lives in :mod:`dshlog.output.labels`.

This module is in ``model/`` and not in ``output/`` because the transcript reader
(:mod:`dshlog.model.transcript`) needs the text of a message to trim and redact
it, and the model never imports the renderers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..protocol.vocabulary import TOOL_CHANGE_BLOCKS

__all__ = ["EVENT_LINE", "PREVIEW", "SEARCH", "TRANSCRIPT", "TextRule", "content_text", "message_text"]


@dataclass(frozen=True, slots=True)
class TextRule:
    """What one use of the extractor shows.

    ``tool_calls``: tool-call, tool-addition and tool-removal blocks as markers.
    ``reasoning``: the model's reasoning text.  ``separator``: between pieces.
    """

    tool_calls: bool = True
    reasoning: bool = False
    separator: str = ""


#: Previews (``surface``, ``diff``): dsh's own demo rule, calls as markers, no reasoning, pieces run together.
PREVIEW = TextRule()
#: The ``events`` line: what the event says, reasoning included; calls are listed after the quote instead.
EVENT_LINE = TextRule(tool_calls=False, reasoning=True)
#: ``ls --grep``: everything the user or the model wrote, one piece per line so a match never spans two blocks.
SEARCH = TextRule(tool_calls=False, reasoning=True, separator="\n")
#: ``show`` and ``export``: reasoning, calls and tool changes are items of their own; pieces one per line.
TRANSCRIPT = TextRule(tool_calls=False, separator="\n")


def _pieces(content: Any, rule: TextRule) -> Iterator[str]:
    """The text of each block, depth first; iterative, so nesting depth cannot exhaust the stack."""
    stack: list[Iterator[Any]] = [iter([{"type": "text", "text": content}] if isinstance(content, str) else content if isinstance(content, list) else ())]
    while stack:
        block = next(stack[-1], None)
        if block is None:
            stack.pop()
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" or (kind == "reasoning" and rule.reasoning):
            if isinstance(block.get("text"), str):
                yield block["text"]
        elif kind == "tool-call":
            if rule.tool_calls:
                yield f"[tool-call {block.get('name')}]"
        elif kind in TOOL_CHANGE_BLOCKS:
            if rule.tool_calls:
                yield f"[{kind} {block.get('toolName')}]"
        elif kind == "tool-result":
            nested = block.get("content")
            if isinstance(nested, str):
                yield nested
            elif isinstance(nested, list):
                stack.append(iter(nested))
        elif kind == "image":
            yield "[image offloaded]" if block.get("offloaded") is True else "[image]"
        elif kind == "file":
            att: Any = block.get("attachment") if isinstance(block.get("attachment"), dict) else {}
            name = att.get("name") or att.get("filename")
            yield f"[file {name}]" if name else "[file]"


def content_text(content: Any, rule: TextRule = PREVIEW) -> str:
    """The visible text of a content array (or string) under ``rule``."""
    return rule.separator.join(p for p in _pieces(content, rule) if p)


def message_text(message: Any, rule: TextRule = PREVIEW) -> str:
    """The visible text of a message object (``""`` when it is not one)."""
    return content_text(message.get("content"), rule) if isinstance(message, dict) else ""
