"""Progress of the commands that read one log for long: how much of the file was read, on a terminal only."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_env
from dshlog.errors import ExitCode

LOG = FIXTURES / "v4" / "loop" / "session.v4.jsonl"

#: Each single-log command that may read for long, as it is typed (LOG and OUT stand for paths).
COMMANDS = {
    "export": ["export", "LOG"],
    "export-html": ["export", "LOG", "-f", "html", "-o", "OUT"],
    "export-json": ["export", "LOG", "-f", "json"],
    "requests": ["requests", "LOG"],
    "rebuild": ["rebuild", "LOG", "-r", "1"],
    "surface": ["surface", "LOG"],
    "show": ["show", "LOG"],
    "validate": ["validate", "LOG"],
    "rescue": ["rescue", "LOG"],
}

#: The counter line: ``\r<command>: <read>/<size> · <seconds>s``, then erased.
LINE = re.compile(rb"\r(export|requests|rebuild|surface|show|validate|rescue): \d+ kB/\d+ kB \xc2\xb7 \d+s\x1b\[K")


def _argv(name: str, tmp_path: Path) -> list[str]:
    log = tmp_path / "session.v4.jsonl"
    if not log.exists():
        shutil.copyfile(LOG, log)
    return [str(log) if a == "LOG" else str(tmp_path / "out.html") if a == "OUT" else a for a in COMMANDS[name]]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_terminal_sees_how_much_of_the_log_was_read(tmp_path: Path, name: str) -> None:
    code, out, err = run_env(*_argv(name, tmp_path), tty=True, progress_delay=0.0, stdout_isatty=False)
    assert code == ExitCode.OK, err
    assert LINE.search(err), err[-400:]
    size = LOG.stat().st_size
    assert f"{size / 1e3:.0f} kB/{size / 1e3:.0f} kB".encode() in err  # read to the end, of the file's size
    # erased before any other line on stderr, and at the end
    for line in err.split(b"\n")[:-1]:
        assert b"\x1b[K" not in line or line.endswith(b"\r\x1b[K") or LINE.sub(b"", line).startswith(b"\r\x1b[K"), line
    assert b"\r\x1b[K" in err
    assert b"\r" not in out


@pytest.mark.parametrize("name", COMMANDS)
def test_piped_stderr_gets_no_progress(tmp_path: Path, name: str) -> None:
    code, _, err = run_env(*_argv(name, tmp_path), progress_delay=0.0)
    assert code == ExitCode.OK, err
    assert b"\r" not in err and b" kB" not in err


def test_show_on_a_terminal_draws_no_line_under_the_transcript(tmp_path: Path) -> None:
    """On a terminal the transcript itself is drawn there: the counter is gone before its first line."""
    code, out, err = run_env(*_argv("show", tmp_path), tty=True, progress_delay=0.0)
    assert code == ExitCode.OK
    assert err.endswith(b"\r\x1b[K")
    assert err.count(b"show: ") == err.count(b"\rshow: ")  # only lines of the counter
    assert b"\r" not in out


def test_progress_on_a_real_terminal(long_session: tuple[Path, int, str, str], tmp_path: Path) -> None:
    """On a pty, after the usual delay, the counter of a log of 11 MB shows while ``export`` reads it."""
    from test_ux_terminal import on_pty

    code, shown, seen = on_pty(["export", str(long_session[0]), "-f", "html", "-o", str(tmp_path / "out.html")])
    assert code == ExitCode.OK, shown[-300:]
    assert re.search(rb"export: \d+\.\d MB/11\.\d MB", shown), shown[-300:]
