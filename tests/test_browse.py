"""``dshlog browse`` driven by Textual's pilot: keys, screens and what they show."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, load_bench_script
from rich.console import Console

pytest.importorskip("textual")

from textual.widgets import DataTable, Input, Static

from dshlog.browse.app import BrowseApp, SessionList, SessionView, TextScreen

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
V0_TEXT_TURN = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def run(app: BrowseApp, steps: Any, size: tuple[int, int] = (140, 45)) -> Any:
    """Run ``steps(pilot, app)`` inside the app's pilot and return what it returns."""

    async def main() -> Any:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return await steps(pilot, app)

    return asyncio.run(main())


def plain(content: Any) -> str:
    """What a widget's content reads as, rendered by Rich without styles."""
    console = Console(width=120, file=io.StringIO(), color_system=None)
    console.print(content)
    return console.file.getvalue()


def text_of(app: BrowseApp, selector: str) -> str:
    return plain(app.screen.query_one(selector, Static).content).rstrip("\n")


def conversation(app: BrowseApp) -> str:
    return "\n".join(plain(w.content) for w in app.screen.query(".item"))


def rows(app: BrowseApp, selector: str) -> list[list[str]]:
    table = app.screen.query_one(selector, DataTable)
    return [[str(c) for c in table.get_row_at(r)] for r in range(table.row_count)]


async def settle(pilot: Any, app: BrowseApp) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_conversation_turn_by_turn_and_help_and_quit() -> None:
    async def steps(pilot, app):
        assert isinstance(app.screen, SessionView)
        title = text_of(app, "#session-title")
        assert title.startswith("go") and "events, 4 turns" in title and "v4" in title
        assert text_of(app, "#turn-title").startswith("turn 1  (1 of 4")
        first = conversation(app)
        assert "calling echo" in first and "echo: one" in first and "done" in first
        await pilot.press("right_square_bracket")
        assert text_of(app, "#turn-title").startswith("turn 2") and "RATE_LIMIT" in conversation(app)
        await pilot.press("left_square_bracket")
        assert text_of(app, "#turn-title").startswith("turn 1")
        await pilot.press("question_mark")
        assert isinstance(app.screen, TextScreen) and app.screen.id == "help"
        assert "jump to a turn" in text_of(app, "#text-body")
        await pilot.press("escape")
        assert isinstance(app.screen, SessionView)
        await pilot.press("q")
        return app.return_code

    assert run(BrowseApp(target=str(LOOP_V4)), steps) == 0


def test_jump_to_turn_and_seq_and_search() -> None:
    async def steps(pilot, app):
        await pilot.press("g", *"3", "enter")
        assert text_of(app, "#turn-title").startswith("turn 3") and "aborted by user" in conversation(app)
        # a seq lands in its turn, with its item marked
        await pilot.press("g", *"#22", "enter")
        assert text_of(app, "#turn-title").startswith("turn 2")
        hit = app.screen.query(".hit")
        assert len(hit) == 1 and "ok" in plain(hit.first().content)
        await pilot.press("g", *"99", "enter")  # no such turn: said, nothing moves
        assert text_of(app, "#turn-title").startswith("turn 2")
        # search: / opens the prompt, Enter searches from here; n and N move on and back
        await pilot.press("slash", *"第二点", "enter")
        found = [text_of(app, "#turn-title")]
        await pilot.press("n")
        found.append(text_of(app, "#turn-title"))
        await pilot.press("N")
        found.append(text_of(app, "#turn-title"))
        return found, app.screen.position

    found, position = run(BrowseApp(target=str(LOOP_V4)), steps)
    assert found[0].startswith("turn 3") and found[1].startswith("turn 4") and found[2].startswith("turn 3")
    assert position >= 0


def test_events_filter_page_copy_and_json() -> None:
    events = [json.loads(line) for line in LOOP_V4.read_bytes().splitlines()[1:]]

    async def steps(pilot, app):
        await pilot.press("2")
        await settle(pilot, app)
        shown = rows(app, "#event-table")
        assert [r[0] for r in shown] == [str(e["seq"]) for e in events]
        assert shown[8][2] == "assistant/message append" and "calling echo" in shown[8][3]
        # filter by type and turn, from the filter box
        await pilot.press("f")
        assert isinstance(app.focused, Input)
        await pilot.press(*"type:tool/* turn:1", "enter")
        filtered = rows(app, "#event-table")
        # copy the selected row's seq, then its JSON
        await pilot.press("down", "c")
        seq = app.clipboard
        await pilot.press("y")
        copied = app.clipboard
        await pilot.press("enter")
        assert isinstance(app.screen, TextScreen) and app.screen.id == "event-json"
        body = text_of(app, "#text-body")
        await pilot.press("escape")
        await pilot.press("f", "ctrl+a", *"seq:x", "enter")  # a bad filter is said, the rows stay
        return filtered, seq, copied, body, rows(app, "#event-table")

    filtered, seq, copied, body, after = run(BrowseApp(target=str(LOOP_V4)), steps)
    tool_turn1 = [e for e in events if e["type"].startswith("tool/") and e["seq"] < 16]
    assert [r[0] for r in filtered] == [str(e["seq"]) for e in tool_turn1] and len(filtered) == 2
    assert seq == str(tool_turn1[1]["seq"])
    assert json.loads(copied) == tool_turn1[1]
    assert json.loads(body) == tool_turn1[1] and body.startswith('{\n  "type": "tool/result"')
    assert after == filtered


def test_surface_and_requests_tabs_with_a_diff() -> None:
    async def steps(pilot, app):
        await pilot.press("3")
        await settle(pilot, app)
        nodes = rows(app, "#surface-table")
        await pilot.press("4")
        await settle(pilot, app)
        requests = rows(app, "#request-table")
        title = text_of(app, "#requests-title")
        await pilot.press("down", "enter")
        await settle(pilot, app)
        assert isinstance(app.screen, TextScreen) and app.screen.id == "diff"
        return nodes, requests, title, text_of(app, "#text-body")

    nodes, requests, title, diff = run(BrowseApp(target=str(LOOP_V4)), steps)
    assert [n[:3] for n in nodes[:2]] == [["4", "system/message", "system"], ["5", "user/message", "user"]]
    assert [r[0] for r in requests] == ["1", "2", "3", "4", "5", "6"]
    assert requests[0][5] == "-" and requests[1][5] == "yes"
    assert "6 requests" in title
    assert diff.startswith("request 1: 2 messages\nrequest 2: 4 messages\nprefix intact")
    assert "+ added" in diff and "echo: one" in diff


@pytest.mark.parametrize("key, tab, table, name", [("3", "surface", "#surface-table", "surface_view"),
                                                   ("4", "requests", "#request-table", "request_rows")])
def test_a_tab_shows_its_progress_while_it_loads_and_not_after(monkeypatch: pytest.MonkeyPatch, key: str, tab: str,
                                                               table: str, name: str) -> None:
    import threading

    import dshlog.browse.app as app_module
    from textual.widgets import ProgressBar

    real = getattr(app_module, name)
    release = threading.Event()

    def held(ix: Any, progress: Any = None) -> Any:
        """The tab's pass, which waits after each report of its progress until the test has looked (a large log's pace)."""

        def told(done: int, total: int | None) -> None:
            if progress is not None:
                progress(done, total)
            assert release.wait(20)

        return real(ix, told)

    monkeypatch.setattr(app_module, name, held)

    async def steps(pilot, app):
        await pilot.press(key)
        bar = None
        try:
            for _ in range(200):  # the first report comes from the worker's thread
                await pilot.pause(0.01)
                bar = next(app.screen.query(f"#{tab}-progress").results(ProgressBar), None)
                if bar is not None and bar.total is not None:
                    break
            assert bar is not None and bar.display and bar.total and bar.progress > 0, "no progress shown while loading"
            assert rows(app, table) == []
        finally:
            release.set()
        await settle(pilot, app)
        return list(app.screen.query(f"#{tab}-progress")), rows(app, table)

    bars, filled = run(BrowseApp(target=str(LOOP_V4)), steps)
    assert bars == [] and filled


def test_an_old_log_is_shown_as_v4() -> None:
    async def steps(pilot, app):
        return text_of(app, "#session-title"), conversation(app)

    title, conv = run(BrowseApp(target=str(V0_TEXT_TURN)), steps)
    assert "v0 shown as v4" in title and conv


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browse-root")
    load_bench_script("generate").generate_many(out, count=8, seed=5, zstd=False)
    return next(out.glob("MANY-*")) / "plain"


def test_session_list_filter_sort_open_and_back(root) -> None:
    from dshlog.ops.sessions import unique_prefixes
    from dshlog.read.store import list_sessions, sort_entries

    entries = sort_entries(list_sessions(root), "time")
    short = unique_prefixes([e.id for e in entries])  # ids as ``ls`` shows them on a terminal: a prefix any command takes

    async def steps(pilot, app):
        await settle(pilot, app)
        assert isinstance(app.screen, SessionList)
        listed = rows(app, "#list")
        await pilot.press("s")  # by size
        by_size = rows(app, "#list")
        await pilot.press("f", *entries[-1].id[:8], "enter")
        only = rows(app, "#list")
        await pilot.press("enter")
        await pilot.pause()
        opened = isinstance(app.screen, SessionView) and app.screen.ix.header["id"]
        await pilot.press("escape")
        back = isinstance(app.screen, SessionList)
        return listed, by_size, only, opened, back

    listed, by_size, only, opened, back = run(BrowseApp(root=root), steps)
    assert [r[5] for r in listed] == [short[e.id] for e in entries]
    assert [r[5] for r in by_size] == [short[e.id] for e in sort_entries(entries, "size")]
    assert [r[5] for r in only] == [short[entries[-1].id]]
    assert opened == entries[-1].id and back
    for r, e in zip(listed, entries):
        title = " ".join((e.display_title or "").split())  # whole, or cut with "…" to the width the screen leaves it
        assert (r[1] == title or (r[1].endswith("…") and title.startswith(r[1][:-1]))) and r[3] == str(e.turns)


def test_find_a_turns_tool_error_in_a_long_session(long_session) -> None:
    """The issue's bar: turn 37's (or the next failing turn's) tool error, found without raw JSON."""
    path, turn, tool, first_line = long_session

    async def steps(pilot, app):
        assert len(app.screen.ix) >= 5000
        await pilot.press("g", *str(turn), "enter")
        return text_of(app, "#turn-title"), conversation(app)

    title, conv = run(BrowseApp(target=str(path)), steps)
    assert title.startswith(f"turn {turn} ") and f"✗ error: {tool}" in title
    assert f"← {tool}" in conv and " error" in conv and first_line[:40] in conv


def test_a_huge_message_shows_its_start_first_and_more_on_demand(tmp_path) -> None:
    """A first message of 10 MB: its first characters at once, the rest counted; m shows more; q is prompt."""
    import time

    from conftest import HUGE_WORDS, huge_first_message

    from dshlog.browse.model import PREVIEW

    path = huge_first_message(tmp_path / "huge")
    start = time.monotonic()

    async def steps(pilot, app):
        opened = time.monotonic() - start
        first = conversation(app)
        await pilot.press("m")
        await pilot.pause()
        more = conversation(app)
        await pilot.press("right_square_bracket", "left_square_bracket")  # another turn and back: the preview again
        again = conversation(app)
        quit_at = time.monotonic()
        await pilot.press("q")
        return opened, first, more, again, quit_at

    opened, first, more, again, quit_at = run(BrowseApp(target=str(path)), steps)
    quitting = time.monotonic() - quit_at
    assert opened < 5, f"the first screen took {opened:.1f} s"
    assert quitting < 3, f"quitting took {quitting:.1f} s"
    assert f"… {10_000_000 - PREVIEW} more characters not shown (m: more)" in first
    assert first.count(HUGE_WORDS.strip()) < PREVIEW // len(HUGE_WORDS) + 2  # the start only
    assert f"… {10_000_000 - 8 * PREVIEW} more characters not shown (m: more)" in more
    assert again == first


def test_the_command_needs_a_terminal() -> None:
    from conftest import run_env

    code, out, err = run_env("browse", str(LOOP_V4))
    assert code == 2 and out == b"" and b"browse needs a terminal" in err


def test_hints_name_the_browsers_keys_not_the_command_line_flags() -> None:
    async def steps(pilot, app):
        folded = conversation(app)
        await pilot.press("r")
        return folded, conversation(app)

    folded, unfolded = run(BrowseApp(target=str(V0_TEXT_TURN)), steps)
    assert "r to show" in folded and "--reasoning" not in folded, folded
    assert "r to show" not in unfolded
