"""What a new user meets first: the bare command, a mistyped one, a file that is not a session log."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, run_env


def test_bare_dshlog_prints_the_formatted_help_and_exits_2() -> None:
    code, out, err = run_env()
    text = err.decode()
    assert code == 2 and out == b""
    assert text.startswith("Usage: dshlog [OPTIONS] COMMAND [ARGS]...\n"), text[:200]
    assert "dshlog: usage: usage:" not in text
    assert "\nCommands:\n" in text and "\n  info " in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_mistyped_command_gets_the_nearest_names() -> None:
    code, out, err = run_env("infoo")
    assert code == 2 and out == b""
    assert err == b"dshlog: usage: no such command 'infoo'. Did you mean 'info'? (see 'dshlog -h')\n"


def test_a_text_file_is_not_a_session_log(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\nSome prose.\n")
    for command in ("info", "events", "show", "surface"):
        code, out, err = run_env(command, str(readme))
        assert (code, out) == (2, b""), (command, err)
        assert err == f"dshlog: usage: {readme}: not a dsh session log (line 1 is not JSON)\n".encode(), (command, err)


def test_json_lines_that_are_not_events_are_not_a_session_log(tmp_path: Path) -> None:
    other = tmp_path / "data.jsonl"
    other.write_text('{"name": "a", "value": 1}\n{"name": "b", "value": 2}\n')
    code, out, err = run_env("info", str(other))
    assert (code, out) == (2, b"")
    assert err == f"dshlog: usage: {other}: not a dsh session log (line 1 is JSON, but neither a session header nor an event)\n".encode()


def test_a_torn_header_is_still_a_corrupt_log(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b'{"type":"session","version":4,"id":"s-1","crea\n{"type":"x"}\n')
    code, _, err = run_env("info", str(torn))
    assert code == 4 and b"not a dsh session log" not in err
    # a dsh generation name is dsh's claim: whatever its first line holds, the log is damaged
    named = tmp_path / "s" / "session.v4.jsonl"
    named.parent.mkdir()
    named.write_bytes(b"\0\0\0\0\0\0\n")
    code, _, err = run_env("info", str(named))
    assert code == 4 and b"not a dsh session log" not in err, err


def test_a_real_log_is_unaffected() -> None:
    code, _, err = run_env("info", str(FIXTURES / "v4" / "loop" / "session.v4.jsonl"))
    assert code == 0, err


def test_validate_names_a_text_file_among_logs_and_goes_on(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n")
    log = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    code, out, err = run_env("validate", str(readme), str(log))
    assert code == 2, err
    both = out + err
    assert f"{readme}: not a session log".encode() in both and f"{log}: ok".encode() in both
    assert b"not a dsh session log (line 1 is not JSON)" in both
