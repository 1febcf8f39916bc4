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


LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


def test_info_shows_created_at_as_a_date_time_with_its_offset() -> None:
    code, out, _ = run_env("info", str(LOOP), timezone="Europe/Berlin")
    assert code == 0
    assert "createdAt=2026-10-20T14:24:02.224+02:00," in out.decode()
    code, out, _ = run_env("info", str(LOOP), "--json", timezone="Europe/Berlin")
    assert b'"createdAt": 1792499042224' in out  # scripts keep the number


def test_ls_names_the_zone_of_its_times(tmp_path: Path) -> None:
    from test_store import put

    root = tmp_path / "sessions"
    put(root, "loop", sid="loop-0001", mtime=1_000)
    code, out, _ = run_env("ls", str(root), timezone="Asia/Kolkata", tty=True, width=120)
    head, row = out.decode().splitlines()[:2]
    assert code == 0 and "last activity (Asia/Kolkata)" in head
    assert row.rstrip().endswith("2026-10-20 17:54"), row  # its last event, 12:24 UTC, in +05:30
    # the system's own zone, unnamed: its offset
    code, out, _ = run_env("ls", str(root), timezone=None)
    assert code == 0 and "\tlast activity (UTC" in out.decode().splitlines()[0]


def test_export_force_refreshes_an_earlier_export_in_place(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    code, _, err = run_env("export", str(LOOP), "-f", "html", "-o", str(page))
    assert code == 0, err
    page.write_bytes(b"stale")
    code, _, err = run_env("export", str(LOOP), "-f", "html", "-o", str(page))
    assert code == 5 and page.read_bytes() == b"stale"  # never overwritten without being asked
    code, _, err = run_env("export", str(LOOP), "-f", "html", "-o", str(page), "--force")
    assert code == 0, err
    assert page.read_bytes().startswith(b"<!DOCTYPE html>") and sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
    # a session log is never an export's to replace
    log = tmp_path / "s" / "session.v4.jsonl"
    log.parent.mkdir()
    log.write_bytes(LOOP.read_bytes())
    code, _, err = run_env("export", str(LOOP), "-o", str(log), "--force")
    assert code == 5 and log.read_bytes() == LOOP.read_bytes(), err


def test_export_force_refreshes_a_site(tmp_path: Path) -> None:
    from test_store import put

    root = tmp_path / "sessions"
    put(root, "loop", sid="loop-0001", mtime=1_000)
    site = tmp_path / "site"
    code, _, err = run_env("export", str(root), "-f", "html", "-o", str(site))
    assert code == 0, err
    (site / "index.html").write_bytes(b"stale")
    code, _, err = run_env("export", str(root), "-f", "html", "-o", str(site))
    assert code == 5 and (site / "index.html").read_bytes() == b"stale"
    code, _, err = run_env("export", str(root), "-f", "html", "-o", str(site), "--force")
    assert code == 0, err
    assert b"loop-0001" in (site / "index.html").read_bytes()
    assert sorted(p.name for p in site.iterdir()) == ["index.html", "loop-0001.html"]
