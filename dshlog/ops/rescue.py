"""Rescue: bring back a session dsh refuses to open, as a v4 successor dsh accepts.

The operation reads the source leniently (the stored header and events, even
when dsh refuses the header), asks dsh's own view which refusal it meets
(:func:`judge`: the strict reader over the candidate's bytes, in memory, with
no child sessions, as ``migrate --no-children``), and lets
:func:`dshlog.model.rescue.plan` work out the transformations that resolve each
refusal.  A dry run reports the plan; publishing writes the v4 successor through
the one publication transaction (lock, staging, read-back verification, link
without overwrite) and, just before the successor's name appears, its rescue
record (``<successor>.rescue.json``: the source's path, size and sha256 and
every change).  The source is only ever opened for reading.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DshlogError, ExitCode, UnsupportedVersion, UsageError
from ..model.rescue import BY_NAME, Plan, Refusal, Stored, message_texts, plan
from ..protocol.jsjson import dumps, dumps_pretty
from ..protocol.layout import rescue_record_name
from ..read.container import Container
from ..read.session import SessionLog, open_session
from ..read.store import Unreadable, walk_sessions
from ..write.transaction import Publication, output_lock
from ..write.verify import ReadBack
from ..write.writer import LogWriter
from .migrate import target_name

__all__ = ["RescueOutcome", "StoreSummary", "judge", "read_stored", "rescue_session", "rescue_store", "serialize"]

#: The name the candidate logs are judged under (not a generation name: no name rule applies).
CANDIDATE: str = "<rescue candidate>"
#: Record format, so that an audit can tell a rescued session from a migrated one.
RECORD_KIND: str = "dshlog-rescue"
RECORD_VERSION: int = 1


def serialize(s: Stored) -> bytes:
    """The stored log as a plain JSONL generation of its version (a projection without seq/time).

    Rows go straight into one buffer: each encoded row is a bytes object that
    occupies a few KiB whatever its length, so a list of a million short rows
    (a log of tiny or garbage rows) would cost gigabytes before the join.
    """
    out = bytearray(dumps(s.header))
    out += b"\n"
    for ev in s.events:
        out += dumps({k: v for k, v in ev.items() if k not in ("seq", "time")} if s.projection else ev)
        out += b"\n"
    return bytes(out)


def _open_candidate(data: bytes) -> SessionLog:
    return open_session(CANDIDATE, stream=io.BufferedReader(io.BytesIO(data)))


def judge(s: Stored) -> Refusal | None:
    """dsh's decision on ``s``: its strict open, migration and v4 restore (``None``: accepted)."""
    try:
        with _open_candidate(serialize(s)) as log, log.v4(child_facts=[]) as view:
            for _ in view:
                pass
    except DshlogError as exc:
        return Refusal(exc.kind, exc.message, exc.seq, int(exc.exit_code))
    return None


def read_stored(source: Path, *, parallel: bool = False) -> tuple[Stored, bytes]:
    """The source's stored header and events (read leniently) and its exact bytes."""
    data = source.read_bytes()
    with open_session(str(source), strict=False, parallel=parallel) as log:
        if log.info.container not in (Container.JSONL, Container.ZSTD) or log.header is None:
            raise UsageError(f"only session generation files can be rescued (this is a {log.info.container} input)", path=log.path)
        proof = "; ".join(p.message for p in log.notes
                          if p.code == "prerelease" or (p.code == "header" and "lacks version" in p.message))
        events = tuple(r.event for r in log.stored())
        stored = Stored(dict(log.header), events, log.version, projection=log.projection, version_proof=proof)
    return stored, data


@dataclass
class RescueOutcome:
    """The result for one session (``status``: accepted | rescuable | needs-allow | cannot | rescued | failed)."""

    source: str
    status: str
    plan: Plan | None = None
    target: str | None = None
    record: str | None = None
    events: int | None = None
    bytes: int | None = None
    texts_kept: int | None = None
    error: str | None = None
    exit_code: int = ExitCode.OK
    notes: list[str] = field(default_factory=list)

    @property
    def why_not(self) -> str | None:
        """Exactly why rescue cannot bring the session back (``None`` when it can)."""
        p = self.plan
        if self.status == "cannot" and p is not None and p.remaining is not None:
            kind = "no transformation resolves" if not p.steps else f"after {', '.join(st.transformation for st in p.steps)}, no transformation resolves"
            return f"{kind} dsh's refusal: {p.remaining.describe()}"
        if self.status == "needs-allow" and p is not None:
            return "transformations not allowed: " + ", ".join(p.needs) + " (--allow NAME or --all)"
        return self.error

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "status": self.status}
        p = self.plan
        if p is not None:
            d["version"] = p.source.version
            d["refusal"] = p.first.as_dict() if p.first is not None else None
            d["steps"] = [{"refusal": st.refusal.as_dict(), "transformation": st.transformation, "allowed": st.allowed,
                           "changes": [c.as_dict() for c in st.changes]} for st in p.steps]
            d["remaining"] = p.remaining.as_dict() if p.remaining is not None else None
        for key in ("target", "record", "events", "bytes", "texts_kept"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        if self.why_not is not None:
            d["why"] = self.why_not
        if self.notes:
            d["notes"] = self.notes
        return d


def _allowed(allow: Iterable[str], all_: bool) -> set[str]:
    names = set(BY_NAME) if all_ else set(allow)
    unknown = sorted(names - set(BY_NAME))
    if unknown:
        raise UsageError(f"unknown transformation {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
    return names


def rescue_session(source: Path, *, allow: Iterable[str] = (), all_: bool = False, publish: bool = False,
                   output: Path | None = None, parallel: bool = False) -> RescueOutcome:
    """Plan (and with ``publish`` or ``output``, carry out) the rescue of one session generation.

    Never raises for the session's own problems: they are the outcome's status,
    ``why`` and exit code.  A usage error (an unknown transformation) is raised.
    ``parallel``: the caller allows forked helpers (the decode of a large zstd
    source, the read-back of a large successor); by default everything runs in process.
    """
    allowed = _allowed(allow, all_)
    out = RescueOutcome(source=str(source), status="failed")
    try:
        stored, data = read_stored(source, parallel=parallel)
        p = plan(stored, judge, allowed)
        out.plan = p
        if not p.refused:
            out.status = "accepted"
            out.notes.append("dsh opens this session as it is: nothing to rescue")
            return out
        if not p.rescuable:
            out.status = "cannot"
            out.exit_code = p.remaining.exit_code if p.remaining is not None else ExitCode.CORRUPT
            return out
        if p.needs:
            out.status = "needs-allow"
            out.exit_code = ExitCode.CONFLICT if (publish or output is not None) else ExitCode.OK
            return out
        if not publish and output is None:
            out.status = "rescuable"
            return out
        target = output if output is not None else source.parent / target_name(source)
        _publish(source, data, p, target, out, parallel=parallel)
        out.status = "rescued"
    except DshlogError as exc:
        out.status = "failed"
        out.error = exc.one_line()
        out.exit_code = exc.exit_code
    return out


def _record(source: Path, data: bytes, p: Plan, target: Path, events: int, size: int, digest: str) -> bytes:
    doc = {
        "kind": RECORD_KIND,
        "version": RECORD_VERSION,
        "source": {"path": str(source.resolve()), "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                   "storedVersion": p.source.version},
        "refusal": p.first.as_dict() if p.first is not None else None,
        "transformations": [st.transformation for st in p.steps],
        "changes": [c.as_dict() for st in p.steps for c in st.changes],
        "successor": {"name": target.name, "events": events, "bytes": size, "sha256": digest},
    }
    return dumps_pretty(doc) + b"\n"


def _publish(source: Path, data: bytes, p: Plan, target: Path, out: RescueOutcome, *, parallel: bool = False) -> None:
    """Write the successor through the publication transaction; the record appears just before it."""
    assert p.result is not None
    beside = target.parent.resolve() == source.parent.resolve()  # a successor in the session's own directory
    pub = Publication(
        target,
        lock=source.parent if beside else output_lock(target),
        session_id=p.source.header.get("id") if isinstance(p.source.header.get("id"), str) else None,
        source=source,
        changed=f'the source changed during the rescue: "{source}"',
        owner="source",
        migration=beside,
        successor=beside,
        taken=f'a file already exists at "{target}"; rescue never overwrites',
    )
    record_path = target.with_name(rescue_record_name(target.name))
    candidate = serialize(p.result)
    with pub:
        out.notes.extend(pub.notes)
        staged = pub.stage()
        with _open_candidate(candidate) as log:
            view = log.v4(child_facts=[])
            header = view.header
            with ReadBack(staged.path, header, compressed=False, snapshot=log.snapshot, size_hint=len(candidate),
                          parallel=parallel) as check:
                w = LogWriter(staged, compressed=False, projection=log.projection, tee=check.tee)
                w.header(header if header is not None else {})
                kept: list[dict[str, Any]] = []
                for ev in view:
                    w.event(ev)
                    kept.append(ev)
                size, digest = w.close()
                out.texts_kept = _texts_kept(p.source, kept)
                record = _record(source, data, p, target, w.events, size, digest)

                def keep_record() -> None:
                    # the record exists only once the successor is ready; a killed earlier run left the same bytes
                    if record_path.exists() and record_path.read_bytes() == record:
                        return
                    with Publication(record_path, owner=pub.owner, cleanup=False,
                                     taken=f'a file already exists at "{record_path}"; rescue never overwrites') as companion:
                        companion.stage().write(record)
                        companion.publish()
                    pub.warnings.extend(companion.warnings)

                pub.publish(lambda path: check.verify(path, events=w.events, plain=(size, digest)), before_publish=keep_record)
    out.target, out.record, out.events, out.bytes = str(target), str(record_path), w.events, size


def _texts_kept(source: Stored, successor: list[dict[str, Any]]) -> int:
    """How many message texts of the source the successor holds; refuses when one is missing."""
    have = message_texts(successor)
    joined = "\n".join(have)
    want = message_texts(source.events)
    missing = [t for t in want if t not in joined]
    if missing:
        raise UnsupportedVersion(f"the successor would lose a message text of the source: {missing[0][:80]!r}; nothing was published")
    return len(want)


# ----------------------------------------------------------------------------- a whole store


@dataclass
class StoreSummary:
    """``rescue -R ROOT --dry-run``: every session's outcome, and the refusals by reason."""

    outcomes: list[RescueOutcome]

    @property
    def refused(self) -> list[RescueOutcome]:
        return [o for o in self.outcomes if o.plan is not None and o.plan.refused]

    def reasons(self) -> list[tuple[str, int, int]]:
        """(reason, sessions dsh refuses for it, how many of those rescue brings back), most common first."""
        total: Counter[str] = Counter()
        back: Counter[str] = Counter()
        for o in self.refused:
            assert o.plan is not None and o.plan.first is not None
            reason = reason_class(o.plan.first.message)
            total[reason] += 1
            if o.plan.rescuable:
                back[reason] += 1
        return [(r, n, back[r]) for r, n in total.most_common()]

    def as_dict(self) -> dict[str, Any]:
        refused = self.refused
        return {
            "sessions": len(self.outcomes),
            "refused": len(refused),
            "rescuable": sum(1 for o in refused if o.plan is not None and o.plan.rescuable),
            "failed": sum(1 for o in self.outcomes if o.status == "failed"),
            "reasons": [{"reason": r, "sessions": n, "rescuable": k} for r, n, k in self.reasons()],
            "outcomes": [o.as_dict() for o in self.outcomes],
        }


def reason_class(message: str) -> str:
    """A refusal's text with its numbers as ``N``: sessions refused for the same reason group together."""
    return re.sub(r"\d+", "N", message)


def rescue_store(root: Path, *, allow: Iterable[str] = (), all_: bool = False, parallel: bool = False) -> StoreSummary:
    """Plan the rescue of every session below ``root`` (a dry run: nothing is written)."""
    if not root.is_dir():
        raise UsageError("not a directory", path=str(root))
    outcomes = [RescueOutcome(source=f.path, status="failed", error=f.error, exit_code=f.exit_code) if isinstance(f, Unreadable)
                else rescue_session(Path(f), allow=allow, all_=all_, parallel=parallel) for f in walk_sessions([str(root)])]
    return StoreSummary(outcomes)

