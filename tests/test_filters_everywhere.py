"""The selecting options on ``export ROOT -f html -o DIR`` and ``browse``'s list, and the list's smart case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import run_env
from dshlog.errors import ExitCode
from test_selection import home  # noqa: F401 - the fixture: a root of two sessions (loop-0001, crash-0001)


def test_export_root_takes_the_selecting_options(home: Path) -> None:  # noqa: F811
    root = str(home / "sessions")
    code, _, err = run_env("export", root, "-f", "html", "-o", str(home / "all"), cwd=str(home))
    assert code == ExitCode.OK, err
    everything = sorted(p.name for p in (home / "all").iterdir())
    assert len(everything) == 3  # two pages and the index
    code, _, err = run_env("export", root, "-f", "html", "-o", str(home / "none"), "--until", "2026-01-01", cwd=str(home))
    assert code == ExitCode.USAGE and b"no session" in err and not (home / "none").exists()
    code, _, err = run_env("export", root, "-f", "html", "-o", str(home / "some"), "--since", "2026-01-01",
                           "--project", "demo", "--cwd", "/home/ann/demo", cwd=str(home))
    assert code == ExitCode.OK, err
    assert sorted(p.name for p in (home / "some").iterdir()) == everything


def test_export_root_says_a_cwd_that_matches_nothing(home: Path) -> None:  # noqa: F811
    code, _, err = run_env("export", str(home / "sessions"), "-f", "html", "-o", str(home / "x"), "--cwd", "webapp", cwd=str(home))
    assert code == ExitCode.USAGE and b"--cwd 'webapp': no session has this project directory" in err


def test_export_of_one_log_refuses_the_selecting_options(home: Path) -> None:  # noqa: F811
    log = next((home / "sessions").rglob("session.v4.jsonl"))
    code, _, err = run_env("export", str(log), "--since", "7d")
    assert code == ExitCode.USAGE and b"select sessions of a root" in err


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_browse_parses_the_selecting_options_before_it_takes_the_terminal(home: Path, option: str) -> None:  # noqa: F811
    code, _, err = run_env("browse", str(home / "sessions"), option, "not-a-time")
    assert code == ExitCode.USAGE and option.encode() in err and b"no such option" not in err.lower()


def _listed(app_kwargs: dict, keys: tuple[str, ...] = ()) -> list[str]:
    """The ids the session list shows (after typing ``keys``), through the app as a person drives it."""
    pytest.importorskip("textual")
    from test_browse import rows, run, settle

    from dshlog.browse.app import BrowseApp

    async def steps(pilot: Any, app: BrowseApp) -> list[Any]:
        await settle(pilot, app)
        if keys:
            await pilot.press(*keys)
        return [r[5] for r in rows(app, "#list")]

    return run(BrowseApp(**app_kwargs), steps)


def test_browse_lists_the_sessions_the_selection_keeps(home: Path) -> None:  # noqa: F811
    from dshlog.model.selection import parse_selection

    root = home / "sessions"
    pick = {"now_ms": 1_800_000_000_000, "tz": None, "base": str(home)}
    assert sorted(_listed({"root": root})) == ["crash-0001", "loop-0001"]
    assert _listed({"root": root, "selection": parse_selection(until="2026-01-01", **pick)}) == []
    assert sorted(_listed({"root": root, "selection": parse_selection(project="demo", **pick)})) == ["crash-0001", "loop-0001"]


def test_browse_list_filter_is_smart_case(home: Path) -> None:  # noqa: F811
    root = home / "sessions"
    assert sorted(_listed({"root": root}, ("f", *"demo"))) == ["crash-0001", "loop-0001"]
    assert _listed({"root": root}, ("f", *"DEMO")) == []  # an upper-case letter: the case matters, as in search
