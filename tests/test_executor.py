"""The one executor for per-session batch work: order, errors, early stops, Ctrl-C, Dask."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT
from dshlog.read.source import Source
from dshlog.errors import CorruptLog, Location
from dshlog.executor import DaskExecutor, InProcess, ProcessPool, run_chunk


def _square_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def _fail_on_7(n: int) -> int:
    if n == 7:
        raise CorruptLog("bad row", path=f"/x/{n}", loc=Location(line=3))
    return n


def test_in_process_is_the_callers_process():
    out = list(InProcess().map(_square_pid, range(5)))
    assert [v for v, _ in out] == [0, 1, 4, 9, 16]
    assert {pid for _, pid in out} == {os.getpid()}


def test_pool_keeps_input_order_and_uses_other_processes():
    with ProcessPool(2) as ex:
        out = list(ex.map(_square_pid, range(300)))
    assert [v for v, _ in out] == [n * n for n in range(300)]
    assert os.getpid() not in {pid for _, pid in out}


def test_one_item_runs_in_the_caller():
    with ProcessPool(2) as ex:
        assert list(ex.map(_square_pid, [3])) == [(9, os.getpid())]


@pytest.mark.parametrize("make", [InProcess, lambda: ProcessPool(2)], ids=["in-process", "pool"])
def test_an_error_comes_at_its_turn_as_the_serial_run_raises_it(make):
    got: list[int] = []
    with make() as ex:
        with pytest.raises(CorruptLog) as info:
            for v in ex.map(_fail_on_7, range(100)):
                got.append(v)
    assert got == list(range(7))
    assert info.value.path == "/x/7" and info.value.loc == Location(line=3)
    assert info.value.one_line() == CorruptLog("bad row", path="/x/7", loc=Location(line=3)).one_line()


def test_run_chunk_packs_errors_and_keeps_going():
    out = run_chunk(_fail_on_7, [6, 7, 8])
    assert [ok for ok, _ in out] == [True, False, True]


def test_closing_early_stops_the_pool():
    ex = ProcessPool(2)
    it = ex.map(_square_pid, range(1000))
    assert next(it)[0] == 0
    it.close()  # the consumer went away (| head): the workers are stopped
    assert ex._pool is None


def test_ctrl_c_stops_workers_and_leaves_no_process(tmp_path):
    """SIGINT to the whole process group (as a terminal sends it): exit 130, no traceback, no orphans."""
    script = tmp_path / "run.py"
    pids = tmp_path / "pids"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from dshlog.executor import ProcessPool

        def slow(n):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(0.2)
            return n

        if __name__ == "__main__":
            try:
                with ProcessPool(2) as ex:
                    for _ in ex.map(slow, range(200)):
                        pass
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                sys.exit(130)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while (not pids.exists() or len(set(pids.read_text().split())) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "interrupted"
    time.sleep(0.2)
    for pid in set(pids.read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


# the Dask policy's order and errors are checked on a real cluster in test_dask.py


def test_dask_without_the_extra_says_how_to_get_it(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_distributed(name, *a, **k):
        if name == "distributed":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    from dshlog.errors import UsageError

    with pytest.raises(UsageError, match=r"dshlog\[dask\]"):
        DaskExecutor("tcp://127.0.0.1:1")


def test_the_executor_sits_below_read():
    """A policy the caller passes: it imports nothing that reads or writes session files."""
    src = (ROOT / "dshlog" / "executor.py").read_text()
    assert "from .read" not in src and "from .ops" not in src and "from .write" not in src


def test_only_a_task_in_the_callers_process_may_fork_helpers(monkeypatch, tmp_path) -> None:
    """The caller's ``parallel`` reaches a batch task run in its process; a pool's workers never fork more."""
    from dshlog import executor as ex_mod
    from dshlog.ops import stats as stats_ops

    assert ex_mod.helpers_allowed(ex_mod.InProcess(), True)
    assert not ex_mod.helpers_allowed(ex_mod.InProcess(), False)
    with ex_mod.ProcessPool(2) as pool:
        assert not ex_mod.helpers_allowed(pool, True)
    seen: list[bool] = []
    monkeypatch.setattr(stats_ops, "session_stats_of", lambda source: seen.append(source.parallel) or source.name)
    assert list(stats_ops.stats_many(["a", "b"], source=Source(parallel=True))) == ["a", "b"]
    assert list(stats_ops.stats_many(["c"], source=Source(parallel=False))) == ["c"]
    assert seen == [True, True, False]
