"""Progress of long work, on stderr, while stderr is a terminal: the one place it is drawn.

A command that may run longer than about a second (a batch over a store, an export of a
large log) says how far it is, so that a person at a terminal never looks at a silent
screen wondering whether it hangs.  The core reports what it did (an executor's
``progress`` hook, a reader's position hook); this module turns it into one line on stderr:

    report: 120/355 sessions · 4s
    export: 41.9 MB/120.3 MB · 6s

The line appears only after :attr:`Env.progress_delay` (quick commands show none), is
redrawn at most ten times a second, is erased before any other line is written
(:func:`dshlog.cli.common.out`, ``err``, ``emit`` call :meth:`Progress.clear`) and when the
work ends.  When stderr is not a terminal nothing is ever written: a log or a pipe gets
only the command's own lines.  A counter is a few bytes per redraw and needs no library,
so a command's start-up stays as cheap as it was.
"""

from __future__ import annotations

from .env import Env

__all__ = ["Progress", "size_text"]

#: Seconds between two redraws.
_REDRAW = 0.1


def size_text(n: int) -> str:
    """Bytes as a person reads a growing amount (``12.3 MB``)."""
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB"


class Progress:
    """One counter line on stderr for one piece of long work (``label``: what it is doing)."""

    def __init__(self, env: Env, label: str) -> None:
        self._env = env
        self._label = label
        self._on = env.stderr_isatty
        self._start = env.clock()
        self._drawn = False
        self._last = 0.0
        self._text = ""

    def update(self, done: int, total: int | None = None, unit: str = "", *, size: bool = False) -> None:
        """``done`` of ``total`` (or of an unknown amount) ``unit``; ``size``: ``done`` counts bytes."""
        if not self._on:
            return
        now = self._env.clock()
        elapsed = now - self._start
        if elapsed < self._env.progress_delay or (self._drawn and now - self._last < _REDRAW and done != total):
            return
        amount = size_text(done) if size else str(done)
        of = "" if total is None else f"/{size_text(total) if size else total}"
        text = f"{self._label}: {amount}{of}{' ' + unit if unit else ''} · {int(elapsed)}s"
        width = (self._env.width or 80) - 1
        self._draw(text[:width])
        self._last = now

    def _draw(self, text: str) -> None:
        self._text = text
        self._env.stdout.flush()  # what a command printed comes before the line that is redrawn under it
        self._env.stderr.write(b"\r" + text.encode("utf-8", "replace") + b"\x1b[K")
        self._env.stderr.flush()
        self._drawn = True

    def clear(self) -> None:
        """Erase the line (before another line is written, and when the work is done)."""
        if self._drawn:
            self._env.stderr.write(b"\r\x1b[K")
            self._env.stderr.flush()
            self._drawn = False
