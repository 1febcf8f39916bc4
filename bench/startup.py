"""Start-up CPU time of dshlog against `python -c 'import orjson'`, interleaved, medians.

    python bench/startup.py [--rounds 21] [--dshlog EXE] [--imports]

A command on a tiny log is all start-up: the interpreter, the imports, the parser of
the command line, then a few microseconds of work.  Each round runs every command
below once, in a fresh process, one after the other, so a burst of load on a shared
machine hits all of them; the child's CPU time (user + system, from ``os.wait4``) is
what is compared, since it is far less disturbed by other load than wall time.  The
baseline is ``python -c 'import orjson'`` on the same interpreter: the least a Python
tool that reads JSON pays before it does anything.  The target is
``targets.STARTUP_RATIO`` times that (each command's median over the baseline's).

Children run with an empty ``DSH_HOME`` and a cache directory of their own (warmed
by one uncounted round), so the runs neither read nor write the user's store or cache.
``--imports`` prints, per command, the modules ``python -X importtime`` finds slowest
(cumulative), to see what a command loads before it runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from targets import STARTUP_RATIO  # noqa: E402

PY = sys.executable
#: The installed `dshlog` beside this interpreter (its console script), else the module.
DSHLOG = [str(Path(PY).parent / "dshlog")] if (Path(PY).parent / "dshlog").exists() else [PY, "-m", "dshlog"]
#: A tiny log: a command on it is all start-up.
TINY = ROOT / "fixtures" / "v4" / "loop" / "session.v4.jsonl"
BASELINE = "python -c 'import orjson'"


def commands(dshlog: list[str], empty_root: Path) -> dict[str, list[str]]:
    """Label -> argv of each measured process, the baseline first."""
    return {
        BASELINE: [PY, "-c", "import orjson"],
        "dshlog --version": [*dshlog, "--version"],
        "dshlog info TINY": [*dshlog, "info", str(TINY)],
        "dshlog validate TINY": [*dshlog, "validate", str(TINY)],
        "dshlog ls EMPTY": [*dshlog, "ls", str(empty_root)],
    }


@dataclass
class Startup:
    """One command's CPU times over the rounds, and its median's ratio to the baseline's."""

    label: str
    cpu: list[float]
    ratio: float | None  # None for the baseline itself

    @property
    def median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def met(self) -> bool | None:
        return None if self.ratio is None else self.ratio <= STARTUP_RATIO


@contextmanager
def child_env() -> Iterator[tuple[dict[str, str], Path]]:
    """The children's environment (an ordinary shell's, with its own home and cache) and an empty root."""
    with tempfile.TemporaryDirectory(prefix="dshlog-startup-") as tmp:
        t = Path(tmp)
        for d in ("home", "cache", "root"):
            (t / d).mkdir()
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONPROFILEIMPORTTIME", "DSHLOG_NO_CACHE")}
        env.update(DSH_HOME=str(t / "home"), XDG_CACHE_HOME=str(t / "cache"))
        yield env, t / "root"


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one fresh process running ``argv``; it must succeed."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    assert p.stderr is not None
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {err.decode(errors='replace')[-300:]}")
    return usage.ru_utime + usage.ru_stime


def measure(rounds: int, dshlog: list[str] = DSHLOG) -> list[Startup]:
    """Every command's CPU time over ``rounds`` interleaved rounds (after one uncounted warm-up)."""
    with child_env() as (env, empty):
        cmds = commands(dshlog, empty)
        times: dict[str, list[float]] = {label: [] for label in cmds}
        for n in range(rounds + 1):
            for label, argv in cmds.items():
                t = cpu_of(argv, env)
                if n:  # the first round compiles bytecode and fills the cache
                    times[label].append(t)
    base = statistics.median(times[BASELINE])
    return [Startup(label, ts, None if label == BASELINE else statistics.median(ts) / base) for label, ts in times.items()]


def table(results: list[Startup]) -> str:
    """The medians, their ratios to the baseline and the verdicts, as Markdown."""
    rounds = len(results[0].cpu)
    lines = [f"Start-up, median CPU time (user + system) of {rounds} interleaved rounds; "
             f"target: at most {STARTUP_RATIO:g}× `{BASELINE}`.", "",
             "| command | CPU ms | × baseline | target |", "|---|---:|---:|---|"]
    for r in results:
        verdict = "" if r.met is None else ("met" if r.met else "**missed**")
        ratio = "1.00" if r.ratio is None else f"{r.ratio:.2f}"
        lines.append(f"| `{r.label}` | {r.median * 1e3:.1f} | {ratio} | {verdict} |")
    return "\n".join(lines)


def imports(dshlog: list[str], top: int) -> str:
    """Per command, the ``top`` slowest imports (cumulative microseconds) ``-X importtime`` reports."""
    out = []
    with child_env() as (env, empty):
        env = {**env, "PYTHONPROFILEIMPORTTIME": "1"}
        for label, argv in commands(dshlog, empty).items():
            subprocess.run(argv, capture_output=True, cwd=ROOT, env=env)  # bytecode and cache warm
            err = subprocess.run(argv, capture_output=True, cwd=ROOT, env=env, text=True).stderr
            rows = []
            for line in err.splitlines():
                if line.startswith("import time:") and "|" in line and "cumulative" not in line:
                    _, cum, name = line.split("|")
                    rows.append((int(cum), name.rstrip()))
            rows.sort(reverse=True)
            out.append(f"{label}:")
            out += [f"  {cum / 1e3:7.1f} ms  {name}" for cum, name in rows[:top]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=21, help="counted rounds (default %(default)s)")
    ap.add_argument("--dshlog", help="the dshlog executable to time (default: the one beside this interpreter)")
    ap.add_argument("--imports", type=int, nargs="?", const=25, metavar="N",
                    help="print each command's N slowest imports (python -X importtime) instead of timing")
    a = ap.parse_args(argv)
    dshlog = [a.dshlog] if a.dshlog else DSHLOG
    if a.imports:
        print(imports(dshlog, a.imports))
        return 0
    print(table(measure(a.rounds, dshlog)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
