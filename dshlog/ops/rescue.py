"""Rescue: bring back a session dsh refuses to open, as a v4 successor dsh accepts.

The operation reads the source leniently (the stored header and events, even
when dsh refuses the header), asks dsh's own view which refusal it meets
(:func:`judge`: the strict reader over the candidate written to a temporary file, with
no child sessions, as ``migrate --no-children``), and lets
:func:`dshlog.model.rescue.plan` work out the transformations that resolve each
refusal.  A dry run reports the plan; publishing writes the v4 successor through
the one publication transaction (lock, staging, read-back verification, link
without overwrite) and, just before the successor's name appears, its rescue
record (``<successor>.rescue.json``: the source's path, size and sha256 and
every change).  The source is only ever opened for reading.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import stat
import tempfile
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import DshlogError, ExitCode, UnsupportedVersion, UsageError, boundary
from ..model.rescue import BY_NAME, Plan, Stored, iter_message_texts, plan
from ..protocol.jsjson import dumps_pretty
from ..output.labels import PLACE_NOT_RESCUED
from ..protocol.layout import rescue_record_name
from ..read.container import select_generation
from ..read.container import Position
from ..write.transaction import Publication, leftover_note, output_lock, sweep
from ..write.verify import ReadBack
from ..write.writer import LogWriter
from .migrate import target_name
from ..read.source import Source, Target
from .outcome import worst
from .rescuable import SourceFacts, judge, open_candidate, read_stored, serialize, write_candidate
from ..read.store import Unreadable, place_refused, walk_sessions

__all__ = ["RescueOutcome", "StoreSummary", "judge", "read_stored", "rescue_session", "rescue_store", "serialize"]


#: Record format, so that an audit can tell a rescued session from a migrated one.
RECORD_KIND: str = "dshlog-rescue"
RECORD_VERSION: int = 1

#: ``--check`` (report only) with an output to write: refused.
CHECK_WRITES_NOTHING: str = "--check writes nothing: leave out --publish and -o, or leave out --check"


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


@boundary
def rescue_session(source: Source | Target, *, allow: Iterable[str] = (), all_: bool = False, publish: bool = False,
                   output: Target | None = None, check: bool = False,
                   progress: Position | None = None) -> RescueOutcome:
    """``dshlog rescue``: what dsh refuses in a session, the transformations that resolve it, and (``publish``)
    the v4 successor (the library's ``dshlog.rescue``).

    A dry run by default.  ``allow`` names the transformations a successor may
    use (``all_``: every one); ``publish`` writes the successor beside the source
    with a rescue record, ``output`` writes it there instead; the source is
    never touched.

    Never raises for the session's own problems: they are the outcome's status,
    ``why`` and exit code.  A usage error (an unknown transformation) is raised.
    ``check``: a session rescue can bring back exits 10 (:attr:`ExitCode.PENDING`),
    as ``migrate --check`` and ``repair --check`` do; nothing is written.
    ``source``: a path, or a :class:`~dshlog.read.source.Source` whose ``parallel`` allows forked
    helpers (the decode of a large zstd source, the read-back of a large successor); by default
    everything runs in process.  ``progress``: told how far the read of the source is (bytes of
    the file, its size).
    """
    parallel = Source.of(source).parallel
    source = Path(Source.of(source).name)
    output = None if output is None else Path(output)
    allowed = _allowed(allow, all_)
    if check and (publish or output is not None):
        raise UsageError(CHECK_WRITES_NOTHING)
    out = RescueOutcome(source=str(source), status="failed")
    try:
        if _is_dir(source):  # a session directory: the generation dsh reads there
            source = select_generation(source)
            out.source = str(source)
        stored, data = read_stored(Source(source, parallel=parallel), progress=progress)
        where = place_refused(source)
        if where is not None and output is None:
            # refused for where it sits: a successor published beside it would sit in the same place
            out.status = "cannot"
            out.error = f"{PLACE_NOT_RESCUED}: {where}"
            out.exit_code = ExitCode.CORRUPT
            return out
        p = plan(stored, judge, allowed)
        out.plan = p
        if not p.refused:
            out.status = "accepted"
            out.notes.append("dsh opens this session as it is: nothing to rescue")
            if publish:
                _clean_after_publication(source.parent, out)
            return out
        if not p.rescuable:
            out.status = "cannot"
            out.exit_code = p.remaining.exit_code if p.remaining is not None else ExitCode.CORRUPT
            return out
        if p.needs:
            out.status = "needs-allow"
            out.exit_code = ExitCode.CONFLICT if (publish or output is not None) else ExitCode.PENDING if check else ExitCode.OK
            return out
        if not publish and output is None:
            out.status = "rescuable"
            out.exit_code = ExitCode.PENDING if check else ExitCode.OK
            return out
        target = output if output is not None else source.parent / target_name(source)
        _publish(source, data, p, target, out, parallel=parallel)
        out.status = "rescued"
    except DshlogError as exc:
        out.status = "failed"
        out.error = exc.one_line()
        out.exit_code = exc.exit_code
    return out


def _clean_after_publication(d: Path, out: RescueOutcome) -> None:
    """Remove what a run killed after it published the successor left (its staged name).

    The session is accepted now (dsh reads the successor), so no publication runs
    there again to clean up (:func:`~dshlog.write.transaction.sweep`).
    """
    try:
        out.notes.extend(leftover_note(p) for p in sweep(d))
    except (DshlogError, OSError):
        return  # best effort: the session itself is fine


def _is_dir(path: Path) -> bool:
    """Whether ``path`` names a directory; a name the system will not let us look at is not one
    (reading it then says what the system refused)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _record(source: Path, data: SourceFacts, p: Plan, target: Path, events: int, size: int, digest: str) -> bytes:
    doc = {
        "kind": RECORD_KIND,
        "version": RECORD_VERSION,
        "source": {"path": str(source.resolve()), "size": data.size, "sha256": data.sha256,
                   "storedVersion": p.source.version},
        "refusal": p.first.as_dict() if p.first is not None else None,
        "transformations": [st.transformation for st in p.steps],
        "changes": [c.as_dict() for st in p.steps for c in st.changes],
        "successor": {"name": target.name, "events": events, "bytes": size, "sha256": digest},
    }
    return dumps_pretty(doc) + b"\n"


def _publish(source: Path, data: SourceFacts, p: Plan, target: Path, out: RescueOutcome, *, parallel: bool) -> None:
    """Write the successor through the publication transaction; the record is its companion, linked just before it."""
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
    with pub, write_candidate(p.result) as spool, _Texts() as have:
        out.notes.extend(pub.notes)
        staged = pub.stage()
        size_hint = spool.seek(0, os.SEEK_END)
        spool.seek(0)
        with open_candidate(spool) as log:
            view = log.v4(child_facts=[])
            header = view.header
            with ReadBack(staged.path, header, compressed=False, snapshot=log.snapshot, size_hint=size_hint,
                          parallel=parallel) as check:
                w = LogWriter(staged, compressed=False, projection=log.projection, tee=check.tee)
                w.header(header if header is not None else {})
                for ev in view:
                    w.event(ev)
                    for text in iter_message_texts((ev,)):  # the successor's message texts, not its events
                        have.add(text)
                size, digest = w.close()
                out.texts_kept = _texts_kept(p.source, have)
                record = _record(source, data, p, target, w.events, size, digest)
                # the record exists only once the successor is ready, and before its name appears: the
                # successor's link commits both (a record left alone by a kill goes with the next run)
                pub.publish(lambda path: check.verify(path, events=w.events, plain=(size, digest)),
                            companions=[(record_path, record)])
    out.target, out.record, out.events, out.bytes = str(target), str(record_path), w.events, size


#: How much of the successor's texts one read of the substring search takes.
_BLOCK: int = 1 << 16


def _digest(raw: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


class _Texts:
    """The successor's message texts for the check that nothing was lost: on disk, joined by newlines.

    Holding every text of a large successor (a log's worth of strings) made the
    check the largest thing a rescue held.  Here each text costs 24 bytes of
    memory (its digest and where it is); a source text found whole among them is
    confirmed by reading it back, and any other is looked for in the joined
    texts a block at a time, as ``text in "\\n".join(texts)`` would find it.
    """

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(buffering=_BLOCK)  # noqa: SIM115 - closed by __exit__
        self._digests = array("q")
        self._starts = array("q")
        self._ends = array("q")
        self._size = 0
        self._sorted = array("q")
        self._order = array("q")

    def __enter__(self) -> _Texts:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._file.close()

    def add(self, text: str) -> None:
        raw = text.encode("utf-8", "surrogatepass")  # one code point at a time: substrings stay substrings
        if self._starts:
            self._file.write(b"\n")
            self._size += 1
        self._file.write(raw)
        self._digests.append(_digest(raw))
        self._starts.append(self._size)
        self._size += len(raw)
        self._ends.append(self._size)

    def seal(self) -> None:
        """Every text is added: sort the digests for the look-ups."""
        self._file.flush()
        order = sorted(range(len(self._digests)), key=self._digests.__getitem__)
        self._order = array("q", order)
        self._sorted = array("q", (self._digests[k] for k in order))

    def __contains__(self, text: str) -> bool:
        """Whether ``text`` is in the texts joined by newlines (after :meth:`seal`)."""
        raw = text.encode("utf-8", "surrogatepass")
        digest = _digest(raw)
        k = bisect.bisect_left(self._sorted, digest)
        while k < len(self._sorted) and self._sorted[k] == digest:
            i = self._order[k]
            if self._ends[i] - self._starts[i] == len(raw) and self._read(self._starts[i], len(raw)) == raw:
                return True
            k += 1
        return self._search(raw)

    def _search(self, raw: bytes) -> bool:
        keep = len(raw) - 1  # a match may begin in the block before
        tail = b""
        at = 0
        while at < self._size:
            block = self._read(at, min(_BLOCK, self._size - at))
            window = tail + block
            if raw in window:
                return True
            tail = window[max(0, len(window) - keep):] if keep else b""
            at += len(block)
        return False

    def _read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._file.fileno(), size, offset)
        while len(data) < size:
            more = os.pread(self._file.fileno(), size - len(data), offset + len(data))
            if not more:
                raise OSError("the successor's texts end early")
            data += more
        return data


def _texts_kept(source: Stored, have: _Texts) -> int:
    """How many message texts of the source the successor's texts ``have`` hold; refuses when one is missing."""
    have.seal()
    kept = 0
    for t in iter_message_texts(source.events):
        if t not in have:
            raise UnsupportedVersion(f"the successor would lose a message text of the source: {t[:80]!r}; nothing was published")
        kept += 1
    return kept


# ----------------------------------------------------------------------------- a whole store


@dataclass
class StoreSummary:
    """``rescue -R ROOT``: every session's outcome, and the refusals by reason."""

    outcomes: list[RescueOutcome]

    @property
    def refused(self) -> list[RescueOutcome]:
        return [o for o in self.outcomes if o.plan is not None and o.plan.refused]

    @property
    def exit_code(self) -> ExitCode:
        """The most severe per-session outcome (:func:`dshlog.ops.outcome.worst`)."""
        return worst(o.exit_code for o in self.outcomes)

    def reasons(self) -> list[tuple[str, str, int, int]]:
        """(reason class, a real example of it, sessions dsh refuses for it, how many rescue brings back), most common first.

        Sessions group by the refusal's text with its numbers as ``N`` (``seq 12`` and
        ``seq 40`` are one reason); the example is the first such refusal as dsh
        words it, digits and all, so a person reads a real message and can find it.
        """
        total: Counter[str] = Counter()
        back: Counter[str] = Counter()
        example: dict[str, str] = {}
        for o in self.refused:
            assert o.plan is not None and o.plan.first is not None
            reason = reason_class(o.plan.first.message)
            example.setdefault(reason, o.plan.first.message)
            total[reason] += 1
            if o.plan.rescuable:
                back[reason] += 1
        return [(r, example[r], n, back[r]) for r, n in total.most_common()]

    def as_dict(self) -> dict[str, Any]:
        refused = self.refused
        return {
            "sessions": len(self.outcomes),
            "refused": len(refused),
            "rescuable": sum(1 for o in refused if o.plan is not None and o.plan.rescuable),
            "rescued": sum(1 for o in self.outcomes if o.status == "rescued"),
            "failed": sum(1 for o in self.outcomes if o.status == "failed"),
            "reasons": [{"reason": r, "example": e, "sessions": n, "rescuable": k} for r, e, n, k in self.reasons()],
            "outcomes": [o.as_dict() for o in self.outcomes],
        }


def reason_class(message: str) -> str:
    """A refusal's text with its numbers as ``N``: sessions refused for the same reason group together."""
    return re.sub(r"\d+", "N", message)


def _slim(o: RescueOutcome) -> RescueOutcome:
    """The outcome without the logs its plan held: a store's summary keeps every outcome, not every event."""
    p = o.plan
    if p is not None:
        o.plan = replace(p, source=replace(p.source, events=(), origins=()), result=None)
    return o


def rescue_store(root: Path, *, allow: Iterable[str] = (), all_: bool = False, publish: bool = False, check: bool = False,
                 progress: Callable[[RescueOutcome], None] | None = None, source: Source = Source()) -> StoreSummary:
    """Plan the rescue of every session below ``root`` and, with ``publish``, carry out every allowed one.

    A dry run by default, as ``migrate -R``: nothing is written.  ``progress``
    hears each outcome in walk order, as soon as it is known.  ``source``: how each
    session is read (a :class:`~dshlog.read.source.Source` without a path).
    """
    if not root.is_dir():
        raise UsageError("not a directory", path=str(root))
    _allowed(allow, all_)  # an unknown name is a usage error before any session is read
    outcomes = []
    for f in walk_sessions([str(root)]):
        if isinstance(f, Unreadable):  # the walk named why: a failed session of the batch, in its turn
            o = RescueOutcome(source=f.path, status="failed", error=f.error, exit_code=f.exit_code)
        else:
            o = _slim(rescue_session(source.at(f), allow=allow, all_=all_, publish=publish, check=check))
        if progress is not None:
            progress(o)
        outcomes.append(o)
    return StoreSummary(outcomes)
