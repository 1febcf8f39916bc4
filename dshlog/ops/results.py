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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..check.problems import Problem, Severity
from ..errors import DshlogError, ExitCode
from ..output.jsondoc import SHAPE, diff_document
from ..output.text import preview
from ..protocol.jsjson import dumps, dumps_pretty

if TYPE_CHECKING:  # the objects a result wraps: named in annotations only, so `info` does not load the writers
    from ..model.repair import PendingCall, RepairPlan
    from ..model.requests import RequestInfo
    from ..model.summary import Summary
    from ..read.container import Torn
    from .migrate import Outcome
    from .repair import RepairResult
    from .validate import Report

__all__ = [
    "SHAPE",
    "ExportResult",
    "ForkResult",
    "Migration",
    "MigrationOutcome",
    "RebuiltRequest",
    "RepairOutcome",
    "ReadNotes",
    "RequestDiff",
    "RequestRow",
    "RequestSeries",
    "SessionInfo",
    "SessionStats",
    "Stats",
    "SurfaceView",
    "Validation",
    "ValidationReport",
]

#: Migration statuses in the order the summary counts them (README: migrate).
MIGRATION_STATUSES: tuple[str, ...] = ("migrated", "current", "needed", "would-migrate", "failed")


def _note_dicts(notes: Iterable[Problem]) -> list[dict[str, Any]]:
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


@dataclass(frozen=True, slots=True)
class ReadNotes:
    """What reading one log left to say, when the operation's output went to a sink of the caller's.

    ``show`` and ``export`` to a stream render as they read, so what remains is
    the reader's notes (:class:`Noted`).
    """

    path: str
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = field(default_factory=dict)
    #: dsh's refusal of a log shown anyway (``show``, ``export``: they show what a log holds), and what
    #: ``dshlog rescue`` takes to bring it back
    refused: DshlogError | None = None
    rescue: str | None = None

    @classmethod
    def of(cls, log: Any, *, refused: DshlogError | None = None, rescue: str | None = None) -> ReadNotes:
        return cls(log.path, tuple(log.notes), log.notes.suppressed(), refused, rescue)

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "path": self.path, "notes": _note_dicts(self.notes)}


@dataclass(frozen=True, slots=True)
class RequestDiff:
    """``dshlog diff``: what changed from request ``a`` to request ``b`` (of one log or two).

    ``changes`` is :func:`dshlog.model.diff.diff_requests`'s document: config,
    tools, messages added, removed or replaced, where the byte prefix broke.
    """

    a: Mapping[str, Any]
    b: Mapping[str, Any]
    changes: Mapping[str, Any]

    def as_dict(self, label_a: str = "a", label_b: str = "b") -> dict[str, Any]:
        """``diff --json``, the two requests named by their labels."""
        return {"shape": SHAPE, **diff_document(dict(self.changes), label_a, label_b)}


# ----------------------------------------------------------------------------- info and stats


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """``dshlog info``: the header, the container, sizes and the summary of the stored events."""

    path: str
    container: str
    version: int
    projection: bool
    header: Mapping[str, Any] | None
    size_on_disk: int | None
    decoded_bytes: int
    frames: int | None  # zstd frames (``None`` for other containers)
    torn_tail: int  # bytes of a torn last line or frame, ignored
    sessions: tuple[str, ...]  # the sessions of a multi-session input
    summary: Summary
    notes: tuple[Problem, ...] = ()
    suppressed: Mapping[str, int] = field(default_factory=dict)
    torn: Torn | None = field(default=None, repr=False, compare=False)  # the torn tail itself, for its description

    @classmethod
    def of(cls, log: Any, summary: Summary) -> SessionInfo:
        """The info of an opened log whose stored events ``summary`` summarises."""
        info = log.info
        return cls(
            path=log.path,
            container=info.container,
            version=log.version,
            projection=log.projection,
            header=log.header,
            size_on_disk=info.size_on_disk,
            decoded_bytes=info.decoded_bytes,
            frames=info.frames if info.container == "jsonl.zstd" else None,
            torn_tail=info.torn.length if info.torn else 0,
            sessions=tuple(info.wrapped_sessions),
            summary=summary,
            notes=tuple(log.notes),
            suppressed=log.notes.suppressed(),
            torn=info.torn,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "shape": SHAPE,
            "path": self.path,
            "container": self.container,
            "version": self.version,
            "projection": self.projection,
            "header": None if self.header is None else dict(self.header),
            "sizeOnDisk": self.size_on_disk,
            "decodedBytes": self.decoded_bytes,
            "frames": self.frames,
            "tornTail": self.torn_tail,
            "sessions": list(self.sessions) or None,
            "summary": self.summary.as_dict(),
            "notes": _note_dicts(self.notes),
        }


@dataclass(frozen=True, slots=True)
class SessionStats:
    """One session's counters (:func:`dshlog.model.stats.session_stats`), as ``stats`` lists it."""

    path: str
    id: str | None
    version: int
    projection: bool
    counters: Mapping[str, Any]  # turns, steps, modelCalls, retries, toolCalls, tokens, durationMs, ...

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "id": self.id, "version": self.version, "projection": self.projection, **self.counters}


@dataclass(frozen=True, slots=True)
class Stats:
    """``dshlog stats``: per session and in total."""

    sessions: tuple[SessionStats, ...]
    total: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "sessions": [s.as_dict() for s in self.sessions], "total": dict(self.total)}


# ----------------------------------------------------------------------------- validate


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Every problem of one input, and its verdict (a wrapper of :class:`~dshlog.ops.validate.Report`)."""

    path: str
    version: int | None
    events: int
    projection: bool
    problems: tuple[Problem, ...]
    more_problems: int  # problems past the per-file limit, counted only
    exit_code: ExitCode
    _report: Report = field(repr=False, compare=False)

    @classmethod
    def of(cls, report: Report) -> ValidationReport:
        return cls(report.path, report.version, report.events, report.projection, tuple(report.problems),
                   report.dropped, report.exit_code, report)

    @property
    def status(self) -> str:
        """``ok``, ``unsupported`` or ``damaged``."""
        return str(self._report.as_dict()["status"])

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == Severity.ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == Severity.WARNING)

    def as_dict(self) -> dict[str, Any]:
        """One element of the ``files`` list ``validate --json`` prints."""
        return self._report.as_dict()


@dataclass(frozen=True, slots=True)
class Validation:
    """``dshlog validate``: one report per input; the exit code is the worst of them."""

    files: tuple[ValidationReport, ...]

    @property
    def exit_code(self) -> ExitCode:
        return max((f.exit_code for f in self.files), default=ExitCode.OK)

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "files": [f.as_dict() for f in self.files]}


# ----------------------------------------------------------------------------- model view


@dataclass(frozen=True, slots=True)
class SurfaceView:
    """``dshlog surface``: the surface nodes after the fold, the derived roles, the replacements."""

    nodes: tuple[Mapping[str, Any], ...]  # seq, type, role, empty, ... and the message
    messages: tuple[Mapping[str, Any], ...]  # the derived model messages, in surface order
    replacements: tuple[Mapping[str, Any], ...]
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    @property
    def roles(self) -> list[Any]:
        return [m.get("role") for m in self.messages]

    def as_dict(self, *, messages: bool = False) -> dict[str, Any]:
        """``surface --json`` (``messages=True``: ``--messages`` too)."""
        nodes = [{**{k: v for k, v in n.items() if k != "message"}, "preview": preview(n["message"])} for n in self.nodes]
        doc: dict[str, Any] = {"shape": SHAPE, "nodes": nodes, "roles": self.roles, "replacements": list(self.replacements)}
        if messages:
            doc["messages"] = list(self.messages)
        return doc


@dataclass(frozen=True, slots=True)
class RebuiltRequest:
    """``dshlog rebuild``: request ``number`` exactly as dsh sent it (dsh's own JSON, not a versioned shape)."""

    number: int
    request: Mapping[str, Any]
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> list[Any]:
        return list(self.request["messages"])

    def as_dict(self) -> dict[str, Any]:
        return dict(self.request)

    def to_json(self, *, pretty: bool = True, messages_only: bool = False) -> bytes:
        """The bytes ``rebuild`` prints (without the final newline): ``JSON.stringify`` exactly."""
        value: Any = self.messages if messages_only else self.as_dict()
        return dumps_pretty(value) if pretty else dumps(value)


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request of the series: its settlement, size, prefix reuse and why it broke, tokens."""

    number: int
    settlement_seq: int
    settlement: str  # assistant/message or assistant/attempt
    turn: Any
    step: Any
    messages: int
    extends: bool | None  # None for the first request
    reason: str | None  # why it does not extend its predecessor
    changes: tuple[str, ...]  # everything that changed since the previous request
    header_seq: int | None
    interrupted: bool
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None

    @classmethod
    def of(cls, r: RequestInfo) -> RequestRow:
        return cls(r.number, r.seq, r.kind, r.turn, r.step, r.message_count, r.extends, r.reason, tuple(r.changes),
                   r.header_seq, r.interrupted, r.input_tokens, r.output_tokens, r.cache_read_tokens)

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "settlementSeq": self.settlement_seq,
            "settlement": self.settlement,
            "turn": self.turn,
            "step": self.step,
            "messages": self.messages,
            "extends": self.extends,
            "reason": self.reason,
            "changes": list(self.changes),
            "headerSeq": self.header_seq,
            "interrupted": self.interrupted,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
        }


@dataclass(frozen=True, slots=True)
class RequestSeries:
    """``dshlog requests``: every request of a log; ``series[n]`` is request ``n`` (1-based)."""

    requests: tuple[RequestRow, ...]
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.requests)

    def __getitem__(self, number: int) -> RequestRow:
        """Request ``number`` (1-based, as every command counts them)."""
        if not 1 <= number <= len(self.requests):
            raise IndexError(f"request {number} does not exist: the log holds {len(self.requests)}")
        return self.requests[number - 1]

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "requests": [r.as_dict() for r in self.requests]}


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
