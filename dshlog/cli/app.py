"""The root of the command line: the app, its lazily loaded commands, and the one place
where outcomes become exit codes.

Each command lives in its own module of this package and is imported only when it
runs (or when help lists it), so a command pays at start-up for its own imports
alone: a reading command never loads the writers, the migration chain or rich.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:  # the installed Typer vendors its own click
    from typer._click.exceptions import ClickException
else:
    try:  # Typer >= 0.24 vendors its own click
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover
        from click.exceptions import ClickException

from .._version import __version__
from ..errors import DshlogError, ExitCode
from ..output.plain import echo
from ..read.container import DEFAULT_MAX_LINE_BYTES, LINE_LIMIT
from .common import ROOT_OPTIONS

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


class LazyCommands(TyperGroup):
    """A group that imports a command's module only when the command is looked up."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

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
    debug: Annotated[bool, typer.Option("--debug", help="Show a traceback on errors.")] = False,
    system_prompt_plugin: Annotated[list[str], typer.Option(
        "--system-prompt-plugin", metavar="NAME",
        help="A package name to migrate as dsh's system-prompt producer besides @deepseek-ai/dsh-system-prompt, "
        "as the fork build that wrote the log does (e.g. @x1a0f3n9/dsh-system-prompt); repeatable. "
        "Default: upstream dsh's mapping, where any other name becomes a plugin:<name> source.")] = [],
    max_line_size: Annotated[int, typer.Option(
        "--max-line-size", metavar="MIB", min=1,
        help="The longest line (decoded) any reader accepts, in MiB; a longer one is refused with exit 3 "
        "naming the line. It bounds memory against huge lines and decompression bombs.")] = DEFAULT_MAX_LINE_BYTES >> 20,
) -> None:
    """Inspect and repair DeepSeek Harness session logs from outside dsh.

    Example: dshlog info ~/.dsh/sessions/--home-ann-p--/<id>/session.v4.jsonl
    """
    if version:
        print(f"dshlog {__version__}")
        raise typer.Exit(0)
    ROOT_OPTIONS["system_prompt_plugins"] = tuple(system_prompt_plugin)
    LINE_LIMIT.set(max_line_size << 20)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and map errors to exit codes, one line each."""
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
            traceback.print_exc()
        echo(f"dshlog: {exc.one_line()}", sys.stderr)
        code = exc.exit_code
    except BrokenPipeError:
        # the reader of our stdout went away (| head): not an error
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        code = 0
    except KeyboardInterrupt:
        code = 130
    except MemoryError:  # the system refused memory (a ulimit, a huge value): say so, not "internal error"
        if debug:
            raise
        echo("dshlog: io: out of memory (lower --max-line-size, or allow the process more memory)", sys.stderr)
        code = ExitCode.IO
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            raise
        echo(f"dshlog: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)", sys.stderr)
        code = ExitCode.INTERNAL
    sys.stdout.flush() if not sys.stdout.closed else None
    sys.exit(int(code or 0))

