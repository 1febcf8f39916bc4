"""Open a session log: the one entry point every command uses (:func:`open_log`).

``open_log(target)`` accepts a generation file, a session directory, a JSON array or
wrapped event stream, or ``-`` for standard input.  A log has three concerns, each in
its own module: its input (:class:`~dshlog.read.input.LogInput`: the container, the
header line, the rows), dsh's decision on its header (:mod:`dshlog.read.header`,
eager and cheap: a command that needs only the header never reads the rest), and the
views here.  A :class:`SessionLog` is the input with its views; its body can be read
once, through one of them:

* :meth:`SessionLog.stored` - the events of the *stored* version, each with its
  original line bytes (when the line is exactly the event) and its location, for
  byte-faithful pass-through and precise error messages (:meth:`~SessionLog.stored_lines`,
  :meth:`~SessionLog.counted` and :meth:`~SessionLog.stored_runs` are the same rows for
  readers that need less of each: :mod:`dshlog.read.lazy`);
* :meth:`SessionLog.v4` - dsh's view (:class:`~dshlog.read.view.V4View`): v4 events,
  migrated in memory (read-only, nothing written) when the stored version is older,
  with dsh's restore over them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from ..fastpaths import fast
from ..errors import BeyondLimit, CorruptLog, DshlogError, Location, UnsupportedVersion, guarded
from ..check.problems import Problem, Severity
from ..check.surface import SurfaceShare
from .lazy import LazyRecord, RowGate
from .source import Source, Target
from .view import V4View
from ..protocol.layout import persistence_root
from ..protocol.texts import newer_version
from ..protocol.values import is_placeholder, placeholder_bytes_search
from ..protocol.vocabulary import CURRENT_VERSION, SUMMARY_DATA_TYPES
from ..model.summary import DATA_VIEWS
from .children import discover_child_facts
from .container import Container, Position
from .input import LAZY_ROW, LogInput


@dataclass(slots=True)
class EventRecord:
    """A stored-version event with where it came from.

    ``raw`` is the exact line (no newline) when that line encodes exactly this one
    event as read (plain and zstd JSONL); ``None`` for expanded packed rows,
    restored projections and events parsed out of other containers.
    """

    event: dict[str, Any]
    raw: bytes | None
    loc: Location


class SessionLog(LogInput):
    """An opened session log (header read, body not yet) and its views."""

    def stored(self) -> Iterator[EventRecord]:
        """The stored view: events of the stored version, each with its bytes and location.

        ``raw`` is the exact line when it encodes exactly this event (plain and zstd
        JSONL); packed rows are expanded into their ``assistant/chunk`` events.
        """
        records = self._stored()
        return guarded(records) if self.guard else records

    def stored_lines(self) -> Iterator[EventRecord | LazyRecord]:
        """The stored view for a consumer of lines: what :meth:`stored` gives, but a row the
        lazy reader admits (:mod:`dshlog.read.lazy`) is a :class:`LazyRecord`, parsed only
        when its ``event`` is asked for (``events --json`` prints the bytes, ``tail``
        parses the last few).  Notes, errors and their order are the exact reader's.
        """
        records = self._stored(self._gate())
        return guarded(records) if self.guard else records

    def counted(self) -> Iterator[Any]:
        """The events the counters of ``info`` and ``stats`` read (``model.summary.summarize``).

        :meth:`stored_runs`, except that a row the lazy reader admits comes as a dict of its
        ``type``, ``seq`` and ``time``, with ``data`` only for the types the counters read
        (``SUMMARY_DATA_TYPES``): through their view (``model.summary.DATA_VIEWS``), or,
        for the types without one (``request/header``, ``assistant/attempt``), read whole
        by the exact reader.
        """
        gate = self._gate(exact=SUMMARY_DATA_TYPES - DATA_VIEWS.keys(), views=DATA_VIEWS)
        if gate is None:
            return self.stored_runs()
        events = self._stored_runs(gate)
        return guarded(events) if self.guard else events

    def _gate(self, **kw: Any) -> RowGate | None:
        """The lazy reader for this body, where it applies: a v4 JSONL body (plain or zstd)
        after a header, read leniently (dsh's recovering read stays the exact reader's), in the
        fast mode (:mod:`dshlog.fastpaths`)."""
        if not fast() or self.version != CURRENT_VERSION or self.header is None or self.strict \
                or self.info.container not in (Container.JSONL, Container.ZSTD):
            return None
        return RowGate(self.decoder, **kw)

    def _stored(self, gate: RowGate | None = None) -> Iterator[Any]:
        for events, obj, raw, loc in self._rows(runs=False, gate=gate):
            if obj is LAZY_ROW:
                yield LazyRecord(raw or b"", loc)
            elif raw is not None and len(events) == 1 and events[0] is obj:
                # the line is exactly this event (range-expanded sourceEventSeqs keep the physical form)
                yield EventRecord(obj, raw, loc)
            else:
                for ev in events:
                    yield EventRecord(ev, None, loc)

    def stored_runs(self) -> Iterator[Any]:
        """The stored view with each v0/v1 packed row kept whole as one :class:`PackedRun`.

        For consumers that can take a run whole (the migration chain, the counters):
        a v0 log then costs one object per packed row, not three dicts per delta.
        """
        events = self._stored_runs()
        return guarded(events) if self.guard else events

    def _stored_runs(self, gate: RowGate | None = None) -> Iterator[Any]:
        """Every row's events (``gate``: a row the lazy reader admits is its head, as :meth:`counted` says)."""
        for events, _obj, _raw, _loc in self._rows(runs=self.version <= 1, gate=gate):
            yield from events

    def v4(self, *, child_facts: list[dict[str, Any]] | None = None, runs: bool = True, allow_unknown: bool = False,
           restore: bool = True, share: SurfaceShare | None = None,
           told: Callable[[Problem], None] | None = None) -> V4View:
        """The v4 view: what dsh holds after opening the log (older logs migrated in memory).

        Nothing is read until the view is iterated; its :attr:`V4View.header` needs
        only the header.  ``child_facts`` are the facts the v3->v4 catalog completion
        needs (default: discovered in the persistence root around the file).
        ``runs=False`` feeds the chain every packed row expanded, the straightforward
        path the compact one (each row one :class:`PackedRun`, as dsh passes it) must
        equal; it exists for the tests that prove that.  ``allow_unknown``: the
        restore lets unknown event types without ``ignorable`` pass (``--allow-unknown``;
        dsh refuses them).  ``restore=False`` reads a strict log's rows as dsh does but
        leaves out the restore: only for a second reading of a log whose whole view this
        process has already taken, where dsh's decision is known (``surface --messages``
        reading its messages again).  ``share``: what the restore's fold keeps for a
        caller that takes the whole log's surface afterwards (:attr:`V4View.surface`,
        :class:`~dshlog.check.surface.SurfaceShare`).
        ``told``: given every problem the restore finds (warnings too), in order, for a
        caller that lists them rather than reading the events through the rules again.
        """
        if self.version > CURRENT_VERSION:
            raise UnsupportedVersion(newer_version(self.session_id, self.version, CURRENT_VERSION), path=self.path, loc=self.header_loc)
        return V4View(self, child_facts, runs, allow_unknown=allow_unknown, restore=restore, share=share,
                      told=told)

    @property
    def session_id(self) -> str | None:
        sid = self.header.get("id") if self.header is not None else None
        if isinstance(sid, str):
            return sid
        if self.info.wrapped_sessions:
            return self.info.wrapped_sessions[0]
        return None

    def _migration_header(self) -> dict[str, Any]:
        """The stored header as the migration chain receives it (completed for snapshot fixtures)."""
        if self._mig_header is None and self.strict and self.decision is not None:
            self._mig_header = self.header  # admitted as it is: dsh completes nothing
        if self._mig_header is None:
            snapshot = self.snapshot  # peeks at the first row: a wrapped stream then knows its session id
            header = self.header if self.header is not None else self._synthetic_header()
            self._mig_header = self._complete_snapshot_header(header) if snapshot else header
        return self._mig_header

    @property
    def snapshot(self) -> bool:
        """A dsh test snapshot: rows without seq/time, or ``{{...}}`` placeholders standing in for values.

        Such files are normalised copies of real logs; rules that only their
        normalisation breaks are reported as warnings, never as corruption.
        """
        if self._snapshot is None:
            sample = (self.header_raw or b"") + (self._sample(1 << 20) if self.info.container != Container.BEHAVIOR_JSON else b"")
            self._snapshot = self.projection or placeholder_bytes_search(sample) or (
                self.header is not None and any(is_placeholder(v) for v in self.header.values())
            )
        return self._snapshot

    def _complete_snapshot_header(self, header: dict[str, Any]) -> dict[str, Any]:
        """Fill header keys a snapshot fixture left out, so its body can still be migrated (with notes)."""
        missing: dict[str, Any] = {}
        if "version" not in header:
            missing["version"] = self.version
        if "delegationDepth" not in header:
            missing["delegationDepth"] = 0
        if self.version >= 2 and "isSeeded" not in header:
            missing["isSeeded"] = False
        if not missing:
            return header
        self.notes.add(
            Problem("snapshot-header", f"snapshot header lacks {', '.join(missing)}; assuming {', '.join(f'{k}={v}' for k, v in missing.items())}", Severity.WARNING, loc=self.header_loc)
        )
        out = {"type": header.get("type", "session")}
        if "version" in missing:
            out["version"] = missing.pop("version")
        out.update((k, v) for k, v in header.items() if k != "type")
        out.update(missing)
        return out

    def _synthetic_header(self) -> dict[str, Any]:
        sid = self.session_id or "unknown"
        h: dict[str, Any] = {"type": "session", "version": self.version, "id": sid, "createdAt": 0}
        if self.version >= 2:
            h["isSeeded"] = False
        h["delegationDepth"] = 0
        return h

    def _discover_children(self) -> list[dict[str, Any]]:
        """Child facts for v3->v4 catalog completion (FORMAT.md 4.5.7), or [] with a note."""
        if self.version >= CURRENT_VERSION:
            return []
        root = persistence_root(self.path)
        if root is not None:
            return discover_child_facts(root, self.session_id or "", open_header=child_log_header, open_events=child_log_events)
        self.notes.add(Problem("children", "no persistence root around this file: assuming the session has no child sessions", Severity.INFO))
        return []

    def sibling(self, path: str) -> SessionLog:
        """Another file opened leniently by this reader, with this log's parallelism and progress (a proven successor)."""
        return SessionLog(self.source.at(path), strict=False, progress=self.progress)

def child_log_header(path: Path) -> dict[str, Any] | None:
    """A child session's header, or ``None`` when it cannot be read (what :func:`~dshlog.read.children.discover_child_facts` asks)."""
    try:
        with SessionLog(Source(str(path)), strict=False) as s:
            return s.header
    except DshlogError:
        return None


class _ChildView:
    """A child session's v4 events (read once, the file closed at the end).

    After iteration ``inherited_cut`` is what the migration chain reported for a
    historical child (``None`` for a v4 child): the events are migrated once, here.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inherited_cut: int | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with SessionLog(Source(str(self.path)), strict=False) as s:
            events = s.v4(child_facts=[])
            yield from events
            self.inherited_cut = getattr(events, "inherited_cut", None)


def child_log_events(path: Path) -> _ChildView:
    """A child session's v4 events, read when iterated (what :func:`~dshlog.read.children.discover_child_facts` asks)."""
    return _ChildView(path)


def open_log(source: Source | Target, *, strict: bool = True, guard: bool = False, progress: Position | None = None,
             cache: str | None = None) -> SessionLog:
    """Open a session log: a :class:`~dshlog.read.source.Source`, or a path read with the defaults
    (see :class:`SessionLog` for the keywords)."""
    return SessionLog(Source.of(source), strict=strict, guard=guard, progress=progress, cache=cache)


def is_dsh_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is dsh refusing a log (its header, a migration, the v4 restore, a damaged committed row).

    A limit of dshlog's own (:class:`~dshlog.errors.BeyondLimit`), I/O and usage
    errors are not: a reader for people shows a log dsh refuses, never one it
    could not read.
    """
    return isinstance(exc, (CorruptLog, UnsupportedVersion)) and not isinstance(exc, BeyondLimit)


def dsh_refusal(open_strict: Callable[[], SessionLog]) -> DshlogError | None:
    """dsh's decision on a whole log: ``None`` when dsh opens it, else its refusal.

    ``open_strict`` opens the log as dsh does (``strict=True``: its header is
    decided there).  One pass that keeps nothing (the rows read as dsh's
    recovering read reads them, the migration and the v4 restore of
    :class:`V4View`), so a reader for people knows dsh's decision before it shows
    its first line.  The refusal is dsh's text, located; any other error is raised.
    """
    try:
        with open_strict() as log:
            log.v4().finish()
    except DshlogError as exc:
        if is_dsh_refusal(exc):
            return exc
        raise
    return None
