"""What the commands share: options, output, input resolution."""

from __future__ import annotations

import shutil
import sys
import tempfile
from typing import Annotated, Any, Optional

import typer

from ..errors import DshlogError
from ..output.events import event_line
from ..output.plain import echo
from ..protocol.jsjson import dumps, dumps_pretty, stringify
from ..read.session import SessionLog, open_session
from ..read.store import resolve_session

FileArg = Annotated[
    Optional[str],
    typer.Argument(
        metavar="FILE",
        help="Session log: a generation file (.jsonl, .jsonl.zstd), a session directory, a JSON array or wrapped "
        "event stream, - for standard input, or a session id (prefix) under $DSH_HOME/sessions. "
        "Default: the most recent session of the current directory.",
    ),
]


JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


SelectOpt = Annotated[
    Optional[str],
    typer.Option("--select", metavar="ID", help="Which session of a multi-session input (wrapped streams, behavior.json)."),
]


UnknownOpt = Annotated[
    bool,
    typer.Option("--allow-unknown", help="Treat unknown event types without ignorable:true as log-only instead of refusing the log as dsh does."),
]


FormatOpt = Annotated[
    Optional[int],
    typer.Option("--format-version", metavar="N", help="Stored format version of a header-less input (default: detected)."),
]


JSON_SHAPE = 1  # bump when a --json shape changes incompatibly


class BatchedStdout:
    """Collects output lines and writes them in ~1 MiB batches (one syscall each, buffered or not)."""

    def __init__(self, limit: int = 1 << 20) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._limit = limit

    def write(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)
        if self._size >= self._limit:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            sys.stdout.buffer.write(b"".join(self._parts))
            sys.stdout.buffer.flush()
            self._parts.clear()
            self._size = 0


class DeferredStdout(BatchedStdout):
    """Holds all output (in a temporary file past 16 MiB) until :meth:`release`.

    A view that claims dsh's view prints nothing before dsh's decision on the
    whole log is known: dsh's read refuses a log as a whole, so the events before
    a refusal are not a view of anything dsh holds.
    """

    def __init__(self) -> None:
        super().__init__()
        self._spool = tempfile.SpooledTemporaryFile(max_size=16 << 20)

    def flush(self) -> None:
        if self._parts:
            self._spool.write(b"".join(self._parts))
            self._parts.clear()
            self._size = 0

    def release(self) -> None:
        self.flush()
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, sys.stdout.buffer, 1 << 20)
        sys.stdout.buffer.flush()
        self._spool.close()


def emit(data: bytes) -> None:
    """Bytes to stdout as they are."""
    sys.stdout.buffer.write(data)


def emit_json(obj: Any, pretty: bool = True) -> None:
    """One JSON document to stdout, written as dsh's ``JSON.stringify`` writes it."""
    emit((dumps_pretty(obj) if pretty else dumps(obj)) + b"\n")


def js(v: Any) -> str:
    """A value in a human line, as JavaScript would print it."""
    return stringify(v)


def print_notes(log: Any, quiet: bool = False) -> None:
    """Deviations noticed while reading go to stderr, never to stdout."""
    if quiet:
        return
    for n in log.notes:
        if n.severity == "info":
            continue
        where = n.where()
        echo(f"dshlog: {log.path}: {where + ': ' if where else ''}{n.code}: {n.message}", sys.stderr)
    for code, extra in log.notes.suppressed().items():
        echo(f"dshlog: {log.path}: {code}: {extra} more not shown", sys.stderr)


def resolve(target: str | None) -> str:
    """A FILE argument as a path: ids and the default session are looked up, and named on stderr."""
    r = resolve_session(target)
    if r.chosen:
        echo(f"dshlog: using session {r.session_id} ({r.path})", sys.stderr)
    return r.path


#: Options of the root callback that commands read (set anew by every invocation).
ROOT_OPTIONS: dict[str, Any] = {}


def plugins() -> tuple[str, ...]:
    """The root's ``--system-prompt-plugin`` names (for every command that migrates a log)."""
    return tuple(ROOT_OPTIONS.get("system_prompt_plugins", ()))


def open_log(target: str | None, *, strict: bool = True, select: str | None = None, format_version: int | None = None) -> SessionLog:
    """Open a FILE argument (resolved as :func:`resolve` does) with the root's options."""
    return open_session(resolve(target), strict=strict, select=select, format_version=format_version,
                        system_prompt_plugins=plugins())


def release(out: BatchedStdout, view: Any) -> None:
    """Write out what a command printed; a dsh view first reads the rest of the log (dsh's decision)."""
    if view is None:
        out.flush()
        return
    view.finish()
    assert isinstance(out, DeferredStdout)
    out.release()


def located(log: Any, exc: Exception) -> Exception:
    """Attach the log's path to a core error raised while its events streamed by."""
    if isinstance(exc, DshlogError):
        exc.with_context(path=log.path)
    return exc


def event_bytes(ev: dict[str, Any], raw: bytes | None, json_: bool) -> bytes:
    """One event the way ``events`` prints it (``--json``: its exact line when there is one)."""
    if json_:
        return (raw if raw is not None else dumps(ev)) + b"\n"
    return event_line(ev)


def closer_lines(closers: list[dict[str, Any]]) -> list[str]:
    """The synthetic events a writer appended (``repair``, ``fork``), one line each."""
    out = []
    for c in closers:
        d = c.get("data") or {}
        if c["type"] == "tool/result":
            err = d.get("error") or {}
            msg = d.get("message") or {}
            cites = f" sourceEventSeqs={c['sourceEventSeqs']}" if "sourceEventSeqs" in c else ""
            out.append(f"{c['seq']} tool/result {msg.get('toolCallId')} isError=true code={err.get('code')}{cites}")
        else:
            out.append(f"{c['seq']} {c['type']} {js(d)}")
    return out

