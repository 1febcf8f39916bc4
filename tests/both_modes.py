"""Run the test suite under both modes of the fast paths at once: ``make test`` (and so CI).

    python tests/both_modes.py [PYTEST ARGS...]

Every fast body must give its exact body's answers (``dshlog/fastpaths.py``), so the
ordinary suite runs twice, with ``DSHLOG_PATHS=fast`` and ``DSHLOG_PATHS=exact``, as
two concurrent pytest processes: one process mostly keeps one core busy, so on a
machine of two cores both runs take about the time of one.  Each run has its own
temporary directories (``--basetemp``, ``TMPDIR``; removed in the background
afterwards), its own tmux server (``TMUX_TMPDIR``) and its own pytest cache; its
output goes to a log printed when both have ended, and the exit status is the worse
of the two.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dshlog.fastpaths import MODES  # noqa: E402 - the modes' one owner, from the checkout under test


def main(argv: list[str]) -> int:
    runs: list[tuple[str, Path, subprocess.Popen[bytes], float]] = []
    try:
        for mode in MODES:
            work = Path(tempfile.mkdtemp(prefix=f"dshlog-test-{mode}-"))
            work.chmod(0o755)  # tests run commands as another user in the temporary directories below
            for sub in ("tmp", "tmux"):
                (work / sub).mkdir()
            (work / "tmp").chmod(0o1777)  # as /tmp itself
            env = {**os.environ, "DSHLOG_PATHS": mode, "TMPDIR": str(work / "tmp"), "TMUX_TMPDIR": str(work / "tmux")}
            env.pop("TMUX", None)  # a test's tmux commands go to this run's own server, not the caller's
            cmd = [sys.executable, "-m", "pytest", "--basetemp", str(work / "pytest"),
                   "-o", f"cache_dir={ROOT / '.pytest_cache' / mode}", *argv]
            with open(work / "pytest.log", "wb") as log:
                proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            runs.append((mode, work, proc, time.monotonic()))
        codes = []
        for mode, work, proc, start in runs:
            code = proc.wait()
            codes.append(code)
            print(f"===== tests with DSHLOG_PATHS={mode}: exit {code}, {time.monotonic() - start:.0f} s =====", flush=True)
            sys.stdout.buffer.write((work / "pytest.log").read_bytes())
            sys.stdout.flush()
        return max(codes)
    except KeyboardInterrupt:
        for _mode, _work, proc, _start in runs:
            proc.send_signal(signal.SIGINT)
        for _mode, _work, proc, _start in runs:
            proc.wait()
        return 130
    finally:
        for _mode, work, _proc, _start in runs:
            tmux = shutil.which("tmux")
            if tmux is not None:  # the run's own server, if a test started one
                subprocess.run([tmux, "kill-server"], env={**os.environ, "TMUX_TMPDIR": str(work / "tmux")},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            # gigabytes of generated logs: removed in the background, the verdict is out already
            subprocess.Popen(["rm", "-rf", str(work)], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
