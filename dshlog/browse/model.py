"""What the browser's screens show, computed from an event index; no Textual here.

Each function reads only the events it needs through the index (a turn, a page of
rows, one event), except the surface and the request series, which are one pass
over the log by nature (the fold and the request builder are folds); the app runs
those two in a worker thread when their tab is first shown, and they tell a reader's
``progress`` hook how far they are (a fold of a large log takes seconds).
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..check.surface import fold
from ..errors import UsageError
from ..model.content import TRANSCRIPT, content_text
from ..model.diff import diff_requests, requests_at
from ..model.requests import RequestInfo, iter_requests
from ..model.transcript import Item, TranscriptReader
from ..output import labels as L
from ..output.events import describe, surface_marker
from ..output.diff import diff_lines
from ..output.text import preview
from ..protocol.jsjson import dumps_pretty
from ..model.selection import smart_case
from ..read.container import PROGRESS_STEP, Position
from ..read.pages import EventIndex
from ..read.store import SessionEntry, sort_entries

__all__ = [
    "BrowseFilter",
    "Jump",
    "SurfaceScreen",
    "describe_request",
    "event_json",
    "event_row",
    "first_prompt",
    "item_preview",
    "listed_sessions",
    "parse_filter",
    "parse_jump",
    "diff_screen",
    "request_rows",
    "session_title",
    "surface_view",
    "turn_items",
]

#: Characters of one item's text the conversation shows before it asks for more: a screen or two of
#: reading, and what a terminal widget wraps at once without a pause (one message can be megabytes).
PREVIEW = 4000
#: The text fields of a transcript item that can be long (what a person or a tool wrote).
_LONG_FIELDS = ("text", "arguments", "output", "message")


def _list_text(e: SessionEntry) -> str:
    """What the session list's filter looks in: the id, the title (or first prompt), the directory, the project."""
    return " ".join(str(x) for x in (e.id, e.display_title or "", e.cwd, e.project))


def listed_sessions(entries: list[SessionEntry], needle: str = "", sort: str = "time") -> list[SessionEntry]:
    """The session list's rows: ``entries`` sorted by ``sort``, those whose text holds ``needle``
    (smart case, as ``search`` and ``ls --grep``: :func:`~dshlog.model.selection.smart_case`)."""
    ordered = sort_entries(entries, sort)
    if not needle:
        return ordered
    if smart_case(needle):
        folded = needle.casefold()
        return [e for e in ordered if folded in _list_text(e).casefold()]
    return [e for e in ordered if needle in _list_text(e)]


def session_title(ix: EventIndex) -> str | None:
    """The last ``session/title`` of the log (found from the end: titles are rare, the index knows types)."""
    names = ix.type_names
    if "session/title" not in names:
        return None
    code = names.index("session/title")
    for i in range(len(ix) - 1, -1, -1):
        if ix.types[i] == code:
            data = ix.event(i).get("data")
            if isinstance(data, dict) and isinstance(data.get("title"), str):
                return str(data["title"])
    return None


def first_prompt(ix: EventIndex) -> str | None:
    """The text of the first message the user wrote (not the harness's context)."""
    names = ix.type_names
    if "user/message" not in names:
        return None
    code = names.index("user/message")
    for i in range(len(ix)):
        if ix.types[i] == code:
            data = ix.event(i).get("data")
            if not isinstance(data, dict):
                continue
            source = data.get("source")
            if isinstance(source, dict) and source.get("kind") not in (None, "user"):
                continue
            text = content_text(data.get("content"), TRANSCRIPT).strip()
            if text:
                return text
    return None


def turn_items(ix: EventIndex, ordinal: int) -> list[Item]:
    """The transcript items of one turn, as ``show`` renders them.

    A turn is read on its own: a fresh reader over its events.  What a reader
    carries across turns (the surface seq list for a replacement's shadowed seqs,
    call names) starts empty, so a compaction names its range instead of the
    shadowed seqs, as ``show`` does for a replacement it cannot place.
    """
    start, stop = ix.turn_range(ordinal)
    return list(TranscriptReader().read(ix.events(start, stop)))


def item_preview(item: Item, limit: int = PREVIEW) -> tuple[Item, int]:
    """``item`` with each long text cut to its first ``limit`` characters, and how many characters were left out.

    The conversation shows this first: wrapping a message of ten megabytes for the screen takes
    the terminal widget half a minute, during which the browser answers no key.  Cutting
    looks at no more of a text than it keeps.
    """
    cuts = {name: value[:limit] for name in _LONG_FIELDS
            if isinstance(value := getattr(item, name, None), str) and len(value) > limit}
    if not cuts:
        return item, 0
    hidden = sum(len(getattr(item, name)) - limit for name in cuts)
    shown = copy.copy(item)  # the reader's item stays whole
    for name, value in cuts.items():
        setattr(shown, name, value)
    return shown, hidden


# ----------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class BrowseFilter:
    """``type:GLOB turn:N[-M] seq:A-B`` plus free words (all must match the type or the row text)."""

    types: tuple[str, ...] = ()
    turns: tuple[int, int] | None = None  # turn numbers as the log gives them
    seqs: tuple[int, int] | None = None

    def rows(self, ix: EventIndex) -> list[int]:
        """The event indexes that pass (from the index alone: no event is parsed)."""
        allowed = None
        if self.types:
            allowed = {code for code, name in enumerate(ix.type_names) if any(fnmatch.fnmatchcase(name, g) for g in self.types)}
        ordinals = None
        if self.turns is not None:
            lo, hi = self.turns
            ordinals = {k for k, (_, n) in enumerate(ix.turns, start=1) if type(n) is int and lo <= n <= hi}
        out = []
        seqs, types, turn_of = ix.seqs, ix.types, ix.turn_of
        for i in range(len(ix)):
            if allowed is not None and types[i] not in allowed:
                continue
            if ordinals is not None and turn_of[i] not in ordinals:
                continue
            if self.seqs is not None and not self.seqs[0] <= seqs[i] <= self.seqs[1]:
                continue
            out.append(i)
        return out


_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _range(word: str, value: str) -> tuple[int, int]:
    m = _RANGE.match(value)
    if not m:
        raise UsageError(f"{word}:{value}: expected a number or a range like 10-20")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    return (lo, hi) if lo <= hi else (hi, lo)


def parse_filter(text: str) -> BrowseFilter:
    """``type:tool/* turn:37 seq:100-200``; a bare word is a type glob (``tool/*``, ``*retry*``)."""
    types: list[str] = []
    turns = seqs = None
    for word in text.split():
        key, _, value = word.partition(":")
        if not value:
            types.append(word if any(c in word for c in "*?[") else f"*{word}*")
        elif key == "type":
            types.append(value)
        elif key == "turn":
            turns = _range(key, value)
        elif key == "seq":
            seqs = _range(key, value)
        else:
            raise UsageError(f"unknown filter {key}: (use type:, turn:, seq:)")
    return BrowseFilter(tuple(types), turns, seqs)


def event_row(ix: EventIndex, i: int, width: int = 70) -> tuple[str, str, str, str]:
    """``(seq, turn, type [op], what)`` for the events table."""
    ev = ix.event(i)
    k = ix.turn_of[i]
    turn = str(ix.turns[k - 1][1]) if k else ""
    marker = surface_marker(ev)
    return (str(ev.get("seq")), turn, str(ev.get("type")) + (f" {marker}" if marker else ""), describe(ev, width))


def event_json(ix: EventIndex, i: int) -> str:
    """Event ``i`` as indented JSON, as dsh writes it (``JSON.stringify(ev, null, 2)``)."""
    return dumps_pretty(ix.event(i)).decode("utf-8")


# ----------------------------------------------------------------------------- jump


@dataclass(frozen=True, slots=True)
class Jump:
    """Where ``g`` goes: an event index (``turn`` set when the target was a turn)."""

    index: int
    turn: int | None = None


def parse_jump(ix: EventIndex, text: str) -> Jump:
    """``37`` or ``turn 37``: turn 37; ``#120``, ``s120`` or ``seq 120``: the event with seq 120."""
    t = text.strip().lower()
    m = re.match(r"^(?:#|s|seq\s*)(\d+)$", t)
    if m:
        i = ix.index_of_seq(int(m.group(1)))
        if i is None:
            raise UsageError(f"no event with seq {m.group(1)}")
        return Jump(i)
    m = re.match(r"^(?:t|turn\s*)?(\d+)$", t)
    if m:
        ordinal = ix.turn_ordinal(int(m.group(1)))
        if ordinal is None:
            raise UsageError(f"no turn {m.group(1)}")
        return Jump(ix.turn_range(ordinal)[0], ordinal)
    raise UsageError(f"{text!r}: give a turn (37) or a seq (#120)")


# ----------------------------------------------------------------------------- surface and requests


@dataclass(frozen=True, slots=True)
class SurfaceScreen:
    """The model's view: one row per node (seq, type, role, what it shadows, preview), the replacements."""

    nodes: list[tuple[str, str, str, str, str]]
    replacements: list[str]


def _told(ix: EventIndex, progress: Position | None) -> Iterator[dict[str, Any]]:
    """The events of ``ix`` in order, telling ``progress`` how far the pass is (bytes of the indexed text, of
    all) about every :data:`~dshlog.read.container.PROGRESS_STEP` bytes and at the end, as a reader tells it."""
    if progress is None:
        yield from ix.events()
        return
    total = ix.ends[-1] if len(ix) else 0
    due = 0
    for i, event in enumerate(ix.events()):
        if ix.ends[i] >= due:
            progress(ix.ends[i], total)
            due = ix.ends[i] + PROGRESS_STEP
        yield event
    progress(total, total)


def surface_view(ix: EventIndex, progress: Position | None = None) -> SurfaceScreen:
    """The fold over the whole log (one pass; the fold holds only the surface); ``progress``: told how far it is."""
    state = fold(_told(ix, progress), strict_unknown=False)
    shadows = {r["seq"]: r.get("shadowedSeqs") or [] for r in state.replacements}
    nodes = []
    for n in state.node_info():
        shadowed = shadows.get(n["seq"], [])
        what = ", ".join(map(str, shadowed)) if len(shadowed) <= 6 else f"{shadowed[0]}..{shadowed[-1]} ({len(shadowed)})"
        role = (n["role"] or "") + (f" {L.EMPTY}" if n["empty"] else "")
        nodes.append((str(n["seq"]), str(n["type"]), role, what, preview(n["message"], 80)))
    reps = [
        f"seq {r['seq']} replaced {r['start']}..{r['end']} (shadowed {', '.join(map(str, r.get('shadowedSeqs') or []))})" for r in state.replacements
    ]
    return SurfaceScreen(nodes, reps)


def request_rows(ix: EventIndex, progress: Position | None = None) -> Iterator[RequestInfo]:
    """The request series (one pass), as ``dshlog requests`` lists it; ``progress``: told how far it is."""
    session_id = ix.header.get("id") if isinstance(ix.header, dict) else None
    return iter_requests(_told(ix, progress), session_id=session_id if isinstance(session_id, str) else None, strict_unknown=False)


def diff_screen(ix: EventIndex, number: int) -> list[str]:
    """Request ``number`` against the one before it, as ``dshlog diff`` says it."""
    if number <= 1:
        return [f"request {number} is the first: there is nothing before it to compare"]
    session_id = ix.header.get("id") if isinstance(ix.header, dict) else None
    built = requests_at(ix.events(), [number - 1, number], session_id=session_id if isinstance(session_id, str) else None)
    a, b = f"request {number - 1}", f"request {number}"
    return diff_lines(diff_requests(built[number - 1], built[number]), a, b)


def describe_request(r: Any) -> tuple[str, ...]:
    """One row of the requests table (``r`` is a :class:`RequestInfo`, whose fields are packed properties)."""
    return (
        str(r.number),
        str(r.seq),
        r.kind.split("/")[1] + (f" ({L.INTERRUPTED})" if r.interrupted else ""),
        f"{r.turn}.{r.step}",
        str(r.message_count),
        "-" if r.extends is None else ("yes" if r.extends else "NO"),
        r.reason or "",
        "" if r.input_tokens is None else str(r.input_tokens),
        "" if r.output_tokens is None else str(r.output_tokens),
        "" if r.cache_read_tokens is None else str(r.cache_read_tokens),
    )

