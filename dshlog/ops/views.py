"""The reading views of the library: what ``info``, ``surface``, ``rebuild`` and ``requests`` return.

Each call opens its input (:func:`~dshlog.ops.sessions.open_target`), runs the core
and returns a result of :mod:`dshlog.ops.results`.  They live apart from the facade
(:mod:`dshlog.ops.api`, which exports them) so that a reading command loads the
readers, the fold and its result, not every writer the facade also offers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import IO, Any

from ..check.surface import fold
from ..errors import UsageError, boundary
from ..model.requests import iter_requests
from ..model.requests import rebuild as rebuild_from
from ..model.summary import summarize, summary_of, summary_record
from ..read.cache import STDIN, Kind, cached_call, open_cache, problem_of, problem_record
from ..read.container import Position, Torn
from .results import RebuiltRequest, RequestRow, RequestSeries, SessionInfo, SurfaceView
from .sessions import Target, located
from .sessions import open_target as _open
from .stance import stance

__all__ = ["rebuild_request", "request_series", "session_info", "surface"]


@boundary
def session_info(target: Target, *, select: str | None = None, format_version: int | None = None,
                 system_prompt_plugins: Iterable[str] = (), stream: IO[bytes] | None = None,
                 parallel: bool = False, cache: str | None = None) -> SessionInfo:
    """``dshlog info``: header, container, sizes, counts by type, turns, tokens (the stored events).

    ``stream``, here and below: read this open binary stream (what ``-`` names), as :func:`open_session`;
    ``progress``: told how far the read is (:data:`~dshlog.read.container.Position`).
    ``cache``: the directory of the verified cache of per-session results
    (:mod:`dshlog.read.cache`), or none; a regular file unchanged since its info was kept
    is not read again.
    """
    plugins = tuple(system_prompt_plugins)

    def read(path: str) -> SessionInfo:
        with _open(path, strict=False, select=select, format_version=format_version,
                   system_prompt_plugins=plugins, stream=stream, parallel=parallel) as log, located(log.path):
            summary = summarize(log.counted())
            return SessionInfo.of(log, summary)

    path = os.fspath(target)
    if stream is not None or path == STDIN:
        return read(path)
    return cached_call(open_cache(cache), INFO, read, path, options=repr((select, format_version, plugins)))


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


@boundary
def surface(target: Target, *, at: int | None = None, allow_unknown: bool = False, select: str | None = None,
            format_version: int | None = None, system_prompt_plugins: Iterable[str] = (),
            stream: IO[bytes] | None = None, parallel: bool = False, progress: Position | None = None) -> SurfaceView:
    """``dshlog surface``: the fold of the log (or of its prefix up to seq ``at``): nodes and derived messages."""
    with _open(target, strict=stance("surface").strict, select=select, format_version=format_version, system_prompt_plugins=tuple(system_prompt_plugins),
               stream=stream, parallel=parallel, progress=progress) as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            state = fold(view, until_seq=at, strict_unknown=not allow_unknown)
        if at is not None and state.next_seq <= at:
            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        return SurfaceView(tuple(state.node_info()), tuple(state.messages()), tuple(state.replacements), tuple(log.notes),
                           log.path, log.notes.suppressed())


@boundary
def rebuild_request(target: Target, number: int, *, allow_unknown: bool = False, select: str | None = None,
                    format_version: int | None = None, system_prompt_plugins: Iterable[str] = (),
                    stream: IO[bytes] | None = None, parallel: bool = False,
                    progress: Position | None = None) -> RebuiltRequest:
    """``dshlog rebuild``: request ``number`` (1-based) exactly as dsh sent it, from the log alone."""
    with _open(target, strict=stance("rebuild").strict, select=select, format_version=format_version, system_prompt_plugins=tuple(system_prompt_plugins),
               stream=stream, parallel=parallel, progress=progress) as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            request = rebuild_from(view, number, session_id=log.session_id, strict_unknown=not allow_unknown)
        return RebuiltRequest(number, request, tuple(log.notes), log.path, log.notes.suppressed())


@boundary
def request_series(target: Target, *, allow_unknown: bool = False, select: str | None = None,
                   format_version: int | None = None, system_prompt_plugins: Iterable[str] = (),
                   stream: IO[bytes] | None = None, parallel: bool = False,
                   progress: Position | None = None) -> RequestSeries:
    """``dshlog requests``: every request, whether it extends its predecessor byte for byte, and why not.

    dsh's decision on the whole log comes before the series is returned.
    """
    with _open(target, strict=stance("requests").strict, select=select, format_version=format_version, system_prompt_plugins=tuple(system_prompt_plugins),
               stream=stream, parallel=parallel, progress=progress) as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            rows = tuple(RequestRow.of(r) for r in iter_requests(view, session_id=log.session_id,
                                                                 strict_unknown=not allow_unknown))
        return RequestSeries(rows, tuple(log.notes), log.path, log.notes.suppressed())
