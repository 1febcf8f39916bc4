"""Shared helpers of the reliability tests: real subprocesses, large inputs, figures.

The reliability tests run the installed ``dshlog`` in a child process because the
faults they inject (SIGKILL, file-size limits, another user, a held lock) act on
a whole process.  Large inputs come from the benchmark generator (valid logs of
any size, deterministic), cached per test session.  Stress runs append their
counts to the JSON-lines file named by ``DSHLOG_STRESS_REPORT`` so that
``bench/stress.py`` can print one summary for RELIABILITY.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence

from conftest import load_bench_script, run_process

ROOT = Path(__file__).resolve().parents[1]
LEFTOVER = re.compile(r"^(\..+\.dshlog-[0-9a-f]{16}\.tmp|session\.migration\.[0-9a-f]{16}\.jsonl(\.zstd)?\.tmp)$")
TRACEBACK = b"Traceback (most recent call last)"


def run(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``dshlog ARGS`` to completion in a child process (stdout/stderr captured; ``conftest.run_process``)."""
    return run_process(*args, script=True, timeout=timeout, **kw)


def assert_clean_failure(proc: subprocess.CompletedProcess[bytes], codes: Sequence[int]) -> str:
    """The process failed the documented way: an expected code, one ``dshlog:`` line, no traceback."""
    err = proc.stderr
    assert proc.returncode in codes, (proc.returncode, err[-2000:])
    assert TRACEBACK not in err, err[-2000:]
    assert b"internal error" not in err, err[-2000:]
    lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.startswith("dshlog: ")]
    assert lines, err
    return lines[0]


def leftovers(directory: Path) -> list[str]:
    """Temporary names a writing command stages under (and must not leave behind)."""
    try:
        return sorted(n for n in os.listdir(directory) if LEFTOVER.match(n))
    except FileNotFoundError:
        return []


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its content (``None`` for directories and links)."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            rel = os.path.relpath(p, root)
            if os.path.islink(p) or not os.path.isfile(p):
                out[rel] = None
            else:
                with open(p, "rb") as fh:
                    out[rel] = fh.read()
    return out


def load_generator() -> Any:
    """``bench/generate.py`` as a module (it is a script, not part of the package)."""
    return load_bench_script("generate")


def generated(cache: Path, size: str, version: int) -> dict[str, Path]:
    """Plain and zstd logs of about ``size`` bytes (``4M``), generated once into ``cache``."""
    return load_generator().generate(cache, size, version, seed=11, zstd=True)


def cut_open_tail(v4_lines: list[bytes], torn: bytes = b'{"type":"tool/res') -> bytes:
    """A crash image: the log cut right after its last ``tool/call`` plus a torn partial line."""
    last = max(i for i, ln in enumerate(v4_lines) if b'"type":"tool/call"' in ln[:40])
    return b"".join(v4_lines[: last + 1]) + torn


def record_figures(test: str, **counts: int) -> None:
    """Append a stress run's counts to ``$DSHLOG_STRESS_REPORT`` (no-op when unset)."""
    target = os.environ.get("DSHLOG_STRESS_REPORT")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"test": test, "time": time.time(), **counts}) + "\n")


def stress_scale(ci: int, stress: int) -> Callable[[bool], int]:
    """Pick the CI or the stress count (the environment can raise the stress count)."""
    factor = float(os.environ.get("DSHLOG_STRESS_FACTOR", "1"))
    return lambda is_stress: int(stress * factor) if is_stress else ci


def stored_as(data: bytes, sid: str, cwd: str) -> bytes:
    """A plain log's bytes with its header's ``id`` and ``cwd`` set, the rest unchanged: a log placed under
    ``<root>/<project of cwd>/<sid>/`` as dsh would have written it there (its storage identity)."""
    import orjson

    first, nl, rest = data.partition(b"\n")
    header = orjson.loads(first)
    header["id"], header["cwd"] = sid, cwd
    return orjson.dumps(header) + nl + rest
