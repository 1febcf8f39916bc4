"""One error hierarchy for the whole core.

The core never prints and never exits: it raises one of these.  Each error knows
*where* the problem is (file, line, byte offset, zstd frame, seq) so the CLI can
print a single precise line, and it carries its own exit code so the mapping from
failure kind to process status lives in exactly one place.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import ParamSpec, Protocol, TypeVar, cast, runtime_checkable


class ExitCode(IntEnum):
    """Documented process exit statuses (also listed in the README)."""

    OK = 0
    INTERNAL = 1  # a bug in dshlog: please report it (traceback with --debug)
    USAGE = 2  # bad command line or arguments that do not fit the log
    UNSUPPORTED = 3  # intact log this build cannot interpret (newer version, unknown type, refused migration)
    CORRUPT = 4  # committed content is invalid (validate found problems, unparsable rows, ...)
    CONFLICT = 5  # refused as unsafe: lock held, target exists, source changed
    IO = 6  # the operating system refused (permission, disk full, not found)
    PENDING = 10  # --check: work is needed (migration, repair), nothing was written
    INTERRUPTED = 130  # stopped by the user (Ctrl-C), as a shell reports SIGINT


@dataclass(frozen=True, slots=True)
class Location:
    """Physical position of a row or event inside its source.

    ``line`` is 1-based (the header is line 1); ``offset`` is the byte offset of
    the start of the line in the decoded plaintext; ``frame`` is the 0-based zstd
    frame that holds the end of the line (``None`` for plain files); ``index`` is
    the 0-based element index for JSON-array inputs.
    """

    line: int | None = None
    offset: int | None = None
    frame: int | None = None
    index: int | None = None

    def describe(self) -> str:
        parts: list[str] = []
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.index is not None:
            parts.append(f"element {self.index}")
        if self.offset is not None:
            parts.append(f"byte {self.offset}")
        if self.frame is not None:
            parts.append(f"frame {self.frame}")
        return ", ".join(parts)


def describe_place(loc: Location | None, seq: int | None) -> str:
    """``line 3, byte 120, seq 2``: whatever is known of a place inside a log (``""`` when nothing is).

    An error's and a problem's place read alike, whichever of them reports it.
    """
    bits: list[str] = []
    if loc is not None:
        d = loc.describe()
        if d:
            bits.append(d)
    if seq is not None:
        bits.append(f"seq {seq}")
    return ", ".join(bits)


class DshlogError(Exception):
    """Base of every error the core raises on purpose."""

    exit_code: ExitCode = ExitCode.INTERNAL
    kind: str = "error"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        loc: Location | None = None,
        seq: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.loc = loc
        self.seq = seq

    def where(self) -> str:
        """``file: line 3, byte 120, seq 2`` — whatever is known."""
        place = describe_place(self.loc, self.seq)
        head = self.path or ""
        if place:
            return f"{head}: {place}" if head else place
        return head

    def one_line(self) -> str:
        """The single line the CLI prints."""
        where = self.where()
        msg = " ".join(self.message.split("\n"))
        return f"{self.kind}: {where}: {msg}" if where else f"{self.kind}: {msg}"

    def with_context(self, *, path: str | None = None, loc: Location | None = None, seq: int | None = None) -> DshlogError:
        """Fill in location fields that the raiser did not know (returns self)."""
        if self.path is None and path is not None:
            self.path = path
        if self.loc is None and loc is not None:
            self.loc = loc
        if self.seq is None and seq is not None:
            self.seq = seq
        return self


class UsageError(DshlogError):
    """The request does not fit: bad option values, request number out of range."""

    exit_code = ExitCode.USAGE
    kind = "usage"


class InvalidArgument(UsageError, ValueError):
    """A value passed to a library call that no log could make sense of (an unknown closer cause, ...).

    A usage error (exit 2) like a bad option, and also the :class:`ValueError`
    Python code expects for a bad argument, which is what it was before the
    hierarchy covered it.
    """


class NotASessionLog(UsageError):
    """The input is not a dsh session log at all (prose, another program's JSON): the wrong file was named.

    A usage error (exit 2), not damage: nothing of dsh's is broken, and a script
    that walks a directory must be able to tell a stray file from a corrupt log.
    A file that looks like a log (a dsh generation name, a first line that opens
    a JSON object) is judged as a log, however damaged: :class:`CorruptLog`.
    """

    def __init__(self, why: str, *, path: str | None = None) -> None:
        super().__init__(f"not a dsh session log ({why})", path=path)


class CorruptLog(DshlogError):
    """Committed content is invalid: unparsable JSON, seq gap, bad frame, broken rule."""

    exit_code = ExitCode.CORRUPT
    kind = "corrupt"


class UnsupportedVersion(DshlogError):
    """An intact log this build cannot interpret (newer format, unknown required event)."""

    exit_code = ExitCode.UNSUPPORTED
    kind = "unsupported"


class BeyondLimit(UnsupportedVersion):
    """An intact log beyond one of dshlog's documented resource limits (line size, nesting depth).

    Not corruption: dsh may read it, and nothing about it is damaged, so no
    writer may treat it as a damaged tail.  The message names the limit and how
    to raise it where it can be raised.
    """

    kind = "limit"


class MigrationRefused(UnsupportedVersion):
    """dsh refuses to convert this historical log (SessionFormatUnsupportedMigrationError).

    Its one-line label is the exit code's, ``unsupported`` (exit 3): "refused" is the
    README's word for exit 5, refused as unsafe.
    """

    kind = "unsupported"


class Refused(DshlogError):
    """Refused as unsafe: lock held, target already exists, source changed meanwhile."""

    exit_code = ExitCode.CONFLICT
    kind = "refused"


class LockHeld(Refused):
    """Another process holds ``session.lock`` (dsh's SessionAlreadyOwnedError)."""

    kind = "locked"


class IOFailure(DshlogError):
    """The operating system refused: missing file, permission, disk full."""

    exit_code = ExitCode.IO
    kind = "io"


class InternalError(DshlogError, RuntimeError):
    """A bug in dshlog (or a call the API does not allow): the one error that is not the log's fault.

    It is also a :class:`RuntimeError`, which is what such failures were before
    the hierarchy covered them.  The original exception, when there is one, is
    its ``__cause__``.
    """

    exit_code = ExitCode.INTERNAL
    kind = "internal"

    @classmethod
    def of(cls, exc: BaseException) -> InternalError:
        """An unexpected exception, named by its class (the traceback stays in ``__cause__``)."""
        err = cls(f"{type(exc).__name__}: {exc}")
        err.__cause__ = exc
        return err


def library_error(exc: Exception) -> DshlogError:
    """The error of the hierarchy that stands for ``exc`` when it reaches the library's boundary.

    An error of the hierarchy is itself; an operating-system error the core did
    not translate is an :class:`IOFailure` (the system refused, whatever the
    call); anything else is a bug, an :class:`InternalError`.
    """
    if isinstance(exc, DshlogError):
        return exc
    if isinstance(exc, OSError):
        err: DshlogError = IOFailure(exc.strerror or str(exc), path=None if exc.filename is None else str(exc.filename))
    else:
        err = InternalError.of(exc)
    err.__cause__ = exc
    return err


P = ParamSpec("P")
R = TypeVar("R")
Y = TypeVar("Y")


def guarded(gen: Iterator[Y]) -> Iterator[Y]:
    """Iterate ``gen``, translating what escapes it into the hierarchy (see :func:`library_error`).

    The boundary of an iterator the library hands out: one ``try`` around the
    whole ``yield from``, so the hot path pays nothing per item.
    """
    try:
        yield from gen
    except Exception as exc:  # noqa: BLE001 - the boundary: every failure leaves as the hierarchy's error
        err = library_error(exc)
        if err is exc:
            raise
        raise err from exc


def boundary(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a library entry point so only the hierarchy's errors leave it (see :func:`library_error`).

    A generator function is guarded while it is iterated, not only when it is called.
    """
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            return cast(R, guarded(cast(Iterator[object], fn(*args, **kwargs))))

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the boundary: every failure leaves as the hierarchy's error
            err = library_error(exc)
            if err is exc:
                raise
            raise err from exc

    return wrapper


@runtime_checkable
class HasExitCode(Protocol):
    """A result that knows its process status (a validation report, a migration outcome, ...)."""

    @property
    def exit_code(self) -> int: ...


def exit_code_of(outcome: ExitCode | BaseException | HasExitCode | None) -> ExitCode:
    """The one mapping from how a command ended to its process status (the README's table).

    ``None`` is success; an :class:`ExitCode` is itself; an error of the hierarchy
    carries its code; Ctrl-C is :attr:`ExitCode.INTERRUPTED`; a reader that went
    away (``dshlog ... | head``) is not a failure; any other exception is a bug;
    a result says its own code.
    """
    if outcome is None:
        return ExitCode.OK
    if isinstance(outcome, ExitCode):
        return outcome
    if isinstance(outcome, DshlogError):
        return ExitCode(outcome.exit_code)
    if isinstance(outcome, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(outcome, BrokenPipeError):
        return ExitCode.OK
    if isinstance(outcome, BaseException):
        return ExitCode.INTERNAL
    return ExitCode(outcome.exit_code)
