"""Title rules: session titles cite distinct earlier human messages (FORMAT §5.2 item 7).

``session/title.messageSeqs`` is empty exactly for a title the user typed; an
LLM title request mirrors the cited messages as one text message.  Any earlier
human ``user/message`` may be cited, so their seqs are kept for the whole log, in
an ascending ``array('q')`` (8 bytes each, found by bisection).
"""

from __future__ import annotations

from functools import partial
from array import array
from typing import Any

from ..protocol.values import is_count
from .common import seq_in
from .problems import Reporter, report_lifecycle

__all__ = ["Titles"]


class Titles:
    """The human messages a title may cite; :meth:`check` judges one title event."""

    __slots__ = ("_human",)

    def __init__(self) -> None:
        self._human = array("q")  # seqs of human user/message events, ascending

    def user_message(self, data: dict[str, Any], seq: int) -> None:
        """Record a ``user/message``; only a human one (``source.kind == "user"``) may be cited."""
        source = data.get("source")
        if isinstance(source, dict) and source.get("kind") == "user":
            self._human.append(seq)  # seqs arrive ascending

    def check(self, etype: str, data: dict[str, Any], seq: int, report: Reporter) -> None:
        """Titles cite distinct earlier human user messages; LLM requests mirror them."""

        problem = partial(report_lifecycle, report, seq=seq)

        refs = data.get("messageSeqs")
        if not isinstance(refs, list):
            problem("title messageSeqs requires an array")
            return
        if etype == "session/title":
            source = data.get("source")
            if not isinstance(source, dict):
                problem("title source requires an object")
            elif (len(refs) == 0) != (source.get("kind") == "user"):
                problem("session/title messageSeqs must be empty exactly for a user title")
        seen: set[Any] = set()
        for ref in refs:
            if not is_count(ref):
                problem("title messageSeqs must be a non-negative safe integer")
                return
            if ref >= seq:
                problem("title messageSeqs must name an earlier event")
                return
            if ref in seen or not seq_in(self._human, ref):
                problem(f"{etype} messageSeqs must cite distinct earlier human user/message events")
                return
            seen.add(ref)
        if etype != "session/title-llm-request":
            return
        messages = data.get("messages")
        message = messages[0] if isinstance(messages, list) and messages else None
        content = message.get("content") if isinstance(message, dict) else None
        source = message.get("source") if isinstance(message, dict) else None
        if not (
            refs
            and isinstance(messages, list)
            and len(messages) == 1
            and isinstance(message, dict)
            and message.get("role") == "user"
            and isinstance(source, dict)
            and source.get("kind") == "dsh-session-title-llm"
            and isinstance(content, list)
            and len(content) == 1
            and isinstance(content[0], dict)
            and content[0].get("type") == "text"
        ):
            problem("session/title-llm-request messages do not represent messageSeqs")
