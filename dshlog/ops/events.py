"""``dshlog events``: which events a filter keeps, and whether the turn or seq it names exists.

The filter streams: events pass one at a time, and what is known only at the end
(the log has no turn 9, it ends before seq 99) is raised as a usage error once the
stream is exhausted, as ``surface --at`` and ``rebuild --request`` do.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

__all__ = ["EventFilter", "filtered"]

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
