"""One filter grammar for every command that selects sessions, one case rule, and progress on a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, run_env
from dshlog.errors import ExitCode
from test_store import put

SELECTING = ["ls", "report", "search", "validate", "stats"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    r = tmp_path / "sessions"
    put(r, "loop", sid="loop-0001", mtime=1_000)
    put(r, "crash", sid="crash-0001", mtime=2_000)
    return tmp_path


def _args(command: str, home: Path) -> list[str]:
    root = str(home / "sessions")
    return {"ls": ["ls", root], "report": ["report", root], "search": ["search", "deploy", root],
            "validate": ["validate", root], "stats": ["stats", root]}[command]


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


OVER_A_ROOT = ["validate", "stats"]


@pytest.fixture
def three(home: Path) -> Path:
    """``home``'s root with a third session, of another project directory and active later."""
    put(home / "sessions", "loop", sid="other-0001", cwd="/home/ann/webapp", mtime=3_000)
    return home


def _named(command: str, out: bytes) -> list[str]:
    """The session ids a command's output names, in its order."""
    ids = ("crash-0001", "loop-0001", "other-0001")
    return [i for line in out.decode().splitlines() for i in ids if i in line.split("\t")[0]]


@pytest.mark.parametrize("command", OVER_A_ROOT)
@pytest.mark.parametrize("filters", [["--project", "demo"], ["--project", "webapp"], ["--cwd", "webapp"],
                                     ["--cwd", "/home/ann/demo"], ["--until", "2026-10-01"], ["--since", "2026-10-01"],
                                     ["--project", "ann", "--cwd", "ann/demo"]])
def test_validate_and_stats_over_a_root_work_on_the_sessions_ls_lists(three: Path, command: str, filters: list[str]) -> None:
    root = str(three / "sessions")
    code, listed, err = run_env("ls", root, "--sort", "id", *filters, cwd=str(three))
    assert code == ExitCode.OK, err
    code, out, err = run_env(command, root, *filters, cwd=str(three))
    assert code == ExitCode.OK, err
    assert sorted(set(_named(command, out))) == _named("ls", listed)
    everything = run_env(command, root, cwd=str(three))[1]
    assert set(_named(command, everything)) == {"crash-0001", "loop-0001", "other-0001"}


@pytest.mark.parametrize("command", OVER_A_ROOT)
def test_a_session_the_walk_cannot_read_stays_named_whatever_the_filters(three: Path, command: str) -> None:
    mixed = next((three / "sessions").iterdir()) / "zz-mixed"  # dsh refuses a directory of plain and compressed generations
    mixed.mkdir()
    log = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    (mixed / "session.v4.jsonl").write_bytes(log.read_bytes())
    (mixed / "session.v3.jsonl.zstd").write_bytes(log.read_bytes())
    code, out, err = run_env(command, str(three / "sessions"), "--cwd", "webapp", cwd=str(three))
    assert code != ExitCode.OK and b"zz-mixed" in out + err
    assert set(_named(command, out)) == {"other-0001"}


@pytest.mark.parametrize("command", OVER_A_ROOT)
@pytest.mark.parametrize("target", ["file", "session directory", "current session"])
def test_validate_and_stats_of_one_log_refuse_the_selecting_options(home: Path, command: str, target: str) -> None:
    log = next((home / "sessions").rglob("session.v4.jsonl"))
    given = {"file": [str(log)], "session directory": [str(log.parent)], "current session": []}[target]
    code, _, err = run_env(command, *given, "--since", "7d", cwd=str(home))
    assert code == ExitCode.USAGE and b"select sessions of a root" in err, err


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
