"""A real ``distributed.LocalCluster`` gives exactly what ``-j 1`` and ``-j 2`` give: report, search, validate, stats.

The cluster's workers are processes of their own (they get paths and read the files
themselves).  The comparison runs in a child interpreter: a cluster leaves helper
processes (multiprocessing's resource tracker) alive until its parent exits, and the
test process must not be that parent (other tests count its children).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, load_bench_script
from dshlog.ops.report import store_sessions

pytest.importorskip("distributed", reason="the dshlog[dask] extra is not installed")

SCRIPT = r"""
import json, sys
from datetime import timezone
import distributed
from dshlog.executor import DaskExecutor, InProcess, ProcessPool
from dshlog.model.search import Query
from dshlog.model.usage import report_document
from dshlog.ops.report import usage_report
from dshlog.ops.search import search
from dshlog.ops.stats import stats_many
from dshlog.ops.validate import validate_many
from dshlog.errors import CorruptLog
from dshlog.protocol.jsjson import dumps

def square(n):
    return n * n

def fail_on_7(n):
    if n == 7:
        raise CorruptLog("bad row", path=f"/x/{n}")
    return n

def order_and_errors(ex):
    assert list(ex.map(square, range(100))) == [n * n for n in range(100)]
    got = []
    try:
        for v in ex.map(fail_on_7, range(50)):
            got.append(v)
    except CorruptLog as exc:
        return got == list(range(7)) and exc.path == "/x/7"
    return False

def outputs(files, ex):
    rep = usage_report(*files, by=["day", "session", "model"], tz=timezone.utc, zone="UTC", executor=ex)
    hits = [(r.path, r.id, [h.as_dict() for h in r.hits]) for r in search(files, Query("the", ignore_case=True), executor=ex)]
    reports = [r.as_dict() for r in validate_many(files, executor=ex)]
    stats = [s.as_dict() for s in stats_many(files, executor=ex)]
    return dumps({"report": report_document(rep, 1), "search": hits, "validate": reports, "stats": stats})

if __name__ == "__main__":
    files = json.loads(sys.argv[1])
    serial = outputs(files, InProcess())
    with ProcessPool(2) as pool:
        pooled = outputs(files, pool)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        with distributed.Client(c) as client, DaskExecutor(client=client) as dask:
            jobs = dask.jobs
            on_dask = outputs(files, dask)
            ordered = order_and_errors(dask)
    print(json.dumps({"jobs": jobs, "pool": pooled == serial, "dask": on_dask == serial, "ordered": ordered,
                      "ok": b'"status":"ok"' in serial, "hits": b'"match":"' in serial}))
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("many")
    gen.generate_many(out, count=30, seed=11)
    p = gen.many_paths(out, 30, 11)
    return store_sessions([str(p["plain"]), str(p["zstd"])])


def test_dask_pool_and_in_process_agree_byte_for_byte(files, tmp_path):
    script = tmp_path / "agree.py"
    script.write_text(SCRIPT)
    run = subprocess.run([sys.executable, str(script), json.dumps(files)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got == {"jobs": 2, "pool": True, "dask": True, "ordered": True, "ok": True, "hits": True}
