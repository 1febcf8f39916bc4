"""``dshlog show`` and ``dshlog export``: a log's transcript for a person, rendered as it is read.

Both show what a log holds (:data:`~dshlog.ops.stance.STANCES`): a log dsh
refuses is shown too, opening with dsh's refusal.  :class:`Reading` is that
rule, for ``show`` (:class:`Transcript`), ``export`` (:func:`export_to`, and
:mod:`dshlog.ops.export` for files and whole roots):

1. dsh's decision on the whole log comes first (:func:`~dshlog.read.session.dsh_refusal`:
   one strict pass that keeps nothing), since the transcript of a log dsh refuses
   must *open* with the refusal, and dsh may refuse a log at its last row.  With a
   cache directory, a file dsh opens is not decided again while it is unchanged
   (:data:`OPENS`): a second look at a large log shows its first screen at once;
2. the log is opened again and read once: a log dsh opens as dsh's view (an older
   log migrated in memory, restored as dsh restores it: the transcript it always
   was), a log dsh refuses as its stored rows, read as far as they can be read
   (what ``events`` without ``--v4`` shows, with the same notes).

The stored rows of a refused log are one rule for every version.  Migrating
them instead would show little: dsh's chain refuses most refused old logs at
their first rows, and the migration cannot go on past a row it refuses.  The
transcript reader (:class:`~dshlog.model.transcript.TranscriptReader`, the one
producer of what a person reads) reads the legacy shapes of v0..v3 events
itself (messages, tool results, chunk rows it passes over), so one producer
reads either stream.

Nothing is held: the transcript reaches the renderer or sink event by event.
Standard input is read twice, so it is first copied to an unnamed temporary
file (disk, not memory).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Protocol

from ..check.problems import Problems
from ..errors import DshlogError
from ..model.transcript import RefusalNotice, SessionHead, session_facts
from ..output.export import export as render_export
from ..output.labels import refusal_mark, rescue_target
from ..output.renderer import Renderer, render
from ..read.container import Position
from ..read.cache import Kind, cached_call, open_cache
from ..read.place import place_keys
from ..read.session import SessionLog, dsh_refusal, is_dsh_refusal
from ..read.source import Reread, Source, Target
from ..read.store import place_refused
from .outcome import ReadNotes
from .sessions import OpenLog, located, open_target
from .stance import stance

__all__ = ["Reading", "Shown", "Transcript", "export_to", "open_reading", "open_transcript", "rescue_target"]


class Shown(Renderer, Protocol):
    """A renderer a person reads: it can end what it showed with a mark (dsh's refusal)."""

    def mark(self, text: str) -> None: ...


def _opens_of(value: Any) -> tuple[None]:
    if value != 1:
        raise ValueError("not a kept decision")
    return (None,)


#: dsh's decision on a log in the verified cache (:mod:`dshlog.read.cache`), kept only where dsh opens the
#: log: a refusal is decided again, so its located error and the rescue hint always come from a read.
OPENS = Kind("opens", 1, lambda _decided: 1, _opens_of)


class _Reopen:
    """Opens the same input again, as many times as asked (:class:`~dshlog.read.source.Reread`)."""

    def __init__(self, target: Source | Target, progress: Position | None, cache: str | None) -> None:
        self._source = Source.of(target)
        self._again = Reread(self._source)
        self._progress = progress
        self._cache = cache

    def open(self, *, strict: bool) -> SessionLog:
        return open_target(self._again(), strict=strict, progress=self._progress)

    def refusal(self) -> DshlogError | None:
        """dsh's decision on the whole log (``None``: dsh opens it), served from the cache where it holds it."""

        def decide(_name: str) -> tuple[DshlogError | None]:
            return (dsh_refusal(lambda: self.open(strict=True)),)

        cache = open_cache(self._cache) if self._source.named else None
        decided = cached_call(cache, OPENS, decide, self._source.name, options=self._source.options,
                              keep=lambda d: d[0] is None, depends=place_keys())
        return decided[0]

    def close(self) -> None:
        self._again.close()


class Reading(OpenLog):
    """A log opened for a person, after dsh's decision on it (see the module docstring).

    ``refused`` is dsh's refusal (``None`` when dsh opens the log): the command
    reports it and exits with its code after showing the transcript, and
    ``head.refusal`` is what every renderer opens with.  The log is open until
    :meth:`close` (use it as a context manager); ``notes`` are what the reader
    noticed so far.
    """

    #: the command that reads the log (its stance is in :data:`~dshlog.ops.stance.STANCES`)
    command = "export"

    def __init__(self, source: _Reopen) -> None:
        self._source = source
        try:
            self.refused = source.refusal()
            # a log dsh opens is read as dsh reads it; one it refuses as these commands read a log (STANCES)
            super().__init__(source.open(strict=self.refused is None or stance(self.command).strict))
        except BaseException:
            source.close()
            raise
        log = self._log
        refusal = None
        if self.refused is not None:
            placed = place_refused(log.path) is not None  # rescue's successor would sit in the same place
            refusal = RefusalNotice(self.refused.kind, self.refused.message, None if placed else rescue_target(log.session_id, log.path))
        self.head = SessionHead(log.session_id, log.version, log.path, log.projection, refusal=refusal)

    @property
    def notes(self) -> Problems:
        """What the reader noticed; a note that says dsh's refusal again (a refused header's) is left
        out: the refusal is said once, as the commands that decide as dsh does say it."""
        notes = self._log.notes
        if self.refused is None:
            return notes
        said = [n for n in notes if n.message.endswith(self.refused.message)]
        if not said:
            return notes
        kept = Problems(notes.keep)
        kept.items = [n for n in notes if n not in said]
        kept.counts = dict(notes.counts)
        for n in said:
            kept.counts[n.code] -= 1
        return kept

    @property
    def rescue(self) -> str | None:
        """What ``dshlog rescue`` takes to bring a refused log back (``None`` when dsh opens it)."""
        return self.head.refusal.rescue if self.head.refusal is not None else None

    def export_head(self) -> SessionHead:
        """:attr:`head` with the header facts an export starts with (dsh's v4 header; a refused
        log's stored header as it is: dsh derives no v4 header from it)."""
        log = self._log
        header = log.header if self.refused is not None else log.v4().header
        return replace(self.head, facts=session_facts(header, path=os.path.basename(log.path), version=log.version))

    @contextmanager
    def events(self) -> Iterator[Iterable[dict[str, Any]]]:
        """What the transcript is read from, once: dsh's view (dsh's decision on the rest of the log
        when the reader is done), or a refused log's stored rows read as far as they can be read."""
        with located(self.path):
            if self.refused is not None:
                yield (r.event for r in self._log.stored())
                return
            with self._log.v4() as view:
                yield view

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


class Transcript(Reading):
    """A log opened for ``show``: its head, and its conversation rendered once into a renderer."""

    command = "show"

    def show(self, renderer: Shown, *, full: bool = False) -> None:
        """The conversation into ``renderer``, opening with dsh's refusal where dsh refuses the log.

        Where dsh refuses a log it opened a moment before (it changed meanwhile),
        a mark ends what was shown and the refusal is raised, so what was shown is
        never taken for the whole log.
        """
        with self.events() as events:
            try:
                render(events, self.head, renderer, full=full)
            except DshlogError as exc:
                if self.refused is None and is_dsh_refusal(exc):
                    renderer.mark(refusal_mark(exc.message))
                raise


def open_reading(target: Source | Target, *, progress: Position | None = None, cache: str | None = None) -> Reading:
    """Open ``target`` for a person: dsh's decision first, then the log (see :class:`Reading`).

    ``progress`` is told how far each of the two reads is (bytes of the file, its size).
    ``cache``: the directory of the verified cache, or none; a regular file dsh opened
    unchanged since is not decided again.
    """
    return Reading(_Reopen(target, progress, cache))


def open_transcript(target: Source | Target, *, progress: Position | None = None, cache: str | None = None) -> Transcript:
    """Open ``target`` for ``show`` (dsh's decision first; see :class:`Reading` and :func:`open_reading`)."""
    return Transcript(_Reopen(target, progress, cache))


def export_to(target: Source | Target, fmt: str, write: Callable[[bytes], object], *, full: bool = False,
              redact: bool = False, progress: Position | None = None, cache: str | None = None) -> ReadNotes:
    """The transcript of ``target`` in ``fmt`` (``md``, ``html``, ``json``) through ``write``.

    A log dsh refuses is exported too, opening with the refusal (the result's
    ``refused``).  Where a log dsh opened is refused while it is read (it changed
    meanwhile), the refusal is raised: a caller that must not show such a
    transcript holds what ``write`` got until this returns.
    """
    with open_reading(target, progress=progress, cache=cache) as reading:
        head = reading.export_head()
        with reading.events() as events:
            render_export(events, head, fmt, write, full=full, redact=redact)
        return ReadNotes.of(reading, refused=reading.refused, rescue=reading.rescue)
