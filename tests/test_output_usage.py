"""The report table fits 80 columns (wide characters too); CSV carries every figure; hit lines are safe text."""

from __future__ import annotations

import csv
import io
from datetime import UTC

import pytest
from conftest import load_bench_script

from dshlog.model.search import Hit
from dshlog.model.usage import BY_KEYS, PriceTable
from dshlog.ops.report import usage_report
from dshlog.ops.sessions import unique_prefixes
from dshlog.output.screen import Screen
from dshlog.output.text import display_width
from dshlog.output.usage import hit_line, report_csv, report_notes, report_table, short_count


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("many")
    gen.generate_many(out, count=45, seed=3)  # one project is /home/ann/日志
    return str(gen.many_paths(out, 45, 3)["plain"])


@pytest.mark.parametrize("by", [[k] for k in BY_KEYS] + [["project", "model"], ["day", "session", "model"]], ids="+".join)
@pytest.mark.parametrize("priced", [False, True])
def test_the_table_fits_80_columns(root, by, priced):
    prices = PriceTable({"deepseek-v4-flash": {"input_cost_per_token": 1e-7, "output_cost_per_token": 1e-6}}) if priced else None
    rep = usage_report(root, by=by, tz=UTC, zone="UTC", prices=prices)
    buf = io.BytesIO()
    short = unique_prefixes([r.key[by.index("session")] for r in rep.rows]) if "session" in by else {}  # as the command does on a terminal
    report_table(Screen(buf, terminal=True, tty=True, width=80), rep, short)
    lines = buf.getvalue().decode().splitlines() + report_notes(rep)
    assert max(display_width(line.rstrip()) for line in lines) <= 80
    assert len(lines) == 1 + len(rep.rows) + 1 + sum(1 for x in lines if x.startswith("  "))
    assert lines[1 + len(rep.rows)].startswith("total")


def test_csv_has_a_row_per_report_row_and_the_total(root):
    rep = usage_report(root, by=["day", "model"], tz=UTC, zone="UTC")
    rows = list(csv.DictReader(io.StringIO(report_csv(rep))))
    assert len(rows) == len(rep.rows) + 1 and rows[-1]["day"] == "total"
    assert sum(int(r["inputTokens"]) for r in rows[:-1]) == int(rows[-1]["inputTokens"]) == rep.total.usage.tokens["inputTokens"]
    assert rows[0]["turns"] == ""  # per-model rows carry tokens only


def test_short_counts_stay_short():
    assert [short_count(n) for n in (0, 999, 1000, 12_345, 99_949, 99_950, 450_000, 12_300_000, 10**15)] == \
        ["0", "999", "1.0k", "12.3k", "99.9k", "100k", "450k", "12.3M", "1000T"]
    assert all(len(short_count(n)) <= 5 for n in range(0, 10**7, 997))


def test_a_hit_line_is_one_safe_line_and_marks_the_match_on_a_terminal():
    h = Hit(7, 2, "tool/result", "tool", "output", 3, "needle", "a\nb\x1b[2J", "\tend")
    assert hit_line("s1", h) == "s1 seq 7 turn 2 tool output: a⏎b\\x1b[2Jneedle end"
    assert "\x1b[1;31mneedle\x1b[0m" in hit_line("s1", h, color=True)
