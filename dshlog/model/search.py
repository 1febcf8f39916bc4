"""Hits of a pattern in what a person reads in a log (``dshlog search``).

The text searched is the one extractor's (:mod:`dshlog.model.content`, rule
:data:`~dshlog.model.content.FIND`): message text, the string values of tool-call
arguments, tool output, and reasoning when asked; never JSON keys, envelope
fields, or the bytes of an image.  Each piece of text is searched on its own, so a
match never spans two blocks, and a hit knows the event (seq, type), its turn,
the role of the message and which kind of piece it was found in.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import UsageError
from ..protocol.vocabulary import ROLE_OF_TYPE, message_of
from .content import FIND, content_pieces
from .selection import Selection, smart_case

__all__ = ["Hit", "Query", "Searcher"]

#: What ``--role`` may name: the roles of dsh's surface messages.
ROLES = tuple(sorted(set(ROLE_OF_TYPE.values())))
#: The kinds of piece a hit reports (``field``): where in a message the text was (a tool's text is its ``output``).
FIELDS = {"text": "text", "reasoning": "reasoning", "tool-call": "arguments", "tool-result": "output"}


@dataclass(frozen=True)
class Query:
    """A search, as it travels to the workers (plain data, picklable)."""

    pattern: str
    regex: bool = False
    ignore_case: bool | None = False  # None: smart case (ignored unless the pattern has a capital letter)
    roles: frozenset[str] = frozenset()  # empty: every role
    types: tuple[str, ...] = ()  # event type globs; empty: every type
    since: int | None = None  # epoch ms; events before it (or without a time) are skipped
    until: int | None = None  # epoch ms; events from it on are skipped
    reasoning: bool = False
    context: int = 40
    project: str | None = None  # a part of the session's cwd or project directory
    cwd: str | None = None  # the session's project directory, exactly (an absolute path)
    first_only: bool = False  # ``-l``: one hit is enough to name the session

    @property
    def folds_case(self) -> bool:
        """Whether case is ignored: ``-i``, or smart case for a pattern without a capital letter
        (in a regex, an escape such as ``\\S`` or ``\\W`` is no capital letter)."""
        if self.ignore_case is not None:
            return self.ignore_case
        return smart_case(re.sub(r"\\.", "", self.pattern) if self.regex else self.pattern)

    @property
    def selection(self) -> Selection:
        """The query's session and time filters as the one grammar's :class:`~dshlog.model.selection.Selection`."""
        return Selection(since=self.since, until=self.until, project=self.project, cwd=self.cwd)

    def compiled(self) -> re.Pattern[str] | None:
        """The regex of ``-e``/``-i`` (``None`` for a plain fixed string); a bad one is a usage error."""
        folds = self.folds_case
        if not self.regex and not folds:
            return None
        try:
            return re.compile(self.pattern if self.regex else re.escape(self.pattern), re.IGNORECASE if folds else 0)
        except re.error as exc:
            raise UsageError(f"bad regular expression {self.pattern!r}: {exc}") from None


@dataclass
class Hit:
    """One match: where it is and a snippet of its text around it."""

    seq: int | None
    turn: int | None
    type: str
    role: str
    field: str
    offset: int  # of the match in its piece of text (characters)
    match: str
    before: str
    after: str

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "turn": self.turn, "type": self.type, "role": self.role, "field": self.field,
                "offset": self.offset, "match": self.match, "before": self.before, "after": self.after}


class Searcher:
    """Feed it a log's events in order; it yields the hits of one query."""

    def __init__(self, query: Query) -> None:
        if not query.pattern:
            raise UsageError("the pattern is empty")
        self.query = query
        self._re = query.compiled()
        self._rule = msgspec.structs.replace(FIND, reasoning=query.reasoning)
        self._turn: int | None = None
        self.found = 0

    def _spans(self, text: str) -> Iterator[tuple[int, int]]:
        if self._re is None:
            p = self.query.pattern
            i = text.find(p)
            while i >= 0:
                yield i, i + len(p)
                i = text.find(p, i + len(p))
            return
        for m in self._re.finditer(text):
            if m.end() > m.start():  # an empty match marks no text
                yield m.start(), m.end()

    def feed(self, ev: Any) -> Iterator[Hit]:
        if not isinstance(ev, dict):
            return
        t = ev.get("type")
        data = ev.get("data")
        if t == "turn/start":
            self._turn = data.get("turn") if isinstance(data, dict) else None
            return
        in_turn = self._turn
        if t == "turn/end":
            self._turn = None
            return
        if t not in ROLE_OF_TYPE:
            return
        q = self.query
        if q.types and not any(fnmatch.fnmatchcase(t, g) for g in q.types):
            return
        time = ev.get("time")
        if q.since is not None and not (type(time) is int and time >= q.since):
            return
        if q.until is not None and not (type(time) is int and time < q.until):
            return
        msg = message_of(t, data)
        if not isinstance(msg, dict):
            return
        role: str = msg["role"] if isinstance(msg.get("role"), str) else ROLE_OF_TYPE[t]
        seq = ev.get("seq") if type(ev.get("seq")) is int else None
        ctx = q.context
        for kind, text in content_pieces(msg.get("content"), self._rule):
            piece_role = "tool" if kind == "tool-result" else role  # a v0..v3 tool result rides in a user message
            if q.roles and piece_role not in q.roles:
                continue
            fld = "output" if piece_role == "tool" and kind in ("text", "tool-result") else FIELDS.get(kind, kind)
            for start, end in self._spans(text):
                self.found += 1
                yield Hit(seq, in_turn, str(t), piece_role, fld, start, text[start:end],
                          text[max(0, start - ctx):start], text[end:end + ctx])
                if q.first_only:
                    return
