"""Concurrency: dsh appending while dshlog reads, and writers refused under a held lock.

A writer process appends a real session's events the way dsh does (plain: line
by line; zstd: one checksummed frame per batch) and deliberately pauses in the
middle of each record, so readers keep meeting torn tails.  Meanwhile
``events --json``, ``info --json``, ``validate --json`` and ``surface --json``
run in a loop.  Every answer must be exactly the answer for *some* committed
prefix of the log (computed beforehand from static files) — never a failure
caused by the torn tail, never a mixture.

Writing commands, on the other hand, must not run while another process holds
``session.lock``: exit 5, and the message names the holder's pid.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import run_env
from test_reliability_support import assert_clean_failure, record_figures, run, stored_as, stress_scale

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"

WRITER = r"""
import os, sys, time, zstandard
path, mode, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
lines = open(sys.argv[4], "rb").read().splitlines(keepends=True)[1:]
cctx = zstandard.ZstdCompressor(write_checksum=True)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
i = 0
while i < len(lines):
    batch = b"".join(lines[i:i + 1 + (i % 3 == 2)])  # mostly single events, sometimes two per batch
    i += 1 + (i % 3 == 2)
    rec = cctx.compress(batch) if mode == "zstd" else batch
    cut = max(1, len(rec) // 2)
    os.write(fd, rec[:cut]); time.sleep(pause)  # a torn record is visible now
    os.write(fd, rec[cut:]); time.sleep(pause / 2)
os.close(fd)
"""


def _write_prefix(path: Path, lines: list[bytes], k: int, mode: str) -> None:
    import zstandard

    c = zstandard.ZstdCompressor(write_checksum=True)
    if mode == "zstd":
        path.write_bytes(c.compress(lines[0]) + b"".join(c.compress(ln) for ln in lines[1 : k + 1]))
    else:
        path.write_bytes(b"".join(lines[: k + 1]))


def _answers(path: Path) -> dict[str, Any]:
    """What each reader says about ``path``, reduced to what must match a static prefix."""
    out: dict[str, Any] = {}
    code, ev, err = run_env("events", "--json", str(path))
    out["events"] = (code, ev)
    code, info, err = run_env("info", "--json", str(path))
    doc = orjson.loads(info) if code == 0 else None
    out["info"] = (code, doc["summary"] if doc else err.decode("utf-8", "replace"))
    code, val, err = run_env("validate", "--json", str(path))
    f = orjson.loads(val)["files"][0]
    out["validate"] = (code, f["events"], f["status"], [(p.get("code"), p.get("message")) for p in f["problems"] if p.get("code") != "torn-tail"])
    code, sur, err = run_env("surface", "--json", str(path))
    out["surface"] = (code, (sur if code == 0 else err.replace(str(path).encode(), b"<path>")).decode("utf-8", "replace"))
    return out


def _concurrent_reads(tmp_path: Path, mode: str, rounds: int, min_reads: int = 0) -> dict[str, int]:
    """Readers racing a live writer, ``rounds`` times (more while fewer than ``min_reads`` reads
    ran alongside it: on a loaded machine one writer run can be over before the readers got going)."""
    lines = LOOP.read_bytes().splitlines(keepends=True)
    n = len(lines) - 1
    suffix = ".zstd" if mode == "zstd" else ""
    static = tmp_path / "static" / f"session.v4.jsonl{suffix}"
    static.parent.mkdir()
    expected: dict[str, set] = {"events": set(), "info": set(), "validate": set(), "surface": set()}
    for k in range(n + 1):
        _write_prefix(static, lines, k, mode)
        for key, val in _answers(static).items():
            expected[key].add(orjson.dumps(val, option=orjson.OPT_SORT_KEYS) if key != "events" else val)
    live = tmp_path / "live" / f"session.v4.jsonl{suffix}"
    live.parent.mkdir()
    counts = {"reads": 0, "torn-seen": 0, "writer-runs": 0}
    while counts["writer-runs"] < rounds or (counts["reads"] <= min_reads and counts["writer-runs"] < rounds + 20):
        _write_prefix(live, lines, 0, mode)
        w = subprocess.Popen([sys.executable, "-c", WRITER, str(live), mode, "0.004", str(LOOP)])
        counts["writer-runs"] += 1
        while True:
            done = w.poll() is not None
            got = _answers(live)
            counts["reads"] += 4
            for key, val in got.items():
                if key == "events":
                    assert val in expected[key], f"events --json saw something that is no prefix: {val[0]}"
                else:
                    assert orjson.dumps(val, option=orjson.OPT_SORT_KEYS) in expected[key], f"{key}: {val!r:.500}"
            if got["events"][1].count(b"\n") < n and not done:
                counts["torn-seen"] += 1
            if done:
                break
        assert w.returncode == 0
        assert got["events"][1] == b"".join(lines[1:]), "the last read after the writer finished must see everything"
    return counts


ROUNDS = stress_scale(ci=1, stress=25)


@pytest.mark.parametrize("mode", ["plain", "zstd"])
def test_readers_see_a_committed_prefix_while_dsh_appends(tmp_path: Path, mode: str) -> None:
    counts = _concurrent_reads(tmp_path, mode, ROUNDS(False), min_reads=8)
    assert counts["reads"] > 8


@pytest.mark.stress
@pytest.mark.parametrize("mode", ["plain", "zstd"])
def test_readers_see_a_committed_prefix_stress(tmp_path: Path, mode: str) -> None:
    counts = _concurrent_reads(tmp_path, mode, ROUNDS(True))
    record_figures(f"concurrent reads ({mode})", trials=counts["reads"], faults=counts["writer-runs"],
                   torn_reads=counts["torn-seen"], failures=0)


# ----------------------------------------------------------------------------- the session lock

HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


def test_writers_refuse_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    """migrate and repair --write exit 5 naming the holder's pid; nothing is written."""
    v0 = tmp_path / "--p--" / "m"
    v0.mkdir(parents=True)
    (v0 / "session.jsonl").write_bytes(stored_as((FIXTURES / "v0" / "text-turn" / "session.jsonl").read_bytes(), "m", "/p"))
    v4 = tmp_path / "--p--" / "c"
    v4.mkdir(parents=True)
    crash = stored_as((FIXTURES / "v4" / "crash" / "session.v4.jsonl").read_bytes(), "c", "/p") + b'{"type":"tool/r'
    (v4 / "session.v4.jsonl").write_bytes(crash)
    holders = []
    try:
        for d in (v0, v4):
            h = subprocess.Popen([sys.executable, "-c", HOLDER, str(d / "session.lock")], stdout=subprocess.PIPE)
            assert h.stdout is not None and h.stdout.readline() == b"locked\n"
            holders.append(h)
        line = assert_clean_failure(run("migrate", "--no-children", str(v0)), (5,))
        assert f"pid {holders[0].pid}" in line, line
        line = assert_clean_failure(run("repair", "--write", str(v4 / "session.v4.jsonl")), (5,))
        assert f"pid {holders[1].pid}" in line, line
        assert sorted(os.listdir(v0)) == ["session.jsonl", "session.lock"]
        assert sorted(os.listdir(v4)) == ["session.lock", "session.v4.jsonl"]
        assert (v4 / "session.v4.jsonl").read_bytes() == crash
        # readers never take the lock
        assert run("info", str(v0)).returncode == 0
        assert run("repair", str(v4)).returncode == 0
    finally:
        for h in holders:
            h.kill()
            h.wait()
    # released (the holder died): the same commands now succeed
    assert run("migrate", "--no-children", str(v0)).returncode == 0
    assert run("repair", "--write", str(v4 / "session.v4.jsonl")).returncode == 0
