"""``dshlog export -o OUT``: a transcript written to a file through the one publication transaction.

The renderers are :mod:`dshlog.output.export`'s; this module only publishes
their bytes: staged beside ``OUT``, checked to hold every byte written, then
linked without overwriting.  An export is a file to share, so it gets the
usual ``0666 & ~umask`` mode (not the staging 0600) and belongs to whoever ran
the command.  When ``OUT``'s directory is a session directory, that session's
lock is held while the file appears; the log must not change while it is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.transcript import SessionHead
from ..output.export import export as render_export
from ..write.transaction import Ownership, Publication, output_lock


def export_to_file(
    log: Any,
    head: SessionHead,
    fmt: str,
    out: str,
    *,
    full: bool = False,
    redact: bool = False,
) -> tuple[Path, list[str]]:
    """Render ``log``'s transcript into ``out``; returns the published path and what could not be kept."""
    target = Path(out)
    if target.is_dir():
        raise UsageError(f"{out} is a directory; give a file name for -o", path=out)
    source = Path(log.path) if log.target != "-" else None  # standard input has no identity to check
    pub = Publication(
        target,
        lock=output_lock(target),
        source=source if source is not None and source.is_file() else None,
        owner=Ownership.shared(),
        changed="the log changed while it was exported; nothing was written",
    )
    with pub:
        staged = pub.stage()
        with log.v4() as view:  # dsh's decision on the whole log before the file appears
            render_export(view, head, fmt, staged.write, full=full, redact=redact)
        pub.publish()
    return target, pub.warnings


__all__ = ["export_to_file"]
