"""``dshlog repair`` on a file: plan (read-only), a repaired copy, or the repair in place.

The closers are :mod:`dshlog.model.repair`'s (pure); this module reads the log,
applies them and publishes the result through the one publication transaction
(:class:`~dshlog.write.transaction.Publication`):

* ``repair -o OUT``: a new v4 log at ``OUT`` (never over an existing file), with
  the source's owner, group and mode; the lock of ``OUT``'s directory is held
  when that directory is a session directory.
* ``repair --write``: the log itself, under its ``session.lock``: the torn final
  line (or torn zstd frame) is cut and its bytes kept in a sidecar, the repaired
  log is staged in full, verified and renamed over the original, which keeps
  its owner, group and mode.

Either output passes dsh's v4 rules and needs no further closers before it gets
its final name; otherwise nothing is published.
"""

from __future__ import annotations

import os
from typing import Any

from dataclasses import dataclass
from pathlib import Path

from ..errors import DshlogError, ExitCode, Refused, UsageError, boundary
from ..model.repair import PendingCall, RepairPlan, TailState
from ..output.jsondoc import SHAPE
from ..protocol.jsjson import dumps
from ..read.container import Container, SourceInfo, resolve_path, torn_description
from ..read.session import open_log
from ..protocol.layout import generation_name
from ..protocol.vocabulary import CURRENT_VERSION
from ..write.target import means_directory, output_path
from ..write.transaction import FileOwner, Publication, output_lock
from ..write.verify import ReadBack
from ..write.writer import LogWriter, frame
from ..read.source import Source, Target


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


class _Balanced:
    """The repaired log's own condition, checked along the read-back: no turn is left open."""

    def __init__(self, subject: str, path: str) -> None:
        self._state = TailState()
        self._subject = subject
        self._path = path

    def feed(self, event: dict[str, Any]) -> None:
        self._state.feed(event)

    def finish(self) -> None:
        if self._state.closers("interrupted"):
            raise Refused(f"{self._subject} does not verify: its last turn is still open", path=self._path)


@boundary
def plan_repair(target: Source | Target) -> RepairOutcome:
    """``dshlog repair``: what is open at the tail and the closers dsh appends on resume; writes nothing.

    The log (any version) is migrated in memory and its interrupted-turn closers computed.

    ``target``: a path, or a :class:`~dshlog.read.source.Source`.  Its ``parallel``, here and in
    the writers below: the caller allows forked helpers (:mod:`dshlog.forked`); by default
    everything runs in process.  Its ``stream``: the open stream ``-`` names (a pipe is read
    once, so only the plan and a copy take one).
    """
    with open_log(target) as log:
        state = TailState()
        n = 0
        comp: int | None = None
        for ev in log.v4():
            state.feed(ev)
            t = ev.get("type")
            if t == "compaction/start":
                comp = ev.get("seq")
            elif t in ("compaction/end", "session/end-seed"):
                comp = None
            n += 1
        return RepairOutcome(RepairPlan(log.path, log.version, log.info.container, state.report(), state.closers("interrupted"),
                                        event_count=n, open_compaction=comp, **_torn(log.info)))


def _torn(info: SourceInfo) -> dict[str, Any]:
    """The torn tail as a write cuts it: the bytes of a torn last line, or every byte on disk of a torn
    zstd frame (however little of it decodes); a dry run reports the same figures."""
    t = info.torn
    if t is None:
        return {"torn_bytes": 0}
    cut = t.length
    if t.frame_offset is not None and info.size_on_disk is not None:
        cut = info.size_on_disk - t.frame_offset
    return {"torn_bytes": cut, "torn_frame": t.frame, "torn_note": torn_description(t, info.size_on_disk)}


def _regular_source(target: str) -> Path | None:
    """The file a target names when it is a regular file (its identity can be checked); else None."""
    if target == "-":
        return None
    try:
        path = resolve_path(target)
    except DshlogError:  # open_log reports a bad target with its own message
        return None
    return path if path.is_file() else None


@boundary
def repair_copy(target: Source | Target, out: Target) -> RepairOutcome:
    """``dshlog repair -o OUT``: ``prefix + closers`` as a new v4 log at ``out`` (never overwriting); the input is untouched.

    ``out`` follows the one ``-o`` rule (:func:`dshlog.write.target.output_path`): into a
    directory, the copy is named as the v4 generation in the input's container.
    """
    # a trailing slash names a directory to create the copy in: the name is passed on as given, not as a Path
    how = Source.of(target)
    out = os.fspath(out)
    source = _regular_source(how.name)
    if means_directory(out):
        compressed = source is not None and source.name.endswith(".zstd")
        out = output_path(out, generation_name(CURRENT_VERSION, compressed), owner=FileOwner.of(source) if source else None, what="repair")
    else:
        out = output_path(out, "", owner=None, what="repair")
    compressed = out.name.endswith(".zstd")
    pub = Publication(
        out,
        lock=output_lock(out),
        source=source,
        owner="source" if source is not None else None,
        changed="the log changed while the repaired copy was written; nothing was published",
    )
    with pub:
        staged = pub.stage()
        with open_log(how) as log:
            header = log.v4().header
            size_hint = pub.before.size if pub.before is not None else 0
            subject = "repaired copy"
            with ReadBack(staged.path, header, compressed=compressed, snapshot=log.snapshot, subject=subject,
                          size_hint=size_hint, extra=lambda: _Balanced(subject, str(out)), parallel=how.parallel) as check:
                w = LogWriter(staged, compressed=compressed, tee=check.tee)
                if header is not None:
                    w.header(log.header_raw if log.version == CURRENT_VERSION and log.header_raw is not None else header)
                state = TailState()
                n = 0
                for ev, raw in log.v4().records():
                    state.feed(ev)
                    w.event(ev, raw)
                    n += 1
                closers = state.closers("interrupted")
                for c in closers:
                    w.event(c)
                size, digest = w.close()
                pub.publish(lambda path: check.verify(path, events=w.events, plain=(size, digest)))
            plan = RepairPlan(log.path, log.version, log.info.container, state.report(), closers, event_count=n, **_torn(log.info))
    return RepairOutcome(plan, written=str(out), publish_warnings=tuple(pub.warnings))


@boundary
def repair_in_place(target: Source | Target) -> RepairOutcome:
    """``dshlog repair --write``: close an interrupted tail in the log file itself, under ``session.lock``.

    The torn final line (or torn zstd frame) is cut first and its bytes are kept in
    a sidecar file next to the log; the repaired log is staged in full, verified by
    reading it back, and swapped in atomically, so a crash at any point leaves
    either the untouched log or the fully repaired one.
    """
    parallel = Source.of(target).parallel
    target = Source.of(target).name
    if target == "-":
        raise UsageError("repair --write needs a file, not standard input (use -o OUT)")
    if not resolve_path(target).is_file():  # a pipe would be drained by the probe below
        raise UsageError("repair --write needs a regular file, not a pipe or device (use -o OUT)", path=target)
    with open_log(target) as probe:  # the header only
        path = Path(probe.path)
        version, container = probe.version, probe.info.container
        sid = probe.session_id
        projection = probe.projection
    if version != CURRENT_VERSION:
        raise UsageError(f"repair --write rewrites only v{CURRENT_VERSION} logs; this log is v{version}: run `dshlog migrate` first, or use -o OUT for a repaired v{CURRENT_VERSION} copy", path=str(path))
    if container not in (Container.JSONL, Container.ZSTD):
        raise UsageError(f"repair --write needs a session generation file, not a {container} input (use -o OUT)", path=str(path))
    pub = Publication(
        path,
        replace=True,
        lock=path.parent,
        session_id=sid,
        source=path,
        owner="source",
        changed="the log changed while it was being repaired; nothing was written",
    )
    with pub:
        before = pub.before
        assert before is not None
        with open_log(Source(str(path), parallel=parallel)) as log:
            state = TailState()
            n = 0
            # dsh's read: rows after a damaged one that no later turn/end commits are not part of
            # the log, and dsh's write open cuts them before it appends (kept in the sidecar here)
            for ev, _raw in log.v4().records():
                state.feed(ev)
                n += 1
            torn = log.info.torn
            issue = log.decoder.issue
            dropped = log.decoder.issue_loc if issue is not None else None
            if issue is not None and dropped is not None and container != Container.JSONL:
                raise Refused(f"rows after the accepted prefix are damaged ({issue.message}); "
                              "repair --write cuts them only from plain logs (use -o OUT)", path=str(path))
            header, snapshot = log.header, log.snapshot
            closers = state.closers("interrupted")
            plan = RepairPlan(str(path), version, container, state.report(), closers, event_count=n, **_torn(log.info))
        if not closers:
            return RepairOutcome(plan, publish_warnings=tuple(pub.warnings))
        if projection:  # its rows carry no seq/time and the closers would: refuse before staging anything
            raise UsageError("repair --write does not append to a test-snapshot projection (rows without seq/time); "
                             "use -o OUT for a repaired copy", path=str(path))
        # where the committed bytes end (file offset)
        size = before.size
        if dropped is not None and dropped.offset is not None:
            cut = dropped.offset
        elif torn is None:
            cut = size
        elif container == Container.JSONL:
            cut = torn.offset
        else:
            cut = torn.frame_offset if torn.frame_offset is not None else size
        side: Path | None = None
        torn_raw = b""
        torn_frame_lines: list[bytes] = []
        if cut < size:
            with open(path, "rb") as fh:
                fh.seek(cut)
                torn_raw = fh.read()
            side = path.with_name(f"{path.name}.torn-{before.mtime_ns // 1_000_000}")
            if container == Container.ZSTD and torn is not None:
                # complete lines recovered from the torn frame go into the new frame, as dsh does
                with open_log(Source(str(path), parallel=parallel)) as log2:
                    torn_frame_lines = [r.raw + b"\n" for r in log2.stored() if r.loc.frame == torn.frame and r.raw is not None]
        staged = pub.stage()
        with open(path, "rb") as fh:
            remaining = cut
            while remaining:
                chunk = fh.read(min(remaining, 1 << 20))
                if not chunk:
                    break
                staged.write(chunk)
                remaining -= len(chunk)
        batch = b"".join(torn_frame_lines) + b"".join(dumps(c) + b"\n" for c in closers)
        staged.write(frame(batch) if container == Container.ZSTD else batch)
        subject = "repaired log"
        check = ReadBack(staged.path, header, compressed=container == Container.ZSTD, snapshot=snapshot,
                         subject=subject, extra=lambda: _Balanced(subject, str(path)), stream=False, parallel=parallel)
        # the torn bytes are kept only once the repaired log is ready (a failed staging leaves nothing)
        pub.publish(lambda p: check.verify(p, events=n + len(closers), plain=None),
                    companions=[(side, torn_raw)] if side is not None else [])
    return RepairOutcome(plan, written=str(path), sidecar=str(side) if side is not None else None, in_place=True,
                         publish_warnings=tuple(pub.warnings))


__all__ = ["RepairOutcome", "plan_repair", "repair_copy", "repair_in_place"]
