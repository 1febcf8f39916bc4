"""Is any command slower than on an older commit?  Paired runs of two installs of dshlog.

Install the older commit beside this one (``git worktree add --detach /tmp/base <rev>``, a
venv there, ``pip install -e .``, ``python -m compileall dshlog`` in both), then::

    python bench/ab.py --base /tmp/base/.venv/bin/dshlog --data /tmp/bench-data --size 120M [--format v0] [--no-compaction]

Each pair runs a command under both installs back to back, the order alternating from pair
to pair, so a burst of load on the shared machine falls on both sides of the pair's ratio.
A row gives each side's median CPU time (user + system of the child) and the median of the
per-pair ratios now / base, marked where it is over :data:`LIMIT`.  The commands are
``bench/run.py``'s (``migrate`` of a fresh copy on a v0 log) and :data:`EXTRA`, with its child environment:
the cache of per-session results is off on both sides, or every run after the first would
time a cache lookup.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate as gen  # noqa: E402 - found through the path set just above
import run  # noqa: E402

ROOT = HERE.parent
TINY = ROOT / "fixtures" / "v4" / "loop" / "session.v4.jsonl"
#: a median per-pair ratio over this is a slower command
LIMIT = 1.05
#: besides bench/run.py's commands: the JSON of dsh's view, and start-up on a tiny file
EXTRA = (run.Command("events --v4 --json", ("events", "--v4", "--json", "{f}"), "events", None),
         run.Command("info (tiny file)", ("info", str(TINY)), "info", None))


def cpu(argv: list[str]) -> tuple[float, int]:
    """CPU seconds (user + system) of one child, and its exit code."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=run.CHILD_ENV)
    _, status, usage = os.wait4(p.pid, 0)
    return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def timed(exe: str, c: run.Command, f: Path, last: int | None) -> tuple[float, int]:
    """One run of ``c`` under ``exe``; ``migrate`` writes, so it runs on a fresh copy of the session."""
    if "{dir}" not in c.argv:
        return cpu([exe, *(a.replace("{f}", str(f)).replace("{n}", str(last)) for a in c.argv)])
    scratch = Path(tempfile.mkdtemp(prefix="ab-"))
    try:
        dst = scratch / gen.PROJECT / f.parent.name
        dst.mkdir(parents=True)
        shutil.copy2(f, dst / f.name)
        return cpu([exe, *(a.replace("{dir}", str(dst)) for a in c.argv)])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def commit(exe: str) -> str:
    """The commit of the checkout whose ``.venv/bin`` holds ``exe``."""
    p = subprocess.run(["git", "-C", str(Path(exe).parents[2]), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() or "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the older install's dshlog executable")
    ap.add_argument("--now", default=str(Path(sys.executable).parent / "dshlog"), help="this install's dshlog")
    ap.add_argument("--data", type=Path, default=gen.DEFAULT_OUT, help="bench/generate.py's --out")
    ap.add_argument("--size", default="120M")
    ap.add_argument("--format", choices=("v4", "v0"), default="v4")
    ap.add_argument("--no-compaction", action="store_true", help="the never-compacted shape (v4)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=5, help="pairs per command")
    ap.add_argument("--only", help="comma-separated command labels")
    a = ap.parse_args()
    shape, shape_name = gen.Shape(compaction=not a.no_compaction), "no-compaction" if a.no_compaction else "default"
    f = gen.session_paths(a.data, a.size, int(a.format[1:]), a.seed, shape)["plain"]
    if not f.is_file():
        print(f"no {f} (bench/generate.py --size {a.size} --format both{' --no-compaction' * a.no_compaction} --out {a.data})", file=sys.stderr)
        return 2
    last = run.last_request(f)
    cmds = [*run.READ_COMMANDS, *((run.MIGRATE,) if a.format == "v0" else ()), *EXTRA]
    only = set(a.only.split(",")) if a.only else None
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{when}: base {commit(a.base)}, now {commit(a.now)}; {a.size} {run.input_label(int(a.format[1:]), shape_name)}, "
          f"{a.repeat} pairs, the cache off.\n")
    print("| command | base CPU s | now CPU s | now / base | |\n|---|---:|---:|---:|---|")
    for c in cmds:
        if only and c.label not in only:
            continue
        base, now, ratios = [], [], []
        for i in range(a.repeat):
            first, second = (a.base, a.now) if i % 2 == 0 else (a.now, a.base)
            one, two = timed(first, c, f, last), timed(second, c, f, last)
            (b, n) = (one, two) if i % 2 == 0 else (two, one)
            base.append(b)
            now.append(n)
            ratios.append(n[0] / b[0])
        r = statistics.median(ratios)
        notes = [f"**over {LIMIT}**"] if r > LIMIT else []
        codes = sorted({x for _, x in base}), sorted({x for _, x in now})
        if codes != ([0], [0]):
            notes.append(f"exit {codes[0]} vs {codes[1]}")
        note = " ".join(notes)
        print(f"| `{c.label}` | {statistics.median(t for t, _ in base):.2f} | {statistics.median(t for t, _ in now):.2f} | {r:.2f} | {note} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
