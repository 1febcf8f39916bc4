"""One kind of finding for every layer: a :class:`Problem` with a :class:`Severity`.

The reader notes what it skipped or restored, the fold refuses, ``validate`` lists
everything, the migration chain refuses: each used to have its own finding type
(``Note``, ``Problem``, ``Finding``, exceptions) with its own severity strings.  Now
they all speak :class:`Problem`.  A rule reports to a :class:`Reporter`: a strict
consumer (the fold, dsh's strict read) raises at the first error, ``validate``
collects them all, bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, NoReturn, Protocol

from ..errors import DshlogError, Location, describe_place

__all__ = ["Problem", "Problems", "Raise", "Reporter", "Severity"]


class Severity(StrEnum):
    """How much a problem matters; the values are the words ``--json`` prints.

    ``error``: dsh refuses the log for it.  ``warning``: a deviation dsh accepts,
    or one a snapshot projection explains.  ``info``: a normal state worth saying
    (an open tail, a restored projection, a torn tail left by a crash).
    """

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: a stable ``code``, dsh's words where dsh has them, and where it is.

    ``path`` names the file when nothing finer is known (a file that cannot be
    opened at all).  ``value`` is the offending value of a rule a snapshot
    projection may explain (a ``{{placeholder}}`` where dsh wrote a real value):
    ``validate`` turns such an error into a projection warning, then drops the
    value, so a kept problem never holds on to a payload.  It takes no part in
    equality.
    """

    code: str
    message: str
    severity: Severity = Severity.ERROR
    seq: int | None = None
    loc: Location | None = None
    path: str | None = None
    value: Any = field(default=None, compare=False, repr=False)

    def where(self) -> str:
        """``line 3, byte 120, seq 2``: whatever is known (the path alone when nothing finer is)."""
        place = describe_place(self.loc, self.seq)
        return self.path if not place and self.path else place

    def with_severity(self, severity: Severity) -> Problem:
        return replace(self, severity=severity)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": str(self.severity), "where": self.where(), "message": self.message}


class Reporter(Protocol):
    """Where a rule sends what it finds.

    A rule written against a reporter must stay correct whether ``report``
    returns (``validate`` collects and the rule carries on) or raises (a strict
    consumer stops at the first problem).
    """

    def report(self, problem: Problem) -> None: ...


def report_lifecycle(report: Reporter, text: str, seq: int) -> None:
    """What a lifecycle rule finds (turns, steps, calls, compactions, retries, titles, PTC): an error at the event's seq."""
    report.report(Problem("lifecycle", text, seq=seq))


class Raise:
    """The strict reporter: the first problem becomes ``error`` (dsh's read refuses the log).

    The fold uses one per error type it owes its callers (``SurfaceError`` for its
    own and the shared data rules, ``CorruptLog`` for envelopes and message shapes,
    ``UnsupportedVersion`` for an unknown type), so the texts and types a caller
    catches do not depend on which module holds the rule.
    """

    __slots__ = ("error", "path")

    def __init__(self, error: type[DshlogError], *, path: str | None = None) -> None:
        self.error = error
        self.path = path

    def report(self, problem: Problem) -> NoReturn:
        raise self.error(problem.message, path=problem.path or self.path, loc=problem.loc, seq=problem.seq)


class Problems:
    """A bounded collection of problems: the first ``keep`` of each code are kept, the rest counted.

    Memory stays bounded however many rows of a huge log share one defect.
    """

    KEEP = 20

    def __init__(self, keep: int | None = None) -> None:
        self.keep = self.KEEP if keep is None else keep
        self.items: list[Problem] = []
        self.counts: dict[str, int] = {}

    def report(self, problem: Problem) -> None:
        n = self.counts.get(problem.code, 0)
        self.counts[problem.code] = n + 1
        if n < self.keep:
            self.items.append(problem)

    add = report

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def suppressed(self) -> dict[str, int]:
        """How many problems of each code were counted but not kept."""
        return {c: n - self.keep for c, n in self.counts.items() if n > self.keep}
