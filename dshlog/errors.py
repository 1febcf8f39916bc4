"""One error hierarchy for the whole core.

The core never prints and never exits: it raises one of these.  Each error knows
*where* the problem is (file, line, byte offset, zstd frame, seq) so the CLI can
print a single precise line, and it carries its own exit code so the mapping from
failure kind to process status lives in exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


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
        bits: list[str] = []
        if self.loc is not None:
            d = self.loc.describe()
            if d:
                bits.append(d)
        if self.seq is not None:
            bits.append(f"seq {self.seq}")
        head = self.path or ""
        if bits:
            return f"{head}: {', '.join(bits)}" if head else ", ".join(bits)
        return head

    def one_line(self) -> str:
        """The single line the CLI prints."""
        where = self.where()
        msg = " ".join(self.message.split("\n"))
        return f"{self.kind}: {where}: {msg}" if where else f"{self.kind}: {msg}"

    def with_context(self, *, path: str | None = None, loc: Location | None = None, seq: int | None = None) -> "DshlogError":
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


class CorruptLog(DshlogError):
    """Committed content is invalid: unparsable JSON, seq gap, bad frame, broken rule."""

    exit_code = ExitCode.CORRUPT
    kind = "corrupt"


class UnsupportedVersion(DshlogError):
    """An intact log this build cannot interpret (newer format, unknown required event)."""

    exit_code = ExitCode.UNSUPPORTED
    kind = "unsupported"


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
