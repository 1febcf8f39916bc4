"""``report``: figures equal the sums of per-session ``stats``, for every --by, priced or not, in any zone."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest
from conftest import FIXTURES, load_bench_script

from dshlog.executor import InProcess, ProcessPool
from dshlog.model.stats import stats_counters, total_stats
from dshlog.model.summary import summarize
from dshlog.model.usage import BY_KEYS, COUNTS, PriceTable, Usage, report_document
from dshlog.ops.report import load_prices, session_usage, store_sessions, usage_report
from dshlog.ops.stats import stats_many
from dshlog.protocol.layout import project_key

UTC = UTC
MODEL = "deepseek-official/deepseek-v4-flash"
PRICES = {
    "sample_spec": {"max_tokens": "set to max_output_tokens if provider specifies it"},
    "deepseek/deepseek-v4-flash": {"input_cost_per_token": 2.7e-07, "output_cost_per_token": 1.1e-06,
                                   "cache_read_input_token_cost": 7e-08, "litellm_provider": "deepseek"},
    "mock": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06},
}


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("many")
    manifest = gen.generate_many(out, count=45, seed=3)
    return gen.many_paths(out, 45, 3), manifest


def _stats_by_path(paths: list[str]) -> dict[str, dict]:
    return {s.path: s.counters for s in stats_many(paths)}


def _sum_rows(rows: list[dict], key: str) -> int:
    return sum(r[key] or 0 for r in rows)


def _tokens_sum(rows: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        for k, v in r["tokens"].items():
            out[k] = out.get(k, 0) + v
    return out


def _doc(targets, by, executor=None, **kw):
    rep = usage_report(*[str(t) for t in targets], by=list(by), tz=kw.pop("tz", UTC), zone=kw.pop("zone", "UTC"),
                       executor=executor, **kw)
    return report_document(rep, 1)


@pytest.mark.parametrize("encoding", ["plain", "zstd"])
@pytest.mark.parametrize("by", [[k] for k in BY_KEYS] + [["day", "model"], ["project", "month"], ["session", "model"]],
                         ids=lambda b: "+".join(b))
def test_rows_and_total_are_the_sums_of_per_session_stats(many, encoding, by):
    paths, manifest = many
    root = paths[encoding]
    files = store_sessions([str(root)])
    assert len(files) == len(manifest["sessions"])
    expected = total_stats(_stats_by_path(files).values())
    doc = _doc([root], by)
    total = doc["total"]
    assert total["sessions"] + total["subagents"] == len(files)
    assert total["subagents"] == sum(1 for s in manifest["sessions"] if s["parent"])
    assert total["tokens"] == expected["tokens"]
    assert total["tokensByModel"] == expected["tokensByModel"]
    assert _tokens_sum(doc["rows"]) == expected["tokens"]
    tool_calls = sum(c["calls"] for c in expected["toolCalls"].values())
    tool_errors = sum(c["errors"] for c in expected["toolCalls"].values())
    want = {**{k: expected[k] for k in COUNTS if k in expected}, "toolCalls": tool_calls, "toolErrors": tool_errors}
    assert {k: total[k] for k in COUNTS} == want
    if "model" not in by:
        assert {k: _sum_rows(doc["rows"], k) for k in COUNTS} == want
    else:
        assert all(r[k] is None for r in doc["rows"] for k in COUNTS)  # counters belong to sessions, not models
    assert total["cacheHitRatio"] == pytest.approx(
        expected["tokens"]["cacheReadTokens"] / (expected["tokens"]["inputTokens"] + expected["tokens"]["cacheReadTokens"]))


@pytest.mark.parametrize("by", [[k] for k in BY_KEYS], ids=lambda b: b[0])
def test_costs_are_the_priced_sums(many, tmp_path, by):
    paths, _ = many
    table_file = tmp_path / "prices.json"
    table_file.write_text(json.dumps(PRICES))
    prices = load_prices(str(table_file))
    files = store_sessions([str(paths["plain"])])
    per_session = _stats_by_path(files)
    p = PRICES["deepseek/deepseek-v4-flash"]
    want = sum(
        u.get("inputTokens", 0) * p["input_cost_per_token"] + u.get("outputTokens", 0) * p["output_cost_per_token"]
        + u.get("cacheReadTokens", 0) * p["cache_read_input_token_cost"]
        for st in per_session.values() for u in st["tokensByModel"].values())
    assert want > 0
    doc = _doc([paths["plain"]], by, prices=prices)
    assert doc["priced"] and doc["total"]["unpricedModels"] == []
    assert doc["total"]["cost"] == pytest.approx(want, rel=1e-12)
    assert sum(r["cost"] for r in doc["rows"]) == pytest.approx(want, rel=1e-12)
    assert _doc([paths["plain"]], by)["total"]["cost"] is None  # no table, no cost


def test_children_count_in_their_parents_row(many):
    paths, manifest = many
    files = store_sessions([str(paths["plain"])])
    per_session = {st_id: st for st_id, st in ((s.id, s.counters) for s in stats_many(files))}
    doc = _doc([paths["plain"]], ["session"])
    rows = {r["session"]: r for r in doc["rows"]}
    parents = [s for s in manifest["sessions"] if s["children"]]
    assert parents
    assert not any(s["id"] in rows for s in manifest["sessions"] if s["parent"])  # no row of its own
    for s in parents:
        family = [s["id"], *s["children"]]
        assert rows[s["id"]]["subagents"] == len(s["children"])
        assert rows[s["id"]]["modelCalls"] == sum(per_session[i]["modelCalls"] for i in family)
        assert rows[s["id"]]["tokens"] == total_stats(per_session[i] for i in family)["tokens"]


def test_project_and_cwd_filters(many):
    paths, manifest = many
    cwd = "/home/ann/my proj"
    ids = {s["id"] for s in manifest["sessions"] if s["cwd"] == cwd}
    assert ids
    by_cwd = _doc([paths["plain"]], ["session"], cwd=cwd)
    by_text = _doc([paths["plain"]], ["session"], project="my proj")
    assert by_cwd == by_text
    assert {r["session"] for r in by_cwd["rows"]} | set() <= ids
    assert by_cwd["total"]["sessions"] + by_cwd["total"]["subagents"] == len(ids)
    assert _doc([paths["plain"]], ["session"], cwd="/nowhere")["rows"] == []


# ----------------------------------------------------------------------------- time zones and windows

START = int(datetime(2026, 3, 9, 20, 0, tzinfo=UTC).timestamp() * 1000)  # a Monday evening, UTC
STEP = 11 * 60_000  # 41 events, 11 minutes apart: 20:00 UTC to 03:20 UTC the next day


def _timed_session(root: Path, sid: str, cwd: str, model: str, start: int) -> Path:
    """The loop fixture re-timed to span a midnight, under another id, cwd and model."""
    lines = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes().splitlines()
    head = orjson.loads(lines[0])
    head.update(id=sid, cwd=cwd, createdAt=start)
    out = [orjson.dumps(head)]
    for i, raw in enumerate(lines[1:]):
        ev = orjson.loads(raw)
        ev["time"] = start + i * STEP
        if ev["type"] == "request/header":
            ev["data"]["header"]["config"]["model"] = model
        src = ev["data"].get("message", {}).get("source") if isinstance(ev.get("data"), dict) else None
        if ev["type"] == "assistant/message" and isinstance(src, dict) and "model" in src:
            src["model"] = model
        out.append(orjson.dumps(ev))
    d = root / project_key(cwd) / sid
    d.mkdir(parents=True)
    p = d / "session.v4.jsonl"
    p.write_bytes(b"\n".join(out) + b"\n")
    return p


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    root = tmp_path_factory.mktemp("timed")
    hour = 3_600_000
    # midnights: UTC 00:00, New York 04:00, Kolkata 18:30, Kathmandu 18:15, Chatham 10:15 (UTC, that week)
    files = [_timed_session(root, "night-a", "/home/ann/a", "mock", START),
             _timed_session(root, "night-b", "/home/ann/b", "other", START + 3 * hour + 7 * 60_000),
             _timed_session(root, "day-c", "/home/ann/a", "mock", START - 6 * hour),
             _timed_session(root, "day-d", "/home/ann/b", "mock", START - 14 * hour + 60_000)]
    return root, files


def _events(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()[1:]]


def _window_usage(files: list[Path], lo: int | None, hi: int | None) -> Usage:
    """The oracle: stats of the events before ``hi`` minus stats of the events before ``lo``."""
    total = Usage()
    for f in files:
        evs = _events(f)
        upto = [e for e in evs if hi is None or e["time"] < hi]
        before = [e for e in evs if lo is not None and e["time"] < lo]
        total.add(Usage.of_stats(stats_counters(summarize(upto))).minus(Usage.of_stats(stats_counters(summarize(before)))))
    return total


def _local_days(files: list[Path], tz) -> dict[str, tuple[int, int]]:
    days = {}
    for f in files:
        for e in _events(f):
            d = datetime.fromtimestamp(e["time"] / 1000, tz).date()
            lo = int(datetime(d.year, d.month, d.day, tzinfo=tz).timestamp() * 1000)
            nxt = datetime.fromordinal(d.toordinal() + 1)
            days[d.isoformat()] = (lo, int(datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz).timestamp() * 1000))
    return days


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata", "Asia/Kathmandu", "Pacific/Chatham"])
def test_days_in_any_zone_are_the_stats_of_that_days_events(timed, zone):
    root, files = timed
    tz = ZoneInfo(zone)
    doc = _doc([root], ["day"], tz=tz, zone=zone)
    days = _local_days(files, tz)
    assert [r["day"] for r in doc["rows"]] == sorted(days)
    assert len(days) >= 2  # the sessions cross a midnight in every zone tested
    for r in doc["rows"]:
        want = _window_usage(files, *days[r["day"]])
        assert {k: r[k] for k in COUNTS} == want.counts, r["day"]
        assert r["tokensByModel"] == want.tokens_by_model


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_since_and_until_cut_through_a_session(timed, zone):
    from dshlog.model.period import parse_when

    root, files = timed
    tz = ZoneInfo(zone)
    now = START + 30 * 3_600_000
    since = parse_when("2026-03-09T22:13", now_ms=now, tz=tz)
    until = parse_when("12h", now_ms=now, tz=tz)  # not on a 15-minute edge
    doc = _doc([root], ["day", "session"], tz=tz, zone=zone, since=since, until=until)
    want = _window_usage(files, since, until)
    assert {k: doc["total"][k] for k in COUNTS} == want.counts
    assert doc["total"]["tokensByModel"] == want.tokens_by_model
    assert {k: _sum_rows(doc["rows"], k) for k in COUNTS} == want.counts
    day = parse_when("yesterday", now_ms=now, tz=tz), parse_when("yesterday", now_ms=now, tz=tz, end=True)
    assert _doc([root], ["day"], tz=tz, zone=zone, since=day[0], until=day[1])["total"]["events"] == \
        _window_usage(files, *day).counts["events"]


def test_week_and_month_labels(timed):
    root, _ = timed
    assert [r["week"] for r in _doc([root], ["week"])["rows"]] == ["2026-W11"]
    assert [r["month"] for r in _doc([root], ["month"])["rows"]] == ["2026-03"]
    assert [r["day"] for r in _doc([root], ["day"])["rows"]] == ["2026-03-09", "2026-03-10"]
    # 06:01 UTC on Monday 2026-03-09 is Sunday evening in Los Angeles: the week before
    assert [r["week"] for r in _doc([root], ["week"], tz=ZoneInfo("America/Los_Angeles"))["rows"]] == ["2026-W10", "2026-W11"]


def test_models_get_prices_of_their_own_and_unpriced_ones_are_named(timed, tmp_path):
    root, files = timed
    doc = _doc([root], ["model"], prices=PriceTable(PRICES))
    rows = {r["model"]: r for r in doc["rows"]}
    assert set(rows) == {"mock/mock", "mock/other"}
    mock = rows["mock/mock"]["tokens"]
    assert rows["mock/mock"]["cost"] == pytest.approx(mock["inputTokens"] * 1e-06 + mock["outputTokens"] * 2e-06)
    assert rows["mock/other"]["unpricedModels"] == ["mock/other"] and rows["mock/other"]["cost"] == 0
    assert doc["total"]["unpricedModels"] == ["mock/other"]


def test_a_session_that_cannot_be_read_is_listed_not_fatal(tmp_path):
    d = tmp_path / project_key("/x") / "broken"
    d.mkdir(parents=True)
    (d / "session.v4.jsonl.zstd").write_bytes(b"not zstd")
    u = session_usage(str(d / "session.v4.jsonl.zstd"))
    assert u.error
    doc = _doc([tmp_path], ["day"])
    assert doc["rows"] == [] and doc["errors"][0]["error"] == u.error


def test_a_pool_gives_the_in_process_report(many):
    paths, _ = many
    with ProcessPool(2) as pool:
        assert _doc([paths["zstd"]], ["day", "model"], executor=pool) == _doc([paths["zstd"]], ["day", "model"], executor=InProcess())
