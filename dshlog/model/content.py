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

A rule that asks for ``arguments`` gives a ``tool-call`` block's arguments as the
text a person reads in them: the string values of the JSON object they hold (never
its keys), or the whole string when it is not JSON.  A rule without
``placeholders`` leaves images and files out (``search`` looks for what was
written, not for dshlog's spelling of an attachment).  :func:`content_pieces`
gives each piece with the kind of block it came from.

Non-empty pieces are joined with the rule's separator.  The placeholder
spellings live here, with the rule that produces them; every other word a
renderer prints lives in :mod:`dshlog.output.labels`.

This module is in ``model/`` and not in ``output/`` because the transcript reader
(:mod:`dshlog.model.transcript`) needs the text of a message to trim and redact
it, and the model never imports the renderers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from ..protocol.jsjson import JsonError, loads
from ..protocol.vocabulary import TOOL_CHANGE_BLOCKS

__all__ = ["EVENT_LINE", "FIND", "PREVIEW", "SEARCH", "TRANSCRIPT", "TextRule", "content_pieces", "content_text", "message_text"]


class TextRule(msgspec.Struct, frozen=True):
    """What one use of the extractor shows.

    ``tool_calls``: tool-call, tool-addition and tool-removal blocks as markers.
    ``reasoning``: the model's reasoning text.  ``separator``: between pieces.
    ``arguments``: a tool call's arguments as text (instead of a marker).
    ``placeholders``: images and files as ``[image]``, ``[file NAME]``.
    """

    tool_calls: bool = True
    reasoning: bool = False
    separator: str = ""
    arguments: bool = False
    placeholders: bool = True


#: Previews (``surface``, ``diff``): dsh's own demo rule, calls as markers, no reasoning, pieces run together.
PREVIEW = TextRule()
#: The ``events`` line: what the event says, reasoning included; calls are listed after the quote instead.
EVENT_LINE = TextRule(tool_calls=False, reasoning=True)
#: ``ls --grep``: everything the user or the model wrote, one piece per line so a match never spans two blocks.
SEARCH = TextRule(tool_calls=False, reasoning=True, separator="\n")
#: ``show`` and ``export``: reasoning, calls and tool changes are items of their own; pieces one per line.
TRANSCRIPT = TextRule(tool_calls=False, separator="\n")
#: ``search``: what a person reads, each piece apart: text, reasoning, call arguments, tool output; no placeholders.
FIND = TextRule(tool_calls=False, reasoning=True, separator="\n", arguments=True, placeholders=False)


def argument_strings(arguments: str) -> Iterator[str]:
    """The string values of a call's JSON arguments, in document order (the string itself when it is no JSON)."""
    try:
        value = loads(arguments)
    except JsonError:
        yield arguments
        return
    if isinstance(value, str):
        yield value
        return
    stack: list[Iterator[Any]] = [iter([value])]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.append(iter(item.values()))
        elif isinstance(item, list):
            stack.append(iter(item))


_END = object()


def content_pieces(content: Any, rule: TextRule = PREVIEW) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` of each block, depth first; iterative, so nesting depth cannot exhaust the stack.

    ``kind`` is the block's type, except that text nested in a ``tool-result``
    wrapper (v0..v3) has the kind ``tool-result``: it is a tool's output.
    """
    stack: list[tuple[Iterator[Any], bool]] = [
        (iter([{"type": "text", "text": content}] if isinstance(content, str) else content if isinstance(content, list) else ()), False)]
    while stack:
        top, nested_in_result = stack[-1]
        block = next(top, None)
        if block is None:
            stack.pop()
            continue
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            continue  # not a block (a damaged one: a list as its type is no kind to look up)
        kind = block["type"]
        if kind == "text" or (kind == "reasoning" and rule.reasoning):
            if isinstance(block.get("text"), str):
                yield ("tool-result" if nested_in_result else kind), block["text"]
        elif kind == "tool-call":
            if rule.arguments:
                args = block.get("arguments")
                if isinstance(args, str):
                    for piece in argument_strings(args):
                        yield kind, piece
            elif rule.tool_calls:
                yield kind, f"[tool-call {block.get('name')}]"
        elif kind in TOOL_CHANGE_BLOCKS:
            if rule.tool_calls:
                yield kind, f"[{kind} {block.get('toolName')}]"
        elif kind == "tool-result":
            nested = block.get("content")
            if isinstance(nested, str):
                yield kind, nested
            elif isinstance(nested, list):
                stack.append((iter(nested), True))
        elif not rule.placeholders:
            continue
        elif kind == "image":
            yield kind, "[image offloaded]" if block.get("offloaded") is True else "[image]"
        elif kind == "file":
            att: dict[str, Any] = block["attachment"] if isinstance(block.get("attachment"), dict) else {}
            name = att.get("name") or att.get("filename")
            yield kind, f"[file {name}]" if name else "[file]"


def content_text(content: Any, rule: TextRule = PREVIEW) -> str:
    """The visible text of a content array (or string) under ``rule``."""
    return rule.separator.join(p for _, p in content_pieces(content, rule) if p)


def message_text(message: Any, rule: TextRule = PREVIEW) -> str:
    """The visible text of a message object (``""`` when it is not one)."""
    return content_text(message.get("content"), rule) if isinstance(message, dict) else ""
