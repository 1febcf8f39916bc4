"""One smoke test of the real ``dshlog browse`` binary in a real terminal (tmux), skipped without tmux."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid

import pytest
from conftest import FIXTURES, dshlog_argv

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
TMUX = shutil.which("tmux")
#: the installed console script, as a shell in the terminal starts it
DSHLOG = shlex.join(dshlog_argv(script=True))

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed: the terminal smoke test of dshlog browse needs it")


def _tmux(*args: str) -> str:
    assert TMUX is not None
    return subprocess.run([TMUX, *args], capture_output=True, text=True, timeout=30, check=True).stdout


def _screen(name: str) -> str:
    return _tmux("capture-pane", "-p", "-t", name)


def _wait(name: str, needle: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(name)
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen:\n{screen}")


def _gone(name: str, needle: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while needle in _screen(name):
        assert time.monotonic() < deadline, f"{needle!r} stayed on the screen"
        time.sleep(0.2)


def test_browse_in_a_terminal(tmp_path) -> None:
    name = f"dshlog-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "exit-code"
    command = f"TERM=xterm-256color {DSHLOG} browse {LOOP_V4}; echo $? > {done}"
    _tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "36", command)
    try:
        start = time.monotonic()
        screen = _wait(name, "turn 1  (1 of 4")
        opened = time.monotonic() - start
        assert "Conversation" in screen and "calling echo" in screen
        _tmux("send-keys", "-t", name, "]")
        _wait(name, "turn 2  (2 of 4")
        _tmux("send-keys", "-t", name, "?")
        _wait(name, "jump to a turn")
        _tmux("send-keys", "-t", name, "Escape")
        _gone(name, "jump to a turn")  # a key right after Escape would read as Alt+key
        _tmux("send-keys", "-t", name, "2")
        _wait(name, "41 of 41 events")
        _tmux("send-keys", "-t", name, "q")
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
        print(f"browse opened in {opened:.2f} s")
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)



def _squeezed(text: str) -> str:
    """``text`` without any white space: an 80-column screen wraps long lines (and paths) anywhere."""
    return "".join(text.split())


def _wait_text(name: str, needle: str, timeout: float = 60) -> str:
    """:func:`_wait` for a text the screen may wrap: compared without white space; returns the squeezed screen."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(name)
        if _squeezed(needle) in _squeezed(screen):
            return _squeezed(screen)
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen:\n{screen}")


def test_browse_shows_a_session_dsh_refuses_under_its_banner(tmp_path) -> None:
    """80x24: the banner with dsh's words and the rescue command, then the conversation; q exits 4, said on stderr."""
    from conftest import NO_DEPTH_REASON, no_depth_session

    refused = no_depth_session(tmp_path / "no-depth")
    name = f"dshlog-{uuid.uuid4().hex[:8]}"
    command = f"TERM=xterm-256color {DSHLOG} browse {refused}; echo EXIT=$?; sleep 60"  # the screen stays to be read
    _tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", command)
    try:
        _wait(name, "turn 1  (1 of 1")
        screen = _wait_text(name, "Answer with the single word: READY.")
        banner = _squeezed(f"dsh refuses to open this session: {NO_DEPTH_REASON}"
                           f"shown as far as its stored rows can be read; to bring it back: dshlog rescue {refused}")
        assert screen.startswith(banner), screen  # the first thing on the screen
        assert screen.index(banner) < screen.index("v0asstored") < screen.index("Conversation")
        _tmux("send-keys", "-t", name, "q")
        after = _wait_text(name, "EXIT=")
        assert "EXIT=4" in after
        assert _squeezed(f"dshlog: corrupt: {refused}: line 1, byte 0: {NO_DEPTH_REASON}; to bring it back: dshlog rescue {refused}") in after
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)


def test_enter_in_the_list_opens_a_session_dsh_refuses(tmp_path) -> None:
    """A root's list: Enter on a v4 session dsh's restore refuses (decided in the background) shows its banner."""
    sid = "loop-0001"
    session = tmp_path / "sessions" / "--home-ann-demo--" / sid
    session.mkdir(parents=True)
    lines = LOOP_V4.read_bytes().split(b"\n")
    lines = [line.replace(b'"turn":1', b'"turn":"x"', 1) if b'"type":"turn/start","seq":1,' in line else line for line in lines]
    (session / "session.v4.jsonl").write_bytes(b"\n".join(lines))
    name = f"dshlog-{uuid.uuid4().hex[:8]}"
    command = f"TERM=xterm-256color {DSHLOG} browse {tmp_path / 'sessions'}; echo EXIT=$?; sleep 60"
    _tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", command)
    try:
        _wait_text(name, "1 shown")
        _tmux("send-keys", "-t", name, "Enter")
        screen = _wait_text(name, "dsh refuses to open this session: turn/start at seq 1: turn must be a positive safe integer")
        assert screen.startswith(_squeezed("dsh refuses to open this session:")), screen
        assert _squeezed(f"to bring it back: dshlog rescue {sid}") in screen  # in a root: the id
        _tmux("send-keys", "-t", name, "Escape")  # back to the list, then quit
        _wait_text(name, "1 shown")
        _tmux("send-keys", "-t", name, "q")
        after = _wait_text(name, "EXIT=")
        assert "EXIT=4" in after and _squeezed(f"dshlog: corrupt: {session / 'session.v4.jsonl'}: seq 1: ") in after
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)


LONG_CWDS = ("/home/ann/work/clients/acme-corporation/platform/services/api-server",
             "/home/ann/work/clients/acme-corporation/platform/services/web-frontend")
LONG_IDS = ("5f3c2a1e-0b7d-4c1e-9a2f-7d6e5c4b3a21", "5f3c2a1e-9d41-4b0e-8c3a-1b2c3d4e5f60", "c0ffee00-1234-4abc-8def-0123456789ab")


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_the_session_list_fits_the_terminal(tmp_path, size) -> None:
    """The list follows the command line's tables: ids a unique prefix, never cut; projects cut on the left; titles first."""
    import re

    from test_store import put

    from dshlog.ops.sessions import unique_prefixes

    root = tmp_path / "sessions"
    title = "Refactor the billing reconciliation so that invoices settle every night"
    for k, sid in enumerate(LONG_IDS):
        log = put(root, "loop", sid=sid, cwd=LONG_CWDS[k % 2], mtime=1_000 + k)
        with log.open("ab") as fh:
            fh.write(b'{"type":"session/title","seq":41,"time":1792499042270,"data":{"title":"%s"}}\n' % title.encode())
    short = unique_prefixes(list(LONG_IDS))
    name = f"dshlog-{uuid.uuid4().hex[:8]}"
    width, height = size
    _tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height),
          # the pane's size, not COLUMNS/LINES a tmux server started without a terminal may hand down
          f"env -u COLUMNS -u LINES TERM=xterm-256color {DSHLOG} browse {root}; sleep 60")
    try:
        _wait_text(name, "3 shown")
        screen = _wait(name, short[LONG_IDS[0]])
        rows = [line for line in screen.splitlines() if re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", line)]
        assert len(rows) == 3, screen
        for sid in LONG_IDS:
            row = next((r for r in rows if re.search(rf"\b{re.escape(short[sid])}(\s|$)", r)), None)
            assert row is not None, f"{short[sid]} (whole, not cut) is not on a row:\n{screen}"
        for cwd in LONG_CWDS:  # the last directory tells the two projects apart
            assert any(r.count(cwd.rsplit("/", 1)[1]) == 1 for r in rows), screen
        # the title: whole on a wide screen, its beginning on a narrow one
        assert all((title in r) if width >= 200 else ("Refactor" in r and title not in r) for r in rows), screen
        assert all(len(r.rstrip()) <= width for r in rows)
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)


def test_a_huge_first_message_opens_and_quits_promptly(tmp_path) -> None:
    """A session whose first user message is one line of 10 MB: the first screen within 5 s, q exits within 3 s."""
    from conftest import huge_first_message

    path = huge_first_message(tmp_path / "huge")
    name = f"dshlog-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "exit-code"
    _tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "36",
          f"env -u COLUMNS -u LINES TERM=xterm-256color {DSHLOG} browse {path}; echo $? > {done}")
    try:
        start = time.monotonic()
        screen = _wait(name, "turn 1  (1 of 4", timeout=60)
        opened = time.monotonic() - start
        assert screen.count("lorem ipsum") > 20, screen  # the message, not only the heading
        assert opened < 5, f"the first screen took {opened:.1f} s"
        _tmux("send-keys", "-t", name, "q")
        start = time.monotonic()
        while not done.exists() and time.monotonic() - start < 60:
            time.sleep(0.1)
        quitting = time.monotonic() - start
        assert done.read_text().strip() == "0"
        assert quitting < 3, f"quitting took {quitting:.1f} s"
        print(f"opened in {opened:.2f} s, quit in {quitting:.2f} s")
    finally:
        subprocess.run([TMUX, "kill-session", "-t", name], capture_output=True, timeout=30, check=False)
