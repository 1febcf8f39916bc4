"""The error hierarchy and the one mapping from outcome to exit code."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dshlog.errors import (
    CorruptLog,
    DshlogError,
    ExitCode,
    InternalError,
    IOFailure,
    LockHeld,
    MigrationRefused,
    Refused,
    UnsupportedVersion,
    UsageError,
    boundary,
    exit_code_of,
    library_error,
)

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_exit_codes() -> dict[int, str]:
    """The rows of the README's "Exit codes" table: code -> meaning."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", section, flags=re.M)
    assert rows, "the README has no exit-code table"
    return {int(code): meaning for code, meaning in rows}


def test_readme_table_is_the_enum() -> None:
    """Every documented code is a member and every member is documented, once each."""
    table = _readme_exit_codes()
    assert sorted(table) == sorted(int(c) for c in ExitCode)


@pytest.mark.parametrize(
    ("member", "word"),
    [
        (ExitCode.INTERNAL, "internal"),
        (ExitCode.USAGE, "usage"),
        (ExitCode.UNSUPPORTED, "unsupported"),
        (ExitCode.CORRUPT, "corrupt"),
        (ExitCode.CONFLICT, "refused"),
        (ExitCode.IO, "I/O"),
        (ExitCode.PENDING, "--check"),
        (ExitCode.INTERRUPTED, "interrupted"),
    ],
)
def test_readme_rows_say_what_the_member_means(member: ExitCode, word: str) -> None:
    assert word in _readme_exit_codes()[int(member)]


def test_every_error_class_carries_a_documented_code() -> None:
    table = _readme_exit_codes()
    for cls in (UsageError, CorruptLog, UnsupportedVersion, MigrationRefused, Refused, LockHeld, IOFailure, InternalError):
        assert issubclass(cls, DshlogError)
        assert int(cls.exit_code) in table


def test_exit_code_of_each_outcome() -> None:
    assert exit_code_of(None) is ExitCode.OK
    assert exit_code_of(ExitCode.PENDING) is ExitCode.PENDING
    assert exit_code_of(CorruptLog("x")) is ExitCode.CORRUPT
    assert exit_code_of(LockHeld("x")) is ExitCode.CONFLICT
    assert exit_code_of(InternalError("x")) is ExitCode.INTERNAL
    assert exit_code_of(KeyboardInterrupt()) is ExitCode.INTERRUPTED
    assert exit_code_of(BrokenPipeError()) is ExitCode.OK
    assert exit_code_of(ZeroDivisionError()) is ExitCode.INTERNAL

    class Result:
        exit_code = 10

    assert exit_code_of(Result()) is ExitCode.PENDING


def test_library_error_translates_what_is_not_the_hierarchys() -> None:
    own = UsageError("bad")
    assert library_error(own) is own
    io = library_error(FileNotFoundError(2, "No such file or directory", "x.jsonl"))
    assert isinstance(io, IOFailure) and io.path == "x.jsonl" and io.exit_code == ExitCode.IO
    bug = library_error(KeyError("k"))
    assert isinstance(bug, InternalError) and isinstance(bug, RuntimeError)
    assert isinstance(bug.__cause__, KeyError)
    assert bug.one_line() == "internal: KeyError: 'k'"


def test_boundary_guards_calls_and_iteration() -> None:
    @boundary
    def call(fail: bool) -> int:
        if fail:
            raise ValueError("boom")
        return 1

    @boundary
    def gen() -> Iterator[int]:
        yield 1
        raise TypeError("late")

    @boundary
    def own() -> None:
        raise CorruptLog("damaged")

    assert call(False) == 1
    with pytest.raises(InternalError, match="ValueError: boom"):
        call(True)
    it = gen()
    assert next(it) == 1
    with pytest.raises(InternalError, match="TypeError: late"):
        next(it)
    with pytest.raises(CorruptLog):
        own()
    assert call.__name__ == "call" and gen.__doc__ is None
