"""bench/startup.py: its verdicts are the start-up target's, stated once in bench/targets.py."""

from __future__ import annotations

from conftest import ROOT, load_bench_script


def test_the_verdicts_follow_the_one_target() -> None:
    start = load_bench_script("startup")
    targets = load_bench_script("targets")
    limit = targets.STARTUP_RATIO
    rows = [start.Startup(start.BASELINE, [0.030, 0.032, 0.031], None),
            start.Startup("dshlog --version", [0.020], 0.65),
            start.Startup("dshlog info TINY", [0.031 * limit * 1.01], limit * 1.01)]
    assert [r.met for r in rows] == [None, True, False]
    text = start.table(rows)
    assert f"at most {limit:g}×" in text
    assert "| `dshlog --version` | 20.0 | 0.65 | met |" in text
    assert "**missed**" in text.splitlines()[-1]
    # the benches import the number; none restates it
    assert all("STARTUP_RATIO =" not in (ROOT / "bench" / f).read_text() for f in ("startup.py", "run.py"))


def test_the_runner_takes_its_start_up_rows_from_the_start_up_bench() -> None:
    run = load_bench_script("run")
    assert not hasattr(run, "STARTUP_LIMIT") and not hasattr(run, "TINY")
    assert run.startup.__doc__ and "bench/startup.py" in run.startup.__doc__
