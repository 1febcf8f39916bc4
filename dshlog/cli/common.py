"""What the commands share: options, the run's environment, output, input resolution.

Every command reaches the process only through :func:`current` (the :class:`Run` that
:func:`dshlog.cli.app.main` made from its :class:`~dshlog.cli.env.Env`): it writes with
:func:`out`, :func:`err`, :func:`emit` and :func:`emit_json`, asks :func:`screen` how
to style, and opens its input with :func:`open_log`.  A command never touches
``sys.stdout``, ``os.environ``, the cwd or the clock itself.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

import msgspec

from ..errors import DshlogError, ExitCode, IOFailure, UsageError
from ..executor import JOBS_PER_CPU, DaskExecutor, Executor, InProcess, ProcessPool, default_jobs
from ..ops.outcome import worst
from ..ops.stance import Stance, stance
from ..output.events import event_line
from ..output.jsondoc import SHAPE as JSON_SHAPE
from ..output.labels import TO_BRING_BACK, rescue_command
from ..output.screen import Screen
from ..output.text import sanitize
from ..protocol.jsjson import dumps, dumps_pretty, stringify
from ..protocol.layout import default_root
from ..check.problems import Problems
from ..ops.sessions import open_target
from ..read.container import Position
from ..read.session import SessionLog
from ..read.source import Source
from ..read.store import list_sessions, resolve_session
from .env import Env
from .progress import Progress

if TYPE_CHECKING:  # the installed Typer vendors its own click
    from typer._click.globals import get_current_context
else:
    try:  # Typer >= 0.24 vendors its own click
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover
        from click.globals import get_current_context

__all__ = [
    "JSON_SHAPE", "BatchedStdout", "DeferredStdout", "FileArg", "FormatOpt", "JobsOpt", "JsonOpt", "Run",
    "SchedulerOpt", "SelectOpt", "ShownRefusal", "UnknownOpt", "batch_executor", "closer_lines", "current", "done", "emit",
    "batch_source", "emit_json", "err", "event_bytes", "js", "may_fork", "open_log", "out", "plugins", "print_notes", "print_problems", "print_refusal",
    "progress", "read_progress", "release", "resolve", "root", "screen", "source_for", "stdin_for", "store_targets",
]


class Run(msgspec.Struct):
    """One invocation: its environment, the root's options, and the worst outcome reported so far.

    ``worst`` is how a reader that printed what it could still exits with the
    code of what it found (a corrupt line it skipped is exit 4), without a
    second error line: the notes on stderr already said it.
    """

    env: Env
    debug: bool = False
    plugins: tuple[str, ...] = ()
    worst: ExitCode = ExitCode.OK
    #: ``--no-cache``: no cache of per-session results is read or written
    no_cache: bool = False
    #: the progress line drawn on stderr now, erased before any other line is written
    progress: Progress | None = None

    def note_outcome(self, code: ExitCode) -> None:
        self.worst = worst([self.worst, code])


def current() -> Run:
    """The run of the command being executed (set by :func:`dshlog.cli.app.main`)."""
    obj = get_current_context().find_root().obj
    if not isinstance(obj, Run):  # pragma: no cover - a command run outside main()
        raise RuntimeError("dshlog commands run through dshlog.cli.main")
    return obj


def screen(stderr: bool = False) -> Screen:
    """How the current run's stdout (or stderr) shows human output."""
    return current().env.screen(stderr)


def _quiet(run: Run) -> Run:
    """The run, with its progress line (if one is drawn) erased so that a line can be written."""
    if run.progress is not None:
        run.progress.clear()
    return run


def progress(label: str | None = None) -> Progress:
    """The progress line of this run's long work (``label``: what it does; default: the command's name).

    One line at a time: a new one replaces the one drawn before.  It shows only on a
    terminal and after :attr:`Env.progress_delay` (see :mod:`dshlog.cli.progress`).
    """
    run = current()
    if run.progress is not None:
        run.progress.clear()
    run.progress = Progress(run.env, label or get_current_context().info_name or "dshlog")
    return run.progress


def read_progress(label: str | None = None) -> Position:
    """A reader's position hook (:data:`~dshlog.read.container.Position`) that draws how much of
    the file was read: ``export: 41.9 MB/120.3 MB · 6s``.

    The hook draws only while its line is this run's line: once :func:`done` is called
    (the reading is over, or what follows writes to the terminal) it is inert, so a
    second read of the log (the rendering pass) never draws over a pager or a table.
    """
    run = current()
    line = progress(label)

    def told(done: int, total: int | None) -> None:
        if run.progress is line:
            line.update(done, total, size=True)

    return told


def done() -> None:
    """The long work is over: its progress line is erased."""
    run = current()
    if run.progress is not None:
        run.progress.clear()
        run.progress = None


def out(text: str = "") -> None:
    """One line for people on stdout, sanitised (session text is data)."""
    _quiet(current()).env.stdout.write(sanitize(text).encode("utf-8") + b"\n")


def err(text: str = "") -> None:
    """One line for people on stderr (notes, warnings, what was written), sanitised."""
    e = _quiet(current()).env
    e.stdout.flush()  # what was printed so far comes first
    e.stderr.write(sanitize(text).encode("utf-8") + b"\n")
    e.stderr.flush()


def root() -> Path:
    """The persistence root of this run: ``$DSH_HOME/sessions`` (``~/.dsh/sessions``)."""
    e = current().env
    return default_root(e.dsh_home, e.home)

def store_targets(targets: list[str] | None) -> list[str]:
    """What a command over a store reads: the roots, directories and files given, session ids
    looked up, or ``$DSH_HOME/sessions``; a path that is not there is the one error line it is everywhere."""
    if not targets:
        default = root()
        if not default.is_dir():
            raise IOFailure("no such directory (set DSH_HOME, or name a ROOT)", path=str(default))
        return [str(default)]
    out = []
    for t in targets:
        path = t if t == "-" or os.path.exists(t) else resolve(t)
        if path != "-" and not os.path.exists(path):  # a path-like name is not looked up as an id
            raise IOFailure("no such file or directory", path=path)
        out.append(path)
    return out


def complete_session(incomplete: str) -> list[str]:
    """Shell completion of a FILE argument: the session ids of ``$DSH_HOME/sessions`` that start so."""
    env = Env.from_process()  # completion runs outside main(): read the process the one way
    try:
        entries = list_sessions(default_root(env.dsh_home, env.home), scan=False)
    except DshlogError:
        return []
    return sorted({e.id for e in entries if e.id and e.id.startswith(incomplete)})


FileArg = Annotated[
    Optional[str],
    typer.Argument(
        metavar="FILE",
        autocompletion=complete_session,
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


JobsOpt = Annotated[
    Optional[int],
    typer.Option("--jobs", "-j", metavar="N", min=1,
                 help="Sessions worked on at the same time, in N worker processes (1: in this process). "
                 f"Default: every core this process may use; never more workers than sessions, nor than {JOBS_PER_CPU} per core. "
                 "The output is the same whatever N."),
]


SchedulerOpt = Annotated[
    Optional[str],
    typer.Option("--scheduler", metavar="ADDRESS",
                 help="Hand the per-session work to a Dask cluster (tcp://host:8786; pip install 'dshlog[dask]'). "
                 "Its workers read the session files themselves: they must see them at the same paths."),
]


def batch_executor(jobs: int | None, scheduler: str | None, targets: Sequence[object] | None = None, *,
                   one_each: bool = False) -> Executor:
    """How a command over many sessions runs its per-session work: ``-j N``, ``--scheduler``, or the default.

    The library runs in-process unless told otherwise; the command line uses a
    pool of every core when the environment allows helper processes
    (``Env.parallel``), because there a second core pays.  Standard input (``-``
    among ``targets``) belongs to this process: such a batch runs here.
    ``one_each``: each target is one session (``validate``, ``stats``), so a single
    target runs here too: a pool would only add its start-up, and keep the one task
    from the forked helpers (a zstd body's decoder) that a task in this process may use.
    """
    stdin = targets is not None and "-" in targets
    single = one_each and targets is not None and len(targets) <= 1
    if scheduler is not None:
        if jobs is not None:
            raise UsageError("-j and --scheduler exclude each other (the cluster's workers are the jobs)")
        if stdin:
            raise UsageError("--scheduler cannot read standard input (-): the cluster's workers read files")
        return DaskExecutor(scheduler)
    n = jobs if jobs is not None else (default_jobs() if current().env.parallel else 1)
    ex: Executor = InProcess() if n <= 1 or stdin or single else ProcessPool(n)
    ex.progress = _counter(progress())
    return ex


def _counter(line: Progress) -> Any:
    """An executor's ``progress`` hook that draws ``line`` (sessions done of all) and erases it at the end."""

    def told(finished: int, total: int) -> None:
        if finished >= total:
            done()
        else:
            line.update(finished, total, "sessions")

    return told


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
            stdout = current().env.stdout
            stdout.write(b"".join(self._parts))
            stdout.flush()
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
        import tempfile  # only the commands whose output waits for dsh's decision

        self._spool = tempfile.SpooledTemporaryFile(max_size=16 << 20)

    def flush(self) -> None:
        if self._parts:
            self._spool.write(b"".join(self._parts))
            self._parts.clear()
            self._size = 0

    def release(self) -> None:
        self.flush()
        self._spool.seek(0)
        stdout = current().env.stdout
        shutil.copyfileobj(self._spool, stdout, 1 << 20)
        stdout.flush()
        self._spool.close()


def emit(data: bytes) -> None:
    """Bytes to stdout as they are."""
    _quiet(current()).env.stdout.write(data)


def flush() -> None:
    """What was written to stdout so far, out now (a line a person waits for, before slow work goes on)."""
    current().env.stdout.flush()


def emit_json(obj: Any, pretty: bool = True) -> None:
    """One JSON document to stdout, written as dsh's ``JSON.stringify`` writes it."""
    emit((dumps_pretty(obj) if pretty else dumps(obj)) + b"\n")


def js(v: Any) -> str:
    """A value in a human line, as JavaScript would print it."""
    return stringify(v)


#: Reader notes that say the log is intact but not one this build interprets (exit 3, not 4).
_UNSUPPORTED_NOTES = frozenset({"unsupported", "unsupported-version", "refused", "unknown-type"})


def note_exit_code(code: str) -> ExitCode:
    """The exit code an error note of a lenient reader stands for: 3 for what is unsupported, else 4."""
    return ExitCode.UNSUPPORTED if code in _UNSUPPORTED_NOTES else ExitCode.CORRUPT


#: Notes a reader reports although they are no problem: readers say a torn tail was ignored.
_SHOWN_INFO = frozenset({"torn-tail"})


def print_notes(log: Any, quiet: bool = False) -> None:
    """Deviations noticed while reading go to stderr, never to stdout; an error among them sets exit 4.

    This is the exit-code policy of every reader that shows what it can: what it
    skipped is said here, once, and the run exits with the code of the worst of it.
    ``log`` is an opened log or a result of reading one (:class:`~dshlog.ops.outcome.Noted`).
    """
    suppressed = log.notes.suppressed() if isinstance(log.notes, Problems) else log.suppressed
    print_problems(log.path, log.notes, suppressed, quiet=quiet)


class ShownRefusal(msgspec.Struct, frozen=True):
    """dsh's refusal of a log a command showed anyway, and what ``dshlog rescue`` takes (:func:`print_refusal`)."""

    refused: DshlogError | None
    rescue: str | None


def print_refusal(command: str, shown: Any) -> None:
    """dsh's refusal of a log that ``command`` showed anyway, said as the commands that decide as dsh does say it.

    ``shown`` is the reading's result (its ``refused`` and ``rescue``).  The one line
    they print (``dshlog: corrupt: FILE: line 1, byte 0: <dsh's words>``), with
    what brings the session back, and the run exits with its code (4 corrupt,
    3 unsupported).  Only a command that shows what a log holds
    (:data:`~dshlog.ops.stance.STANCES`) shows a log dsh refuses.
    """
    refused, rescue = shown.refused, shown.rescue
    if refused is None:
        return
    if stance(command) is not Stance.READER:  # pragma: no cover - a command that decides as dsh does never gets here
        raise refused
    hint = f"; {TO_BRING_BACK}: {rescue_command(rescue)}" if rescue is not None else ""
    err(f"dshlog: {refused.one_line()}{hint}")
    current().note_outcome(refused.exit_code)


def print_problems(path: str, notes: Iterable[Any], suppressed: Mapping[str, int], quiet: bool = False) -> None:
    """:func:`print_notes` of a reader's notes that came back from a batch task (a worker read the log)."""
    notes = list(notes)
    for n in notes:
        if quiet or (n.severity == "info" and n.code not in _SHOWN_INFO):
            continue
        where = n.where()
        err(f"dshlog: {path}: {where + ': ' if where else ''}{n.code}: {n.message}")
    if not quiet:
        for code, extra in suppressed.items():
            err(f"dshlog: {path}: {code}: {extra} more not shown")
    current().note_outcome(notes_outcome(notes))


def notes_outcome(notes: Iterable[Any]) -> ExitCode:
    """The exit code a reader's notes call for: the worst of their errors (0 when there is none)."""
    return worst([ExitCode.OK, *(note_exit_code(n.code) for n in notes if n.severity == "error")])


def resolve(target: str | None) -> str:
    """A FILE argument as a path: ids and the default session are looked up, and named on stderr."""
    r = resolve_session(target, root=root(), cwd=current().env.cwd)
    if r.chosen:
        err(f"dshlog: using session {r.session_id} ({r.path})")
    return r.path


def plugins() -> tuple[str, ...]:
    """The root's ``--system-prompt-plugin`` names (for every command that migrates a log)."""
    return current().plugins


def cache_dir() -> str | None:
    """The directory of this run's cache of per-session results, or ``None`` (``--no-cache``, ``DSHLOG_NO_CACHE``).

    Never inside dsh's store: a cache directory placed in the default root is not used,
    so a read-only command writes nothing there.
    """
    run = current()
    d = run.env.cache_dir
    if run.no_cache or d is None:
        return None
    root = default_root(run.env.dsh_home, run.env.home)
    if Path(d) == root or root in Path(d).parents:
        return None
    return str(d)


def may_fork() -> bool:
    """Whether this run lets the core fork helper processes (``Env.parallel``; the library's default is no)."""
    return current().env.parallel


def stdin_stream() -> io.BufferedReader:
    """Standard input of this run as a buffered binary stream (what ``-`` reads)."""
    raw = current().env.stdin
    return raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw, 1 << 20)  # type: ignore[arg-type]  # a raw or buffered binary stream: both read as raw


def stdin_for(path: str) -> io.BufferedReader | None:
    """The stream an operation reads for a resolved FILE: this run's standard input for ``-``, else none."""
    return stdin_stream() if path == "-" else None


def source_for(path: str, *, select: str | None = None, format_version: int | None = None) -> Source:
    """How this run reads a resolved FILE: ``-`` is its standard input; the root's plugins and parallelism."""
    return Source(path, stream=stdin_for(path), select=select, format_version=format_version, plugins=plugins(),
                  parallel=may_fork())


def batch_source(targets: Sequence[object] = (), *, select: str | None = None, format_version: int | None = None) -> Source:
    """How this run reads every member of a batch (a Source without a path): a ``-`` among ``targets``
    reads its standard input."""
    return Source(stream=stdin_stream() if "-" in targets else None, select=select, format_version=format_version,
                  plugins=plugins(), parallel=may_fork())


def open_log(target: str | None, *, strict: bool = True, select: str | None = None, format_version: int | None = None) -> SessionLog:
    """Open a FILE argument (resolved as :func:`resolve` does) with the root's options."""
    return open_target(source_for(resolve(target), select=select, format_version=format_version), strict=strict)


def release(out: BatchedStdout, view: Any) -> None:
    """Write out what a command printed; a dsh view first reads the rest of the log (dsh's decision)."""
    if view is not None:
        view.finish()
    if isinstance(out, DeferredStdout):
        out.release()
    else:
        out.flush()


def event_bytes(ev: dict[str, Any], raw: bytes | None, json_: bool, width: int | None = None) -> bytes:
    """One event the way ``events`` prints it (``--json``: its exact line when there is one); ``width``: see :func:`line_width`."""
    if json_:
        return (raw if raw is not None else dumps(ev)) + b"\n"
    return event_line(ev, width)


def line_width() -> int | None:
    """The columns an event line may fill: the terminal's, ``None`` when piped (the same line on any screen)."""
    s = screen()
    return (s.width or 80) if s.terminal else None


def closer_lines(closers: Iterable[Mapping[str, Any]]) -> list[str]:
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

