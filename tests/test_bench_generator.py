"""The benchmark generator writes valid logs, and its zstd copies hold the same events.

Benchmarks are only meaningful on logs dsh itself would accept: a generator that
drifted into invalid shapes would time error paths instead of the real work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import load_bench_script
from dshlog.read.session import open_session
from dshlog.read.container import SourceInfo, iter_zstd_lines
from dshlog.ops.validate import validate_log


@pytest.fixture(scope="module")
def gen():
    return load_bench_script("generate")


def _events(path: Path) -> list[dict]:
    with open_session(str(path), strict=True) as log:
        return list((r.event for r in log.stored()))


def _check(paths: dict, version: int) -> None:
    report = validate_log(str(paths["plain"]))
    errors = [p for p in report.problems if p.severity == "error"]
    assert report.version == version
    assert not errors, errors[:5]
    assert report.events > 100
    plain, packed = _events(paths["plain"]), _events(paths["zstd"])
    assert plain == packed
    # the body is decoded by a forked worker where a second core exists; both paths agree
    with open(paths["zstd"], "rb") as fh:
        info = SourceInfo(str(paths["zstd"]), "jsonl.zstd")
        serial = [(r.raw, r.line, r.offset, r.frame) for r in iter_zstd_lines(fh, info, parallel=False)]
    with open(paths["zstd"], "rb") as fh:
        info2 = SourceInfo(str(paths["zstd"]), "jsonl.zstd")
        forked = [(r.raw, r.line, r.offset, r.frame) for r in iter_zstd_lines(fh, info2, parallel=True)]
    assert serial == forked and info.frames == info2.frames and info.decoded_bytes == info2.decoded_bytes
    with open_session(str(paths["zstd"])) as log:
        list(log.stored())
        assert log.info.frames > 10  # a header frame plus one frame per append batch


def test_v4_small_file_is_valid_and_zstd_matches(gen, tmp_path):
    paths = gen.generate(tmp_path, "600K", 4, seed=3, rare=5.0)
    _check(paths, 4)
    types = {e["type"] for e in _events(paths["plain"])}
    # the shapes the benchmarks are meant to exercise
    assert {"assistant/attempt", "llm/retry", "compaction/summary", "tool/result", "system/message"} <= types


def test_v0_small_file_is_valid_and_zstd_matches(gen, tmp_path):
    pytest.importorskip("dshlog.migrate.chain")
    paths = gen.generate(tmp_path, "600K", 0, seed=3, rare=5.0)
    _check(paths, 0)
    raw = paths["plain"].read_bytes()
    assert b'"type":"text-chunks"' in raw and b'"type":"assistant/chunk"' in raw and b'"plugin":"compact"' in raw


def test_generation_is_deterministic(gen, tmp_path):
    a = gen.generate(tmp_path / "a", "200K", 4, seed=5)
    b = gen.generate(tmp_path / "b", "200K", 4, seed=5)
    assert a["plain"].read_bytes() == b["plain"].read_bytes()
