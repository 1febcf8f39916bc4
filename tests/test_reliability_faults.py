"""Operating-system faults: disk full, read-only and unreadable places, odd file types.

Every case runs the real command in a child process and expects one ``dshlog:``
line on stderr (no traceback), the documented exit code (6 for what the system
refused, 2 for an input of the wrong kind, 5 for refusing to overwrite), and no
half-written file: the source is byte-identical and nothing new appears under a
final name, nor as a leftover temporary file.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from pathlib import Path
from collections.abc import Iterator

import pytest

from test_reliability_support import assert_clean_failure, generated, leftovers, run, snapshot, stored_as

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
CRASH = FIXTURES / "v4" / "crash" / "session.v4.jsonl"
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
PROJECT = "--home-ann-faults--"
CWD = "/home/ann/faults"  # the directory PROJECT is the key of


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A ~1 MB v0 log and a v4 crash image of the same size (outputs bigger than the limits below)."""
    from test_reliability_support import cut_open_tail

    cache = tmp_path_factory.mktemp("gen")
    v0 = generated(cache, "1M", 0)["plain"].read_bytes()
    v4 = generated(cache, "1M", 4)["plain"].read_bytes()
    return {"v0": v0, "v4-crash": cut_open_tail(v4.splitlines(keepends=True)), "v4": v4}


def _session(base: Path, name: str, data: bytes, sid: str = "s-1") -> Path:
    """``base/PROJECT/sid/name`` holding ``data`` as dsh would store it there: its header names ``sid`` and
    the project's cwd (dsh refuses a session whose directory or project is another session's)."""
    d = base / PROJECT / sid
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(stored_as(data, sid, CWD))
    return d


def _writers(d: Path, out: Path) -> list[tuple[str, list[str], int]]:
    """(label, argv, expected exit code) of every writing command aimed at ``d``."""
    gen = sorted(n for n in os.listdir(d) if n.startswith("session.") and not n.endswith(".lock"))[-1]
    return [
        ("migrate", ["migrate", "--no-children", str(d)], 6),
        ("fork", ["fork", str(d / gen), "-o", str(out / "child.jsonl")], 6),
        ("repair -o", ["repair", str(d / gen), "-o", str(out / "repaired.jsonl")], 6),
    ]


# ----------------------------------------------------------------------------- disk full


def _fsize_limit(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return pre


@pytest.mark.parametrize("command", ["migrate", "repair --write", "fork", "repair -o"])
def test_file_size_limit_fails_cleanly(tmp_path: Path, medium: dict[str, bytes], command: str) -> None:
    """RLIMIT_FSIZE below the output size: exit 6, one line, nothing half-written, source intact."""
    src = medium["v0"] if command == "migrate" else medium["v4-crash"]
    name = "session.jsonl" if command == "migrate" else "session.v4.jsonl"
    d = _session(tmp_path, name, src)
    out = tmp_path / "out"
    out.mkdir()
    argv = {
        "migrate": ["migrate", "--no-children", str(d)],
        "repair --write": ["repair", "--write", str(d / name)],
        "fork": ["fork", str(d / name), "-o", str(out / "child.jsonl")],
        "repair -o": ["repair", str(d / name), "-o", str(out / "repaired.jsonl")],
    }[command]
    before = snapshot(tmp_path)
    p = run(*argv, preexec_fn=_fsize_limit(200_000))
    line = assert_clean_failure(p, (6,))
    assert "File too large" in line or "No space" in line, line
    after = snapshot(tmp_path)
    after.pop(f"{PROJECT}/s-1/session.lock", None)  # the lock file is the one thing a writer may leave
    assert after == before
    assert (d / name).read_bytes() == stored_as(src, "s-1", CWD)


@pytest.fixture
def tiny_tmpfs() -> Iterator[Path]:
    """A 64 KiB tmpfs (root only); skipped where mounting is not permitted."""
    d = Path(tempfile.mkdtemp(prefix="dshlog-tmpfs-"))
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True)
    if p.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode().strip() or 'not permitted'}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def test_disk_full_on_tmpfs(tiny_tmpfs: Path, medium: dict[str, bytes]) -> None:
    """Real ENOSPC: a 40 KB log on a 64 KiB filesystem cannot get a second copy beside it."""
    lines = medium["v4-crash"].splitlines(keepends=True)
    header, body = lines[0], lines[1:]
    # the open-tail cut keeps the tail; trim the front to stay under ~40 KB while keeping seqs valid
    data = b""
    for n in range(len(body), 0, -1):
        data = header + b"".join(body[:n])
        if len(data) < 40_000:
            break
    v0 = V0.read_bytes() * 1  # small v0 for migrate; fill the disk so its successor cannot fit
    d = _session(tiny_tmpfs, "session.v4.jsonl", data)
    m = _session(tiny_tmpfs, "session.jsonl", v0, sid="m-1")
    filler = tiny_tmpfs / "filler"
    free = os.statvfs(tiny_tmpfs).f_bavail * os.statvfs(tiny_tmpfs).f_frsize
    filler.write_bytes(b"\0" * max(0, free - 2048))
    before = snapshot(tiny_tmpfs)
    full = 0
    for argv in (
        ["migrate", "--no-children", str(m)],
        ["repair", "--write", str(d / "session.v4.jsonl")],
        ["fork", str(d / "session.v4.jsonl"), "-o", str(tiny_tmpfs / "child.jsonl")],
    ):
        p = run(*argv)
        if p.returncode == 0:  # a lucky fit: then the output must be complete, which the reader checks
            continue
        line = assert_clean_failure(p, (6,))
        assert "No space left" in line, line
        full += 1
    assert full >= 2, "the filesystem was not full enough to test anything"
    after = snapshot(tiny_tmpfs)
    for k in list(after):
        if k.endswith("session.lock") or k.endswith("/"):
            after.pop(k)
            before.pop(k, None)
    new = set(after) - set(before)
    for k in new:  # only complete outputs may have appeared
        assert not any(part.endswith(".tmp") for part in k.split("/")), k
    for k in before:
        assert after.get(k) == before[k], f"{k} changed"


# ----------------------------------------------------------------------------- read-only and unreadable


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "ro"
    d.mkdir()
    yield d
    subprocess.run(["chattr", "-R", "-i", str(d)], capture_output=True)


def _make_immutable(path: Path) -> None:
    if os.geteuid() != 0:
        path.chmod(0o555)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root and chattr is not installed: cannot make a directory read-only")
    p = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"chattr +i not supported here: {p.stderr.decode().strip()}")


def test_read_only_directory(immutable: Path) -> None:
    """An immutable session directory (root ignores mode bits): every writer exits 6, nothing changes."""
    d = _session(immutable, "session.jsonl", V0.read_bytes())
    c = _session(immutable, "session.v4.jsonl", CRASH.read_bytes(), sid="c-1")
    (c / "session.lock").touch()  # with the lock present the failure moves on to the staging step
    out = immutable / "out"
    out.mkdir()
    for p_ in (d, c, out):
        _make_immutable(p_)
    before = snapshot(immutable)
    for argv in (
        ["migrate", "--no-children", str(d)],
        ["repair", "--write", str(c / "session.v4.jsonl")],
        ["fork", str(c / "session.v4.jsonl"), "-o", str(out / "child.jsonl")],
        ["fork", str(c / "session.v4.jsonl"), "-o", str(out / "newdir") + "/"],
        ["repair", str(c / "session.v4.jsonl"), "-o", str(out / "r.jsonl")],
    ):
        line = assert_clean_failure(run(*argv), (6,))
        assert "not permitted" in line or "Permission denied" in line or "Read-only" in line, line
    assert snapshot(immutable) == before


_NO_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


def _as_nobody(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run without the capabilities that let root ignore permission bits."""
    prefix = _NO_DAC if os.geteuid() == 0 else []
    return run(*argv, prefix=prefix, timeout=60)


def test_unreadable_file_and_directory() -> None:
    """A 0000 file and a 0000 directory (run as an unprivileged user when we are root): exit 6."""
    base = Path(tempfile.mkdtemp(prefix="dshlog-perm-"))
    try:
        base.chmod(0o755)
        d = base / PROJECT / "s-1"
        d.mkdir(parents=True)
        for p_ in (base / PROJECT, d):
            p_.chmod(0o755)
        log = d / "session.v4.jsonl"
        log.write_bytes(LOOP.read_bytes())
        log.chmod(0)
        if os.geteuid() == 0 and (shutil.which("setpriv") is None or _as_nobody(["--version"]).returncode != 0):
            pytest.skip("running as root without setpriv: permission bits cannot be made to apply")
        for cmd in (["info"], ["events"], ["surface"], ["repair"]):
            line = assert_clean_failure(_as_nobody([*cmd, str(log)]), (6,))
            assert "permission denied" in line.lower(), line
        p = _as_nobody(["validate", str(log)])  # validate reports the file as a problem in its own format
        assert p.returncode == 6 and b"Traceback" not in p.stderr
        assert b"permission denied" in p.stdout.lower(), p.stdout
        line = assert_clean_failure(_as_nobody(["migrate", "--no-children", str(d)]), (6,))
        log.chmod(0o644)
        d.chmod(0)
        for cmd in (["info", str(d)], ["info", str(log)], ["migrate", "--no-children", str(d)]):
            line = assert_clean_failure(_as_nobody(cmd), (6,))
            assert "permission denied" in line.lower(), line
    finally:
        for dirpath, dirnames, _ in os.walk(base):
            for n in dirnames:
                os.chmod(os.path.join(dirpath, n), 0o755)
        shutil.rmtree(base, ignore_errors=True)


# ----------------------------------------------------------------------------- odd file types


def test_directory_where_a_file_belongs(tmp_path: Path) -> None:
    """A generation name that is a directory, and -o naming an existing non-directory target."""
    d = _session(tmp_path, "session.jsonl", V0.read_bytes())
    (d / "session.v4.jsonl").mkdir()  # selected as the newest generation, but not a file
    for argv in (["info", str(d)], ["events", str(d / "session.v4.jsonl")], ["migrate", "--no-children", str(d)],
                 ["repair", "--write", str(d)]):
        assert_clean_failure(run(*argv), (2, 4, 6))
    p = run("validate", str(d))  # validate reports per file, in its own format
    # an I/O failure is reported as unreadable (exit 6), damage as damaged (exit 4): the word follows the code
    assert p.returncode in (2, 4, 6) and b"Traceback" not in p.stderr
    assert (b"unreadable" if p.returncode == 6 else b"damaged") in p.stdout  # the verdict is a result: stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_clean_failure(run("info", str(empty)), (2,))
    # -o naming an existing file: never overwritten
    target = tmp_path / "taken.jsonl"
    target.write_bytes(b"keep me\n")
    assert_clean_failure(run("fork", str(LOOP), "-o", str(target)), (5,))
    assert_clean_failure(run("repair", str(CRASH), "-o", str(target)), (5,))
    assert target.read_bytes() == b"keep me\n"
    assert leftovers(tmp_path) == []


def test_symlinked_session_directory(tmp_path: Path) -> None:
    """A session reached through a symlink is migrated in place (in the real directory), once."""
    real = _session(tmp_path / "real", "session.jsonl", V0.read_bytes())
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    p = run("migrate", "--no-children", str(link))
    assert p.returncode == 0, p.stderr
    assert (real / "session.v4.jsonl").is_file() and not (real / "session.v4.jsonl").is_symlink()
    assert (real / "session.jsonl").read_bytes() == stored_as(V0.read_bytes(), "s-1", CWD)
    assert run("migrate", "--no-children", str(link)).returncode == 0
    assert sorted(os.listdir(real)) == ["session.jsonl", "session.lock", "session.v4.jsonl"]


def test_symlink_at_an_output_name_is_never_followed(tmp_path: Path) -> None:
    """A (dangling) symlink planted at the fork/repair output or the migration target is not written through."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    out = tmp_path / "out"
    out.mkdir()
    (out / "child.jsonl").symlink_to(victim)
    assert_clean_failure(run("fork", str(LOOP), "-o", str(out / "child.jsonl")), (5,))
    assert_clean_failure(run("repair", str(CRASH), "-o", str(out / "child.jsonl")), (5,))
    d = _session(tmp_path, "session.jsonl", V0.read_bytes())
    (d / "session.v4.jsonl.zstd").symlink_to(victim)  # wrong encoding and dangling: refused, not followed
    assert_clean_failure(run("migrate", "--no-children", str(d)), (2, 3, 4, 5, 6))
    assert not victim.exists()
    assert os.listdir(outside) == []


def _fifo_feeder(path: Path, data: bytes) -> threading.Thread:
    def feed() -> None:
        try:
            fd = os.open(path, os.O_WRONLY)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError:
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return t


def _unblock(path: Path) -> None:
    """Open the FIFO's read end once so a feeder nobody read from can finish."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def test_fifo_input(tmp_path: Path) -> None:
    """Readers accept a pipe; writers that must re-read their input refuse it at once (exit 2, no hang)."""
    fifo = tmp_path / "session.v4.jsonl"
    os.mkfifo(fifo)
    t = _fifo_feeder(fifo, LOOP.read_bytes())
    p = run("info", "--json", str(fifo), timeout=30)
    t.join(5)
    assert p.returncode == 0, p.stderr
    for argv in (["repair", "--write", str(fifo)], ["migrate", "--no-children", str(fifo)],
                 ["fork", str(fifo), "-o", str(tmp_path / "child.jsonl")]):
        line = assert_clean_failure(run(*argv, timeout=30), (2,))
        assert "regular file" in line or "standard input" in line, line
    assert sorted(os.listdir(tmp_path)) == ["session.v4.jsonl"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_standard_input_for_writers(tmp_path: Path) -> None:
    """``fork -`` and ``migrate -`` used to end in an internal error (a second read of a closed stdin)."""
    p = run("fork", "-", "-o", str(tmp_path / "child.jsonl"), stdin=LOOP.read_bytes())
    assert_clean_failure(p, (2,))
    p = run("migrate", "--no-children", "-", stdin=V0.read_bytes())
    assert_clean_failure(p, (2,))
    p = run("repair", "--write", "-", stdin=CRASH.read_bytes())
    assert_clean_failure(p, (2,))
    assert os.listdir(tmp_path) == []
    p = run("repair", "-", "-o", str(tmp_path / "r.jsonl"), stdin=CRASH.read_bytes())
    assert p.returncode == 0, p.stderr
