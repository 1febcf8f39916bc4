"""Run the stress suite and print the figures RELIABILITY.md quotes.

    python bench/stress.py [pytest args...]      (make stress)

Runs ``pytest -m stress`` with ``DSHLOG_STRESS_REPORT`` pointing at a scratch
file; each stress test appends its counts there (trials run, faults injected,
outcome classes, failures).  The summary is printed as JSON and kept in
``bench/out/stress.json``.  Exit status is pytest's, so a failing trial fails
the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    with tempfile.NamedTemporaryFile(prefix="dshlog-stress-", suffix=".jsonl", delete=False) as fh:
        report = Path(fh.name)
    env = dict(os.environ, DSHLOG_STRESS_REPORT=str(report))
    t0 = time.monotonic()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-m", "stress", "-p", "no:randomly", *argv], cwd=ROOT, env=env)
    rows = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
    report.unlink()
    summary = {
        "exitStatus": rc,
        "seconds": round(time.monotonic() - t0),
        "trials": sum(r.get("trials", 0) for r in rows),
        "faultsInjected": sum(r.get("faults", 0) for r in rows),
        "failures": sum(r.get("failures", 0) for r in rows) + (0 if rc == 0 else 1),
        "tests": rows,
    }
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "stress.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
