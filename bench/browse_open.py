"""How long ``dshlog browse FILE`` (or ``show``) takes to show its first screen in a real terminal (tmux).

    python bench/browse_open.py FILE [--runs 3] [--needle TEXT] [--command browse|show]

Starts the real binary in a detached tmux session of 120x36, polls the screen until
the first turn's heading (``turn 1  (1 of``, or ``--needle``) is on it, then quits with
``q``.  Prints the wall seconds to that first screen and the CPU seconds of the whole
open-and-quit (from the process's own rusage, written by the shell that ran it).  A 120 MB
log is made with ``bench/generate.py --size 120M``.  ``--command show`` times ``dshlog
show FILE`` through its pager (``less``) instead, to the first turn's heading.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DSHLOG = ROOT / ".venv" / "bin" / "dshlog"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30, check=True).stdout


def once(log: Path, needle: str, scratch: Path, command: str = "browse") -> tuple[float, str]:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    times = scratch / f"{name}.time"
    pager = "PAGER=less LESS=-R " if command == "show" else ""  # the pager stays open on a long transcript
    cmd = f"{pager}TERM=xterm-256color /usr/bin/time -f '%U %S %M' -o {times} {DSHLOG} {command} {log}"
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "36", cmd)
    try:
        start = time.monotonic()
        while needle not in tmux("capture-pane", "-p", "-t", name):
            if time.monotonic() - start > 120:
                raise SystemExit(f"{needle!r} never appeared")
            time.sleep(0.02)
        opened = time.monotonic() - start
        tmux("send-keys", "-t", name, "q")
        deadline = time.monotonic() + 60
        while not (times.exists() and times.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        user, sys_, rss = times.read_text().split()[-3:]
        return opened, f"CPU {float(user) + float(sys_):.2f} s, peak RSS {int(rss) // 1024} MB"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=30, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--needle", default=None, help="text that marks the first screen (default: the first turn's heading)")
    ap.add_argument("--command", choices=("browse", "show"), default="browse")
    a = ap.parse_args()
    needle = a.needle or ("turn 1  (1 of" if a.command == "browse" else " turn 1 ─")
    if shutil.which("tmux") is None or not Path("/usr/bin/time").exists():
        sys.exit("needs tmux and /usr/bin/time")
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(a.runs):
            opened, cost = once(a.log.resolve(), needle, Path(scratch), a.command)
            print(f"run {run + 1}: first screen after {opened:.2f} s; open and quit: {cost}")


if __name__ == "__main__":
    main()
