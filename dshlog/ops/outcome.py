"""What every operation's result shares: the exit code of a batch, and what reading a log left to say.

A batch (``migrate`` over a root, ``validate`` or ``stats`` of many files, a reader
that skipped damaged rows) exits with its *most severe* per-session outcome, in
this order, most severe first:

    1 (a bug) > 4 (corrupt) > 6 (I/O) > 5 (refused as unsafe) > 3 (unsupported) > 2 (usage) > 10 (work needed) > 0

Damage outranks a refusal to act, because a refusal is safe to retry and damage
is not; "work needed" (``--check``) is reported only when nothing failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import msgspec

from ..check.problems import Problem
from ..errors import DshlogError, ExitCode
from ..output.jsondoc import SHAPE

__all__ = ["SEVERITY", "Noted", "ReadNotes", "note_dicts", "worst"]

#: Exit codes from most to least severe.
SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.INTERNAL,
    ExitCode.CORRUPT,
    ExitCode.IO,
    ExitCode.CONFLICT,
    ExitCode.UNSUPPORTED,
    ExitCode.USAGE,
    ExitCode.PENDING,
    ExitCode.OK,
)


def worst(codes: Iterable[int]) -> ExitCode:
    """The most severe of ``codes`` (``OK`` for none)."""
    rank = {c: i for i, c in enumerate(SEVERITY)}
    found = [ExitCode(c) for c in codes]
    return min(found, key=lambda c: rank[c], default=ExitCode.OK)


def note_dicts(notes: Iterable[Problem]) -> list[dict[str, Any]]:
    return [{"code": n.code, "message": n.message, "where": n.where()} for n in notes]


class Noted(Protocol):
    """A result of reading one log: what the reader noticed on the way (the command says it on stderr).

    ``notes`` are the kept notes; ``suppressed`` counts, per code, the ones past
    the reader's bound (:class:`~dshlog.check.problems.Problems`).
    """

    @property
    def path(self) -> str: ...

    @property
    def notes(self) -> tuple[Problem, ...]: ...

    @property
    def suppressed(self) -> Mapping[str, int]: ...


class ReadNotes(msgspec.Struct, frozen=True):
    """What reading one log left to say, when the operation's output went to a sink of the caller's.

    ``show`` and ``export`` to a stream render as they read, so what remains is
    the reader's notes (:class:`Noted`).
    """

    path: str
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = msgspec.field(default_factory=dict)
    #: dsh's refusal of a log shown anyway (``show``, ``export``: they show what a log holds), and what
    #: ``dshlog rescue`` takes to bring it back
    refused: DshlogError | None = None
    rescue: str | None = None

    @classmethod
    def of(cls, log: Any, *, refused: DshlogError | None = None, rescue: str | None = None) -> ReadNotes:
        return cls(log.path, tuple(log.notes), log.notes.suppressed(), refused, rescue)

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "path": self.path, "notes": note_dicts(self.notes)}
