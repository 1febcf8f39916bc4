"""Batch work over a root of many small sessions: ``report``, ``search`` and more with -j 1 and -j 2.

    python bench/batch.py [--count 1000] [--scale 36] [--seed 7] [--out bench/data] [--repeat 3]

Uses the many-small root of ``bench/generate.py`` (``--many-small``, sessions ``--scale``
times their default size: 36 makes the 1,000-session root about 1 GB), plain and zstd.
Each measurement runs the real command (``dshlog report ROOT --by day --json``,
``dshlog search -i MARKER ROOT --json``) in a fresh process, so start-up and pool
start-up count as they do for a person; best wall time of ``--repeat``.  ``migrate -R``
writes, so each of its runs gets a fresh copy of the root (the copy is not timed) and
its output is compared with the copy's path taken out, together with every file it published.  CPU seconds are
the command's and its workers' together; peak RSS is the largest single process.  The
outputs of -j 1 and -j 2 must be the same bytes.  Prints a Markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402 - found through the path set just above

DSHLOG = [sys.executable, "-m", "dshlog"]


def session_files(root: Path) -> list[str]:
    """Every session generation file below ``root`` (the generator writes one per session)."""
    return sorted(str(p) for p in root.rglob("session*.jsonl*"))


def command(what: str, root: Path, jobs: int, needle: str) -> list[str]:
    j = ["-j", str(jobs)]
    if what == "report":
        return [*DSHLOG, "report", str(root), "--by", "day", "--timezone", "UTC", "--json", *j]
    if what == "search":
        return [*DSHLOG, "search", "-i", needle, str(root), "--json", *j]
    if what == "validate":
        return [*DSHLOG, "validate", "--json", *j, *session_files(root)]
    if what == "stats":
        return [*DSHLOG, "stats", "--json", *j, *session_files(root)]
    if what == "ls --grep":
        return [*DSHLOG, "ls", str(root), "--grep", needle, "--json", *j]
    if what == "migrate -R":
        return [*DSHLOG, "migrate", "-R", str(root), "--json", *j]
    raise ValueError(what)


def published(root: Path) -> str:
    """A digest of every v4 generation below ``root`` that a migration published (path and bytes)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("session.v4.jsonl*")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def run_once(what: str, root: Path, jobs: int, needle: str) -> dict:
    """One run in a child process: wall seconds, CPU of it and its workers, peak RSS, a digest of what it made."""
    with tempfile.TemporaryDirectory(dir=root.parent) as scratch:
        target = root
        if what == "migrate -R":  # it writes: a fresh copy, outside the timing
            target = Path(scratch) / root.name
            shutil.copytree(root, target, symlinks=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(command(what, target, jobs, needle), check=True, capture_output=True)
        dt = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = done.stdout.replace(str(target).encode(), b"ROOT")
        if what == "migrate -R":
            out += published(target).encode()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": dt, "cpu": cpu, "rssKiB": after.ru_maxrss, "out": hashlib.sha256(out).hexdigest()}


def measure(what: str, root: Path, jobs: int, repeat: int, needle: str) -> dict:
    """Best of ``repeat`` runs; each run in its own grandchild, so peak RSS is this measurement's own."""
    best: dict | None = None
    for _ in range(repeat):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a fresh child per run: RUSAGE_CHILDREN's peak is then this run's alone
            os.close(r)
            got = run_once(what, root, jobs, needle)
            os.write(w, json.dumps(got).encode())
            os._exit(0)
        os.close(w)
        chunks = []
        while chunk := os.read(r, 1 << 20):
            chunks.append(chunk)
        os.close(r)
        os.waitpid(pid, 0)
        got = json.loads(b"".join(chunks))
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
    ap.add_argument("--scale", type=float, default=1.0, help="sessions this many times their default size (36: about 1 GB)")
    ap.add_argument("--commands", default="report,search", help="comma-separated: report, search, validate, stats, ls --grep, migrate -R")
    a = ap.parse_args(argv)
    manifest = generate.generate_many(a.out, a.count, a.seed, scale=a.scale)
    paths = generate.many_paths(a.out, a.count, a.seed, a.scale)
    size = sum(s["bytes"] for s in manifest["sessions"])
    load = os.getloadavg()[0]
    print(f"{len(manifest['sessions'])} sessions, {size / 1e6:.1f} MB plain; {os.cpu_count()} cores, load average {load:.1f}\n")
    print("| command | root | -j 1 wall | -j 2 wall | speed-up | CPU s (-j 1 / -j 2) | peak RSS per process |")
    print("|---|---|---:|---:|---:|---:|---:|")
    labels = {"report": "report --by day", "search": f"search -i {manifest['marker']}", "validate": "validate (every file)",
              "stats": "stats (every file)", "ls --grep": f"ls --grep {manifest['marker']}", "migrate -R": "migrate -R"}
    for what in a.commands.split(","):
        label = labels[what]
        for enc in ("plain", "zstd"):
            one = measure(what, paths[enc], 1, a.repeat, manifest["marker"])
            two = measure(what, paths[enc], 2, a.repeat, manifest["marker"])
            assert one["out"] == two["out"], f"{label} {enc}: -j 1 and -j 2 printed different bytes"
            print(f"| {label} | {enc} | {one['seconds']:.2f} s | {two['seconds']:.2f} s | "
                  f"{one['seconds'] / two['seconds']:.2f}x | {one['cpu']:.2f} / {two['cpu']:.2f} | "
                  f"{one['rssKiB'] // 1024} / {two['rssKiB'] // 1024} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
