"""Typed results of the library's operations, each with the versioned JSON shape the CLI prints.

A result is a frozen dataclass: what a script reads as attributes, and
``as_dict()``, the very document ``dshlog <command> --json`` prints for the
same input (``{"shape": 1, ...}``; the number is :data:`~dshlog.output.jsondoc.SHAPE`).
Results are built from what the operations in :mod:`dshlog.ops` and the model
return; where an operation already has a shape (a validation report, a
migration outcome, a session of a listing), the result keeps that object and
its ``as_dict`` is the one owner of the shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..check.problems import Problem
from ..errors import DshlogError, ExitCode
from ..output.jsondoc import SHAPE
from .outcome import ReadNotes

if TYPE_CHECKING:  # the objects a result wraps: named in annotations only, so `info` does not load the writers
    from ..model.repair import PendingCall, RepairPlan
    from .migrate import Outcome
    from .repair import RepairResult

__all__ = [
    "SHAPE",
    "ExportResult",
    "ForkResult",
    "Migration",
    "MigrationOutcome",
    "RepairOutcome",
]

#: Migration statuses in the order the summary counts them (README: migrate).
MIGRATION_STATUSES: tuple[str, ...] = ("migrated", "current", "needed", "would-migrate", "failed")


# ----------------------------------------------------------------------------- info and stats


# ----------------------------------------------------------------------------- validate


# ----------------------------------------------------------------------------- model view


# ----------------------------------------------------------------------------- writers


def _pending(c: PendingCall) -> dict[str, Any]:
    return {"callId": c.call_id, "step": c.step, "started": c.started, "callSeq": c.call_seq}


@dataclass(frozen=True, slots=True)
class RepairOutcome:
    """``dshlog repair``: what is open at the tail, the closers dsh appends, and what was written."""

    plan: RepairPlan
    written: str | None = None  # the file that now holds the repaired log
    sidecar: str | None = None  # where the cut torn bytes were kept
    in_place: bool = False
    publish_warnings: tuple[str, ...] = ()  # what publishing could not keep (the owner, a leftover)

    @classmethod
    def of(cls, result: RepairResult) -> RepairOutcome:
        return cls(result.plan, result.written, result.sidecar, result.in_place, tuple(result.warnings))

    @property
    def healthy(self) -> bool:
        return self.plan.healthy

    @property
    def closers(self) -> list[dict[str, Any]]:
        return list(self.plan.closers)

    @property
    def exit_code(self) -> ExitCode:
        """``repair --check``'s status: work needed when the tail is open."""
        return ExitCode.OK if self.plan.healthy else ExitCode.PENDING

    def as_dict(self) -> dict[str, Any]:
        plan, rep = self.plan, self.plan.report
        return {
            "shape": SHAPE,
            "path": plan.path,
            "healthy": plan.healthy,
            "openTurn": rep.open_turn,
            "openStep": rep.open_step,
            "pendingCalls": [_pending(c) for c in rep.pending],
            "tornBytes": plan.torn_bytes,
            "tornFrame": plan.torn_frame,
            "closers": plan.closers,
            "warnings": plan.warnings,
            "written": self.written,
            "sidecar": self.sidecar,
        }


@dataclass(frozen=True, slots=True)
class ForkResult:
    """``dshlog fork``: the child written, cut after parent seq ``at``."""

    path: str
    child_id: str
    parent_id: Any
    at: int
    events: int
    closers: tuple[Mapping[str, Any], ...]
    header: Mapping[str, Any]
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> ForkResult:
        """From :func:`dshlog.ops.fork.write_fork`'s document."""
        return cls(result["path"], result["childId"], result["parentId"], result["at"], result["events"],
                   tuple(result["closers"]), result["header"], tuple(result.get("warnings", ())))

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "shape": SHAPE,
            "path": self.path,
            "childId": self.child_id,
            "parentId": self.parent_id,
            "at": self.at,
            "events": self.events,
            "closers": list(self.closers),
            "header": dict(self.header),
        }
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        return doc


@dataclass(frozen=True, slots=True)
class MigrationOutcome:
    """One session of ``dshlog migrate`` (a wrapper of :class:`~dshlog.ops.migrate.Outcome`)."""

    source: str
    status: str  # migrated | current | needed | would-migrate | failed
    version: int | None
    target: str | None
    events: int | None
    bytes: int | None
    error: str | None  # the one line the CLI prints for a failed session
    exit_code: ExitCode
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    _outcome: Outcome = field(repr=False, compare=False)

    @classmethod
    def of(cls, o: Outcome) -> MigrationOutcome:
        return cls(o.source, o.status, o.version, o.target, o.events, o.bytes, o.error, ExitCode(o.exit_code),
                   tuple(o.notes), tuple(o.warnings), o)

    def as_dict(self) -> dict[str, Any]:
        """One element of the ``sessions`` list ``migrate --json`` prints."""
        return self._outcome.as_dict()


@dataclass(frozen=True, slots=True)
class Migration:
    """``dshlog migrate``: one outcome per session, the counts, and the run's exit code."""

    sessions: tuple[MigrationOutcome, ...]
    check: bool = False  # ``--check``: a session that needs migrating is work pending

    @property
    def summary(self) -> dict[str, int]:
        return {k: sum(1 for o in self.sessions if o.status == k) for k in MIGRATION_STATUSES}

    @property
    def exit_code(self) -> ExitCode:
        """The worst failure; else, with ``check``, work pending when a session needs migrating."""
        failed = [o.exit_code for o in self.sessions if o.status == "failed"]
        if failed:
            return max(failed)
        if self.check and any(o.status == "needed" for o in self.sessions):
            return ExitCode.PENDING
        return ExitCode.OK

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "sessions": [o.as_dict() for o in self.sessions], "summary": self.summary}


@dataclass(frozen=True, slots=True)
class ExportResult:
    """``dshlog export -o OUT``: the file published, and what publishing could not keep.

    The command prints no JSON for it (only ``written: OUT``); ``as_dict()`` is the
    library's own document, in the same versioned form.
    """

    path: str
    format: str
    warnings: tuple[str, ...] = ()
    source: str = ""  # the log it was made of
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = field(default_factory=dict)
    #: dsh's refusal of the source, whose transcript was exported anyway (it opens with it), and what
    #: ``dshlog rescue`` takes to bring it back
    refused: DshlogError | None = None
    rescue: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "path": self.path, "format": self.format, "warnings": list(self.warnings)}

    @property
    def noted(self) -> ReadNotes:
        """The reader's notes on the source (the file written has its own ``path``), and dsh's refusal of it."""
        return ReadNotes(self.source, self.notes, self.suppressed, self.refused, self.rescue)
