"""One smoke test of the real ``dshlog browse`` binary in a real terminal (tmux), skipped without tmux."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
TMUX = shutil.which("tmux")
DSHLOG = Path(sys.executable).parent / "dshlog"

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
