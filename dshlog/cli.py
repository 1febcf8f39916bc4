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
        app(args=args, prog_name="dshlog", standalone_mode=False)
        code = 0
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
