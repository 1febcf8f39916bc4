"""What a reading operation opens, and how: one value built once and passed down the reading path.

Every reading operation takes the same few facts about its input: the file (or an
open stream, for ``-``), which session of a multi-session input (``select``), the
format version of an input without a header, the extra system-prompt plugin names
the v3->v4 edge knows, and whether a forked helper may decode a large zstd body.
They travel together as a :class:`Source`, so no signature on the way from the
command line (or a script) to :class:`~dshlog.read.session.SessionLog` spells them
out one by one, and a new option is added here and read where it matters.

What is not a fact of the input stays a keyword of the call that needs it: how
strictly to read (a command's stance), the progress hook, the cache directory.
"""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import KW_ONLY, dataclass, replace
from types import TracebackType
from typing import IO, Self

__all__ = ["Reread", "Source", "Target"]

#: What names a log for an operation: a path (a generation file, a session directory, ``-``).
Target = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class Source:
    """An input and how to read it.

    ``path``: a generation file, a session directory, or ``-`` (the name shown in
    messages when ``stream`` is given).  A batch of inputs read the same way takes
    one ``Source`` without a path (the how) and names each input with :meth:`at`.
    ``stream``: an already open buffered binary stream to read instead of opening
    ``path`` (bytes arriving through a pipe).  ``select``: which session of a
    wrapped stream or a multi-session document.  ``format_version``: the version of
    an input without a header (``None``: detected).  ``plugins``: package names the
    v3->v4 edge takes for dsh's system-prompt producer besides upstream's own (a fork
    build's name).  ``parallel``: a forked helper may decode a large zstd body (the
    library's default reads in process).
    """

    path: Target | None = None
    _: KW_ONLY
    stream: IO[bytes] | None = None
    select: str | None = None
    format_version: int | None = None
    plugins: tuple[str, ...] = ()
    parallel: bool = False

    def __post_init__(self) -> None:
        if self.path is not None and not isinstance(self.path, str):
            object.__setattr__(self, "path", os.fspath(self.path))  # one form of the name: a string

    @staticmethod
    def of(target: Source | Target) -> Source:
        """``target`` as a Source: a Source as it is, a path with the defaults."""
        return target if isinstance(target, Source) else Source(os.fspath(target))

    @property
    def name(self) -> str:
        """The input's name (its path, ``-`` for a stream without one)."""
        return "-" if self.path is None else os.fspath(self.path)

    @property
    def named(self) -> bool:
        """Whether the input is a file opened by name (not a stream the caller passed)."""
        return self.stream is None

    @property
    def options(self) -> str:
        """What changes a read's answer besides the file, as a key (the cache keeps answers per key)."""
        return repr((self.select, self.format_version, self.plugins))

    def at(self, path: Target) -> Source:
        """The same how for another input (a batch's member, a sibling file): a stream only stays with ``-``."""
        p = os.fspath(path)
        return replace(self, path=p, stream=self.stream if p == "-" else None)


class Reread:
    """An input read more than once (dsh's decision first, then the log): each call gives a
    :class:`Source` over the same bytes.

    A stream can be read once, so it is copied once to an unnamed temporary file (disk,
    not memory) and each call reads it from its start through a descriptor of its own
    (the log that reads it closes it).  A named file is simply opened again.
    """

    def __init__(self, source: Source) -> None:
        self._source = source
        self._spool: IO[bytes] | None = None
        if source.stream is not None:
            import tempfile  # a stream only: a named file is opened again, and loads no tempfile

            self._spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
            shutil.copyfileobj(source.stream, self._spool, 1 << 20)

    @property
    def name(self) -> str:
        """The input's name (:attr:`Source.name`)."""
        return self._source.name

    def __call__(self) -> Source:
        if self._spool is None:
            return self._source
        stream = io.BufferedReader(io.FileIO(os.dup(self._spool.fileno()), "rb"), 1 << 20)
        stream.seek(0)
        return replace(self._source, stream=stream)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
