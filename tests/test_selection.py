"""One filter grammar for every command that selects sessions, one case rule, and progress on a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, run_env
from dshlog.errors import ExitCode
from test_store import put

SELECTING = ["ls", "report", "search"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    r = tmp_path / "sessions"
    put(r, "loop", sid="loop-0001", mtime=1_000)
    put(r, "crash", sid="crash-0001", mtime=2_000)
    return tmp_path


def _args(command: str, home: Path) -> list[str]:
    root = str(home / "sessions")
    return {"ls": ["ls", root], "report": ["report", root], "search": ["search", "deploy", root]}[command]


@pytest.mark.parametrize("command", SELECTING)
@pytest.mark.parametrize("when", ["2026-10-01", "2026-10-01T09:30", "today", "yesterday", "7d", "12h"])
def test_every_selecting_command_takes_the_same_time_forms(home: Path, command: str, when: str) -> None:
    for option in ("--since", "--until"):
        code, _, err = run_env(*_args(command, home), option, when, cwd=str(home))
        assert code == ExitCode.OK, (command, option, when, err)


@pytest.mark.parametrize("command", SELECTING)
def test_every_selecting_command_takes_project_and_cwd(home: Path, command: str) -> None:
    code, _, err = run_env(*_args(command, home), "--project", "demo", "--cwd", "/home/ann/demo", cwd=str(home))
    assert code == ExitCode.OK, err
    assert b"note" not in err


@pytest.mark.parametrize("command", SELECTING)
def test_a_cwd_that_matches_nothing_is_said(home: Path, command: str) -> None:
    code, out, err = run_env(*_args(command, home), "--cwd", "webapp", cwd=str(home))
    assert code == ExitCode.OK
    assert b"dshlog: note: --cwd 'webapp': no session has this project directory" in err


def test_cwd_takes_a_unique_part_of_a_directory(home: Path) -> None:
    code, out, _ = run_env("ls", str(home / "sessions"), "--cwd", "ann/de", cwd=str(home))
    assert code == ExitCode.OK and b"loop-0001" in out


def test_an_ambiguous_part_names_the_directories(tmp_path: Path) -> None:
    r = tmp_path / "sessions"
    put(r, "loop", sid="loop-0001")
    d = r / "--home-ann-demo2--" / "other-0001"
    d.mkdir(parents=True)
    text = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_text()
    (d / "session.v4.jsonl").write_text(text.replace('"/home/ann/demo"', '"/home/ann/demo2"', 1).replace("loop-0001", "other-0001"))
    code, _, err = run_env("ls", str(r), "--cwd", "ann/dem", cwd=str(tmp_path))
    assert code == ExitCode.USAGE
    assert b"/home/ann/demo, /home/ann/demo2" in err


def test_until_is_in_ls(home: Path) -> None:
    _, out, _ = run_env("ls", str(home / "sessions"), "--until", "2026-10-01", cwd=str(home))
    assert b"loop-0001" not in out
    _, out, _ = run_env("ls", str(home / "sessions"), "--until", "2026-12-01", cwd=str(home))
    assert b"loop-0001" in out


def test_search_is_smart_case(home: Path) -> None:
    root = str(home / "sessions")
    _, lower, _ = run_env("search", "deepseek harness", root)  # the system prompt says "DeepSeek Harness"
    _, upper, _ = run_env("search", "Deepseek harness", root)
    _, exact, _ = run_env("search", "DeepSeek Harness", root)
    _, forced, _ = run_env("search", "-i", "DEEPSEEK HARNESS", root)
    assert b"DeepSeek Harness" in lower and upper == b"" and exact == lower and forced == lower


def test_progress_on_a_terminal_stderr_and_not_when_piped(home: Path) -> None:
    root = str(home / "sessions")
    code, _, err = run_env("report", root, "-j", "1", tty=True, progress_delay=0.0)
    assert code == ExitCode.OK
    assert b"\rreport: 1/2 sessions" in err and err.endswith(b"\r\x1b[K")
    code, _, err = run_env("report", root, "-j", "1", progress_delay=0.0)
    assert b"sessions" not in err and b"\r" not in err
