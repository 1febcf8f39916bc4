"""Whether rescue can bring a session back, and what it reads to find out: the judge and the stored log.

``migrate`` and ``validate`` name ``dshlog rescue`` when dsh refuses a session
that rescue can bring back (:func:`rescue_hint`); ``rescue`` itself plans and
publishes (:mod:`dshlog.ops.rescue`).  Both ask the same questions here, so
the note and the command never disagree.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import DshlogError, IOFailure, UsageError
from ..model.rescue import Refusal, Stored, plan, spool_events
from ..output.labels import rescue_may_note, rescue_note, rescue_target
from ..protocol.jsjson import dumps
from ..read.container import Container, Position
from ..read.store import place_refused
from ..read.session import SessionLog, open_log
from ..read.source import Source, Target

__all__ = ["HINT_LIMIT", "SourceFacts", "candidate_rows", "judge", "open_candidate", "read_stored", "rescue_hint", "serialize",
           "source_facts", "write_candidate"]

#: The name the candidate logs are judged under (not a generation name: no name rule applies).
CANDIDATE: str = "<rescue candidate>"
def candidate_rows(s: Stored) -> Iterator[bytes]:
    """The stored log as the lines of a plain JSONL generation of its version (a projection without seq/time)."""
    yield dumps(s.header) + b"\n"
    for ev in s.events:
        yield dumps({k: v for k, v in ev.items() if k not in ("seq", "time")} if s.projection else ev) + b"\n"


def serialize(s: Stored) -> bytes:
    """The stored log as a plain JSONL generation of its version, whole (:func:`candidate_rows`)."""
    return b"".join(candidate_rows(s))


def write_candidate(s: Stored) -> IO[bytes]:
    """The stored log written row by row to an anonymous temporary file, rewound for reading.

    The judge and the publication read the candidate from this file as every
    reader reads a log: the encoded log is never held whole in memory (it is
    larger than the source, and an in-memory copy of it was a second log's
    worth of memory on top of the events).  Closing the file deletes it.
    """
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it (open_candidate's log does)
    try:
        for row in candidate_rows(s):
            spool.write(row)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def open_candidate(spool: IO[bytes]) -> SessionLog:
    """The strict reader over a candidate written by :func:`write_candidate` (closing the log closes the file)."""
    return open_log(Source(CANDIDATE, stream=spool))


def judge(s: Stored) -> Refusal | None:
    """dsh's decision on ``s``: its strict open, migration and v4 restore (``None``: accepted)."""
    try:
        with write_candidate(s) as spool, open_candidate(spool) as log, log.v4(child_facts=[]) as view:
            for _ in view:
                pass
    except DshlogError as exc:
        return Refusal(exc.kind, exc.message, exc.seq, int(exc.exit_code))
    return None


@dataclass(frozen=True)
class SourceFacts:
    """What the rescue record says of the source's bytes: their size and sha256."""

    size: int
    sha256: str


#: How much of the source one read takes while its digest is computed.
_CHUNK: int = 1 << 20


def source_facts(source: Path) -> SourceFacts:
    """The source's size and sha256, read in chunks (never the whole file at once).

    Only a regular file is opened: a device, a pipe or a socket behind the name
    (a log linked to ``/dev/zero``) is refused before anything is read, and a
    name the system cannot open (a dangling link, no permission) is an I/O error.
    """
    try:
        st = os.stat(source)
    except FileNotFoundError:
        raise IOFailure("no such file or directory", path=str(source)) from None
    except OSError as exc:
        raise IOFailure(f"cannot open: {exc.strerror}", path=str(source)) from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError("not a regular file: only session generation files can be rescued", path=str(source))
    digest = hashlib.sha256()
    size = 0
    try:
        with open(source, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # replaced between the stat and the open
                raise UsageError("not a regular file: only session generation files can be rescued", path=str(source))
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except OSError as exc:
        raise IOFailure(f"cannot read: {exc.strerror}", path=str(source)) from None
    return SourceFacts(size, digest.hexdigest())


def read_stored(source: Source | Target, *, progress: Position | None = None) -> tuple[Stored, SourceFacts]:
    """The source's stored header and events (read leniently) and what the record says of its bytes
    (``progress``: told how far the read is)."""
    how = Source.of(source)
    data = source_facts(Path(how.name))
    return _stored(how, progress=progress), data


def _stored(source: Source, *, progress: Position | None = None) -> Stored:
    """The source's stored header and events, read leniently (a header dsh refuses too)."""
    with open_log(source, strict=False, progress=progress) as log:
        if log.info.container not in (Container.JSONL, Container.ZSTD) or log.header is None:
            raise UsageError(f"only session generation files can be rescued (this is a {log.info.container} input)", path=log.path)
        proof = "; ".join(p.message for p in log.notes
                          if p.code == "prerelease" or (p.code == "header" and "lacks version" in p.message))
        events = spool_events(r.event for r in log.stored())
        return Stored(dict(log.header), events, log.version, projection=log.projection, version_proof=proof)


#: The largest log (decoded bytes, estimated for zstd) the note of ``validate`` and ``migrate`` judges:
#: rescue's plan reads and judges the whole log once per transformation it tries (its events are spooled
#: to a temporary file, so memory stays bounded, but the time grows with the log), so a larger log is not
#: judged there and the note points to ``dshlog rescue ID --check``, which judges it.
HINT_LIMIT: int = 4 << 20
#: How many decoded bytes a byte of a zstd generation is taken to stand for (JSON logs compress ~5-20x).
_ZSTD_RATIO: int = 16


def rescue_hint(target: Source | Target) -> str | None:
    """``rescue can bring this session back: dshlog rescue ID`` when rescue's plan ends in a log dsh accepts.

    Asked only of a session dsh refuses (it reads and judges the log again);
    ``None`` when rescue cannot bring it back (dsh refuses the session for where it
    sits, which a successor beside it does not change) or the log cannot be read.  A log
    over :data:`HINT_LIMIT` is not judged: the note says rescue may bring it back
    and names ``--check``.
    """
    how = Source.of(target)
    source = how.name
    try:
        size = os.stat(source).st_size
    except OSError:
        return None
    if place_refused(source) is not None:
        return None
    if size * (_ZSTD_RATIO if str(source).endswith(".zstd") else 1) > HINT_LIMIT:
        return rescue_may_note(rescue_target(None, str(source)))
    try:
        stored = _stored(how)
        if not plan(stored, judge).rescuable:
            return None
    except (DshlogError, OSError):  # a note that cannot be worked out is left out (the spool may not be writable)
        return None
    sid = stored.header.get("id")
    return rescue_note(rescue_target(sid if isinstance(sid, str) else None, str(source)))
