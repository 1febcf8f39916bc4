"""The ``dshlog`` command line: options in, core calls, rendering out.

No log logic lives here.  Every command opens its input through
:func:`dshlog.session.open_session`, calls the core, and renders.  Errors from the
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
    str,
    typer.Argument(
        metavar="FILE",
        help="Session log: a generation file (.jsonl, .jsonl.zstd), a session directory, a JSON array or wrapped "
        "event stream, or - for standard input.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
SelectOpt = Annotated[
    Optional[str],
    typer.Option("--select", metavar="ID", help="Which session of a multi-session input (wrapped streams, behavior.json)."),
]
FormatOpt = Annotated[
    Optional[int],
    typer.Option("--format-version", metavar="N", help="Stored format version of a header-less input (default: detected)."),
]

JSON_SHAPE = 1  # bump when a --json shape changes incompatibly


def _out(data: bytes) -> None:
    sys.stdout.buffer.write(data)


def _json(obj: Any, pretty: bool = True) -> None:
    from .jsjson import dumps, dumps_pretty

    _out((dumps_pretty(obj) if pretty else dumps(obj)) + b"\n")


def _js(v: Any) -> str:
    from .jsjson import dumps

    return dumps(v).decode("utf-8", "replace")


def _notes(log: Any, quiet: bool = False) -> None:
    """Deviations noticed while reading go to stderr, never to stdout."""
    if quiet:
        return
    for n in log.notes:
        if n.severity == "info":
            continue
        where = n.where()
        print(f"dshlog: {log.path}: {where + ': ' if where else ''}{n.code}: {n.message}", file=sys.stderr)
    for code, extra in log.notes.suppressed().items():
        print(f"dshlog: {log.path}: {code}: {extra} more not shown", file=sys.stderr)


def _open(target: str, *, strict: bool = True, select: str | None = None, format_version: int | None = None):
    from .session import open_session

    return open_session(target, strict=strict, select=select, format_version=format_version)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True)] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback on errors.")] = False,
) -> None:
    """Inspect and repair DeepSeek Harness session logs from outside dsh.

    Example: dshlog info ~/.dsh/sessions/--home-ann-p--/<id>/session.v4.jsonl
    """
    if version:
        print(f"dshlog {__version__}")
        raise typer.Exit(0)


# ----------------------------------------------------------------------------- events


@app.command()
def events(
    file: FileArg,
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
    from .jsjson import dumps
    from .render import describe, surface_marker

    log = _open(file, strict=False, select=select, format_version=format_version)
    with log:
        if v4:
            source = ((ev, None) for ev in log.events())
        else:
            source = ((r.event, r.raw) for r in log.records())
        current_turn = None
        write = sys.stdout.buffer.write
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
            if json_:
                write((raw if raw is not None else dumps(ev)) + b"\n")
            else:
                marker = surface_marker(ev)
                line = f"{seq} {t}"
                if marker:
                    line += f" {marker}"
                desc = describe(ev)
                if desc:
                    line += f" {desc}"
                write(line.encode("utf-8", "surrogatepass") + b"\n")
        _notes(log)


# ----------------------------------------------------------------------------- info


@app.command()
def info(file: FileArg, json_: JsonOpt = False, select: SelectOpt = None, format_version: FormatOpt = None) -> None:
    """Header fields, version, generation, counts by event type, turns, steps, model calls, tokens, sizes.

    Example: dshlog info session.v4.jsonl --json | jq .summary.tokens
    """
    from .render import human_bytes, table
    from .summary import summarize

    log = _open(file, strict=False, select=select, format_version=format_version)
    with log:
        s = summarize(log.stored_events())
        doc = {
            "shape": JSON_SHAPE,
            "path": log.path,
            "container": log.info.container,
            "version": log.version,
            "projection": log.is_projection,
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
        print(f"file        {log.path}")
        print(f"container   {log.info.container}" + (f", {log.info.frames} frames" if log.info.container == "jsonl.zstd" else ""))
        print(f"version     v{log.version}" + ("  (test-snapshot projection: no seq/time)" if log.is_projection else ""))
        if h:
            print("header      " + ", ".join(f"{k}={v if isinstance(v, str) else _js(v)}" for k, v in h.items() if k != "type"))
        else:
            print("header      (none)")
        print(f"size        {human_bytes(log.info.size_on_disk)} on disk, {human_bytes(log.info.decoded_bytes)} decoded")
        if log.info.torn:
            print(f"torn tail   {log.info.torn.length} bytes ignored")
        if s.title:
            print(f"title       {s.title}")
        print(f"events      {s.events}" + (f" (seq {s.first_seq}..{s.last_seq})" if s.events else ""))
        print(f"turns       {s.turns}" + (" (last turn open)" if s.turns_open else ""))
        print(f"steps       {s.steps}")
        print(f"model calls {s.model_calls} ({s.attempts} without surface message, {s.interrupted} interrupted)")
        if s.tokens:
            print("tokens      " + ", ".join(f"{k} {v}" for k, v in s.tokens.items()))
        table("events by type", ["type", "count"], sorted(s.by_type.items(), key=lambda kv: (-kv[1], str(kv[0]))), justify={1: "right"})
        _notes(log)


# ----------------------------------------------------------------------------- validate


@app.command()
def validate(
    files: Annotated[list[str], typer.Argument(metavar="FILE...", help="Session logs to check (paths, directories or -).")],
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Every check a released dsh reader makes; reports every problem with its location. Never writes.

    Exit 0 when clean (warnings allowed), 4 when damaged, 3 when the format is newer than dsh's.

    Example: dshlog validate ~/.dsh/sessions/*/*/
    """
    from .validation import validate_log

    worst = ExitCode.OK
    reports = []
    for f in files:
        report = validate_log(f, select=select, format_version=format_version)
        reports.append(report)
        worst = max(worst, report.exit_code)
        if not json_:
            for p in report.problems:
                print(f"{report.path}: {p.where + ': ' if p.where else ''}{p.severity}: {p.code}: {p.message}")
            status = "ok" if report.exit_code == ExitCode.OK else ("unsupported" if report.exit_code == ExitCode.UNSUPPORTED else "damaged")
            print(f"{report.path}: {status} (v{report.version if report.version is not None else '?'}, {report.events} events, "
                  f"{report.count('error')} errors, {report.count('warning')} warnings)", file=sys.stderr)
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
    file: FileArg,
    at: Annotated[Optional[int], typer.Option("--at", metavar="SEQ", help="Fold only the prefix up to and including this seq.")] = None,
    messages: Annotated[bool, typer.Option("--messages", help="With --json, include the derived messages.")] = False,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The model view: surface nodes (seq, type, role, preview), derived roles, and replacements.

    Older logs are migrated to v4 in memory first (nothing is written).

    Example: dshlog surface session.v4.jsonl --at 15
    """
    from .surface import fold

    log = _open(file, select=select, format_version=format_version)
    with log:
        try:
            state = fold(log.events(), until_seq=at)
        except DshlogError as exc:
            raise _located(log, exc)
        if at is not None and state.next_seq <= at:
            from .errors import UsageError

            raise UsageError(f"seq {at} does not exist: the log ends at seq {state.next_seq - 1}", path=log.path)
        nodes = state.node_info()
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
        from .render import table

        table(None, ["seq", "type", "role", "preview"], ([n["seq"], n["type"], (n["role"] or "") + (" (empty)" if n["empty"] else ""), n["preview"]] for n in nodes), justify={0: "right"})
        print(f"nodes: {[n['seq'] for n in nodes]}")
        print(f"roles: {', '.join(str(r) for r in roles)}")
        for r in state.replacements:
            print(f"replacement: seq {r['seq']} replaced {r['start']}..{r['end']} (shadowed {', '.join(map(str, r['shadowedSeqs']))})")
        _notes(log)


@app.command()
def rebuild(
    file: FileArg,
    request: Annotated[int, typer.Option("--request", "-r", metavar="N", help="Request number (1-based; the N-th settlement).")],
    messages_only: Annotated[bool, typer.Option("--messages-only", help="Only the messages array.")] = False,
    compact: Annotated[bool, typer.Option("--compact", help="One line of compact JSON instead of 2-space indentation.")] = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """The exact request dsh sent, rebuilt from the log alone, as dsh's JSON.

    Request N is the one settled by the N-th assistant/message or assistant/attempt, built from the events before it.

    Example: dshlog rebuild session.v4.jsonl --request 3 --messages-only
    """
    from .requests import rebuild as rebuild_request

    log = _open(file, select=select, format_version=format_version)
    with log:
        try:
            req = rebuild_request(log.events(), request, session_id=log.session_id)
        except DshlogError as exc:
            raise _located(log, exc)
        _json(req["messages"] if messages_only else req, pretty=not compact)
        _notes(log)


@app.command()
def requests(
    file: FileArg,
    json_: JsonOpt = False,
    select: SelectOpt = None,
    format_version: FormatOpt = None,
) -> None:
    """Every request in one table: settlement, message count, prefix reuse and why it broke, tokens.

    "extends" says whether the request starts with the previous request's messages byte for byte, which is
    what a provider's prefix cache needs; when it does not, "reason" says why.

    Example: dshlog requests session.v4.jsonl --json | jq '.requests[] | select(.extends == false)'
    """
    from .requests import iter_requests

    log = _open(file, select=select, format_version=format_version)
    with log:
        rows = []
        try:
            for info in iter_requests(log.events(), session_id=log.session_id):
                rows.append(info)
        except DshlogError as exc:
            raise _located(log, exc)
        if json_:
            _json(
                {
                    "shape": JSON_SHAPE,
                    "requests": [
                        {
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
                        for r in rows
                    ],
                }
            )
            return
        from .render import table

        table(
            None,
            ["#", "seq", "settled as", "turn.step", "msgs", "extends", "why not", "in", "out"],
            (
                [
                    r.number,
                    r.seq,
                    r.kind.split("/")[1] + (" (interrupted)" if r.interrupted else ""),
                    f"{r.turn}.{r.step}",
                    r.message_count,
                    "-" if r.extends is None else ("yes" if r.extends else "no"),
                    r.reason or "",
                    r.input_tokens,
                    r.output_tokens,
                ]
                for r in rows
            ),
            justify={0: "right", 1: "right", 4: "right", 7: "right", 8: "right"},
        )
        _notes(log)


# ----------------------------------------------------------------------------- writing commands


def _closer_lines(closers: list[dict]) -> list[str]:
    from .render import describe

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
    file: FileArg,
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
    from .repair import plan_repair, repair_copy, repair_in_place

    if write and out:
        raise UsageError("choose either --write (in place) or -o OUT (a repaired copy)")
    if write:
        result = repair_in_place(file)
    elif out:
        from pathlib import Path

        result = repair_copy(file, Path(out), select=select, format_version=format_version)
    else:
        from .repair import RepairResult

        result = RepairResult(plan_repair(file, select=select, format_version=format_version))
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
                "written": result.written,
                "sidecar": result.sidecar,
            }
        )
    else:
        rep = plan.report
        if plan.healthy:
            print(f"{plan.path}: healthy: the last turn is closed ({plan.event_count} events)" + (f"; a torn tail of {plan.torn_bytes} bytes is ignored" if plan.torn_bytes else ""))
        else:
            pend = ", ".join(f"{c.call_id} ({'started' if c.started else 'not started'})" for c in rep.pending) or "none"
            print(f"{plan.path}: open tail: turn {rep.open_turn}" + (f", step {rep.open_step}" if rep.open_step is not None else "") + f"; unanswered tool calls: {pend}")
            if plan.torn_bytes:
                print(f"torn tail: {plan.torn_bytes} bytes after the last complete line")
            print(("appended:" if result.written else "would append:"))
            for line in _closer_lines(plan.closers):
                print(f"  {line}")
            if result.written:
                print(f"written: {result.written}" + (" (in place)" if result.in_place else ""), file=sys.stderr)
            if result.sidecar:
                print(f"torn bytes kept in {result.sidecar}", file=sys.stderr)
            elif not write and not out:
                print("nothing written; use --write to repair in place or -o OUT for a repaired copy", file=sys.stderr)
    if check and not plan.healthy:
        raise typer.Exit(int(ExitCode.PENDING))


@app.command()
def fork(
    file: FileArg,
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
    from pathlib import Path

    from .errors import UsageError
    from .fork import write_fork

    if at is not None and at_turn is not None:
        raise UsageError("choose either --at SEQ or --at-turn N")
    result = write_fork(file, out, at=at, turn=at_turn, child_id=child_id, select=select, format_version=format_version)
    if json_:
        _json({"shape": JSON_SHAPE, **result})
        return
    print(f"{result['path']}: child {result['childId']} of {result['parentId']}: {result['events']} events "
          f"(parent prefix 0..{result['at']}, marker at {result['at'] + 1}, {len(result['closers'])} closers)")
    for line in _closer_lines(result["closers"]):
        print(f"  {line}")


@app.command()
def migrate(
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="Session files, session directories, or roots to walk (--recursive).")],
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
    from .migrate.publish import find_sessions, migrate_session

    sources = list(find_sessions(paths, recursive=recursive))
    outcomes = []
    progress = None
    if len(sources) > 1 and sys.stderr.isatty() and not json_:
        from rich.progress import Progress

        from .render import console

        progress = Progress(console=console(stderr=True), transient=True)
        task = progress.add_task("migrating", total=len(sources))
        progress.start()
    try:
        for src in sources:
            o = migrate_session(src, check=check, dry_run=dry_run, children="none" if no_children else "auto")
            outcomes.append(o)
            if progress is not None:
                progress.advance(task)
            if not json_:
                if o.status == "failed":
                    print(f"dshlog: {o.error}", file=sys.stderr)
                elif o.status == "migrated":
                    print(f"migrated {o.source} -> {o.target} ({o.events} events)")
                elif o.status == "would-migrate":
                    print(f"would publish {o.target} ({o.events} events, from v{o.version})")
                elif o.status == "needed":
                    print(f"needs migration: {o.source} (v{o.version})")
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
        print(f"dshlog: {exc.one_line()}", file=sys.stderr)
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
        print(f"dshlog: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", file=sys.stderr)
        code = ExitCode.INTERNAL
    sys.stdout.flush() if not sys.stdout.closed else None
    sys.exit(int(code or 0))


if __name__ == "__main__":  # pragma: no cover
    main()
