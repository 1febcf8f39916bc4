"""The exit code of a batch: one rule for every command that handles many sessions.

A batch (``migrate`` over a root, ``validate`` or ``stats`` of many files, a reader
that skipped damaged rows) exits with its *most severe* per-session outcome, in
this order, most severe first:

    1 (a bug) > 4 (corrupt) > 6 (I/O) > 5 (refused as unsafe) > 3 (unsupported) > 2 (usage) > 10 (work needed) > 0

Damage outranks a refusal to act, because a refusal is safe to retry and damage
is not; "work needed" (``--check``) is reported only when nothing failed.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ExitCode

__all__ = ["SEVERITY", "worst"]

#: Exit codes from most to least severe.
SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.INTERNAL,
    ExitCode.CORRUPT,
    ExitCode.IO,
    ExitCode.CONFLICT,
    ExitCode.UNSUPPORTED,
    ExitCode.USAGE,
    ExitCode.PENDING,
    ExitCode.OK,
)


def worst(codes: Iterable[int]) -> ExitCode:
    """The most severe of ``codes`` (``OK`` for none)."""
    rank = {c: i for i, c in enumerate(SEVERITY)}
    found = [ExitCode(c) for c in codes]
    return min(found, key=lambda c: rank[c], default=ExitCode.OK)
