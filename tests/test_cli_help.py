"""Every command documents itself: --help works and shows a real example; errors are one line."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, run_env, run_process
from dshlog.cli import COMMANDS as REGISTRY

COMMANDS = sorted(REGISTRY)


def test_every_core_command_is_registered():
    for name in ("events", "info", "validate", "surface", "rebuild", "requests", "repair", "fork", "migrate"):
        assert name in COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_an_example(name):
    code, out, err = run_env(name, "--help")
    assert code == 0, err
    text = out.decode()
    assert "Example:" in text and "dshlog " + name.rstrip("_") in text.split("Example:", 1)[1]


def test_version_and_errors_are_one_line(tmp_path):
    code, out, _ = run_env("--version")
    assert code == 0 and out.startswith(b"dshlog ")
    missing = tmp_path / "missing.jsonl"
    code, out, err = run_env("info", str(missing))
    assert code == 6 and err.count(b"\n") == 1 and b"Traceback" not in err and str(missing).encode() in err


def test_debug_shows_traceback(tmp_path):
    bad = tmp_path / "session.v4.jsonl"
    # a damaged row a later turn/end proves committed (dsh holds one after the last turn/end as a torn tail)
    bad.write_bytes(b'{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}\n{oops\n'
                    b'{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    code, _, err = run_env("surface", str(bad))
    assert code == 4 and b"Traceback" not in err and b"line 2" in err
    code, _, err = run_env("--debug", "surface", str(bad))
    assert code == 4 and b"Traceback" in err


def test_shell_completion_completes_commands():
    env = {"_DSHLOG_COMPLETE": "complete_bash", "COMP_WORDS": "dshlog sur", "COMP_CWORD": "1"}
    out = run_process(script=True, env=env, check=True, timeout=None)  # the console script: Click names it dshlog
    assert out.stdout.split() == [b"surface"]


HEAVY_MODULES = ("pydantic", "rich", "ijson", "zstandard", "hypothesis", "textual", "markdown_it", "pygments")


def imported(*args: str) -> list[str]:
    """Every module ``dshlog ARGS`` imports, in a fresh process (``python -X importtime``: one stderr line each)."""
    done = run_process(*args, python=("-X", "importtime"), text=True, timeout=60)
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert len(lines) > 1, done.stderr[-2000:]  # the header and the modules
    return [line.rsplit("|", 1)[1].strip() for line in lines[1:]]


@pytest.mark.parametrize("command", ["info", "validate", "events", "surface"])
def test_reading_commands_stay_light(command):
    """Start-up is part of every command's time (a fifth of the parse floor of a 120 MB log
    when typer pulled in pydantic): a plain-JSONL reading command imports none of the heavy
    modules it does not use."""
    log = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    assert sorted(m for m in HEAVY_MODULES if m in imported(command, str(log))) == []


#: What a plain-JSONL v4 read has no use for: the chain (an older log), a spool (a stream), pickle (a helper's failure).
V4_UNUSED_MODULES = ("dshlog.migrate", "tempfile", "pickle")


@pytest.mark.parametrize("command", ["info", "validate", "events", "surface", "stats", "requests"])
def test_a_v4_read_loads_no_migration_nor_spool(command):
    """A v4 log is its stored events: reading one loads neither the migration chain nor what only a stream or a pool uses."""
    log = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    found = imported(command, str(log))
    assert sorted(m for m in V4_UNUSED_MODULES if m in found) == []


@pytest.mark.parametrize("argv", [["export", "-f", "md"], ["export", "-f", "json"], ["show"], ["stats"], ["requests"]])
def test_only_browse_imports_textual(argv):
    """Textual is browse's alone and Markdown-to-HTML the HTML export's: no other command pays for them."""
    log = str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")
    found = imported(argv[0], log, *argv[1:])
    assert sorted(m for m in ("textual", "markdown_it", "pygments", "dshlog.browse") if m in found) == []
