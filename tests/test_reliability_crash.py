"""Crash safety: ``kill -9`` of the writing commands at random points, on real files.

Each trial copies a pristine session, starts ``dshlog migrate`` / ``repair --write``
/ ``fork`` / ``repair -o`` / ``export -o`` on a multi-MB generated log in a child process, sends SIGKILL after a
random delay (anywhere from start-up to past the end of an uninterrupted run, so
most kills land while the successor is being staged), then checks what is left:

* the source is byte-identical (``repair --write``: either untouched or exactly the
  fully repaired bytes, never anything in between);
* nothing partial is visible under a final name: the successor / child / repaired
  log is either absent or byte-identical to an uninterrupted run's output;
* whatever temporary files the killed run staged are recognised and removed by the
  next run, and that next run succeeds (a fork whose child was already published
  is refused instead, since it never overwrites).

The CI run makes a handful of trials per command; ``make stress`` makes at least
100 per command on a larger input and records the figures.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

import pytest

from conftest import dshlog_argv
from test_reliability_support import cut_open_tail, generated, leftovers, record_figures, run, stored_as, stress_scale

PROJECT = "--home-ann-crash--"


@dataclass
class Case:
    """One writing command on one pristine session, with the bytes an uninterrupted run produces."""

    name: str
    pristine: Path  # session directory (or parent directory for fork)
    args: Callable[[Path], list[str]]  # command line for a trial directory
    check: Callable[[Case, Path, int | None], str]  # invariants after a kill; returns the outcome class
    rerun: Callable[[Case, Path, str], None]
    expected: dict[str, bytes] = field(default_factory=dict)
    duration: float = 0.0


def _session_dir(base: Path, sid: str, name: str, data: bytes) -> Path:
    d = base / PROJECT / sid
    d.mkdir(parents=True)
    (d / name).write_bytes(data)
    os.utime(d / name, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    return d


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return dst


# ----------------------------------------------------------------------------- migrate


def _migrate_check(case: Case, d: Path, rc: int | None) -> str:
    src_name = case.expected["source-name"].decode()
    assert (d / src_name).read_bytes() == case.expected["source"], "source changed"
    target = d / case.expected["target-name"].decode()
    names = set(os.listdir(d)) - {src_name, "session.lock", target.name}
    assert names <= set(leftovers(d)), f"unexpected files {names}"
    if target.exists():
        assert target.read_bytes() == case.expected["target"], "partial successor visible under its final name"
        return "published" + ("+temp" if names else "")
    return "staging" if names else "no-trace"


def _migrate_rerun(case: Case, d: Path, outcome: str) -> None:
    p = run("migrate", "--no-children", str(d))
    assert p.returncode == 0, p.stderr
    assert (d / case.expected["target-name"].decode()).read_bytes() == case.expected["target"]
    assert leftovers(d) == [], "the next run did not clean the leftovers"


# ----------------------------------------------------------------------------- repair --write


def _repair_check(case: Case, d: Path, rc: int | None) -> str:
    log = d / "session.v4.jsonl"
    data = log.read_bytes()
    assert data in (case.expected["source"], case.expected["repaired"]), "half-repaired log"
    sidecars = [n for n in os.listdir(d) if ".torn-" in n and not n.endswith(".tmp")]
    for n in sidecars:
        assert (d / n).read_bytes() == case.expected["torn"], "partial sidecar visible"
    temps = leftovers(d)
    if data == case.expected["repaired"]:
        assert sidecars, "repaired without keeping the torn bytes"
        return "replaced" + ("+temp" if temps else "")
    if sidecars:
        return "sidecar-only" + ("+temp" if temps else "")
    return "staging" if temps else "no-trace"


def _repair_rerun(case: Case, d: Path, outcome: str) -> None:
    p = run("repair", "--write", str(d / "session.v4.jsonl"))
    assert p.returncode == 0, p.stderr
    assert (d / "session.v4.jsonl").read_bytes() == case.expected["repaired"]
    assert leftovers(d) == [], "the next run did not clean the leftovers"


# ----------------------------------------------------------------------------- fork


def _fork_body(data: bytes) -> tuple[dict, bytes]:
    import orjson

    head, _, body = data.partition(b"\n")
    h = orjson.loads(head)
    h.pop("createdAt", None)  # the only clock-dependent byte range of a fork child
    return h, body


def _fork_check(case: Case, d: Path, rc: int | None) -> str:
    assert (d / "parent" / "session.v4.jsonl").read_bytes() == case.expected["source"], "parent changed"
    out = d / "out"
    child = out / "child.v4.jsonl"
    names = set(os.listdir(out)) - {child.name}
    assert names <= set(leftovers(out)), f"unexpected files {names}"
    if child.exists():
        assert _fork_body(child.read_bytes()) == _fork_body(case.expected["child"]), "partial child visible"
        return "published" + ("+temp" if names else "")
    return "staging" if names else "no-trace"


def _fork_rerun(case: Case, d: Path, outcome: str) -> None:
    p = run(*case.args(d))
    child = d / "out" / "child.v4.jsonl"
    if outcome.startswith("published"):
        assert p.returncode == 5, p.stderr  # never overwrites the complete child
    else:
        assert p.returncode == 0, p.stderr
    assert _fork_body(child.read_bytes()) == _fork_body(case.expected["child"])
    assert leftovers(d / "out") == [], "the next run did not clean the leftovers"


# ----------------------------------------------------------------------------- repair -o and export -o


def _output_check(case: Case, d: Path, rc: int | None) -> str:
    """A copy out of the parent (repair -o, export -o): the parent intact, the output absent or complete."""
    assert (d / "parent" / "session.v4.jsonl").read_bytes() == case.expected["source"], "parent changed"
    out = d / "out"
    final = out / case.expected["output-name"].decode()
    names = set(os.listdir(out)) - {final.name}
    assert names <= set(leftovers(out)), f"unexpected files {names}"
    if final.exists():
        assert final.read_bytes() == case.expected["output"], "partial output visible"
        return "published" + ("+temp" if names else "")
    return "staging" if names else "no-trace"


def _output_rerun(case: Case, d: Path, outcome: str) -> None:
    p = run(*case.args(d))
    assert p.returncode == (5 if outcome.startswith("published") else 0), p.stderr  # never overwrites
    assert (d / "out" / case.expected["output-name"].decode()).read_bytes() == case.expected["output"]
    assert leftovers(d / "out") == [], "the next run did not clean the leftovers"


# ----------------------------------------------------------------------------- building the cases


def _build_cases(base: Path, size: str) -> dict[str, Case]:
    cache = base / "generated"
    v0 = generated(cache, size, 0)
    v4 = generated(cache, size, 4)
    cases: dict[str, Case] = {}

    for label, key, name in (("migrate", "plain", "session.jsonl"), ("migrate-zstd", "zstd", "session.jsonl.zstd")):
        src = v0[key].read_bytes()
        pristine = _session_dir(base / f"pristine-{label}", f"m-{label}", name, src)
        target_name = "session.v4.jsonl.zstd" if name.endswith(".zstd") else "session.v4.jsonl"
        case = Case(label, pristine, lambda d: ["migrate", "--no-children", str(d)], _migrate_check, _migrate_rerun)
        ref = _copy(pristine, base / f"ref-{label}")
        t0 = time.monotonic()
        p = run(*case.args(ref))
        case.duration = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        case.expected = {"source": src, "source-name": name.encode(), "target-name": target_name.encode(),
                         "target": (ref / target_name).read_bytes()}
        cases[label] = case

    lines = v4["plain"].read_bytes().splitlines(keepends=True)
    torn = b'{"type":"tool/result","seq":'
    crash = cut_open_tail(lines, torn)
    pristine = _session_dir(base / "pristine-repair", "r-1", "session.v4.jsonl", crash)
    case = Case("repair", pristine, lambda d: ["repair", "--write", str(d / "session.v4.jsonl")], _repair_check, _repair_rerun)
    ref = _copy(pristine, base / "ref-repair")
    t0 = time.monotonic()
    p = run(*case.args(ref))
    case.duration = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    case.expected = {"source": crash, "repaired": (ref / "session.v4.jsonl").read_bytes(), "torn": torn}
    assert case.expected["repaired"] != crash
    cases["repair"] = case

    pristine = base / "pristine-fork"
    (pristine / "parent").mkdir(parents=True)
    (pristine / "out").mkdir()
    (pristine / "parent" / "session.v4.jsonl").write_bytes(crash[: -len(torn)])

    def fork_args(d: Path) -> list[str]:
        return ["fork", str(d / "parent" / "session.v4.jsonl"), "-o", str(d / "out" / "child.v4.jsonl"), "--id", "child-1"]

    case = Case("fork", pristine, fork_args, _fork_check, _fork_rerun)
    ref = _copy(pristine, base / "ref-fork")
    t0 = time.monotonic()
    p = run(*case.args(ref))
    case.duration = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    case.expected = {"source": crash[: -len(torn)], "child": (ref / "out" / "child.v4.jsonl").read_bytes()}
    cases["fork"] = case

    for label, out_name, argv in (
        ("repair-o", "repaired.jsonl", ["repair"]),
        ("export", "export.html", ["export", "-f", "html"]),
    ):
        def out_args(d: Path, argv: list[str] = argv, out_name: str = out_name) -> list[str]:
            return [*argv, str(d / "parent" / "session.v4.jsonl"), "-o", str(d / "out" / out_name)]

        case = Case(label, pristine, out_args, _output_check, _output_rerun)
        ref = _copy(pristine, base / f"ref-{label}")
        t0 = time.monotonic()
        p = run(*case.args(ref))
        case.duration = time.monotonic() - t0
        assert p.returncode == 0, p.stderr
        case.expected = {"source": crash[: -len(torn)], "output-name": out_name.encode(),
                         "output": (ref / "out" / out_name).read_bytes()}
        cases[label] = case
    return cases


def _trials(case: Case, base: Path, n: int, rng: random.Random) -> Counter[str]:
    """Run ``n`` kill trials of ``case``; every invariant is asserted inside."""
    counts: Counter[str] = Counter()
    for i in range(n):
        d = _copy(case.pristine, base / f"trial-{case.name}-{i}")
        delay = rng.uniform(0.0, case.duration * 0.9)
        proc = subprocess.Popen(dshlog_argv(*case.args(d), script=True), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(delay)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
        rc = None if killed else proc.returncode
        if not killed:
            assert proc.returncode == 0, err
        outcome = case.check(case, d, rc)
        counts["killed" if killed else "finished"] += 1
        counts[outcome] += 1
        case.rerun(case, d, outcome)
        shutil.rmtree(d)
    return counts


TRIALS = stress_scale(ci=2, stress=100)


def _run_kill_trials(tmp_path_factory: pytest.TempPathFactory, is_stress: bool, names: tuple[str, ...]) -> None:
    base = tmp_path_factory.mktemp("crash")
    cases = _build_cases(base, "6M" if is_stress else "3M")
    rng = random.Random(int(os.environ.get("DSHLOG_STRESS_SEED", "20261130")))
    for name in names:
        n = TRIALS(is_stress) if name != "migrate-zstd" or is_stress else 2
        counts = _trials(cases[name], base, n, rng)
        assert counts["killed"] + counts["finished"] == n
        if is_stress:
            # the delays must reach inside the writing window, not only before or after it
            assert counts["killed"] >= n // 3, counts
            record_figures(f"kill-9 {name}", trials=n, faults=counts["killed"], failures=0,
                           **{k: v for k, v in counts.items() if k not in ("killed", "finished")})


ALL = ("migrate", "migrate-zstd", "repair", "fork", "repair-o", "export")


def test_kill9_writers_leave_source_intact_and_next_run_recovers(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A handful of SIGKILLs per writing command (the stress run does hundreds)."""
    _run_kill_trials(tmp_path_factory, False, ALL)


@pytest.mark.stress
def test_kill9_writers_stress(tmp_path_factory: pytest.TempPathFactory) -> None:
    _run_kill_trials(tmp_path_factory, True, ALL)


# ----------------------------------------------------------------------------- deterministic crash images


def test_repair_rerun_accepts_the_sidecar_a_killed_run_kept(tmp_path: Path) -> None:
    """Killed after keeping the torn bytes but before the swap: the rerun must not refuse its own sidecar."""
    lines = stored_as((Path(__file__).resolve().parents[1] / "fixtures" / "v4" / "crash" / "session.v4.jsonl").read_bytes(), "s", "/home/ann/crash")
    torn = b'{"type":"tool/res'
    d = tmp_path / PROJECT / "s"
    d.mkdir(parents=True)
    log = d / "session.v4.jsonl"
    log.write_bytes(lines + torn)
    side = d / f"session.v4.jsonl.torn-{os.stat(log).st_mtime_ns // 1_000_000}"
    side.write_bytes(torn)
    (d / ".session.v4.jsonl.dshlog-0123456789abcdef.tmp").write_bytes(lines[:100])
    p = run("repair", "--write", str(log))
    assert p.returncode == 0, p.stderr
    assert side.read_bytes() == torn
    assert leftovers(d) == []
    assert run("repair", "--check", str(log)).returncode == 0


def test_migrate_cleans_temp_left_after_publication(tmp_path: Path) -> None:
    """Killed between link() and unlink(): the session is current, and the stale temp still goes."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "v0" / "text-turn" / "session.jsonl"
    d = tmp_path / PROJECT / "s"
    d.mkdir(parents=True)
    (d / "session.jsonl").write_bytes(stored_as(src.read_bytes(), "s", "/home/ann/crash"))
    assert run("migrate", "--no-children", str(d)).returncode == 0
    stale = d / "session.migration.0123456789abcdef.jsonl.tmp"
    stale.write_bytes((d / "session.v4.jsonl").read_bytes())
    p = run("migrate", "--no-children", str(d))
    assert p.returncode == 0, p.stderr
    assert not stale.exists()


def test_fork_cleans_stale_temps_but_not_a_live_one(tmp_path: Path) -> None:
    """Dead temps of any writer are removed; a temp whose writer is alive (holds its flock) is kept,
    and so is a dsh migration name, which only a holder of that session's lock may take for dead."""
    import fcntl

    parent = Path(__file__).resolve().parents[1] / "fixtures" / "v4" / "loop" / "session.v4.jsonl"
    out = tmp_path / "out"
    out.mkdir()
    stale = out / ".child.jsonl.dshlog-0123456789abcdef.tmp"
    stale.write_bytes(b"partial")
    live = out / ".child.jsonl.dshlog-fedcba9876543210.tmp"
    live.write_bytes(b"being written")
    other = out / ".unrelated.jsonl.dshlog-0123456789abcdef.tmp"  # a killed repair -o or export -o
    other.write_bytes(b"someone else's")
    migration = out / "session.migration.0123456789abcdef.jsonl.tmp"
    migration.write_bytes(b"dsh's, unlocked")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = run("fork", str(parent), "-o", str(out / "child.jsonl"))
        assert p.returncode == 0, p.stderr
        assert not stale.exists() and not other.exists()
        assert live.exists() and migration.exists()
    finally:
        os.close(fd)
