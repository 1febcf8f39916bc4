"""Where human output goes, as the caller describes it: a byte stream, a terminal or not, colour, width.

The renderers never ask the process whether stdout is a terminal or which
colour policy holds; the command line reads that once (``dshlog.cli.env.Env``)
and hands a :class:`Screen` down.  So the same renderer gives the same bytes for
the same screen, in a test as on a real terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import msgspec

from .text import sanitize

if TYPE_CHECKING:  # pragma: no cover - typing only
    from rich.console import Console
    from rich.text import Text

__all__ = ["Screen", "TextSink", "Write", "text"]

Write = Callable[[bytes], object]  # a byte sink; what it returns (a count of bytes, say) is not used


class TextSink:
    """A text file over a byte stream (what Rich writes to), UTF-8, flushed through."""

    def __init__(self, stream: IO[bytes], tty: bool) -> None:
        self._stream = stream
        self._tty = tty

    def write(self, text: str) -> int:
        self._stream.write(text.encode("utf-8", "surrogateescape"))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:
        return "utf-8"


class Screen(msgspec.Struct, frozen=True):
    """One output stream as people see it."""

    stream: IO[bytes]
    #: styled output (Rich) rather than plain text: a terminal, or colour forced
    terminal: bool = False
    #: the stream is an interactive terminal (a pager may be used, ids may be shortened)
    tty: bool = False
    colour: bool = False
    #: columns, ``None`` when unknown (Rich then assumes 80)
    width: int | None = None

    def console(self, stream: IO[bytes] | None = None) -> Console:
        """A Rich console on this screen (or on ``stream``, a pager's pipe) that never interprets text.

        Markup, emoji codes and highlighting are off: session text is data
        (:mod:`dshlog.output.terminal`).
        """
        from rich.console import Console  # lazy: heavy, only for terminal output

        class _Console(Console):
            def on_broken_pipe(self) -> None:
                # Rich would point stdout at /dev/null and exit 1; a closed pipe (| head, a pager
                # that quit) is the caller's to decide: it is normal, not an error
                raise BrokenPipeError()

        return _Console(
            file=TextSink(stream if stream is not None else self.stream, self.tty),  # type: ignore[arg-type]  # a text file by duck typing (write, flush, isatty)
            no_color=not self.colour,
            color_system="standard" if self.colour else None,
            force_terminal=self.terminal,
            force_interactive=False,
            width=self.width if self.width else (80 if self.terminal else None),
            markup=False,
            emoji=False,
            highlight=False,
            soft_wrap=False,
            legacy_windows=False,
        )


def text(value: Any = "", style: str = "") -> Text:
    """A Rich ``Text`` of ``value`` as data: sanitised, never parsed as markup."""
    from rich.text import Text  # lazy: heavy, only for terminal output

    return Text(sanitize(str(value)), style=style)
