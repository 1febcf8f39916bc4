"""``report``, ``search`` and the batch options (-j, --scheduler) through the command line.

The figures themselves are tested against per-session ``stats`` through the library
(tests/test_report.py, tests/test_search.py); here the options reach the core as
documented, the output is what people and scripts read, the exit codes follow the
batch rule, and every way of running the batch prints the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import zstandard
from conftest import FIXTURES, ROOT, load_bench_script, run_env, run_process

from dshlog.protocol.layout import project_key, session_dir
from dshlog.read.store import first_header

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
CRASH = FIXTURES / "v4" / "crash" / "session.v4.jsonl"
PRICES = {"mock": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}}
#: 2026-10-20 23:50 UTC: the shifted session's first event; its last ones fall on the 21st
MIDNIGHT = 1792540800000


def _place(root: Path, src: Path, name: str | None = None, data: bytes | None = None) -> Path:
    """A copy of a fixture where dsh keeps it (``<root>/<project>/<id>/``)."""
    h = first_header(src) or {}
    d = session_dir(root, h.get("cwd"), h["id"])
    d.mkdir(parents=True)
    dst = d / (name or src.name)
    if data is None:
        shutil.copy(src, dst)
    else:
        dst.write_bytes(data)
    return dst


def _shifted(src: Path, sid: str, start: int) -> bytes:
    """``src`` as another session whose events are a minute apart from ``start`` on."""
    lines = src.read_bytes().splitlines()
    head = orjson.loads(lines[0])
    head.update(id=sid, cwd="/home/bo/night", createdAt=start)
    out = [orjson.dumps(head)]
    for i, line in enumerate(lines[1:]):
        ev = orjson.loads(line)
        ev["time"] = start + i * 60_000
        out.append(orjson.dumps(ev))
    return b"\n".join(out) + b"\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A persistence root: loop and crash (/home/ann/demo), loop again zstd-compressed, and a session across midnight."""
    root = tmp_path_factory.mktemp("home") / "sessions"
    _place(root, LOOP)
    _place(root, CRASH)
    # the loop again as another session, one zstd frame per line as dsh appends them
    lines = LOOP.read_bytes().splitlines()
    head = orjson.loads(lines[0])
    head.update(id="zstd-loop", cwd="/home/ann/zstd")
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
    zdir = session_dir(root, "/home/ann/zstd", "zstd-loop")
    zdir.mkdir(parents=True)
    (zdir / "session.v4.jsonl.zstd").write_bytes(b"".join(cctx.compress(x + b"\n") for x in [orjson.dumps(head), *lines[1:]]))
    night = session_dir(root, "/home/bo/night", "night-0001")
    night.mkdir(parents=True)
    # 41 events a minute apart from 23:50: ten on the 20th (UTC), the rest on the 21st
    (night / "session.v4.jsonl").write_bytes(_shifted(LOOP, "night-0001", MIDNIGHT - 10 * 60_000))
    return root


def _json(*args: str, **env: object) -> dict:
    code, out, err = run_env(*args, **env)
    assert code == 0, err.decode()
    return orjson.loads(out)


# ----------------------------------------------------------------------------- report


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "model"])
def test_every_by_key_makes_rows_that_add_up_to_stats(store, by):
    stats = _json("stats", *map(str, sorted(store.rglob("session.v4.jsonl*"))), "--json")["total"]
    doc = _json("report", str(store), "--by", by, "--json")
    assert doc["by"] == [by] and doc["timezone"] == "UTC" and doc["errors"] == []
    assert all(by in row for row in doc["rows"])
    total = doc["total"]
    assert total["sessions"] == 4 and total["tokens"] == stats["tokens"] and total["turns"] == stats["turns"]
    summed: dict[str, int] = {}
    for row in doc["rows"]:
        for k, v in row["tokens"].items():
            summed[k] = summed.get(k, 0) + v
    assert summed == stats["tokens"]
    if by != "model":  # a model's row carries tokens only: turns belong to the session
        assert sum(r["turns"] for r in doc["rows"]) == stats["turns"]
    labels = [r[by] for r in doc["rows"]]
    assert labels == sorted(labels) and len(set(labels)) == len(labels)


def test_by_several_keys_and_the_table(store):
    doc = _json("report", str(store), "--by", "project,model", "--by", "project", "--json")
    assert doc["by"] == ["project", "model"]  # each key once, in the order named
    assert {(r["project"], r["model"]) for r in doc["rows"]} == {
        ("/home/ann/demo", "mock/mock"), ("/home/ann/zstd", "mock/mock"), ("/home/bo/night", "mock/mock")}
    code, out, err = run_env("report", str(store), "--by", "session")
    assert code == 0 and err == b""
    lines = out.decode().splitlines()
    assert lines[0].split()[:3] == ["session", "sess", "turns"]
    assert [ln.split()[0] for ln in lines[1:6]] == ["crash-0001", "loop-0001", "night-0001", "zstd-loop", "total"]
    assert "  times in UTC" in lines and all(len(ln) <= 80 for ln in lines)


def test_the_default_root_is_dsh_home_sessions(store):
    code, out, _ = run_env("report", "--json", dsh_home=str(store.parent))
    assert code == 0 and orjson.loads(out)["total"]["sessions"] == 4


@pytest.mark.parametrize("command", [["report"], ["search", "x"]])
def test_a_missing_root_is_one_io_line_and_no_table(command, tmp_path):
    code, out, err = run_env(*command, str(tmp_path / "nowhere"))
    assert (code, out) == (6, b"") and err.count(b"\n") == 1 and b"nowhere" in err
    code, out, err = run_env(*command, dsh_home=str(tmp_path))  # no $DSH_HOME/sessions yet
    assert (code, out) == (6, b"") and err.count(b"\n") == 1 and b"DSH_HOME" in err
    code, out, err = run_env(*command, "")
    assert (code, out) == (2, b"") and err.startswith(b"dshlog: usage: an empty FILE")


def test_csv_has_every_figure_and_a_total_row(store):
    code, out, _ = run_env("report", str(store), "--by", "project", "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out.decode())))
    assert [r["project"] for r in rows] == ["/home/ann/demo", "/home/ann/zstd", "/home/bo/night", "total"]
    doc = _json("report", str(store), "--by", "project", "--json")
    for r, d in zip(rows, [*doc["rows"], doc["total"]]):
        assert int(r["turns"]) == d["turns"] and int(r["inputTokens"]) == d["tokens"].get("inputTokens", 0)
        assert r["cost"] == ""


def test_timezone_moves_activity_across_a_day_boundary(store):
    night = str(store / project_key("/home/bo/night"))
    days = {z: {r["day"]: r["turns"] for r in _json("report", night, "--timezone", z, "--json")["rows"]}
            for z in ("UTC", "+02:00", "America/New_York")}
    assert list(days["UTC"]) == ["2026-10-20", "2026-10-21"] and sum(days["UTC"].values()) == 4
    assert days["+02:00"] == {"2026-10-21": 4}
    assert days["America/New_York"] == {"2026-10-20": 4}
    assert _json("report", night, "--timezone", "+02:00", "--json")["timezone"] == "UTC+02:00"
    # the Env's zone is the default, and dates are read in it
    assert {r["day"] for r in _json("report", night, "--json", timezone="Asia/Tokyo")["rows"]} == {"2026-10-21"}
    one = _json("report", night, "--since", "2026-10-21", "--until", "2026-10-21", "--json")
    assert [r["day"] for r in one["rows"]] == ["2026-10-21"] and one["since"] == MIDNIGHT
    assert one["until"] == MIDNIGHT + 86_400_000
    code, _, err = run_env("report", night, "--timezone", "Mars/Olympus")
    assert code == 2 and err.startswith(b"dshlog: usage: --timezone 'Mars/Olympus'") and err.count(b"\n") == 1


def test_since_words_and_durations_count_from_the_envs_clock(store):
    night = str(store / project_key("/home/bo/night"))
    noon = (MIDNIGHT + 12 * 3_600_000) / 1000  # 2026-10-21 12:00 UTC
    assert _json("report", night, "--since", "today", "--json", now=lambda: noon)["since"] == MIDNIGHT
    assert _json("report", night, "--since", "yesterday", "--json", now=lambda: noon)["since"] == MIDNIGHT - 86_400_000
    assert _json("report", night, "--since", "12h", "--json", now=lambda: noon)["since"] == MIDNIGHT
    assert _json("report", night, "--since", "7d", "--json")["rows"] == []  # the test clock is in 2027
    code, _, err = run_env("report", night, "--since", "soon")
    assert code == 2 and b"--since 'soon'" in err
    code, _, err = run_env("report", night, "--since", "2026-10-22", "--until", "2026-10-21")
    assert code == 2 and b"is not after --since" in err


def test_project_and_cwd_filters(store, tmp_path):
    assert _json("report", str(store), "--project", "demo", "--json")["total"]["sessions"] == 2
    assert _json("report", str(store), "--project", "nowhere", "--json")["rows"] == []
    assert _json("report", str(store), "--cwd", "/home/bo/night", "--json")["total"]["sessions"] == 1
    assert _json("report", str(store), "--cwd", "night", "--json", cwd="/home/bo")["total"]["sessions"] == 1  # relative to the cwd


def test_prices_from_the_option_and_from_dshlog_prices(store, tmp_path):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps(PRICES))
    demo = str(store / project_key("/home/ann/demo"))
    want = 50 * 1e-06 + 22 * 2e-06
    doc = _json("report", demo, "--prices", str(table), "--json")
    assert doc["priced"] and doc["total"]["cost"] == pytest.approx(want) and doc["total"]["unpricedModels"] == []
    assert _json("report", demo, "--json", prices=str(table))["total"]["cost"] == pytest.approx(want)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"mock": {"input_cost_per_token": 1.0, "output_cost_per_token": 1.0}}))
    assert _json("report", demo, "--prices", str(other), "--json", prices=str(table))["total"]["cost"] == 72  # the option wins
    code, out, _ = run_env("report", demo, prices=str(table))
    assert code == 0 and "cost" in out.decode().splitlines()[0] and "$0.00" in out.decode()
    assert _json("report", demo, "--json")["priced"] is False
    code, _, err = run_env("report", demo, "--prices", str(tmp_path / "missing.json"))
    assert code == 6 and err.count(b"\n") == 1 and b"price table" in err
    (tmp_path / "bad.json").write_text("{oops")
    code, _, err = run_env("report", demo, "--prices", str(tmp_path / "bad.json"))
    assert code == 2 and err.count(b"\n") == 1 and b"Traceback" not in err


def test_report_usage_errors_are_one_line(store):
    for args in (["--by", "hour"], ["--json", "--csv"], ["-j", "0"], ["-j", "2", "--scheduler", "tcp://127.0.0.1:1"]):
        code, out, err = run_env("report", str(store), *args)
        assert code == 2 and out == b"" and err.startswith(b"dshlog: usage: ") and err.count(b"\n") == 1, (args, err)


def test_an_unreadable_session_is_named_and_the_rest_reported(store, tmp_path):
    root = tmp_path / "sessions"
    shutil.copytree(store, root)
    bad = session_dir(root, "/home/ann/demo", "broken") / "session.v4.jsonl.zstd"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not zstd")
    code, out, err = run_env("report", str(root), "--json")
    assert code == 4
    doc = orjson.loads(out)
    assert doc["total"]["sessions"] == 4 and doc["errors"][0]["path"] == str(bad)
    assert err.decode().startswith("dshlog: corrupt: ") and str(bad) in err.decode() and err.count(b"\n") == 1


# ----------------------------------------------------------------------------- search


def test_search_lines_name_session_seq_turn_role_and_field(store):
    code, out, err = run_env("search", "deploy", str(store))
    assert code == 0 and err == b""
    assert out.decode().splitlines() == ["crash-0001 seq 5 turn 1 user text: deploy to prod, then confirm"]


def test_search_json_lines_parse(store):
    code, out, _ = run_env("search", "-i", "OK", str(store), "--json")
    assert code == 0
    hits = [orjson.loads(line) for line in out.splitlines()]
    assert hits and all(h["shape"] == 1 and h["match"].lower() == "ok" and Path(h["path"]).is_file() for h in hits)
    assert {h["session"] for h in hits} == {"loop-0001", "night-0001", "zstd-loop"}  # the zstd copy is read too
    assert {h["role"] for h in hits} == {"assistant"} and all(type(h["seq"]) is int for h in hits)


def test_search_l_names_each_session_once(store):
    code, out, _ = run_env("search", "-l", "-i", "ok", str(store))
    assert code == 0
    names = out.decode().splitlines()
    assert len(names) == 3 and all(Path(p).is_file() for p in names) and len(set(names)) == 3
    code, out, _ = run_env("search", "-l", "ok", str(store), "--json")
    assert sorted(orjson.loads(x)["session"] for x in out.splitlines()) == ["loop-0001", "night-0001", "zstd-loop"]


def test_search_options_reach_the_query(store):
    def hits(*args: str, **env: object) -> list[dict]:
        code, out, err = run_env("search", *args, str(store), "--json", **env)
        assert code == 0, err
        return [orjson.loads(x) for x in out.splitlines()]

    assert {h["role"] for h in hits("-i", "o", "--role", "user")} == {"user"}
    assert {h["type"] for h in hits("-i", "o", "--type", "assistant/*")} == {"assistant/message"}
    assert hits("-e", "de.loy") and not hits("de.loy")  # fixed string by default
    assert hits("-i", "DEPLOY") and not hits("DEPLOY")
    assert all(len(h["before"]) <= 2 and len(h["after"]) <= 2 for h in hits("-i", "o", "-C", "2"))
    assert {h["session"] for h in hits("-i", "ok", "--project", "zstd")} == {"zstd-loop"}
    noon = (MIDNIGHT + 12 * 3_600_000) / 1000
    assert {h["session"] for h in hits("-i", "ok", "--since", "today", now=lambda: noon)} == {"night-0001"}
    code, _, err = run_env("search", "x", str(store), "--role", "robot")
    assert code == 2 and err.startswith(b"dshlog: usage: --role 'robot'")


def test_search_reasoning_only_when_asked(tmp_path):
    log = tmp_path / "session.v4.jsonl"
    lines = LOOP.read_bytes().splitlines()
    events = [orjson.loads(x) for x in lines[1:]]
    for e in events:
        if e["type"] == "assistant/message":
            e["data"]["message"]["content"].insert(0, {"type": "reasoning", "text": "because zqxthought"})
            break
    log.write_bytes(b"\n".join([lines[0], *map(orjson.dumps, events)]) + b"\n")
    assert run_env("search", "zqxthought", str(log))[1] == b""
    code, out, _ = run_env("search", "zqxthought", str(log), "--reasoning")
    assert code == 0 and b"assistant reasoning: because zqxthought" in out


def test_search_highlights_on_a_terminal_only_and_sanitises_session_text(tmp_path):
    log = tmp_path / "session.v4.jsonl"
    lines = LOOP.read_bytes().splitlines()
    events = [orjson.loads(x) for x in lines[1:]]
    user = next(e for e in events if e["type"] == "user/message")
    user["data"]["content"][0]["text"] = "go \x1b[2Jzqx\x07 now"
    log.write_bytes(b"\n".join([lines[0], *map(orjson.dumps, events)]) + b"\n")
    code, piped, _ = run_env("search", "zqx", str(log))
    assert code == 0 and b"\x1b" not in piped and b"\x07" not in piped and b"zqx" in piped
    code, tty, _ = run_env("search", "zqx", str(log), tty=True, colour="auto")
    assert tty.count(b"\x1b") == 2 and b"\x1b[1;31mzqx\x1b[0m" in tty  # the highlight and nothing else
    assert run_env("search", "zqx", str(log), tty=True, colour="never")[1] == piped


def test_search_exit_codes_no_hit_is_0_and_damage_is_4(store, tmp_path):
    code, out, err = run_env("search", "no-such-text-anywhere", str(store))
    assert (code, out, err) == (0, b"", b"")
    bad = tmp_path / "broken" / "session.v4.jsonl.zstd"
    bad.parent.mkdir()
    bad.write_bytes(b"not zstd")
    code, out, err = run_env("search", "deploy", str(bad), str(store))
    assert code == 4 and b"crash-0001 seq 5" in out and err.count(b"\n") == 1 and str(bad).encode() in err
    code, _, err = run_env("search", "deploy", str(tmp_path / "missing.jsonl"))
    assert code == 6 and b"missing.jsonl" in err and err.count(b"\n") == 1  # a missing file, as everywhere
    code, _, err = run_env("search", "(", "-e", str(store))
    assert code == 2 and b"bad regular expression" in err


def test_search_takes_a_session_id(store):
    code, out, _ = run_env("search", "deploy", "crash-0001", dsh_home=str(store.parent))
    assert code == 0 and out.startswith(b"crash-0001 seq 5")


# ----------------------------------------------------------------------------- -j and --scheduler


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> list[str]:
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("many")
    gen.generate_many(out, count=16, seed=3)
    p = gen.many_paths(out, 16, 3)
    return [str(p["plain"]), str(p["zstd"])]


def _files(roots: list[str]) -> list[str]:
    return sorted(str(p) for r in roots for p in Path(r).rglob("session*.jsonl*"))


BATCHES = {
    "report": lambda roots: ["report", *roots, "--by", "day", "--by", "model"],
    "report-json": lambda roots: ["report", *roots, "--by", "session", "--json"],
    "search": lambda roots: ["search", "-i", "pelican", *roots],
    "search-json": lambda roots: ["search", "--json", "--reasoning", "the", *roots],
    "validate": lambda roots: ["validate", *_files(roots)],
    "stats": lambda roots: ["stats", *_files(roots), "--json"],
    "ls-grep": lambda roots: ["ls", roots[0], "--grep", "pelican", "--json"],
}


@pytest.mark.parametrize("name", list(BATCHES))
def test_one_job_and_two_print_the_same_bytes(many, name):
    args = BATCHES[name](many)
    one = run_env(*args, "-j", "1")
    two = run_env(*args, "-j", "2")
    assert one[0] == 0, one[2].decode()[-2000:]
    assert one == two
    assert len(one[1] + one[2]) > 100  # validate says "ok" on stderr


def test_migrate_r_with_two_jobs_publishes_what_one_job_does(many, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(many[0], a)
    shutil.copytree(many[0], b)
    one = run_env("migrate", "-R", str(a), "--json", "-j", "1")
    two = run_env("migrate", "-R", str(b), "--json", "-j", "2")
    assert one[0] == two[0] == 0, two[2].decode()[-2000:]
    assert orjson.loads(one[1].replace(str(a).encode(), b"ROOT")) == orjson.loads(two[1].replace(str(b).encode(), b"ROOT"))
    assert sorted(p.relative_to(a) for p in a.rglob("*")) == sorted(p.relative_to(b) for p in b.rglob("*"))


def test_standard_input_is_read_here_whatever_j_says():
    code, out, err = run_env("stats", "-", "--json", "-j", "2", stdin=LOOP.read_bytes())
    assert code == 0, err
    assert orjson.loads(out)["sessions"][0]["id"] == "loop-0001"
    code, _, err = run_env("stats", "-", "--scheduler", "tcp://127.0.0.1:1", stdin=LOOP.read_bytes())
    assert code == 2 and b"standard input" in err


def test_a_bad_scheduler_address_is_one_usage_line(store):
    """In a child interpreter: a failed Client leaves its event-loop thread behind, and later
    pools of this process would then spawn instead of fork."""
    pytest.importorskip("distributed")
    run = run_process("report", str(store), "--scheduler", "not-an-address::", cwd=ROOT)
    assert run.returncode == 2 and run.stdout == b"" and run.stderr.count(b"\n") == 1, run.stderr
    assert run.stderr.startswith(b"dshlog: usage: --scheduler 'not-an-address::': ")


DASK_SCRIPT = r"""
import json, sys
import distributed

def run(args):
    code, out, err = run_env(*args)
    return code, out.decode(), err.decode()

if __name__ == "__main__":
    sys.path.insert(0, sys.argv[2])  # the tests' own directory, for the one way a test runs a command
    from conftest import run_env

    commands = json.loads(sys.argv[1])
    serial = [run(args + ["-j", "1"]) for args in commands]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        on_dask = [run(args + ["--scheduler", c.scheduler_address]) for args in commands]
    print(json.dumps({"same": serial == on_dask, "codes": [s[0] for s in serial], "dask": on_dask[0][2][-2000:]}))
"""


def test_a_dask_cluster_prints_what_one_job_prints(many, tmp_path):
    """The CLI's --scheduler against a real LocalCluster, in a child interpreter (see tests/test_dask.py)."""
    pytest.importorskip("distributed", reason="the dshlog[dask] extra is not installed")
    script = tmp_path / "cli_dask.py"
    script.write_text(DASK_SCRIPT)
    commands = [BATCHES[n](many) for n in ("report", "search-json", "validate", "stats")]
    run = subprocess.run([sys.executable, str(script), json.dumps(commands), str(ROOT / "tests")], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["same"] and got["codes"] == [0, 0, 0, 0], got


# ----------------------------------------------------------------------------- --help examples


def _help_examples(command: str) -> list[str]:
    code, out, _ = run_env(command, "--help")  # Click writes help to the process's stdout
    assert code == 0
    text = out.decode()
    found = [line.split("Example:", 1)[1].strip() for line in text.splitlines() if "Example:" in line]
    if "More examples:" in text:
        found += [line.strip() for line in text.split("More examples:", 1)[1].splitlines() if line.strip().startswith("dshlog ")]
    return found


@pytest.mark.parametrize("command", ["report", "search"])
def test_the_help_examples_run(store, command):
    examples = _help_examples(command)
    assert len(examples) >= 5
    for example in examples:
        args = shlex.split(example)
        assert args[:2] == ["dshlog", command]
        code, out, err = run_env(*args[1:], dsh_home=str(store.parent), cwd="/home/ann/demo")
        assert code == 0 and b"Traceback" not in err, (example, err.decode())
        if command == "report":
            assert b"total" in out, example


def test_the_zstd_copy_is_searched_like_the_plain_one(store):
    z = next(store.rglob("*.zstd"))
    plain = run_env("search", "-i", "ok", str(LOOP), "--json")[1].splitlines()
    packed = run_env("search", "-i", "ok", str(z), "--json")[1].splitlines()
    strip = [{k: v for k, v in orjson.loads(x).items() if k not in ("path", "session")} for x in plain]
    assert strip and strip == [{k: v for k, v in orjson.loads(x).items() if k not in ("path", "session")} for x in packed]


def test_one_session_is_not_handed_to_a_pool(monkeypatch, tmp_path):
    """validate/stats of one file run it in this process (where its zstd body may get a forked decoder);
    two files with -j 2 do start a pool, so the check can fail."""
    from conftest import FIXTURES, run_env

    from dshlog.cli import common

    pools: list[int] = []
    real = common.ProcessPool

    def counting(n: int):
        pools.append(n)
        return real(n)

    monkeypatch.setattr(common, "ProcessPool", counting)
    one = str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")
    other = str(next(p for p in sorted(FIXTURES.rglob("*.jsonl")) if str(p) != one))
    for command in ("validate", "stats"):
        code, _out, _err = run_env(command, "-j", "2", one)
        assert code == 0 and pools == [], (command, pools)
    code, _out, _err = run_env("stats", "-j", "2", one, other)
    assert pools == [2]
