"""The process around a command, read once: streams, terminals, colour, width, home, cwd, clock.

:func:`dshlog.cli.app.main` builds one :class:`Env` (``Env.from_process()`` unless the
caller passes its own) and every command reads the process state from it, and only
from it.  Nothing below the CLI looks at ``os.environ``, ``isatty()``, the cwd or the
clock: the core gets these as arguments.  So a test runs the real command line with
a made-up terminal, home and clock (:meth:`Env.for_test`), the way HTTPie's
``MockEnvironment`` does, instead of patching module globals.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, Literal
from zoneinfo import ZoneInfo

import msgspec

from ..output.screen import Screen

__all__ = ["Colour", "Env", "cache_directory", "colour_policy", "local_zone"]

#: ``always`` (FORCE_COLOR), ``never`` (NO_COLOR, FORCE_COLOR=0), ``auto``: colour on a terminal only.
Colour = Literal["auto", "always", "never"]


def colour_policy(environ: Mapping[str, str]) -> Colour:
    """The colour policy of an environment: NO_COLOR wins, FORCE_COLOR=0/false means never (as Node reads it)."""
    if environ.get("NO_COLOR"):
        return "never"
    force = environ.get("FORCE_COLOR")
    if force is None or force == "":
        return "auto"
    return "never" if force.strip().lower() in ("0", "false", "no", "off") else "always"


def local_zone(environ: Mapping[str, str], localtime: str = "/etc/localtime") -> str | None:
    """The IANA name of the process's zone: ``TZ`` (``:Europe/Berlin`` too), else what ``/etc/localtime`` links to.

    ``None`` when neither names a zone this Python knows: the system's local time is
    then used as it is (Python's naive local time), and named "local time".
    """
    names = []
    tz = environ.get("TZ")
    if tz is not None:
        names.append(tz.lstrip(":"))
    else:
        try:
            names.append(os.path.realpath(localtime))
        except OSError:  # pragma: no cover - an unreadable /etc
            pass
    for name in names:
        if "zoneinfo/" in name:  # a path into the zone database names its zone
            name = name.rsplit("zoneinfo/", 1)[1]
        if not name or name.startswith("/"):
            continue
        try:
            ZoneInfo(name)
        except (KeyError, ValueError, OSError):  # not a zone name (a POSIX TZ rule, a typo)
            continue
        return name
    return None


def cache_directory(environ: Mapping[str, str], home: Path) -> Path | None:
    """Where dshlog keeps its cache: ``$XDG_CACHE_HOME/dshlog`` (an absolute one), else ``~/.cache/dshlog``.

    ``None`` when ``DSHLOG_NO_CACHE`` is set (to anything but ``0`` or nothing): the
    commands then read every log as if no cache existed, and leave none behind.
    """
    if environ.get("DSHLOG_NO_CACHE", "").strip() not in ("", "0"):
        return None
    xdg = environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".cache"  # the XDG spec ignores a relative one
    return base / "dshlog"


def _isatty(stream: object) -> bool:
    try:
        return bool(getattr(stream, "isatty", lambda: False)())
    except (ValueError, OSError):  # a closed stream is no terminal
        return False


def _binary(stream: object) -> BinaryIO:
    buf = getattr(stream, "buffer", None)
    return buf if buf is not None else stream  # type: ignore[return-value]  # a binary stream already


class Env(msgspec.Struct):
    """Everything a command may know about the process it runs in."""

    stdin: BinaryIO
    stdout: BinaryIO
    stderr: BinaryIO
    stdin_isatty: bool = False
    stdout_isatty: bool = False
    stderr_isatty: bool = False
    colour: Colour = "auto"
    #: columns of the terminal (``COLUMNS`` or the terminal's size); ``None`` when unknown
    width: int | None = None
    dsh_home: str | None = None
    home: Path = msgspec.field(default_factory=Path.home)
    cwd: str = "/"
    now: Callable[[], float] = time.time
    #: a monotonic clock, for how long work has run (progress on a terminal)
    clock: Callable[[], float] = time.monotonic
    #: seconds of work before its progress is shown on a terminal (quick commands show none)
    progress_delay: float = 0.5
    #: forked helper processes where a second CPU pays (the library default is in-process);
    #: also what ``-j`` means when it is not given: every core when true, else one job
    parallel: bool = False
    #: ``DSHLOG_PATHS``: ``fast`` or ``exact``, which body every fast path runs (``dshlog.fastpaths``);
    #: ``None``: the mode the process already has (the library's ``fast``, or what a test session set)
    paths: str | None = None
    #: the zone people read times in (an IANA name, ``TZ`` or the system's); ``None``: the system's local time
    timezone: str | None = None
    #: ``DSHLOG_PRICES``: a LiteLLM-shaped price table for ``report`` (``--prices`` wins)
    prices: str | None = None
    #: the pager command for ``show`` on a terminal (``PAGER``; empty means none)
    pager: str = "less"
    #: the environment handed to a child process (the pager)
    environ: Mapping[str, str] = msgspec.field(default_factory=dict)
    #: the directory of the cache of per-session results (``None``: no cache; ``--no-cache`` too)
    cache_dir: Path | None = None
    #: the streams are this process's own descriptors (a closed stdout is then pointed at /dev/null)
    process: bool = False

    @classmethod
    def from_process(cls) -> Env:
        """The real process: ``sys`` streams, ``os.environ``, the cwd, the wall clock."""
        environ = dict(os.environ)
        try:
            cwd = os.getcwd()
        except OSError:  # the cwd was removed: a path argument still works
            cwd = environ.get("PWD", "/")
        tty = _isatty(sys.stdout)
        width: int | None = None
        if environ.get("COLUMNS", "").isdigit():
            width = int(environ["COLUMNS"])
        elif tty:
            width = shutil.get_terminal_size((80, 24)).columns
        return cls(
            stdin=_binary(sys.stdin),
            stdout=_binary(sys.stdout),
            stderr=_binary(sys.stderr),
            stdin_isatty=_isatty(sys.stdin),
            stdout_isatty=tty,
            stderr_isatty=_isatty(sys.stderr),
            colour=colour_policy(environ),
            width=width,
            dsh_home=environ.get("DSH_HOME"),
            home=Path.home(),
            cwd=cwd,
            now=time.time,
            parallel=True,
            paths=environ.get("DSHLOG_PATHS") or None,
            timezone=local_zone(environ),
            prices=environ.get("DSHLOG_PRICES") or None,
            pager=environ.get("PAGER", "less"),
            environ=environ,
            cache_dir=cache_directory(environ, Path.home()),
            process=True,
        )

    @classmethod
    def for_test(cls, *, stdin: bytes = b"", tty: bool = False, **over: object) -> Env:
        """An environment of in-memory streams (``env.stdout.getvalue()``), a fixed clock, no terminal by default."""
        base: dict[str, object] = {
            "stdin": io.BytesIO(stdin),
            "stdout": io.BytesIO(),
            "stderr": io.BytesIO(),
            "stdout_isatty": tty,
            "stderr_isatty": tty,
            "colour": "never",
            "width": 100 if tty else None,
            "home": Path("/nonexistent-home"),
            "now": lambda: 1_800_000_000.0,
            "timezone": "UTC",
            "pager": "",
        }
        base.update(over)
        return cls(**base)  # type: ignore[arg-type]  # keys are the fields above

    @contextlib.contextmanager
    def parser_output(self) -> Iterator[None]:
        """While the command line is parsed and run, ``sys.stdout`` is this run's stdout.

        Click and Typer print ``--help`` to ``sys.stdout``, not to a stream they are given;
        the process's own streams are that already, other streams (a test's) get it too.
        """
        if self.process:
            yield
            return
        text = io.TextIOWrapper(self.stdout, encoding="utf-8", errors="replace", write_through=True)
        try:
            with contextlib.redirect_stdout(text):
                yield
        finally:
            text.flush()
            text.detach()  # the run's stdout stays open for its caller

    def colour_on(self, stderr: bool = False) -> bool:
        """Whether text styled for ``stdout`` (or ``stderr``) carries colour."""
        if self.colour != "auto":
            return self.colour == "always"
        return self.stderr_isatty if stderr else self.stdout_isatty

    def screen(self, stderr: bool = False) -> Screen:
        """What the renderers may know about ``stdout`` (or ``stderr``)."""
        tty = self.stderr_isatty if stderr else self.stdout_isatty
        return Screen(
            stream=self.stderr if stderr else self.stdout,
            terminal=tty or self.colour == "always",
            tty=tty,
            colour=self.colour_on(stderr),
            width=self.width,
        )
