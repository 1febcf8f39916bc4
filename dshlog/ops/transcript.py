"""``dshlog show`` and ``dshlog export`` to a stream: a log's transcript rendered as it is read.

:func:`transcript` opens the log for ``show`` (a :class:`Transcript` renders it
into the caller's renderer); :func:`export_to` streams an export into the
caller's sink and returns what the reader noticed
(:class:`~dshlog.ops.results.ReadNotes`).  Nothing is held: the transcript
reaches the renderer or sink event by event, and the caller decides what it does
with it (a pager, a spool released after dsh's decision).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, Protocol

from ..errors import CorruptLog, UnsupportedVersion
from ..model.transcript import SessionHead, session_facts
from ..output.export import export as render_export
from ..output.labels import refusal_mark
from ..output.renderer import Renderer, render
from ..read.session import SessionLog
from .results import ReadNotes
from .sessions import OpenLog, located, open_target

__all__ = ["Shown", "Transcript", "export_to", "transcript"]


class Shown(Renderer, Protocol):
    """A renderer a person reads: it can end what it showed with a mark (dsh's refusal)."""

    def mark(self, text: str) -> None: ...


class Transcript(OpenLog):
    """A log opened for ``show``: its head, and its conversation rendered once into a renderer.

    The log is open until :meth:`close` (use it as a context manager); ``notes``
    are what the reader noticed so far, so a caller whose reader went away early
    (a pager that quit) still says what was skipped up to there.
    """

    def __init__(self, log: SessionLog) -> None:
        super().__init__(log)
        self.head = SessionHead(log.session_id, log.version, log.path, log.projection)

    def show(self, renderer: Shown, *, full: bool = False) -> None:
        """The conversation into ``renderer``; where dsh's decision stops it, a mark saying so ends it.

        dsh's refusal is raised after the mark, so what was shown is never taken for the whole log.
        """
        with located(self.path):
            try:
                render(self._log.v4(), self.head, renderer, full=full)
            except (UnsupportedVersion, CorruptLog) as exc:
                renderer.mark(refusal_mark(exc.message))
                raise



def transcript(target: str | os.PathLike[str], *, select: str | None = None, format_version: int | None = None,
               system_prompt_plugins: tuple[str, ...] = (), stream: IO[bytes] | None = None,
               parallel: bool = False) -> Transcript:
    """Open ``target`` for ``show`` (dsh's view: an older log is migrated in memory as it is rendered)."""
    return Transcript(open_target(target, select=select, format_version=format_version,
                                  system_prompt_plugins=system_prompt_plugins, stream=stream, parallel=parallel))


def export_to(target: str | os.PathLike[str], fmt: str, write: Callable[[bytes], object], *, full: bool = False,
              redact: bool = False, select: str | None = None, format_version: int | None = None,
              system_prompt_plugins: tuple[str, ...] = (), stream: IO[bytes] | None = None,
              parallel: bool = False) -> ReadNotes:
    """The transcript of ``target`` in ``fmt`` (``md``, ``html``, ``json``) through ``write``, then dsh's decision.

    dsh's decision on the whole log comes last: a caller that must not show a
    refused log's transcript holds what ``write`` got until this returns.
    """
    with open_target(target, select=select, format_version=format_version, system_prompt_plugins=system_prompt_plugins,
                     stream=stream, parallel=parallel) as log:
        facts = session_facts(log.v4().header, path=os.path.basename(log.path), version=log.version)
        head = SessionHead(log.session_id, log.version, log.path, log.projection, facts)
        with located(log.path), log.v4() as view:  # dsh's decision on the whole log before the caller releases anything
            render_export(view, head, fmt, write, full=full, redact=redact)
        return ReadNotes.of(log)
