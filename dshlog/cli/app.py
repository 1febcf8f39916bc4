"""The root of the command line: the app, its lazily loaded commands, and the one place
where outcomes become exit codes.

Each command lives in its own module of this package and is imported only when it
runs (or when help lists it), so a command pays at start-up for its own imports
alone: a reading command never loads the writers, the migration chain or rich.
"""

from __future__ import annotations

import difflib
import errno
import importlib
import os
import sys
import traceback
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:  # the installed Typer vendors its own click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer._click.exceptions import UsageError as ClickUsageError
else:
    try:  # Typer >= 0.24 vendors its own click
        from typer._click.exceptions import ClickException, NoArgsIsHelpError
        from typer._click.exceptions import UsageError as ClickUsageError
    except ImportError:  # pragma: no cover
        from click.exceptions import ClickException, NoArgsIsHelpError
        from click.exceptions import UsageError as ClickUsageError

from .._version import __version__
from ..errors import DshlogError, ExitCode, InternalError, UnsupportedVersion
from ..fastpaths import mode, set_mode
from ..output.text import sanitize
from ..read.container import DEFAULT_MAX_LINE_BYTES, LINE_LIMIT
from .common import Run, current, out
from .env import Env

#: Every command, in the order help lists them, and the module (of this package) that defines it.
COMMANDS: dict[str, str] = {
    "events": "events",
    "info": "info",
    "validate": "validate",
    "surface": "surface",
    "rebuild": "rebuild",
    "requests": "requests",
    "repair": "repair",
    "fork": "fork",
    "migrate": "migrate",
    "ls": "ls",
    "stats": "stats",
    "report": "report",
    "search": "search",
    "tail": "tail",
    "show": "show",
    "export": "export",
    "diff": "diff",
    "browse": "browse",
    "rescue": "rescue",
}

#: Settings every command module's own Typer shares with the root.
COMMAND_SETTINGS: dict[str, Any] = {
    "rich_markup_mode": None,
    "pretty_exceptions_enable": False,
    "add_completion": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}


def command_app() -> typer.Typer:
    """The Typer a command module registers its one command on."""
    return typer.Typer(**COMMAND_SETTINGS)


class ClosedStdout(Exception):
    """The reader of stdout went away (``| head``): carried past Click, which would exit 1 on it."""


class LazyCommands(TyperGroup):
    """A group that imports a command's module only when the command is looked up."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if _closed_pipe(exc):
                raise ClosedStdout() from exc
            raise

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """As Click's, but a mistyped name is answered with the nearest command names.

        Typer's own suggestion looks only at the commands already loaded, which here
        (each command imported when it runs) is none of them.
        """
        try:
            return super().resolve_command(ctx, args)
        except ClickUsageError as exc:
            near = difflib.get_close_matches(args[0], list(COMMANDS), n=3) if args else []
            if near and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {' or '.join(repr(m) for m in near)}?"
            raise

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module = importlib.import_module(f"{__package__}.{COMMANDS[cmd_name]}")
            self.commands[cmd_name] = typer.main.get_command(module.app)
        return self.commands.get(cmd_name)


app = typer.Typer(
    name="dshlog",
    cls=LazyCommands,
    help="Inspect, validate, rebuild, repair, fork and migrate DeepSeek Harness (dsh) session logs.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True)] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback on errors (accepted anywhere on the line).")] = False,
    system_prompt_plugin: Annotated[list[str], typer.Option(
        "--system-prompt-plugin", metavar="NAME",
        help="A package name to migrate as dsh's system-prompt producer besides @deepseek-ai/dsh-system-prompt, "
        "as the fork build that wrote the log does (e.g. @x1a0f3n9/dsh-system-prompt); repeatable. "
        "Default: upstream dsh's mapping, where any other name becomes a plugin:<name> source.")] = [],
    max_line_size: Annotated[int, typer.Option(
        "--max-line-size", metavar="MIB", min=1,
        help="The longest line (decoded) any reader accepts, in MiB; a longer one is refused with exit 3 "
        "naming the line. It bounds memory against huge lines and decompression bombs.")] = DEFAULT_MAX_LINE_BYTES >> 20,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache",
        help="Read every log afresh and keep no cache of per-session results (report, stats, validate, "
        "info, surface, ls; dsh's decision before show and export) nor of an old log's proven v4 successor; also DSHLOG_NO_CACHE=1. The cache is in $XDG_CACHE_HOME/dshlog "
        "(~/.cache/dshlog), each entry checked against its file.")] = False,
) -> None:
    """Inspect and repair DeepSeek Harness session logs from outside dsh.

    Example: dshlog info ~/.dsh/sessions/--home-ann-p--/<id>/session.v4.jsonl
    """
    if version:
        out(f"dshlog {__version__}")
        raise typer.Exit(0)
    current().plugins = tuple(system_prompt_plugin)
    current().no_cache = no_cache
    LINE_LIMIT.set(max_line_size << 20)


def _split_debug(args: list[str]) -> tuple[list[str], bool]:
    """``--debug`` anywhere before ``--`` (after the subcommand too): taken out, and whether it was there."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != "--debug"] + args[end:]
    return kept, len(kept) != len(args)


def _usage_line(exc: ClickException) -> str:
    """A Click usage error as one ``dshlog: usage:`` line naming the command's help."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "dshlog"
    msg = " ".join(exc.format_message().split())
    return f"dshlog: usage: {msg[:1].lower() + msg[1:]} (see '{where} -h')"


def _quiet_stdout(env: Env) -> None:
    """After the reader of stdout went away: point the descriptor at /dev/null so no late flush fails."""
    if not env.process:
        return
    try:
        fd = env.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _bug(exc: InternalError) -> Exception:
    """What a library boundary wrapped (a bug, or the system out of memory), to be reported as itself.

    The operations a command calls are the library's entry points, whose boundary
    turns any other exception into an :class:`InternalError`; the command line
    says a bug the one way it always has (and a lack of memory as exit 6).
    """
    cause = exc.__cause__
    if isinstance(cause, Exception) and not isinstance(cause, DshlogError):
        return cause
    return exc


def _closed_pipe(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


def main(argv: list[str] | None = None, env: Env | None = None) -> int:
    """Run one command line in ``env`` (the process's, by default); return its exit code (an :class:`ExitCode`, or 130).

    This is the one place where outcomes become exit codes and one-line messages:

    * a project error prints ``dshlog: <kind>: <where>: <message>`` and exits with its code;
    * a usage error (ours or the parser's) is one ``dshlog: usage:`` line, exit 2;
    * a reader that printed what it could exits with the worst code of what its
      notes reported (:meth:`Run.note_outcome`), with no second error line;
    * a closed stdout (``| head``) is normal: nothing more is written, exit 0;
    * Ctrl-C is 130; anything else is a bug, exit 1, one line unless ``--debug``.

    ``env.paths`` sets the fast paths' mode for the run (``dshlog.fastpaths``); the mode
    before it is restored after it, so a caller running many command lines (the tests) keeps its own.
    """
    env = env if env is not None else Env.from_process()
    before = mode()
    try:
        return _run(argv, env)
    finally:
        set_mode(before)


def _run(argv: list[str] | None, env: Env) -> int:
    """:func:`main`'s work, in the mode ``env.paths`` says."""
    args, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    run = Run(env, debug=debug)
    code: int
    try:
        try:
            if env.paths is not None:
                set_mode(env.paths)  # every fast path, or none (dshlog.fastpaths)
            with env.parser_output():  # --help is printed where the run's output goes
                rv = app(args=args, prog_name="dshlog", standalone_mode=False, obj=run)
            # without standalone mode, an Exit raised inside a command comes back as its code
            code = rv if isinstance(rv, int) else 0
        except typer.Exit as exc:
            code = exc.exit_code
        except InternalError as exc:
            raise _bug(exc)  # noqa: B904 - the bug itself, with its own traceback
        finally:
            if run.progress is not None:  # the progress line goes before the outcome is said
                run.progress.clear()
                run.progress = None
        if code == 0:
            code = run.worst
        env.stdout.flush()
    except typer.Abort:
        _message(env, "dshlog: aborted")
        code = 130
    except NoArgsIsHelpError as exc:
        # a bare `dshlog` (or a command given nothing): its help, formatted, as Click shows it
        _message(env, exc.format_message().rstrip("\n"), clean=False)
        code = ExitCode.USAGE
    except ClickException as exc:
        _message(env, _usage_line(exc) if isinstance(exc, ClickUsageError) else f"dshlog: usage: {exc.format_message()}")
        code = ExitCode.USAGE
    except DshlogError as exc:
        if debug:
            _message(env, traceback.format_exc().rstrip())
        if isinstance(exc, UnsupportedVersion) and "unknown event type" in exc.message:
            # before the error, so the error stays the last line (scripts read it there)
            _message(env, "dshlog: hint: surface, rebuild and requests read unknown event types as log-only with --allow-unknown")
        _message(env, f"dshlog: {exc.one_line()}")
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except MemoryError:  # the system refused memory (a ulimit, a huge value): say so, not "internal error"
        if debug:
            raise
        _message(env, "dshlog: io: out of memory (lower --max-line-size, or allow the process more memory)")
        code = ExitCode.IO
    except Exception as exc:
        if isinstance(exc, ClosedStdout) or _closed_pipe(exc):  # the reader of our stdout went away (| head): not an error
            _quiet_stdout(env)
            return ExitCode.OK
        if debug:
            raise
        _message(env, f"dshlog: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)")
        code = ExitCode.INTERNAL
    try:
        env.stdout.flush()
    except Exception as exc:
        if not _closed_pipe(exc):
            raise
        _quiet_stdout(env)
    code = int(code or 0)
    return ExitCode(code) if code in ExitCode._value2member_map_ else code


def _message(env: Env, line: str, *, clean: bool = True) -> None:
    """One line on stderr, sanitised, after whatever stdout holds (``clean=False``: dshlog's own text, its lines kept)."""
    try:
        env.stdout.flush()
    except Exception:  # noqa: BLE001 - stdout may be the closed pipe being reported
        pass
    env.stderr.write((sanitize(line) if clean else line).encode("utf-8", "replace") + b"\n")
    env.stderr.flush()
