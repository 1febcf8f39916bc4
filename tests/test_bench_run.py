"""The benchmark runner and BENCHMARKS.md: one owner of the targets, one compact table, one pair of markers.

BENCHMARKS.md is a reference a person reads; the table in it is written by ``bench/run.py``
and judged by ``bench/targets.py``.  These tests keep the file short, its generated
section single, its Targets section equal to the owner's, and the runner's rows and
verdicts consistent with the targets it cites.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import ROOT, load_bench_script

BENCHMARKS = ROOT / "BENCHMARKS.md"


@pytest.fixture(scope="module")
def run():
    return load_bench_script("run")


@pytest.fixture(scope="module")
def targets():
    return load_bench_script("targets")


def _generated(text: str, run) -> list[str]:
    return text[text.index(run.BEGIN) + len(run.BEGIN): text.index(run.END)].strip("\n").splitlines()


def test_benchmarks_is_a_short_reference_with_one_generated_section(run) -> None:
    text = BENCHMARKS.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert text.count(run.BEGIN) == 1 and text.count(run.END) == 1
    assert text.index(run.BEGIN) < text.index(run.END)
    generated = _generated(text, run)
    # the section holds the run's header and its table only: no heading of its own, no history
    assert not [line for line in generated if line.startswith("#")]
    assert len(generated) <= 100
    assert generated[0].startswith("Measured ")
    header = next(line for line in generated if line.startswith("| size |"))
    assert header == run.table([]).splitlines()[0]


def test_the_targets_section_is_the_owners(targets) -> None:
    assert targets.markdown() in BENCHMARKS.read_text(encoding="utf-8")


def test_every_command_the_targets_name_is_measured(run, targets) -> None:
    labels = {c.label for c in run.READ_COMMANDS}
    assert set(targets.READERS) <= labels and set(targets.VIEWS) <= labels
    assert not set(targets.READERS) & set(targets.VIEWS)
    # every command is compared with some work of dsh's, and the oracle's commands are the patched ones
    assert {c.dsh for c in (*run.READ_COMMANDS, run.MIGRATE)} == {"restore", "migrate-len"}


def test_the_rule_applies_each_target_where_the_issue_puts_it(targets) -> None:
    def missed(command: str, size: str, version: str, **kw: float | None) -> set[str]:
        args = {"x_dsh": None, "x_floor": None, "x_plain": None, "rss_mb": None} | kw
        return {c.name.split(" ≤")[0] for c in targets.checks(command, size, version, **args) if not c.met}

    over = {"x_dsh": 9.0, "x_floor": 9.0, "x_plain": 9.0, "rss_mb": 999.0}
    assert missed("info", "120M", "v4", **over) == {"× dsh", "× floor", "× plain", "RSS"}
    assert missed("info", "30M", "v4", **over) == {"× dsh", "× plain", "RSS"}  # the floor targets hold at 120M
    assert missed("surface", "120M", "v0", **over) == {"× dsh", "× plain", "RSS"}  # and on v4 logs
    assert missed("validate", "120M", "v4", **over) == {"× dsh", "× plain", "RSS"}  # validate has no floor target
    assert missed("info", "480M", "v4", x_dsh=9.0) == set()  # × dsh holds at the issue's sizes
    assert missed("rebuild --request N", "120M", "v4", rss_mb=targets.RSS_MB + 1) == {"RSS"}  # rebuild included
    edge = {"x_dsh": targets.DSH_RATIO, "x_plain": targets.ZSTD_RATIO, "rss_mb": targets.RSS_MB}
    assert missed("tail", "120M", "v4", x_floor=targets.READER_FLOOR, **edge) == set()
    assert missed("events --v4", "120M", "v4", x_floor=targets.VIEW_FLOOR, **edge) == set()
    assert missed("events", "120M", "v4", x_floor=targets.VIEW_FLOOR) == {"× floor"}
    assert [c.met for c in targets.startup_check(targets.STARTUP_RATIO + 0.01)] == [False]
    assert targets.startup_check(None) == []


def test_verdicts_name_what_was_missed(run, targets) -> None:
    row = run.Row("120M", "v4", "info", checks=targets.checks("info", "120M", "v4", x_dsh=0.5, x_floor=1.5, x_plain=1.0, rss_mb=30.0))
    assert row.verdict == f"**missed** × floor ≤ {targets.READER_FLOOR:g}"
    assert run.Row("120M", "v4", "info", checks=[targets.Check("x", True)]).verdict == "met"
    assert run.Row("120M", "v4", "floor").verdict == ""


def test_the_table_is_written_between_the_one_pair_of_markers(run, tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(f"# Benchmarks\n\nprose\n\n{run.BEGIN}\nold table\n{run.END}\n\nmore prose\n", encoding="utf-8")
    run.write_benchmarks("Measured now.\n\n| a |\n", doc)
    once = doc.read_text(encoding="utf-8")
    assert once == f"# Benchmarks\n\nprose\n\n{run.BEGIN}\nMeasured now.\n\n| a |\n{run.END}\n\nmore prose\n"
    run.write_benchmarks("Measured now.\n\n| a |\n", doc)
    assert doc.read_text(encoding="utf-8") == once
    for broken in ("# no markers\n", f"{run.BEGIN}\n{run.END}\n{run.BEGIN}\n{run.END}\n", f"{run.END}\n{run.BEGIN}\n"):
        doc.write_text(broken, encoding="utf-8")
        with pytest.raises(SystemExit):
            run.write_benchmarks("table", doc)
        assert doc.read_text(encoding="utf-8") == broken


def test_commands_run_with_the_cache_off(run) -> None:
    # a warm cache answers validate, info, stats and surface at start-up cost: rounds after
    # the first would time a lookup, not the work (bench/cache.py measures the cache)
    assert run.CHILD_ENV.get("DSHLOG_NO_CACHE") == "1"


def test_a_small_run_without_dsh_says_why_its_column_is_empty(run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    assert run.main(["--sizes", "1M", "--shapes", "default", "--repeat", "1", "--data", str(data),
                     "--shared", str(tmp_path / "absent"), "--no-write"]) == 0
    out = capsys.readouterr().out
    assert "`× dsh` is empty: dsh's code is not at" in out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| 1M |")]
    commands = [r[2] for r in rows]
    # v4: the floor and every reading command; v0: the same and migrate; .zstd only as a column
    assert commands == [run.FLOOR_LABEL, *(c.label for c in run.READ_COMMANDS)] * 2 + ["migrate"]
    assert [r[1] for r in rows] == ["v4"] * 11 + ["v0"] * 12
    assert all(r[5] == "" for r in rows)  # × dsh
    assert all(r[3] and r[4] and r[6] and r[7] for r in rows)  # CPU s, × floor, × plain, peak RSS
    assert all(r[8].rstrip(" |") in ("", "met") or "missed" in r[8] for r in rows)
    # start-up: bench/startup.py's commands, its baseline first as the floor
    start = load_bench_script("startup")
    startup = [line.split(" | ")[2] for line in out.splitlines() if line.startswith("| start-up |")]
    assert startup == [f"floor ({start.BASELINE})", *list(start.commands([], tmp_path))[1:]]


@pytest.mark.skipif(shutil.which("node") is None or not (ROOT.parent / "shared" / "oracle" / "oracle.mjs").is_file(),
                    reason="dsh's oracle or node is not here")
def test_dshs_own_code_runs_patched_outside_the_project(run, tmp_path: Path) -> None:
    dsh = run.find_dsh(ROOT.parent / "shared", tmp_path)
    assert dsh.oracle is not None and dsh.oracle.parent == tmp_path, dsh.why_not
    fixture = ROOT / "fixtures" / "v0" / "text-turn" / "session.jsonl"
    for command in (run.DSH_FLOOR, "restore", run.MIGRATE.dsh):
        done = run.run_child(dsh.argv(command, fixture), want_ok=True)
        assert done.problem == "" and done.cpu > 0 and done.rss_mb > 0
    refused = run.run_child(dsh.argv("restore", ROOT / "pyproject.toml"), want_ok=True)
    assert refused.problem.startswith("dsh: ")
