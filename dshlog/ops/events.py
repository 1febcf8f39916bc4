"""``dshlog events`` and ``tail``: a log's events as a stream, filtered, the last N, or followed live.

The filter streams: events pass one at a time, and what is known only at the end
(the log has no turn 9, it ends before seq 99) is raised as a usage error once the
stream is exhausted, as ``surface --at`` and ``rebuild --request`` do.  Nothing
here holds a whole log: :class:`EventStream` carries the open log and an iterator,
:func:`last_events` keeps N events, :func:`follower` hands back the live reader.
"""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..check.problems import Problem, Problems
from ..errors import InvalidArgument, UsageError
from ..protocol.jsjson import dumps
from ..read.follow import EventFollower
from ..read.lazy import LazyRecord
from ..read.session import EventRecord, SessionLog
from ..read.view import V4View
from ..read.source import Source, Target
from .sessions import OpenLog, located, open_target
from .stance import stance

__all__ = ["EventFilter", "EventStream", "LastEvents", "event_stream", "filtered", "follower", "last_events"]

Pair = tuple[dict[str, Any], Any]


@dataclass(frozen=True)
class EventFilter:
    """``--type`` globs (any matches), ``--turn N``, ``--from SEQ``, ``--to SEQ`` (inclusive)."""

    types: tuple[str, ...] = ()
    turn: int | None = None
    from_seq: int | None = None
    to_seq: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.types) or self.turn is not None or self.from_seq is not None or self.to_seq is not None

    def check(self) -> None:
        """Values that cannot name anything in any log."""
        for name, v in (("--turn", self.turn), ("--from", self.from_seq), ("--to", self.to_seq)):
            if v is not None and v < 0:
                raise UsageError(f"{name} {v}: must be 0 or more")
        if self.from_seq is not None and self.to_seq is not None and self.from_seq > self.to_seq:
            raise UsageError(f"--from {self.from_seq} is after --to {self.to_seq}")


def filtered(source: Iterable[Pair], f: EventFilter) -> Iterator[Pair]:
    """The (event, payload) pairs of ``source`` that ``f`` keeps, in order.

    Raises :class:`UsageError` at the end when ``--turn`` names a turn the log does
    not have, or ``--from`` / ``--to`` a seq after its last event.
    """
    f.check()
    current_turn: Any = None
    turns: list[Any] = []
    last_seq: int | None = None
    stopped = False
    for pair in source:
        ev = pair[0]
        t = ev.get("type")
        seq = ev.get("seq")
        if type(seq) is int:
            last_seq = seq
        raw_data = ev.get("data")
        data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
        if t == "turn/start":
            current_turn = data.get("turn")
            turns.append(current_turn)
        in_turn = current_turn
        if t == "turn/end":
            current_turn = None
        if f.to_seq is not None and type(seq) is int and seq > f.to_seq:
            stopped = True
            break
        if f.turn is not None and in_turn != f.turn:
            continue
        if f.from_seq is not None and (type(seq) is not int or seq < f.from_seq):
            continue
        if f.types and not any(fnmatch.fnmatchcase(str(t), pat) for pat in f.types):
            continue
        yield pair
    end = f"the log ends at seq {last_seq}" if last_seq is not None else "the log has no events"
    if f.turn is not None and not stopped and f.turn not in turns:
        have = f"turns {turns[0]}..{turns[-1]}" if turns else "no turns"
        raise UsageError(f"turn {f.turn} does not exist: the log has {have}")
    if f.from_seq is not None and (last_seq is None or f.from_seq > last_seq):
        raise UsageError(f"seq {f.from_seq} does not exist: {end}")
    if f.to_seq is not None and not stopped and (last_seq is None or f.to_seq > last_seq):
        raise UsageError(f"seq {f.to_seq} does not exist: {end}")


#: One event as the readers give it: the event, and its exact stored line when there is one.
EventPair = tuple[dict[str, Any], bytes | None]


def _located(log: SessionLog, pairs: Iterator[Any]) -> Iterator[Any]:
    """The stream, with an error of the core met on the way naming the log."""
    with located(log.path):
        yield from pairs


class EventStream(OpenLog):
    """``dshlog events``: the events of one log as they are read, filtered; the log is open until :meth:`close`.

    Iterating gives (event, exact stored line or ``None``) pairs, once.
    ``deferred`` says that what is shown of them is not valid before the end:
    dsh's view (``v4``) is decided on the whole log (:meth:`finish`), and a filter
    may find at the end that the turn or seq it names does not exist.  ``notes``
    are what the reader noticed, complete once the stream is read.
    """

    def __init__(self, log: SessionLog, view: V4View | None, flt: EventFilter) -> None:
        super().__init__(log)
        self._view = view
        self._flt = flt
        self.filtered = flt.active
        self.deferred = view is not None or flt.active

    def __iter__(self) -> Iterator[EventPair]:
        log, view, flt = self._log, self._view, self._flt
        # dsh's view is shown as dsh holds it (its own JSON), the stored view with each line's exact bytes
        source: Iterator[EventPair] = ((ev, None) for ev in view) if view is not None else ((r.event, r.raw) for r in log.stored())
        return _located(log, filtered(source, flt) if flt.active else source)

    def lines(self) -> Iterator[bytes]:
        """Each event as one line of JSON (no newline): its exact stored bytes where it has them.

        Instead of iterating the pairs (the stream is read once, either way).  Unfiltered,
        the stored view comes from the lazy reader (:meth:`SessionLog.stored_lines`): a
        line it admits is copied without being parsed.
        """
        if self._view is not None or self.filtered:
            return ((raw if raw is not None else dumps(ev)) for ev, raw in self)
        return _located(self._log, ((r.raw if r.raw is not None else dumps(r.event)) for r in self._log.stored_lines()))

    def finish(self) -> None:
        """dsh's decision on the rest of the log (``v4``): raises its refusal, if dsh refuses it."""
        if self._view is not None:
            with located(self._log.path):
                self._view.finish()



def event_stream(target: Source | Target, *, v4: bool = False, flt: EventFilter | None = None) -> EventStream:
    """Open ``target`` and stream its events: as stored, read as far as they can be (the default), or
    ``v4``, dsh's view decided as dsh decides; only those ``flt`` keeps."""
    log = open_target(target, strict=stance("events --v4" if v4 else "events").strict)
    try:
        view = log.v4() if v4 else None
    except BaseException:
        log.close()
        raise
    return EventStream(log, view, flt if flt is not None else EventFilter())


@dataclass(frozen=True, slots=True)
class LastEvents:
    """``dshlog tail``: the last events of a log as stored (read as far as they can be), and the reader's notes."""

    path: str
    events: tuple[EventPair, ...]
    notes: tuple[Problem, ...] = ()
    suppressed: dict[str, int] = field(default_factory=dict)


def last_events(target: Source | Target, count: int) -> LastEvents:
    """The last ``count`` stored events of ``target``; only those are held, however long the log."""
    if count < 0:
        raise InvalidArgument(f"the count of last events must be 0 or more, not {count}")
    with open_target(target, strict=stance("tail").strict) as log:
        last: deque[EventRecord | LazyRecord] = deque((), maxlen=count)
        with located(log.path):
            for r in log.stored_lines():  # only the last rows are parsed (a row the lazy reader admitted, at the end)
                last.append(r)
            events = tuple((r.event, r.raw) for r in last)
        return LastEvents(log.path, events, tuple(log.notes), log.notes.suppressed())


def follower(target: Source | Target, *, interval: float = 0.25) -> EventFollower:
    """The live reader of a session's generation (``tail -f``): it follows the name across a replacement.

    Only a plain or zstd JSONL generation can be followed; standard input cannot.
    Its ``notes`` collect what it skipped.
    """
    source = Source.of(target)
    if source.name == "-":
        raise UsageError("tail -f needs a file: standard input cannot be followed")
    with open_target(source, strict=False) as log:  # header, version, container
        path, container = log.path, log.info.container
    if container not in ("jsonl", "jsonl.zstd"):
        raise UsageError(f"tail -f follows JSONL generations; this input is {container}", path=path)
    return EventFollower(source.name, poll_interval=interval, notes=Problems(), format_version=source.format_version)
