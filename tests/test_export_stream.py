"""``export`` to stdout streams: the first lines reach a pipe while the rest of the log is still rendered."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from conftest import ROOT, dshlog_argv, process_env, run_env
from dshlog.errors import ExitCode


def _first_line_and_end(args: list[str]) -> tuple[bytes, float, bool, float, bytes]:
    """Run ``dshlog ARGS`` with stdout a pipe: (first line, when it came, whether the process was still
    running then, when the process ended, everything it wrote)."""
    start = time.monotonic()
    proc = subprocess.Popen(dshlog_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=ROOT, env=process_env({"DSH_HOME": None}))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    at = time.monotonic() - start
    running = proc.poll() is None
    rest = proc.stdout.read()
    proc.wait()
    return first, at, running, time.monotonic() - start, first + rest


def test_export_md_streams_to_a_pipe(long_session: tuple[Path, int, str, str], tmp_path: Path) -> None:
    log = str(long_session[0])
    first, at, running, end, streamed = _first_line_and_end(["export", "-f", "md", log])
    assert first.startswith(b"# ")
    assert running and end - at > 0.2, (at, end)  # the rest was still being rendered
    # the same bytes as the file the same export writes
    code, _, err = run_env("export", "-f", "md", log, "-o", str(tmp_path / "out.md"))
    assert code == ExitCode.OK, err
    assert streamed == (tmp_path / "out.md").read_bytes()
    code, out, _ = run_env("export", "-f", "md", log)
    assert code == ExitCode.OK and out == streamed
