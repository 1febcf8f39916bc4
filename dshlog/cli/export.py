"""`dshlog export`."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from ..errors import CorruptLog, UsageError
from ..ops.export import export_store, export_transcript
from ..ops.transcript import export_to
from ..output.export import FORMATS
from ..output.labels import TO_BRING_BACK, rescue_command
from ..write.target import STDOUT
from ..model.selection import Selection
from .app import command_app
from .select import CwdOpt, ProjectOpt, SinceOpt, UntilOpt, is_root, of_roots, say, selection
from .common import (
    batch_source, BatchedStdout, cache_dir, current, done, err, FileArg, FormatOpt, print_notes, print_refusal,
    read_progress, resolve, SelectOpt, source_for,
)

app = command_app()

#: Bytes of a transcript gathered before they are written to stdout (one write per batch).
_STREAM_BATCH = 64 << 10


@app.command("export")
def export(
    file: FileArg = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="md|html|json", help="md (readable as plain text), html (one self-contained file) or json (versioned shape).", autocompletion=lambda: list(FORMATS))] = "md",
    output: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write to OUT (atomically; never overwrites unless --force) instead of stdout: a file, or a directory to create it in (existing, or ending in /); - is stdout.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an earlier export at OUT (a site: its pages and index), each file staged first and renamed over the old one; never a session log.")] = False,
    redact: Annotated[bool, typer.Option("--redact", help="Mask API keys, tokens, JWTs, passwords and e-mail addresses everywhere.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Do not trim long tool output, arguments and system prompts.")] = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    cwd: CwdOpt = None,
) -> None:
    """A transcript to share: Markdown, a self-contained HTML page, or JSON; or a whole root as HTML pages.

    The HTML page loads nothing from anywhere (inline CSS, one inline script allowed by its hash): rendered
    Markdown, highlighted code, contents by turn, filters and search; tool output and reasoning fold.
    FILE may be a persistence root with --format html -o DIR: one page per session and an index.html, by
    last activity, subagents under their parent (exit 4 when a session could not be exported); --since, --until,
    --project and --cwd export only the sessions they keep, as ls lists them. A log dsh
    refuses to open is exported as far as its stored rows can be read, opening with dsh's reason (exit 4, or 3
    when unsupported).

    Example: dshlog export session.v4.jsonl --format html --redact -o session.html
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r} (choose {', '.join(FORMATS)})")
    chosen = selection(since, until, project, cwd)
    if file and is_root(file):
        _export_root(file, fmt, output, full=full, redact=redact, chosen=chosen, force=force)
        return
    of_roots(chosen, [file], "give a ROOT with --format html -o DIR")
    path = resolve(file)
    if force and (output is None or output == STDOUT):
        raise UsageError("--force replaces an earlier export at -o OUT: give -o")
    options: dict[str, Any] = {"full": full, "redact": redact, "progress": read_progress(), "cache": cache_dir()}
    source = source_for(path, select=select, format_version=format_version)
    if output is None or output == STDOUT:
        sink = _Streamed()
        try:
            read = export_to(source, fmt, sink.write, **options)
        finally:
            sink.flush()
        done()
    else:
        written = export_transcript(source, output, format=fmt, force=force, **options)  # type: ignore[arg-type]  # a format of FORMATS
        done()
        for w in written.warnings:
            err(f"dshlog: warning: {w}")
        err(f"written: {written.path}")
        read = written.noted
    print_notes(read)
    print_refusal("export", read)


class _Streamed(BatchedStdout):
    """Where the transcript goes on stdout: as it is rendered, in batches of :data:`_STREAM_BATCH` bytes.

    dsh's decision on the whole log is known before the first byte (the first pass of
    :class:`~dshlog.ops.transcript.Reading`), so nothing needs holding back: a refused
    log's export opens with the refusal, and one that changed between the two passes
    so that dsh now refuses it ends in an error and exit code, as ``show`` does.
    The progress line stops before the first byte reaches a terminal.
    """

    def __init__(self) -> None:
        super().__init__(_STREAM_BATCH)
        self._started = False

    def write(self, data: bytes) -> None:
        if not self._started:
            self._started = True
            if current().env.stdout_isatty:
                done()
        super().write(data)


def _export_root(root: str, fmt: str, out: str | None, *, full: bool, redact: bool, chosen: Selection, force: bool) -> None:
    """``export ROOT --format html -o DIR``."""
    if fmt != "html" or out is None:
        raise UsageError(f"{root} is a persistence root: export it with --format html -o DIR (one page per session)", path=root)
    result = export_store(root, out, full=full, redact=redact, source=batch_source(), selection=chosen, force=force)
    say(result.note)
    for w in result.warnings:
        err(f"dshlog: warning: {w}")
    for sid, refused, rescue in result.refused:
        err(f"dshlog: {sid}: exported as stored: {refused.one_line()}; {TO_BRING_BACK}: {rescue_command(rescue)}")
        current().note_outcome(refused.exit_code)
    for sid, error in result.failed:
        err(f"dshlog: {sid}: not exported: {error}")
    err(f"written: {result.index} ({len(result.pages)} session pages)")
    if result.failed:
        raise CorruptLog(f"{len(result.failed)} of {len(result.pages) + len(result.failed)} sessions could not be exported (listed above and in the index)")
