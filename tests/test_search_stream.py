"""``search`` shows the hits of a session as it finds them, and the same hits in the same order as a pool."""

from __future__ import annotations

import select
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, dshlog_argv, load_bench_script, process_env, run_env
from dshlog.errors import ExitCode

#: Words of the generated log's first user message (seq 9), found nowhere else.
EARLY = "Request should that method"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated v4 log of about 4 MB."""
    gen = load_bench_script("generate")
    path: Path = gen.generate(tmp_path_factory.mktemp("gen"), "4M", 4, zstd=False)["plain"]
    return path


def test_the_first_hit_is_shown_before_the_rest_of_the_log_is_read(generated: Path) -> None:
    lines = generated.read_bytes().splitlines(keepends=True)
    head, rest = b"".join(lines[:200]), b"".join(lines[200:])
    assert EARLY.encode() in head and EARLY.encode() not in rest
    proc = subprocess.Popen(dshlog_argv("search", EARLY, "-"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
                            env=process_env({"DSH_HOME": None}))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(head)  # the log's start; the rest is held back until the hit is read
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "no hit before the whole log was read"
        first = proc.stdout.readline()
        assert proc.poll() is None  # still reading
        proc.stdin.write(rest)
        proc.stdin.close()
        streamed = first + proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.OK
    code, out, err = run_env("search", EARLY, str(generated))
    assert code == ExitCode.OK, err
    assert streamed == out and out.count(b"\n") == 1 and b"seq 9 " in out


@pytest.mark.parametrize("options", [[], ["--json"], ["-l"], ["-e", r"fold\w+", "-C", "10"]])
def test_one_session_streamed_writes_what_a_pool_writes(generated: Path, tmp_path: Path, options: list[str]) -> None:
    root = tmp_path / "sessions"
    for name in ("a-0001", "b-0001"):
        (root / "--home-ann-bench--" / name).mkdir(parents=True)
        shutil.copy(generated, root / "--home-ann-bench--" / name / generated.name)
    pattern = [] if "-e" in options else ["foldSurface"]
    code, one, err = run_env("search", *pattern, *options, str(generated))
    assert code == ExitCode.OK, err
    assert one.count(b"\n") >= (1 if "-l" in options else 10)
    for jobs in ("1", "2"):  # in this process, streamed; in a pool, each session's hits when its result arrives
        code, both, err = run_env("search", *pattern, *options, str(root), "-j", jobs)
        assert code == ExitCode.OK, err
        paths = [str(root / "--home-ann-bench--" / n / generated.name) for n in ("a-0001", "b-0001")]
        assert both == b"".join(one.replace(str(generated).encode(), p.encode()) for p in paths), jobs
