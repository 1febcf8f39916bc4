"""A real ``distributed.LocalCluster`` gives exactly what ``-j 1`` and ``-j 2`` give: report, search, validate, stats."""

from __future__ import annotations

from datetime import UTC

import pytest

from conftest import load_bench_script
from dshlog.executor import DaskExecutor, InProcess, ProcessPool
from dshlog.model.search import Query
from dshlog.model.usage import report_document
from dshlog.ops.report import store_sessions, usage_report
from dshlog.ops.search import search
from dshlog.ops.stats import stats_many
from dshlog.ops.validate import validate_many
from dshlog.protocol.jsjson import dumps

distributed = pytest.importorskip("distributed", reason="the dshlog[dask] extra is not installed")


@pytest.fixture(scope="module")
def cluster():
    # processes=True: the workers are other processes, which get paths and read the files themselves
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        with distributed.Client(c) as client:
            yield client


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("many")
    gen.generate_many(out, count=30, seed=11)
    p = gen.many_paths(out, 30, 11)
    return store_sessions([str(p["plain"]), str(p["zstd"])])


def _outputs(files, ex) -> bytes:
    rep = usage_report(files, ["day", "session", "model"], tz=UTC, zone="UTC", executor=ex)
    hits = [(r.path, r.id, [h.as_dict() for h in r.hits]) for r in search(files, Query("the", ignore_case=True), executor=ex)]
    reports = [r.as_dict() for r in validate_many(files, executor=ex)]
    stats = [s.as_dict() for s in stats_many(files, executor=ex)]
    return dumps({"report": report_document(rep, 1), "search": hits, "validate": reports, "stats": stats})


def test_dask_pool_and_in_process_agree_byte_for_byte(files, cluster):
    serial = _outputs(files, InProcess())
    with ProcessPool(2) as pool:
        assert _outputs(files, pool) == serial
    with DaskExecutor(client=cluster) as dask:
        assert dask.jobs == 2
        assert _outputs(files, dask) == serial
    assert b'"status":"ok"' in serial and b'"match":"' in serial
