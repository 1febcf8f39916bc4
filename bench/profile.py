"""Where does a dshlog command spend its time?  Sampled profile, summarised as text.

    python bench/profile.py -- events --json bench/data/120M/v4/plain/.../session.v4.jsonl

Runs ``dshlog <args>`` (stdout discarded) under py-spy when it is installed
(``pip install py-spy`` into the venv; sampling does not distort call-heavy code
the way cProfile does), otherwise under cProfile, and prints the functions with
the most self time and the most inclusive time.  ``--areas`` sums the self time
by part of the package instead (``read/input``, ``check/surface``: a module's
share; the C parse, msgspec and the other builtins apart), which is how
BENCHMARKS.md says where a missed target's time goes.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _short(frame: str) -> str:
    """``func (path/to/dshlog/x.py:12)`` -> ``func (dshlog/x.py)``."""
    if "(" in frame and "/" in frame:
        name, _, where = frame.partition(" (")
        where = where.rstrip(")")
        parts = where.split("/")
        for anchor in ("dshlog", "site-packages"):
            if anchor in parts:
                where = "/".join(parts[parts.index(anchor) :])
                break
        else:
            where = parts[-1]
        return f"{name} ({where.rsplit(':', 1)[0]})"  # per function, not per line
    return frame


def summarise_raw(path: Path, top: int) -> str:
    self_c: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        k = int(n)
        total += k
        frames = [_short(f) for f in stack.split(";")]
        self_c[frames[-1]] += k
        for f in set(frames):
            incl[f] += k
    out = [f"{total} samples"]
    out += ["", "self time:"] + [f"  {n / total:6.1%}  {f}" for f, n in self_c.most_common(top)]
    out += ["", "inclusive time:"] + [f"  {n / total:6.1%}  {f}" for f, n in incl.most_common(top + 8) if n < total * 0.995]
    return "\n".join(out)


def area_of(frame: str) -> str:
    """The part of the program a frame's self time counts to: a module of the package, or a kind of C code."""
    if "dshlog/" in frame:
        return frame.split("dshlog/", 1)[1].split(".py", 1)[0]
    if "orjson" in frame or "_scan" in frame:
        return "C: the JSON parse (orjson, the lossless scan)"
    if "msgspec" in frame:
        return "C: msgspec (typed checks, envelopes)"
    if frame.startswith(("{", "<built-in", "<method")) or ".py" not in frame:
        return "C: other builtins"
    return "the standard library and the rest"


def summarise_areas(samples: collections.Counter[str], top: int) -> str:
    """Self time summed by :func:`area_of`, as shares of the whole."""
    total = sum(samples.values()) or 1
    areas: collections.Counter[str] = collections.Counter()
    for frame, n in samples.items():
        areas[area_of(frame)] += n
    return "\n".join(["self time by area:"] + [f"  {n / total:6.1%}  {a}" for a, n in areas.most_common(top)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--areas", action="store_true", help="self time summed by module and by kind of C code")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="dshlog arguments (after --)")
    a = ap.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    py = sys.executable
    spy = shutil.which("py-spy", path=str(Path(py).parent)) or shutil.which("py-spy")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    with tempfile.TemporaryDirectory() as tmp:
        if spy:
            raw = Path(tmp) / "raw.txt"
            cmd = [spy, "record", "-r", "500", "-f", "raw", "-o", str(raw), "--", py, "-m", "dshlog.cli", *args]
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
            if a.areas:
                leaves: collections.Counter[str] = collections.Counter()
                for line in raw.read_text().splitlines():
                    stack, _, n = line.rpartition(" ")
                    if stack:
                        leaves[stack.split(";")[-1]] += int(n)
                print(summarise_areas(leaves, a.top))
            else:
                print(summarise_raw(raw, a.top))
        else:
            stats = Path(tmp) / "prof"
            subprocess.run([py, "-m", "cProfile", "-o", str(stats), "-m", "dshlog.cli", *args], stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
            import pstats

            st = pstats.Stats(str(stats))
            if a.areas:
                own: collections.Counter[str] = collections.Counter()
                for (file, _line, fn), (_cc, _nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]  # Stats.stats is undocumented in the stubs
                    own[fn if file == "~" else f"{fn} ({file})"] += round(tt * 1e6)
                print(summarise_areas(own, a.top))
            else:
                st.sort_stats("tottime").print_stats(a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
