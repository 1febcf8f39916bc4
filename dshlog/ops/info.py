"""``dshlog info``: the header, the container, sizes and the summary of the stored events of one log.

The result (:class:`SessionInfo`) is what the verified cache keeps of a file (the kind
:data:`INFO`): an unchanged log is not read again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..check.problems import Problem
from ..errors import boundary
from ..model.summary import summarize, summary_of, summary_record
from ..output.jsondoc import SHAPE
from ..read.cache import STDIN, Kind, cached_call, open_cache, problem_of, problem_record
from ..read.container import Torn
from .outcome import note_dicts
from .sessions import located, open_target
from ..read.source import Source, Target

if TYPE_CHECKING:
    from ..model.summary import Summary

__all__ = ["INFO", "SessionInfo", "session_info"]


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
            "notes": note_dicts(self.notes),
        }



@boundary
def session_info(target: Source | Target, *, cache: str | None = None) -> SessionInfo:
    """``dshlog info``: header, container, sizes, counts by type, turns, tokens (the stored events).

    ``target``: a path, or a :class:`~dshlog.read.source.Source` (its ``stream`` is read
    instead, as :func:`open_session` reads one).
    ``cache``: the directory of the verified cache of per-session results
    (:mod:`dshlog.read.cache`), or none; a regular file unchanged since its info was kept
    is not read again.
    """
    source = Source.of(target)

    def read(path: str) -> SessionInfo:
        with open_target(source.at(path), strict=False) as log, located(log.path):
            summary = summarize(log.counted())
            return SessionInfo.of(log, summary)

    if not source.named or source.name == STDIN:
        return read(source.name)
    return cached_call(open_cache(cache), INFO, read, source.name, options=source.options)


def _info_record(i: SessionInfo) -> list[Any]:
    """``info``'s result as a plain form for the cache."""
    t = i.torn
    torn = None if t is None else [t.offset, t.length, t.frame, t.frame_offset, t.data]
    return [i.path, i.container, i.version, i.projection, i.header, i.size_on_disk, i.decoded_bytes, i.frames,
            i.torn_tail, list(i.sessions), summary_record(i.summary), [problem_record(n) for n in i.notes],
            dict(i.suppressed), torn]


def _info_of(rec: list[Any]) -> SessionInfo:
    """:func:`_info_record` back; raises on anything it did not write."""
    (path, container, version, projection, header, size, decoded, frames, torn_tail, sessions, summary, notes,
     suppressed, torn) = rec
    if not isinstance(path, str) or not isinstance(container, str) or not isinstance(suppressed, dict):
        raise TypeError("not an info record")
    if header is not None and not isinstance(header, dict):
        raise TypeError("a header is a map")
    return SessionInfo(path=path, container=container, version=version, projection=bool(projection), header=header,
                       size_on_disk=size, decoded_bytes=decoded, frames=frames, torn_tail=torn_tail,
                       sessions=tuple(sessions), summary=summary_of(summary), notes=tuple(problem_of(n) for n in notes),
                       suppressed=suppressed, torn=None if torn is None else Torn(*torn))


#: ``info``'s results in the cache (bump ``version`` when :class:`SessionInfo`, ``Summary`` or ``Torn`` change).
INFO = Kind("info", 1, _info_record, _info_of)
