"""The cache of per-session results: a cold and a warm ``report``, ``stats`` and ``ls`` over a store.

    python bench/cache.py [--count 355] [--scale 1] [--seed 7] [--out bench/data] [--repeat 3] [--root ROOT]

Uses the many-small root of ``bench/generate.py`` (``--count`` sessions, plain), or the root
given with ``--root`` (``../shared/tools/make_store.py`` builds a realistic one).  Each
measurement runs the real command in a fresh process with its own ``XDG_CACHE_HOME``:
``off`` with ``--no-cache``, ``cold`` with an empty cache (it fills it), ``warm`` the same
command again.  Best wall time of ``--repeat`` rounds (each round starts from an empty
cache); the outputs of the three must be the same bytes.  The target (BENCHMARKS.md): a
warm ``report`` at most 0.3x the cold one.
"""

from __future__ import annotations

import argparse
import os
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
TARGET = 0.3


def command(what: str, root: Path) -> list[str]:
    if what == "report":
        return [*DSHLOG, "report", str(root), "--by", "day", "--timezone", "UTC", "--json"]
    if what == "stats":
        return [*DSHLOG, "stats", "--json", *sorted(str(p) for p in root.rglob("session*.jsonl*"))]
    if what == "ls":
        return [*DSHLOG, "ls", str(root), "--json"]
    raise ValueError(what)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=1800)
    return time.perf_counter() - start, done.stdout + b"\0" + done.stderr + b"\0" + str(done.returncode).encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=355)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", type=Path, help="an existing persistence root instead of a generated one")
    ap.add_argument("--commands", default="report,stats,ls")
    args = ap.parse_args()
    if args.root is not None:
        root = args.root
    else:
        generate.generate_many(args.out, count=args.count, seed=args.seed, zstd=False, scale=args.scale)
        root = generate.many_paths(args.out, args.count, args.seed, args.scale)["plain"]
    n = len(list(root.rglob("session*.jsonl*")))
    print(f"{root}: {n} sessions\n")
    print("| command | off s | cold s | warm s | warm / cold |")
    print("|---|---|---|---|---|")
    failed = False
    for what in args.commands.split(","):
        argv = command(what, root)
        best = {"off": float("inf"), "cold": float("inf"), "warm": float("inf")}
        for _ in range(args.repeat):
            home = Path(tempfile.mkdtemp(prefix="dshlog-bench-cache-"))
            try:
                env = {**os.environ, "XDG_CACHE_HOME": str(home)}
                env.pop("DSHLOG_NO_CACHE", None)
                t_off, off = timed([*argv[:3], "--no-cache", *argv[3:]], env)
                t_cold, cold = timed(argv, env)
                t_warm, warm = timed(argv, env)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            if not off == cold == warm:
                print(f"{what}: the outputs with and without the cache differ", file=sys.stderr)
                failed = True
            best = {"off": min(best["off"], t_off), "cold": min(best["cold"], t_cold), "warm": min(best["warm"], t_warm)}
        ratio = best["warm"] / best["cold"]
        mark = "" if what != "report" else (" (met)" if ratio <= TARGET else f" (target {TARGET}x missed)")
        print(f"| {what} | {best['off']:.3f} | {best['cold']:.3f} | {best['warm']:.3f} | {ratio:.2f}x{mark} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
