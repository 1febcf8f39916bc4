"""The cache of per-session results: a cold and a warm ``report``, ``stats`` and ``ls`` over a store,
and ``validate``, ``stats``, ``info`` and ``surface`` of one large log.

    python bench/cache.py [--count 355] [--scale 1] [--seed 7] [--out bench/data] [--repeat 3] [--root ROOT]
    python bench/cache.py --log 30M [--no-compaction] [--repeat 3]     # the commands of one log
    python bench/cache.py --log 30M --append 1 [--commands surface]   # ... after 1% was appended

Uses the many-small root of ``bench/generate.py`` (``--count`` sessions, plain), or the root
given with ``--root`` (``../shared/tools/make_store.py`` builds a realistic one).  Each
measurement runs the real command in a fresh process with its own ``XDG_CACHE_HOME``:
``off`` with ``--no-cache``, ``cold`` with an empty cache (it fills it), ``warm`` the same
command again.  Best wall time of ``--repeat`` rounds (each round starts from an empty
cache); the outputs of the three must be the same bytes.  The target (``targets.CACHE_WARM``):
a warm ``report`` at most that share of the cold one.  With ``--log SIZE`` the commands run on one
generated v4 log of that size (``--log FILE``: that file) instead, and the CPU time of
each child (user + system, from ``wait4``) is reported beside the wall time: the
interpreter's start-up, paid warm and cold alike, is most of a warm run.

With ``--append PCT`` (and ``--log``), each round caches the log cut at the line where its
last ``PCT`` percent of bytes begins, appends the rest, and runs the command again: that
run (``resumed``) goes on from the state the first one kept and reads only the appended
lines.  It is compared with a ``cold`` run on the whole log (an empty cache) by CPU time;
the target (``targets.CACHE_RESUMED``): ``surface`` resumed at most that share of cold.  The outputs of ``off``,
``cold`` and ``resumed`` must be the same bytes.
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
import targets  # noqa: E402

DSHLOG = [sys.executable, "-m", "dshlog"]
TARGET = targets.CACHE_WARM
#: ``--append``: a resumed ``surface`` at most this fraction of a cold one (CPU).
RESUME_TARGET = targets.CACHE_RESUMED


#: The commands of one log (``--log``).
LOG_COMMANDS = "validate,stats,info,surface"


def command(what: str, root: Path) -> list[str]:
    if root.is_file():
        return [*DSHLOG, what, *(["--json"] if what in ("stats", "validate", "info") else []), str(root)]
    if what == "report":
        return [*DSHLOG, "report", str(root), "--by", "day", "--timezone", "UTC", "--json"]
    if what == "stats":
        return [*DSHLOG, "stats", "--json", *sorted(str(p) for p in root.rglob("session*.jsonl*"))]
    if what == "ls":
        return [*DSHLOG, "ls", str(root), "--json"]
    raise ValueError(what)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds of the child (user + system) and what it printed, with its exit code."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        printed = out.read() + b"\0" + err.read() + b"\0" + str(proc.returncode).encode()
    return wall, usage.ru_utime + usage.ru_stime, printed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=355)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--root", type=Path, help="an existing persistence root instead of a generated one")
    ap.add_argument("--commands", default=None, help=f"default: report,stats,ls; with --log: {LOG_COMMANDS}")
    ap.add_argument("--log", help="one log instead of a store: a size to generate (30M) or a file")
    ap.add_argument("--no-compaction", action="store_true", help="with --log SIZE: the shape whose surface grows for the whole log")
    ap.add_argument("--append", type=float, help="with --log: percent of the log appended after it was cached")
    args = ap.parse_args()
    if args.log is not None:
        if Path(args.log).is_file():
            root = Path(args.log)
        else:
            shape = generate.Shape(compaction=not args.no_compaction)
            root = generate.generate(args.out, args.log, 4, args.seed, zstd=False, shape=shape)["plain"]
        args.commands = args.commands or LOG_COMMANDS
    elif args.root is not None:
        root = args.root
    else:
        generate.generate_many(args.out, count=args.count, seed=args.seed, zstd=False, scale=args.scale)
        root = generate.many_paths(args.out, args.count, args.seed, args.scale)["plain"]
    if args.append is not None:
        if not root.is_file():
            ap.error("--append needs --log")
        return appended(root, args.append, (args.commands or "surface").split(","), args.repeat)
    if root.is_file():
        print(f"{root}: {root.stat().st_size:,} B\n")
    else:
        print(f"{root}: {len(list(root.rglob('session*.jsonl*')))} sessions\n")
    args.commands = args.commands or "report,stats,ls"
    print("| command | off s | cold s | warm s | warm / cold | cold CPU s | warm CPU s | warm / cold (CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    for what in args.commands.split(","):
        argv = command(what, root)
        best = {"off": float("inf"), "cold": float("inf"), "warm": float("inf")}
        cpu = {"cold": float("inf"), "warm": float("inf")}
        for _ in range(args.repeat):
            home = Path(tempfile.mkdtemp(prefix="dshlog-bench-cache-"))
            try:
                env = {**os.environ, "XDG_CACHE_HOME": str(home)}
                env.pop("DSHLOG_NO_CACHE", None)
                t_off, _c, off = timed([*argv[:3], "--no-cache", *argv[3:]], env)
                t_cold, c_cold, cold = timed(argv, env)
                t_warm, c_warm, warm = timed(argv, env)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            if not off == cold == warm:
                print(f"{what}: the outputs with and without the cache differ", file=sys.stderr)
                failed = True
            best = {"off": min(best["off"], t_off), "cold": min(best["cold"], t_cold), "warm": min(best["warm"], t_warm)}
            cpu = {"cold": min(cpu["cold"], c_cold), "warm": min(cpu["warm"], c_warm)}
        ratio = best["warm"] / best["cold"]
        mark = "" if what != "report" or root.is_file() else (" (met)" if ratio <= TARGET else f" (target {TARGET}x missed)")
        print(f"| {what} | {best['off']:.3f} | {best['cold']:.3f} | {best['warm']:.3f} | {ratio:.2f}x{mark} "
              f"| {cpu['cold']:.3f} | {cpu['warm']:.3f} | {cpu['warm'] / cpu['cold']:.2f}x |")
    return 1 if failed else 0


def appended(log: Path, percent: float, commands: list[str], repeat: int) -> int:
    """Each command after ``percent`` of ``log`` was appended to a cached copy: resumed against cold (CPU)."""
    data = log.read_bytes()
    cut = data.rfind(b"\n", 0, int(len(data) * (1 - percent / 100))) + 1
    print(f"{log}: {len(data):,} B, cached at {cut:,} B, {len(data) - cut:,} B appended\n")
    print("| command | off s | cold s | resumed s | cold CPU s | resumed CPU s | resumed / cold (CPU) |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    for what in commands:
        best = {"off": float("inf"), "cold": float("inf"), "resumed": float("inf")}
        cpu = {"cold": float("inf"), "resumed": float("inf")}
        for _ in range(repeat):
            work = Path(tempfile.mkdtemp(prefix="dshlog-bench-resume-"))
            try:
                copy = work / log.name
                copy.write_bytes(data[:cut])
                argv = command(what, copy)
                env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
                env.pop("DSHLOG_NO_CACHE", None)
                timed(argv, env)  # caches the log as it stood
                with open(copy, "ab") as fh:
                    fh.write(data[cut:])
                t_off, _c, off = timed([*argv[:3], "--no-cache", *argv[3:]], env)
                t_cold, c_cold, cold = timed(argv, {**env, "XDG_CACHE_HOME": str(work / "empty")})
                t_res, c_res, resumed = timed(argv, env)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if not off == cold == resumed:
                print(f"{what}: the outputs with and without the cache differ", file=sys.stderr)
                failed = True
            best = {"off": min(best["off"], t_off), "cold": min(best["cold"], t_cold), "resumed": min(best["resumed"], t_res)}
            cpu = {"cold": min(cpu["cold"], c_cold), "resumed": min(cpu["resumed"], c_res)}
        ratio = cpu["resumed"] / cpu["cold"]
        mark = "" if what != "surface" else (" (met)" if ratio <= RESUME_TARGET else f" (target {RESUME_TARGET}x missed)")
        print(f"| {what} | {best['off']:.3f} | {best['cold']:.3f} | {best['resumed']:.3f} "
              f"| {cpu['cold']:.3f} | {cpu['resumed']:.3f} | {ratio:.2f}x{mark} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
