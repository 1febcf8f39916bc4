"""Batch work over a root of many small sessions: ``report`` and ``search`` with -j 1 and -j 2.

    python bench/batch.py [--count 1000] [--seed 7] [--out bench/data] [--repeat 3]

Uses the many-small root of ``bench/generate.py`` (``--many-small``), plain and zstd.
Each measurement runs in a fresh interpreter (so imports and pool start-up count, as
they do for a command), best of ``--repeat``; peak RSS is the largest of the parent
and of any worker.  Prints a Markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402 - found through the path set just above

JOB = r"""
import json, os, resource, sys, time
from datetime import timezone
from dshlog.executor import InProcess, ProcessPool
from dshlog.model.search import Query
from dshlog.ops.report import store_sessions, usage_report
from dshlog.ops.search import search
what, root, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
c0 = os.times()
ex = InProcess() if jobs == 1 else ProcessPool(jobs)
with ex:
    files = store_sessions([root])
    if what == "report":
        rep = usage_report(files, ["day"], tz=timezone.utc, zone="UTC", executor=ex)
        n = len(rep.rows)
    else:
        n = sum(len(r.hits) for r in search(files, Query(sys.argv[4], ignore_case=True), executor=ex))
dt = time.perf_counter() - t0
c1 = os.times()
cpu = (c1.user - c0.user) + (c1.system - c0.system) + (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"seconds": dt, "cpu": cpu, "rssKiB": rss, "n": n, "files": len(files)}))
"""


def measure(what: str, root: Path, jobs: int, repeat: int, needle: str) -> dict:
    best: dict | None = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", JOB, what, str(root), str(jobs), needle],
                             check=True, capture_output=True, text=True).stdout
        got = json.loads(out)
        if best is None or got["seconds"] < best["seconds"]:
            best = got
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    manifest = generate.generate_many(a.out, a.count, a.seed)
    paths = generate.many_paths(a.out, a.count, a.seed)
    size = sum(s["bytes"] for s in manifest["sessions"])
    load = os.getloadavg()[0]
    print(f"{len(manifest['sessions'])} sessions, {size / 1e6:.1f} MB plain; {os.cpu_count()} cores, load average {load:.1f}\n")
    print("| command | root | -j 1 wall | -j 2 wall | speed-up | CPU s (-j 1 / -j 2) | peak RSS per process |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for what, label in (("report", "report --by day"), ("search", f"search -i {manifest['marker']}")):
        for enc in ("plain", "zstd"):
            one = measure(what, paths[enc], 1, a.repeat, manifest["marker"])
            two = measure(what, paths[enc], 2, a.repeat, manifest["marker"])
            assert one["n"] == two["n"], (one, two)
            print(f"| {label} | {enc} | {one['seconds']:.2f} s | {two['seconds']:.2f} s | "
                  f"{one['seconds'] / two['seconds']:.2f}x | {one['cpu']:.2f} / {two['cpu']:.2f} | "
                  f"{one['rssKiB'] // 1024} / {two['rssKiB'] // 1024} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
