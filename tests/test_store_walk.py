"""A store is walked to the end: every batch command reads every session it can, names each one it
cannot (one line: path, why) and exits with the worst code; nothing but a regular file is ever opened.

The store is built from the shared corpus (``make_store.py``) with the hostile entries a real disk may
hold added; the CLI runs as an unprivileged user where the test runs as root (root reads everything).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, SHARED, run_process

#: a process of its own: what these inputs did was block in open(), fork without bound or read without end
IMPORTABLE = {"PYTHONPATH": str(ROOT)}
MAKE_STORE = SHARED / "tools" / "make_store.py"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _as_nobody() -> list[str]:
    """The prefix that runs the CLI as a user the file permissions apply to (root ignores them)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: an unreadable file cannot be made unreadable to the CLI")
    return NOBODY


def _damage(root: Path) -> dict[str, Path]:
    """Add to a store what a real disk may hold; returns where each one is."""
    projects = sorted(p for p in root.iterdir() if p.is_dir())
    proj = projects[0]
    src = next(d for p in projects for d in sorted(p.iterdir()) if (d / "session.v4.jsonl").is_file()) / "session.v4.jsonl"
    made: dict[str, Path] = {}
    mixed = proj / "zz-mixed"
    mixed.mkdir()
    shutil.copy(src, mixed / "session.v4.jsonl")
    shutil.copy(src, mixed / "session.v3.jsonl.zstd")
    made["mixed"] = mixed
    for name, make in (("fifo", lambda p: os.mkfifo(p)), ("zero", lambda p: os.symlink("/dev/zero", p)),
                       ("dangling", lambda p: os.symlink(root / "nowhere", p))):
        d = proj / f"zz-{name}"
        d.mkdir()
        make(d / "session.v4.jsonl")
        made[name] = d / "session.v4.jsonl"
    unreadable = proj / "zz-unreadable"
    unreadable.mkdir()
    shutil.copy(src, unreadable / "session.v4.jsonl")
    os.chmod(unreadable / "session.v4.jsonl", 0)
    made["unreadable"] = unreadable / "session.v4.jsonl"
    closed = root / "--zz-closed-project--"
    (closed / "s1").mkdir(parents=True)
    shutil.copy(src, closed / "s1" / "session.v4.jsonl")
    os.chmod(closed, 0)
    made["closed"] = closed
    outside = root.parent / "outside"
    (outside / "s").mkdir(parents=True)
    shutil.copy(src, outside / "s" / "session.v4.jsonl")
    (root / "--zz-out-link--").symlink_to(outside)
    made["out"] = root / "--zz-out-link--"
    (proj / "zz-loop").symlink_to("..")
    made["loop"] = proj / "zz-loop"
    return made


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[Path, dict[str, Path]]]:
    if not MAKE_STORE.is_file():
        pytest.skip(f"shared tools not found at {MAKE_STORE} (set DSHLOG_SHARED)")
    base = Path(tempfile.mkdtemp(prefix="dshlog-walk-"))
    os.chmod(base, 0o755)  # the unprivileged user reads the store
    try:
        subprocess.run([sys.executable, str(MAKE_STORE), "--corpus", str(SHARED / "corpus"), "--home", str(base)],
                       check=True, capture_output=True, timeout=300)
        root = base / "sessions"
        yield root, _damage(root)
    finally:
        for d, _, _ in os.walk(base):
            os.chmod(d, 0o755)
        shutil.rmtree(base, ignore_errors=True)


def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**IMPORTABLE, "NO_COLOR": "1", "COLUMNS": "200"}
    return run_process(*args, prefix=_as_nobody(), text=True, timeout=timeout, env=env, cwd="/")


def _named(stderr: str, made: dict[str, Path], *keys: str) -> None:
    for k in keys:
        where = made[k].parent if made[k].name.startswith("session.") else made[k]  # ls names the session directory
        lines = [line for line in stderr.splitlines() if str(where) in line]
        assert lines, f"{k} ({made[k]}) not named on stderr:\n{stderr}"


ALL = ("mixed", "fifo", "zero", "dangling", "unreadable", "closed", "out", "loop")


@pytest.mark.parametrize("command", [["ls"], ["report"], ["search", "the"], ["validate"], ["stats"],
                                     ["migrate", "-R", "--check"]])
def test_a_batch_reads_every_session_and_names_each_it_cannot(store: tuple[Path, dict[str, Path]], command: list[str]) -> None:
    """Each of them stopped at the mixed directory (exit 3), hung on the FIFO, or read /dev/zero; now every
    other session is read, each problem is one named line, and the exit code is the worst (6: unreadable)."""
    root, made = store
    p = run(*command, str(root))
    said = p.stdout if command[0] == "validate" else p.stderr  # validate's findings are its results
    _named(said, made, *ALL)
    assert "Traceback" not in p.stderr
    # the worst of the batch (1 > 4 > 6 > 5 > 3): 6 for what cannot be read, 4 where the corpus's damaged logs count
    assert p.returncode == 6 if command[0] == "ls" else p.returncode in (4, 6), (p.returncode, p.stderr[-2000:])
    if command[0] in ("ls", "validate", "stats", "migrate"):
        assert len(p.stdout.splitlines()) > 250  # every session of the store, not one line
    assert "session directory mixes plain" in said  # dsh's refusal, for that session alone


def test_rescue_of_a_store_names_what_it_cannot_read(store: tuple[Path, dict[str, Path]]) -> None:
    """It ended in an internal error (exit 1) at the dangling symlink and summarised nothing."""
    root, made = store
    p = run("rescue", "-R", str(root))
    _named(p.stderr, made, *ALL)
    assert p.returncode in (4, 6), p.stderr[-2000:]
    assert "sessions, dsh refuses" in p.stdout


def test_export_of_a_store_does_not_hang_or_read_a_device(store: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    root, made = store
    out = tempfile.mkdtemp(prefix="dshlog-export-")
    os.chmod(out, 0o777)
    try:
        p = run("export", str(root), "--format", "html", "-o", out)
        assert "Traceback" not in p.stderr
        for k in ("fifo", "zero", "dangling"):  # named by its session directory, with why
            assert f"dshlog: {made[k].parent.name}: not exported: io: " in p.stderr, p.stderr[-2000:]
        assert p.returncode in (4, 6), p.stderr[-2000:]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_validate_counts_the_verdicts_of_a_store(store: tuple[Path, dict[str, Path]]) -> None:
    """``validate ROOT`` called the root itself "damaged"; the verdicts went to stderr."""
    root, _ = store
    p = run("validate", str(root))
    lines = p.stdout.splitlines()
    # the verdicts are results: stdout.  The store holds both encodings (the corpus' ``.zstd``
    # sessions, the mixed directory): dsh opens none of its sessions, and says why for each
    assert any(": damaged (v4, " in line for line in lines)
    assert any("but this backend is configured for compression" in line for line in lines)
    assert not any(": ok (v" in line or ": damaged (v" in line for line in p.stderr.splitlines())
    total = lines[-1]
    assert total.split(":")[0].endswith("sessions") and " damaged" in total and " unreadable" in total, total
    assert f"{root}: damaged" not in p.stdout


@pytest.mark.parametrize("command", [["info"], ["validate"], ["stats"], ["show"], ["events"]])
def test_a_fifo_nobody_writes_to_is_refused_at_once(tmp_path: Path, command: list[str]) -> None:
    """A reader named a FIFO with no writer blocked in open() forever."""
    fifo = tmp_path / "session.v4.jsonl"
    os.mkfifo(fifo)
    p = run_process(*command, str(fifo), text=True, timeout=60, env=IMPORTABLE)
    assert p.returncode in (2, 4, 6), p.stderr
    said = p.stdout if command[0] == "validate" else p.stderr  # validate's finding is its result
    assert "a FIFO nobody writes to" in said and "Traceback" not in p.stderr, (p.stdout, p.stderr)
    assert command[0] == "validate" or len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("command", [["info"], ["validate"]])
def test_a_device_is_refused_unread(command: list[str]) -> None:
    p = run_process(*command, "/dev/zero", text=True, timeout=60, env=IMPORTABLE)
    assert p.returncode in (2, 4) and "not a regular file (a character device)" in p.stdout + p.stderr, p.stderr


def _two_sessions(tmp_path: Path) -> Path:
    from conftest import FIXTURES

    root = tmp_path / "sessions"
    for i, fixture in enumerate(("v4/loop/session.v4.jsonl", "v4/crash/session.v4.jsonl")):
        d = root / "--p--" / f"s{i}"
        d.mkdir(parents=True)
        shutil.copy(FIXTURES / fixture, d / "session.v4.jsonl")
    return root


def test_jobs_never_start_more_workers_than_sessions(tmp_path: Path) -> None:
    """``report -j 100000`` over two sessions forked workers by the thousand."""
    p = run_process("report", "-j", "100000", str(_two_sessions(tmp_path)), text=True, timeout=60, env=IMPORTABLE)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "too-big"])
def test_prices_is_a_bounded_regular_file(tmp_path: Path, kind: str) -> None:
    """``--prices /dev/zero`` read gigabytes; a FIFO blocked the report."""
    if kind == "device":
        prices = "/dev/zero"
    elif kind == "fifo":
        os.mkfifo(tmp_path / "prices.json")
        prices = str(tmp_path / "prices.json")
    elif kind == "directory":
        prices = str(tmp_path)
    else:
        big = tmp_path / "prices.json"  # a valid table, padded past the bound: it was read whole
        big.write_bytes(b'{"mock/mock": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}' + b" " * (17 << 20))
        prices = str(big)
    p = run_process("report", "--prices", prices, str(_two_sessions(tmp_path)), text=True, timeout=60, env=IMPORTABLE)
    assert p.returncode == (2 if kind == "too-big" else 6), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and prices in p.stderr and p.stdout == "", p.stderr
