"""CPU time of each reading command under two installs of dshlog, interleaved, best of N.

For the question "is any command slower than before": install the older commit beside
this one (``git worktree add --detach /tmp/base <rev>``, a venv there, ``pip install -e .``,
``python -m compileall dshlog`` in both), then::

    python bench/ab.py --base /tmp/base/.venv/bin/dshlog --data /tmp/bench-data --size 120M

CPU time (user + system of the child) is less disturbed by other load than wall time;
both installs run each command in turn, so a burst of load hits both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "fixtures" / "v4" / "loop" / "session.v4.jsonl"
NAMES = {"v4": "session.v4.jsonl", "v0": "session.jsonl"}


def commands(f: str, last: str) -> dict[str, list[str]]:
    return {"validate": ["validate", f], "info": ["info", f], "events": ["events", f], "events --json": ["events", "--json", f],
            "events --v4 --json": ["events", "--v4", "--json", f], "stats": ["stats", f], "tail": ["tail", f],
            "surface": ["surface", f], "requests": ["requests", f], "rebuild --request last": ["rebuild", "--request", last, f],
            "info (tiny file)": ["info", str(TINY)]}


def cpu(exe: str, argv: list[str]) -> tuple[float, int]:
    p = subprocess.Popen([exe, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the older install's dshlog executable")
    ap.add_argument("--now", default=str(Path(sys.executable).parent / "dshlog"), help="this install's dshlog")
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "data", help="bench/generate.py's --out")
    ap.add_argument("--size", default="120M")
    ap.add_argument("--format", choices=sorted(NAMES), default="v4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="comma-separated command labels")
    a = ap.parse_args()
    found = sorted((a.data / a.size / a.format / "plain").glob(f"*/*/{NAMES[a.format]}"))
    if not found:
        print(f"no {a.size} {a.format} log under {a.data} (bench/generate.py --size {a.size} --format both --out {a.data})",
              file=sys.stderr)
        return 2
    f = str(found[0])
    series = json.loads(subprocess.run([a.now, "requests", "--json", f], capture_output=True, check=True).stdout)
    last = str(len(series["requests"]))
    only = set(a.only.split(",")) if a.only else None
    print(f"| command ({a.size} {a.format}, CPU s, best of {a.repeat}) | base | now | now / base |\n|---|---:|---:|---:|")
    for label, argv in commands(f, last).items():
        if only and label not in only:
            continue
        base, now = [], []
        for _ in range(a.repeat):
            base.append(cpu(a.base, argv))
            now.append(cpu(a.now, argv))
        b, n = min(t for t, _ in base), min(t for t, _ in now)
        codes = "" if base[0][1] == now[0][1] else f" (exit {base[0][1]} vs {now[0][1]})"
        print(f"| `{label}` | {b:.2f} | {n:.2f} | {n / b:.2f}{codes} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
