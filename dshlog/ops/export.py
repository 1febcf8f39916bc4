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

from ..model.transcript import SessionHead
from ..output.export import export as render_export
from ..output.export import export_name
from ..write.target import output_path
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
    """Render ``log``'s transcript into ``out``; returns the published path and what could not be kept.

    ``out`` follows the one ``-o`` rule (:func:`dshlog.write.target.output_path`); into a
    directory the file is named after the session (:func:`dshlog.output.export.export_name`).
    Standard output (``-``) is the caller's: it needs no publication.
    """
    target = output_path(out, export_name(head, fmt), owner=Ownership.shared(), what="export")
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
