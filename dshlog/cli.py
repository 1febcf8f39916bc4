"""The ``dshlog`` command line: options in, core calls, rendering out.

No log logic lives here.  Every command opens its input through
:func:`dshlog.read.session.open_session`, calls the core, and renders.  Errors from the
core (:class:`dshlog.errors.DshlogError`) are turned into one line on stderr and
the exit code the error class carries, in exactly one place (:func:`main`).
"""

from __future__ import annotations

import fnmatch
import sys
from typing import Annotated, Any, Optional

import typer

from . import __version__
from .errors import DshlogError, ExitCode
from .model.diff import diff_requests, requests_at
from .model.transcript import SessionHead, session_facts
from .output import labels
from .output.events import event_line
from .output.export import FORMATS
from .output.export import export as write_export
from .output.jsondoc import diff_document
from .output.plain import PlainRenderer, diff_lines, echo
from .output.renderer import render
from .output.terminal import TerminalRenderer, console, on_terminal, table, use_color
from .output.text import human_bytes, human_duration, local_minutes, preview

app = typer.Typer(
    name="dshlog",
    help="Inspect, validate, rebuild, repair, fork and migrate DeepSeek Harness (dsh) session logs.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# ----------------------------------------------------------------------------- shared options

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


class _BatchedStdout:
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


class _DeferredStdout(_BatchedStdout):
    """Holds all output (in a temporary file past 16 MiB) until :meth:`release`.

    A view that claims dsh's view prints nothing before dsh's decision on the
    whole log is known: dsh's read refuses a log as a whole, so the events before
    a refusal are not a view of anything dsh holds.
    """

    def __init__(self) -> None:
        import tempfile

        super().__init__()
        self._spool = tempfile.SpooledTemporaryFile(max_size=16 << 20)

    def flush(self) -> None:
        if self._parts:
            self._spool.write(b"".join(self._parts))
            self._parts.clear()
            self._size = 0

    def release(self) -> None:
        import shutil

        self.flush()
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, sys.stdout.buffer, 1 << 20)
        sys.stdout.buffer.flush()
        self._spool.close()


def _out(data: bytes) -> None:
    sys.stdout.buffer.write(data)


def _json(obj: Any, pretty: bool = True) -> None:
    from .protocol.jsjson import dumps, dumps_pretty

    _out((dumps_pretty(obj) if pretty else dumps(obj)) + b"\n")


def _js(v: Any) -> str:
    from .protocol.jsjson import stringify

    return stringify(v)


def _notes(log: Any, quiet: bool = False) -> None:
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


def _resolve(target: str | None) -> str:
    """A FILE argument as a path: ids and the default session are looked up, and named on stderr."""
    from .read.store import resolve_session

    r = resolve_session(target)
    if r.chosen:
        echo(f"dshlog: using session {r.session_id} ({r.path})", sys.stderr)
    return r.path


#: Options of the root callback that commands read (set anew by every invocation).
_ROOT_OPTIONS: dict[str, Any] = {}


def _plugins() -> tuple[str, ...]:
    """The root's ``--system-prompt-plugin`` names (for every command that migrates a log)."""
    return tuple(_ROOT_OPTIONS.get("system_prompt_plugins", ()))


def _open(target: str | None, *, strict: bool = True, select: str | None = None, format_version: int | None = None):
    from .read.session import open_session

    return open_session(_resolve(target), strict=strict, select=select, format_version=format_version,
                        system_prompt_plugins=_plugins())


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True)] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback on errors.")] = False,
    system_prompt_plugin: Annotated[list[str], typer.Option(
        "--system-prompt-plugin", metavar="NAME",
        help="A package name to migrate as dsh's system-prompt producer besides @deepseek-ai/dsh-system-prompt, "
        "as the fork build that wrote the log does (e.g. @x1a0f3n9/dsh-system-prompt); repeatable. "
        "Default: upstream dsh's mapping, where any other name becomes a plugin:<name> source.")] = [],
) -> None:
    """Inspect and repair DeepSeek Harness session logs from outside dsh.

    Example: dshlog info ~/.dsh/sessions/--home-ann-p--/<id>/session.v4.jsonl
    """
    if version:
        print(f"dshlog {__version__}")
        raise typer.Exit(0)
    _ROOT_OPTIONS["system_prompt_plugins"] = tuple(system_prompt_plugin)


# ----------------------------------------------------------------------------- events


@app.command()
def events(
    file: FileArg = None,
    type_: Annotated[list[str], typer.Option("--type", "-t", metavar="TYPE", help="Only these event types (glob, e.g. 'tool/*'); repeatable.")] = [],
    turn: Annotated[Optional[int], typer.Option("--turn", help="Only events of turn N (turn/start N through turn/end N).")] = None,
    from_seq: Annotated[Optional[int], typer.Option("--from", metavar="SEQ", help="First seq to show.")] = None,
    to_seq: Annotated[Optional[int], typer.Option("--to", metavar="SEQ", help="Last seq to show.")] = None,
    v4: Annotated[bool, typer.Option("--v4", help="Show the events migrated to v4 (in memory) instead of the stored version.")] = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """One line per event: seq, type, how it enters the model view, a preview.

    With --json each event is one line of dsh's own JSON (a strict v4 log is reproduced byte for byte), ready for jq.

    Example: dshlog events session.v4.jsonl --type 'tool/*' --turn 2
    """
    from .protocol.jsjson import dumps

    # the stored rows are shown as far as they can be read; --v4 is dsh's view, decided as dsh decides
    log = _open(file, strict=v4, select=select, format_version=format_version)
    with log:
        view = log.v4() if v4 else None
        if view is not None:
            source = ((ev, None) for ev in view)
        else:
            source = ((r.event, r.raw) for r in log.stored())
        out = _DeferredStdout() if view is not None else _BatchedStdout()
        write = out.write
        if json_ and not (type_ or turn is not None or from_seq is not None or to_seq is not None):
            # the common `events --json | jq` case: no bookkeeping, original bytes where we have them
            for ev, raw in source:
                write((raw if raw is not None else dumps(ev)) + b"\n")
            _release(out, view)
            _notes(log)
            return
        current_turn = None
        for ev, raw in source:
            t = ev.get("type")
            seq = ev.get("seq")
            data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
            if t == "turn/start":
                current_turn = data.get("turn")
            in_turn = current_turn
            if t == "turn/end":
                current_turn = None
            if turn is not None and in_turn != turn:
                continue
            if from_seq is not None and (type(seq) is not int or seq < from_seq):
                continue
            if to_seq is not None and type(seq) is int and seq > to_seq:
                break
            if type_ and not any(fnmatch.fnmatchcase(str(t), pat) for pat in type_):
                continue
            write(_event_line(ev, raw, json_))
        _release(out, view)
        _notes(log)


def _release(out: _BatchedStdout, view: Any) -> None:
    """Write out what a command printed; a dsh view first reads the rest of the log (dsh's decision)."""
    if view is None:
        out.flush()
        return
    view.finish()
    assert isinstance(out, _DeferredStdout)
    out.release()


# ----------------------------------------------------------------------------- info


@app.command()
def info(file: FileArg = None, json_: JsonOpt = False, select: SelectOpt = None, format_version: FormatOpt = None) -> None:
    """Header fields, version, generation, counts by event type, turns, steps, model calls, tokens, sizes.

    Example: dshlog info session.v4.jsonl --json | jq .summary.tokens
    """
    from .model.summary import summarize

    log = _open(file, strict=False, select=select, format_version=format_version)
    with log:
        s = summarize(log.stored_runs())
        doc = {
            "shape": JSON_SHAPE,
            "path": log.path,
            "container": log.info.container,
            "version": log.version,
            "projection": log.projection,
            "header": log.header,
            "sizeOnDisk": log.info.size_on_disk,
            "decodedBytes": log.info.decoded_bytes,
            "frames": log.info.frames if log.info.container == "jsonl.zstd" else None,
            "tornTail": (log.info.torn.length if log.info.torn else 0),
            "sessions": log.info.wrapped_sessions or None,
            "summary": s.as_dict(),
            "notes": [{"code": n.code, "message": n.message, "where": n.where()} for n in log.notes],
        }
        if json_:
            _json(doc)
            return
        h = log.header or {}
        echo(f"file        {log.path}")
        echo(f"container   {log.info.container}" + (f", {log.info.frames} frames" if log.info.container == "jsonl.zstd" else ""))
        echo(f"version     v{log.version}" + ("  (test-snapshot projection: no seq/time)" if log.projection else ""))
        if h:
            echo("header      " + ", ".join(f"{k}={v if isinstance(v, str) else _js(v)}" for k, v in h.items() if k != "type"))
        else:
            echo("header      (none)")
        echo(f"size        {human_bytes(log.info.size_on_disk)} on disk, {human_bytes(log.info.decoded_bytes)} decoded")
        if log.info.torn:
            echo(f"torn tail   {log.info.torn.length} bytes ignored")
        if s.title:
            echo(f"title       {s.title}")
        echo(f"events      {s.events}" + (f" (seq {s.first_seq}..{s.last_seq})" if s.events else ""))
        echo(f"turns       {s.turns}" + (" (last turn open)" if s.turns_open else ""))
        echo(f"steps       {s.steps}")
        echo(f"model calls {s.model_calls} ({s.attempts} without surface message, {s.interrupted} interrupted)")
        if s.tokens:
            echo("tokens      " + labels.tokens_text(s.tokens))
        table("events by type", ["type", "count"], sorted(s.by_type.items(), key=lambda kv: (-kv[1], str(kv[0]))), justify={1: "right"})
        _notes(log)


# ----------------------------------------------------------------------------- validate


@app.command()
def validate(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE...", help="Session logs to check (paths, directories, - or session ids; default: the current session).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Every check a released dsh reader makes; reports every problem with its location. Never writes.

    Exit 0 when clean (warnings allowed), 4 when damaged, 3 when the format is newer than dsh's.

    Example: dshlog validate ~/.dsh/sessions/*/*/
    """
    from .ops.validate import validate_log

    worst = ExitCode.OK
    reports = []
    for f in files or [None]:
        report = validate_log(_resolve(f), select=select, format_version=format_version, system_prompt_plugins=_plugins())
        reports.append(report)
        worst = max(worst, report.exit_code)
        if not json_:
            for p in report.problems:
                where = p.where()
                echo(f"{report.path}: {where + ': ' if where else ''}{p.severity}: {p.code}: {p.message}")
            status = "ok" if report.exit_code == ExitCode.OK else ("unsupported" if report.exit_code == ExitCode.UNSUPPORTED else "damaged")
            echo(f"{report.path}: {status} (v{report.version if report.version is not None else '?'}, {report.events} events, "
                 f"{report.count('error')} errors, {report.count('warning')} warnings)", sys.stderr)
    if json_:
        _json({"shape": JSON_SHAPE, "files": [r.as_dict() for r in reports]})
    raise typer.Exit(int(worst))


# ----------------------------------------------------------------------------- model view


def _located(log: Any, exc: Exception) -> Exception:
    """Attach the log's path to a core error raised while its events streamed by."""
    if isinstance(exc, DshlogError):
        exc.with_context(path=log.path)
    return exc


@app.command()
def surface(
    file: FileArg = None,
    at: Annotated[Optional[int], typer.Option("--at", metavar="SEQ", help="Fold only the prefix up to and including this seq.")] = None,
    messages: Annotated[bool, typer.Option("--messages", help="With --json, include the derived messages.")] = False,
    allow_unknown: UnknownOpt = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The model view: surface nodes (seq, type, role, preview), derived roles, and replacements.

    Older logs are migrated to v4 in memory first (nothing is written).

    Example: dshlog surface session.v4.jsonl --at 15
    """
    from .check.surface import fold

    log = _open(file, select=select, format_version=format_version)
    with log:
        try:
            with log.v4(allow_unknown=allow_unknown) as view:
                state = fold(view, until_seq=at, strict_unknown=not allow_unknown)
        except DshlogError as exc:
            raise _located(log, exc)
        if at is not None and state.next_seq <= at:
            from .errors import UsageError

            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        nodes = [{**{k: v for k, v in n.items() if k != "message"}, "preview": preview(n["message"])} for n in state.node_info()]
        derived = state.messages()
        roles = [m.get("role") for m in derived]
        if json_:
            doc: dict[str, Any] = {
                "shape": JSON_SHAPE,
                "nodes": nodes,
                "roles": roles,
                "replacements": state.replacements,
            }
            if messages:
                doc["messages"] = derived
            _json(doc)
            return
        table(None, ["seq", "type", "role", "preview"], ([n["seq"], n["type"], (n["role"] or "") + (" (empty)" if n["empty"] else ""), n["preview"]] for n in nodes), justify={0: "right"})
        echo(f"nodes: {[n['seq'] for n in nodes]}")
        echo(f"roles: {', '.join(str(r) for r in roles)}")
        for r in state.replacements:
            echo(f"replacement: seq {r['seq']} replaced {r['start']}..{r['end']} (shadowed {', '.join(map(str, r['shadowedSeqs']))})")
        _notes(log)


@app.command()
def rebuild(
    file: FileArg = None,
    *,
    request: Annotated[int, typer.Option("--request", "-r", metavar="N", help="Request number (1-based; the N-th settlement).")],
    messages_only: Annotated[bool, typer.Option("--messages-only", help="Only the messages array.")] = False,
    compact: Annotated[bool, typer.Option("--compact", help="One line of compact JSON instead of 2-space indentation.")] = False,
    allow_unknown: UnknownOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The exact request dsh sent, rebuilt from the log alone, as dsh's JSON.

    Request N is the one settled by the N-th assistant/message or assistant/attempt, built from the events before it.

    Example: dshlog rebuild session.v4.jsonl --request 3 --messages-only
    """
    from .model.requests import rebuild as rebuild_request

    log = _open(file, select=select, format_version=format_version)
    with log:
        try:
            with log.v4(allow_unknown=allow_unknown) as view:
                req = rebuild_request(view, request, session_id=log.session_id, strict_unknown=not allow_unknown)
        except DshlogError as exc:
            raise _located(log, exc)
        _json(req["messages"] if messages_only else req, pretty=not compact)
        _notes(log)


@app.command()
def requests(
    file: FileArg = None,
    allow_unknown: UnknownOpt = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Every request in one table: settlement, message count, prefix reuse and why it broke, tokens.

    "extends" says whether the request starts with the previous request's messages byte for byte, which is
    what a provider's prefix cache needs; when it does not, "reason" says why.

    Example: dshlog requests session.v4.jsonl --json | jq '.requests[] | select(.extends == false)'
    """
    from .model.requests import iter_requests

    log = _open(file, select=select, format_version=format_version)

    def rows():
        # dsh's decision on the whole log comes before any row is shown
        try:
            with log.v4(allow_unknown=allow_unknown) as view:
                return list(iter_requests(view, session_id=log.session_id, strict_unknown=not allow_unknown))
        except DshlogError as exc:
            raise _located(log, exc)

    with log:
        if json_:
            # streamed, one request per line, so memory stays flat however many requests the log holds
            from .protocol.jsjson import dumps

            out = _BatchedStdout()
            out.write(b'{"shape":%d,"requests":[' % JSON_SHAPE)
            sep = b"\n"
            for r in rows():
                out.write(sep + dumps(_request_row(r)))
                sep = b",\n"
            out.write(b"\n]}\n")
            out.flush()
            return
        table(
            None,
            ["#", "seq", "settled as", "turn.step", "msgs", "extends", "why not", labels.token_name("inputTokens"), labels.token_name("outputTokens")],
            (
                [
                    r.number,
                    r.seq,
                    r.kind.split("/")[1] + (f" ({labels.INTERRUPTED})" if r.interrupted else ""),
                    f"{r.turn}.{r.step}",
                    r.message_count,
                    "-" if r.extends is None else ("yes" if r.extends else "no"),
                    r.reason or "",
                    r.input_tokens,
                    r.output_tokens,
                ]
                for r in rows()
            ),
            justify={0: "right", 1: "right", 4: "right", 7: "right", 8: "right"},
        )
        _notes(log)


def _request_row(r: Any) -> dict[str, Any]:
    """The versioned --json shape of one request."""
    return {
        "number": r.number,
        "settlementSeq": r.seq,
        "settlement": r.kind,
        "turn": r.turn,
        "step": r.step,
        "messages": r.message_count,
        "extends": r.extends,
        "reason": r.reason,
        "changes": r.changes,
        "headerSeq": r.header_seq,
        "interrupted": r.interrupted,
        "inputTokens": r.input_tokens,
        "outputTokens": r.output_tokens,
        "cacheReadTokens": r.cache_read_tokens,
    }


# ----------------------------------------------------------------------------- writing commands


def _closer_lines(closers: list[dict]) -> list[str]:
    out = []
    for c in closers:
        d = c.get("data") or {}
        if c["type"] == "tool/result":
            err = d.get("error") or {}
            msg = d.get("message") or {}
            cites = f" sourceEventSeqs={c['sourceEventSeqs']}" if "sourceEventSeqs" in c else ""
            out.append(f"{c['seq']} tool/result {msg.get('toolCallId')} isError=true code={err.get('code')}{cites}")
        else:
            out.append(f"{c['seq']} {c['type']} {_js(d)}")
    return out


@app.command()
def repair(
    file: FileArg = None,
    write: Annotated[bool, typer.Option("--write", help="Append the closers to the log itself (v4 only), under session.lock, atomically.")] = False,
    out: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write a repaired v4 copy to OUT instead (never overwrites).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Exit 10 when the tail needs closing, 0 when it is healthy; write nothing.")] = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Close an interrupted tail after a crash, exactly as dsh does when it resumes.

    By default shows what is open and the exact events that would be appended, and writes nothing.

    Example: dshlog repair session.v4.jsonl && dshlog repair session.v4.jsonl --write
    """
    from .errors import UsageError
    from .ops.repair import RepairResult, plan_repair, repair_copy, repair_in_place

    if write and out:
        raise UsageError("choose either --write (in place) or -o OUT (a repaired copy)")
    file = _resolve(file)
    if write:
        result = repair_in_place(file)
    elif out:
        from pathlib import Path

        result = repair_copy(file, Path(out), select=select, format_version=format_version, system_prompt_plugins=_plugins())
    else:
        result = RepairResult(plan_repair(file, select=select, format_version=format_version, system_prompt_plugins=_plugins()))
    plan = result.plan
    if json_:
        rep = plan.report
        _json(
            {
                "shape": JSON_SHAPE,
                "path": plan.path,
                "healthy": plan.healthy,
                "openTurn": rep.open_turn,
                "openStep": rep.open_step,
                "pendingCalls": [{"callId": c.call_id, "step": c.step, "started": c.started, "callSeq": c.call_seq} for c in rep.pending],
                "tornBytes": plan.torn_bytes,
                "closers": plan.closers,
                "warnings": plan.warnings,
                "written": result.written,
                "sidecar": result.sidecar,
            }
        )
    else:
        rep = plan.report
        if plan.healthy:
            echo(f"{plan.path}: healthy: the last turn is closed ({plan.event_count} events)" + (f"; a torn tail of {plan.torn_bytes} bytes is ignored" if plan.torn_bytes else ""))
        else:
            pend = ", ".join(f"{c.call_id} ({'started' if c.started else 'not started'})" for c in rep.pending) or "none"
            echo(f"{plan.path}: open tail: turn {rep.open_turn}" + (f", step {rep.open_step}" if rep.open_step is not None else "") + f"; unanswered tool calls: {pend}")
            if plan.torn_bytes:
                echo(f"torn tail: {plan.torn_bytes} bytes after the last complete line")
            for w in plan.warnings:
                echo(f"dshlog: warning: {w}", sys.stderr)
            echo(("appended:" if result.written else "would append:"))
            for line in _closer_lines(plan.closers):
                echo(f"  {line}")
            if result.written:
                echo(f"written: {result.written}" + (" (in place)" if result.in_place else ""), sys.stderr)
            for w in result.warnings:
                echo(f"dshlog: warning: {w}", sys.stderr)
            if result.sidecar:
                echo(f"torn bytes kept in {result.sidecar}", sys.stderr)
            elif not write and not out:
                echo("nothing written; use --write to repair in place or -o OUT for a repaired copy", sys.stderr)
    if check and not plan.healthy:
        raise typer.Exit(int(ExitCode.PENDING))


@app.command()
def fork(
    file: FileArg = None,
    *,
    out: Annotated[str, typer.Option("-o", "--output", metavar="OUT", help="Where to write the child log (a file, or a directory to create it in).")],
    at: Annotated[Optional[int], typer.Option("--at", metavar="SEQ", help="Inclusive last parent seq (dsh's fork boundary). Default: the last event.")] = None,
    at_turn: Annotated[Optional[int], typer.Option("--at-turn", metavar="N", help="Cut right after turn N's turn/end.")] = None,
    child_id: Annotated[Optional[str], typer.Option("--id", metavar="ID", help="Child session id (default: a fresh UUID).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """A child session from a prefix of the parent: prefix, inherited end-seed marker, forked closers.

    The parent is never modified; the child is written atomically and never over an existing file.

    Example: dshlog fork session.v4.jsonl --at 15 -o child/
    """
    from .errors import UsageError
    from .ops.fork import write_fork

    if at is not None and at_turn is not None:
        raise UsageError("choose either --at SEQ or --at-turn N")
    file = _resolve(file)
    result = write_fork(file, out, at=at, turn=at_turn, child_id=child_id, select=select, format_version=format_version,
                        system_prompt_plugins=_plugins())
    if json_:
        _json({"shape": JSON_SHAPE, **result})
        return
    for w in result.get("warnings", []):
        echo(f"dshlog: warning: {w}", sys.stderr)
    echo(f"{result['path']}: child {result['childId']} of {result['parentId']}: {result['events']} events "
         f"(parent prefix 0..{result['at']}, marker at {result['at'] + 1}, {len(result['closers'])} closers)")
    for line in _closer_lines(result["closers"]):
        echo(f"  {line}")


@app.command()
def migrate(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="PATH", help="Session files, session directories, session ids, or roots to walk (--recursive). Default: the current directory's latest session.")] = None,
    recursive: Annotated[bool, typer.Option("--recursive", "-R", help="Walk directories for every session below them.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 0 when nothing needs migrating, 10 when something does; write nothing.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Migrate in memory and report what would be published, with event counts.")] = False,
    no_children: Annotated[bool, typer.Option("--no-children", help="State that the sessions have no child sessions (needed outside a dsh persistence root).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Upgrade v0..v3 sessions to v4 by publishing session.v4.jsonl[.zstd] beside the old file, as dsh does.

    The old generation stays byte-identical; a session already at v4 is skipped; a second run changes nothing.

    Example: dshlog migrate --recursive ~/.dsh/sessions --check || dshlog migrate --recursive ~/.dsh/sessions
    """
    from .ops.migrate import find_sessions, migrate_session

    import os

    # session ids (or unique prefixes) stand for their generation files; no PATH means the current session
    paths = [p if os.path.exists(p) else _resolve(p) for p in paths] if paths else [_resolve(None)]
    sources = list(find_sessions(paths, recursive=recursive))
    outcomes = []
    progress = None
    if len(sources) > 1 and sys.stderr.isatty() and not json_:
        from rich.progress import Progress  # lazy: heavy, only for a progress bar on a terminal

        progress = Progress(console=console(stderr=True), transient=True)
        task = progress.add_task("migrating", total=len(sources))
        progress.start()
    try:
        for src in sources:
            o = migrate_session(src, check=check, dry_run=dry_run, children="none" if no_children else "auto",
                                system_prompt_plugins=_plugins())
            outcomes.append(o)
            if progress is not None:
                progress.advance(task)
            if not json_:
                if o.status == "failed":
                    echo(f"dshlog: {o.error}", sys.stderr)
                elif o.status == "migrated":
                    echo(f"migrated {o.source} -> {o.target} ({o.events} events)")
                elif o.status == "would-migrate":
                    echo(f"would publish {o.target} ({o.events} events, from v{o.version})")
                elif o.status == "needed":
                    echo(f"needs migration: {o.source} (v{o.version})")
                for w in o.warnings:
                    echo(f"dshlog: warning: {w}", sys.stderr)
    finally:
        if progress is not None:
            progress.stop()
    counts = {k: sum(1 for o in outcomes if o.status == k) for k in ("migrated", "current", "needed", "would-migrate", "failed")}
    if json_:
        _json({"shape": JSON_SHAPE, "sessions": [o.as_dict() for o in outcomes], "summary": counts})
    else:
        print(
            f"{counts['migrated']} migrated, {counts['current']} skipped (already v4), {counts['failed']} failed"
            + (f", {counts['needed']} need migration" if check else "")
            + (f", {counts['would-migrate']} would migrate" if dry_run else ""),
            file=sys.stderr,
        )
    failed = [o.exit_code for o in outcomes if o.status == "failed"]
    if failed:
        raise typer.Exit(int(max(failed)))
    if check and counts["needed"]:
        raise typer.Exit(int(ExitCode.PENDING))


# ----------------------------------------------------------------------------- sessions: ls, stats, tail


@app.command("ls")
def ls_(
    root: Annotated[Optional[str], typer.Argument(metavar="ROOT", help="Persistence root (default: $DSH_HOME/sessions, DSH_HOME defaulting to ~/.dsh).")] = None,
    sort: Annotated[str, typer.Option("--sort", metavar="KEY", help="time (last activity), size, id or turns.")] = "time",
    reverse: Annotated[bool, typer.Option("--reverse", help="Reverse the order.")] = False,
    cwd: Annotated[Optional[str], typer.Option("--cwd", metavar="PATH", help="Only sessions of this project directory.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", metavar="WHEN", help="Only sessions active since a date (2026-11-01) or for a duration back (3d, 12h).")] = None,
    grep: Annotated[Optional[str], typer.Option("--grep", metavar="TEXT", help="Only sessions whose user or assistant messages contain TEXT (case-insensitive).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="NDJSON: one object per session.")] = False,
) -> None:
    """One row per session: id, title, project directory, generation, size, turns, last activity, parent/children.

    Example: dshlog ls --cwd . --since 3d --grep 'migration'
    """
    import os
    from pathlib import Path

    from .ops.sessions import grep_session
    from .read.store import default_root, list_sessions, parse_since, project_key, sort_entries

    root_p = Path(root) if root is not None else default_root()
    project = project_key(os.path.abspath(cwd)) if cwd is not None else None
    since_ms = parse_since(since) if since is not None else None
    entries = list_sessions(root_p, project=project)
    if since_ms is not None:
        entries = [e for e in entries if (e.last_activity or 0) >= since_ms]
    if grep is not None:
        entries = [e for e in entries if e.path is not None and grep_session(e.path, grep)]
    entries = sort_entries(entries, sort, reverse=reverse)
    if json_:
        for e in entries:
            _json(e.as_dict(), pretty=False)
        return
    for e in entries:
        if e.error:
            echo(f"dshlog: {e.dir}: {e.error}", sys.stderr)

    def links(e: Any) -> str:
        bits = []
        if e.parent:
            bits.append(f"parent {e.parent}" + (" (subagent)" if e.origin == "subagent" else ""))
        if e.children:
            bits.append(f"children {', '.join(e.children)}")
        return "; ".join(bits)

    table(
        None,
        ["id", "title", "cwd", "generation", "size", "turns", "last activity", "links"],
        (
            [e.id, e.title or "", e.cwd or "", f"{e.path.name} v{e.version}" if e.path else "-", human_bytes(e.size), e.turns, local_minutes(e.last_activity), links(e)]
            for e in entries
        ),
        justify={4: "right", 5: "right"},
    )


@app.command()
def stats(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="FILE...", help="Session logs (paths, directories, session ids; default: the current session).")] = None,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Per session and in total: turns, steps, model calls, retries, cancellations, tools with errors, tokens per model, time.

    Time is first to last event; test-snapshot projections carry time 0 and show no duration.

    Example: dshlog stats ~/.dsh/sessions/--home-ann-p--/*/ --json | jq .total.tokensByModel
    """
    from .model.stats import session_stats, total_stats
    from .model.summary import summarize

    sessions = []
    for f in files or [None]:
        log = _open(f, strict=False, select=select, format_version=format_version)
        with log:
            s = summarize(log.stored_runs())
            sessions.append({"path": log.path, "id": log.session_id, "version": log.version, "projection": log.projection, **session_stats(s, projection=log.projection)})
            _notes(log, quiet=json_)
    total = total_stats(sessions)
    if json_:
        _json({"shape": JSON_SHAPE, "sessions": sessions, "total": total})
        return

    def row(name: str, d: dict[str, Any]) -> list[Any]:
        tools = sum(c["calls"] for c in d["toolCalls"].values())
        errors = sum(c["errors"] for c in d["toolCalls"].values())
        tokens = d["tokens"]
        timed = d.get("timed", True)
        return [name, d["turns"], d["steps"], d["modelCalls"], d["retries"], d["cancellations"], f"{tools} ({errors} err)",
                tokens.get("inputTokens", 0), tokens.get("outputTokens", 0), human_duration(d["durationMs"]) if timed else "-"]

    rows = [row(str(s["id"] or s["path"]), s) for s in sessions]
    if len(sessions) > 1:
        rows.append(row("total", total))
    table(None, ["session", "turns", "steps", "calls", "retries", "cancelled", "tools", labels.token_name("inputTokens"), labels.token_name("outputTokens"), "time"], rows,
          justify={i: "right" for i in range(1, 10)})
    if total["toolCalls"]:
        table("tool calls", ["tool", "calls", "errors"], ([n, c["calls"], c["errors"]] for n, c in total["toolCalls"].items()), justify={1: "right", 2: "right"})
    if total["tokensByModel"]:
        keys = sorted({k for u in total["tokensByModel"].values() for k in u})
        table("tokens by model", ["model", *map(labels.token_name, keys)], ([m, *(u.get(k, 0) for k in keys)] for m, u in total["tokensByModel"].items()),
              justify={i + 1: "right" for i in range(len(keys))})


def _event_line(ev: dict, raw: bytes | None, json_: bool) -> bytes:
    """One event the way ``events`` prints it (``--json``: its exact line when there is one)."""
    from .protocol.jsjson import dumps

    if json_:
        return (raw if raw is not None else dumps(ev)) + b"\n"
    return event_line(ev)


@app.command()
def tail(
    file: FileArg = None,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing events as dsh appends them (Ctrl-C to stop).")] = False,
    lines: Annotated[int, typer.Option("-n", "--lines", metavar="N", help="How many of the last events to print first.")] = 10,
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS", help="With -f: how often to look for new events.")] = 0.25,
    json_: JsonOpt = False,
    format_version: FormatOpt = None,
) -> None:
    """The last N events, printed as `events` prints them; with -f, follow a live session (plain or .zstd).

    A line or frame still being written is shown only once it is complete.

    Example: dshlog tail -f -n 20
    """
    from collections import deque

    from .errors import UsageError

    if lines < 0:
        raise UsageError("-n must be 0 or more")
    write = sys.stdout.buffer.write
    if not follow:
        log = _open(file, strict=False, format_version=format_version)
        with log:
            last: deque = deque((), maxlen=lines)
            for r in log.stored():
                last.append(_event_line(r.event, r.raw, json_))
            for b in last:
                write(b)
            _notes(log)
        return

    from .errors import Location
    from .protocol.jsjson import JsonError, loads
    from .read.follow import Follower
    from .check.problems import Problems
    from .read.rows import RowDecoder
    from .read.session import open_session

    target = _resolve(file)
    if target == "-":
        raise UsageError("tail -f needs a file: standard input cannot be followed")
    with open_session(target, strict=False, format_version=format_version) as log:  # header, version, container
        path, version, container = log.path, log.version, log.info.container
    if container not in ("jsonl", "jsonl.zstd"):
        raise UsageError(f"tail -f follows JSONL generations; this input is {container}", path=path)
    decoder = RowDecoder(version, path, strict=False, notes=Problems())
    fol = Follower(path, poll_interval=interval)
    state = {"header": True, "line": 0}

    def decode(raw: bytes) -> list[bytes]:
        state["line"] += 1
        if state["header"]:
            state["header"] = False
            try:
                obj = loads(raw)
            except JsonError:
                obj = None
            if isinstance(obj, dict) and obj.get("type") == "session":
                return []
        try:
            obj = loads(raw)
        except JsonError:
            echo(f"dshlog: {path}: line {state['line']}: unparsable committed line skipped", sys.stderr)
            return []
        evs = decoder.decode(obj, Location(line=state["line"]))
        return [_event_line(ev, raw if len(evs) == 1 and ev is obj else None, json_) for ev in evs]

    try:
        last = deque((), maxlen=lines)
        for raw in fol.drain():
            last.extend(decode(raw))
        for b in last:
            write(b)
        sys.stdout.flush()
        for raw in fol.follow():
            for b in decode(raw):
                write(b)
            sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stdout.flush()
        return


# ----------------------------------------------------------------------------- reading and sharing: show, export, diff


@app.command()
def show(
    file: FileArg,
    full: Annotated[bool, typer.Option("--full", help="Show tool output, arguments and system prompts untrimmed.")] = False,
    reasoning: Annotated[bool, typer.Option("--reasoning", help="Unfold the model's reasoning.")] = False,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print directly instead of through a pager on a terminal.")] = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The conversation as a person reads it: turns, messages, tool calls and results, retries, cancellations.

    On a terminal the transcript is styled and shown through a pager ($PAGER, default less); piped, it is
    plain text. Older logs are migrated to v4 in memory first (nothing is written).

    Example: dshlog show session.v4.jsonl --reasoning
    """
    import os

    log = _open(file, select=select, format_version=format_version)
    with log:
        head = SessionHead(log.session_id, log.version, log.path, log.projection)
        try:
            if on_terminal():
                con = console()
                if sys.stdout.isatty() and not no_pager:
                    os.environ.setdefault("LESS", "-FRX")  # colours through less; quit at once when it fits
                    with con.pager(styles=use_color()):
                        render(log.v4(), head, TerminalRenderer(con, reasoning=reasoning), full=full)
                else:
                    render(log.v4(), head, TerminalRenderer(con, reasoning=reasoning), full=full)
            else:
                render(log.v4(), head, PlainRenderer(sys.stdout.buffer.write, reasoning=reasoning), full=full)
        except DshlogError as exc:
            raise _located(log, exc)
        _notes(log)


@app.command()
def export(
    file: FileArg,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="md|html|json", help="md (readable as plain text), html (one self-contained file) or json (versioned shape).")] = "md",
    out: Annotated[Optional[str], typer.Option("-o", "--output", metavar="OUT", help="Write to OUT (atomically; never overwrites) instead of stdout.")] = None,
    redact: Annotated[bool, typer.Option("--redact", help="Mask API keys, tokens, JWTs, passwords and e-mail addresses everywhere.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Do not trim long tool output, arguments and system prompts.")] = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """A transcript to share: Markdown, a self-contained HTML page, or JSON.

    The HTML file loads nothing from anywhere (inline CSS, no scripts); tool output and reasoning fold.

    Example: dshlog export session.v4.jsonl --format html --redact -o session.html
    """
    import os

    from .errors import UsageError
    from .ops.export import export_to_file

    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r} (choose {', '.join(FORMATS)})")
    log = _open(file, select=select, format_version=format_version)
    with log:
        facts = session_facts(log.v4().header, path=os.path.basename(log.path), version=log.version)
        head = SessionHead(log.session_id, log.version, log.path, log.projection, facts)
        try:
            if out is None:
                deferred = _DeferredStdout()
                with log.v4() as view:  # dsh's decision on the whole log before anything is written
                    write_export(view, head, fmt, deferred.write, full=full, redact=redact)
                deferred.release()
            else:
                target, warnings = export_to_file(log, head, fmt, out, full=full, redact=redact)
                for w in warnings:
                    echo(f"dshlog: warning: {w}", sys.stderr)
                echo(f"written: {target}", sys.stderr)
        except DshlogError as exc:
            raise _located(log, exc)
        _notes(log)


@app.command()
def diff(
    files: Annotated[list[str], typer.Argument(metavar="FILE [FILE_B]", help="One log (compare two of its requests) or two logs (compare request N of each).")],
    request: Annotated[list[int], typer.Option("--request", "-r", metavar="N", help="Request number (1-based); give two for one file, one (or two) for two files.")] = [],
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """What changed between two requests: config, tools, messages added/removed/replaced, where the byte prefix broke.

    Example: dshlog diff session.v4.jsonl --request 5 --request 6
    """
    from .errors import UsageError

    if len(files) == 1:
        if len(request) != 2:
            raise UsageError("with one FILE give exactly two --request options (e.g. --request 3 --request 4)")
        log = _open(files[0], select=select, format_version=format_version)
        with log:
            try:
                with log.v4() as view:
                    built = requests_at(view, list(request), session_id=log.session_id)
            except DshlogError as exc:
                raise _located(log, exc)
            req_a, req_b = built[request[0]], built[request[1]]
            label_a, label_b = f"request {request[0]}", f"request {request[1]}"
            _notes(log)
    elif len(files) == 2:
        if len(request) not in (1, 2):
            raise UsageError("with two files give --request N (or one --request per file)")
        numbers = [request[0], request[-1]]
        reqs = []
        for f, n in zip(files, numbers):
            log = _open(f, select=select, format_version=format_version)
            with log:
                try:
                    with log.v4() as view:
                        reqs.append(requests_at(view, [n], session_id=log.session_id)[n])
                except DshlogError as exc:
                    raise _located(log, exc)
                _notes(log)
        req_a, req_b = reqs
        label_a, label_b = f"{files[0]} request {numbers[0]}", f"{files[1]} request {numbers[1]}"
    else:
        raise UsageError("give one FILE with two --request options, or two files")
    d = diff_requests(req_a, req_b)
    if json_:
        _json({"shape": JSON_SHAPE, **diff_document(d, label_a, label_b)})
        return
    for line in diff_lines(d, label_a, label_b):
        echo(line)


# ----------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and map errors to exit codes, one line each."""
    try:  # Typer >= 0.24 vendors its own click
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover
        from click.exceptions import ClickException

    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        rv = app(args=args, prog_name="dshlog", standalone_mode=False)
        # without standalone mode, an Exit raised inside a command comes back as its code
        code = rv if isinstance(rv, int) else 0
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        print("dshlog: aborted", file=sys.stderr)
        code = 130
    except ClickException as exc:
        exc.show()
        code = ExitCode.USAGE
    except DshlogError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        echo(f"dshlog: {exc.one_line()}", sys.stderr)
        code = exc.exit_code
    except BrokenPipeError:
        # the reader of our stdout went away (| head): not an error
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        code = 0
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        echo(f"dshlog: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", sys.stderr)
        code = ExitCode.INTERNAL
    sys.stdout.flush() if not sys.stdout.closed else None
    sys.exit(int(code or 0))


if __name__ == "__main__":  # pragma: no cover
    main()
