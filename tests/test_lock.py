"""dsh's ``session.lock``: exclusion across processes, holder report, never deleted."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dshlog.write.lock as lock_mod

try:
    import fcntl as real_fcntl
except ImportError:  # pragma: no cover
    real_fcntl = None  # type: ignore[assignment]  # off POSIX the module is None
from dshlog.errors import LockHeld
from dshlog.write.lock import LOCK_FILENAME, acquire_session_lock, decode_segment, find_holder, session_lock

pytestmark = pytest.mark.skipif(lock_mod.fcntl is None, reason="session.lock uses POSIX flock")

HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    sys.stdin.readline()
    """
)


def start_holder(lock_path: Path) -> subprocess.Popen[str]:
    script = lock_path.parent.parent / "dshlog_test_holder.py"
    script.write_text(HOLDER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(lock_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=10)


def test_other_process_holding_the_lock_is_reported(tmp_path: Path) -> None:
    session_dir = tmp_path / "--p--" / "s-1"
    session_dir.mkdir(parents=True)
    lock_path = session_dir / LOCK_FILENAME
    proc = start_holder(lock_path)
    try:
        with pytest.raises(LockHeld) as info:
            with session_lock(session_dir):
                pass
        message = info.value.message
        assert message.startswith('session "s-1" is already owned by an active write handle')
        if Path("/proc/locks").exists():
            assert f"pid {proc.pid}" in message
            assert "dshlog_test_holder.py" in message and "\n" not in message
        assert info.value.path == str(lock_path)
    finally:
        stop(proc)
    # after the holder exits the lock is free, and the file is still there, empty
    with session_lock(session_dir) as held:
        assert held.held
    assert lock_path.is_file() and lock_path.stat().st_size == 0


def test_lock_excludes_within_one_process_and_release_frees_it(tmp_path: Path) -> None:
    first = acquire_session_lock(tmp_path, session_id="x")
    with pytest.raises(LockHeld, match='session "x" is already owned'):
        acquire_session_lock(tmp_path, session_id="x")
    first.release()
    first.release()  # idempotent
    with session_lock(tmp_path, session_id="x"):
        pass
    assert (tmp_path / LOCK_FILENAME).exists()


def test_creates_missing_session_directory_owner_only(tmp_path: Path) -> None:
    session_dir = tmp_path / "new" / "sess"
    with session_lock(session_dir):
        assert (session_dir / LOCK_FILENAME).stat().st_size == 0
    assert stat.S_IMODE(session_dir.stat().st_mode) & 0o077 == 0


def test_existing_content_is_not_truncated(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILENAME).write_bytes(b"1234\n")
    with session_lock(tmp_path):
        pass
    assert (tmp_path / LOCK_FILENAME).read_bytes() == b"1234\n"


class _ReplacingFcntl:
    """Real flock, but a racing creator swaps the lock file right after we lock it."""

    LOCK_EX = lock_mod.fcntl.LOCK_EX if lock_mod.fcntl else 0
    LOCK_NB = lock_mod.fcntl.LOCK_NB if lock_mod.fcntl else 0

    def __init__(self, path: Path, swaps: int) -> None:
        self.path = path
        self.swaps = swaps
        self.calls = 0

    def flock(self, fd: int, op: int) -> None:
        real_fcntl.flock(fd, op)
        self.calls += 1
        if self.calls <= self.swaps:
            fresh = self.path.with_name("fresh.lock")
            fresh.write_bytes(b"")
            os.replace(fresh, self.path)


def test_relocks_when_the_file_was_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _ReplacingFcntl(tmp_path / LOCK_FILENAME, swaps=1)
    monkeypatch.setattr(lock_mod, "fcntl", fake)
    with session_lock(tmp_path) as held:
        assert fake.calls == 2
        # the inode we hold is the one at the path now
        assert os.fstat(held._fd).st_ino == (tmp_path / LOCK_FILENAME).stat().st_ino  # type: ignore[arg-type]  # a held lock has its descriptor


def test_gives_up_after_three_replacements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _ReplacingFcntl(tmp_path / LOCK_FILENAME, swaps=99)
    monkeypatch.setattr(lock_mod, "fcntl", fake)
    with pytest.raises(LockHeld):
        acquire_session_lock(tmp_path)
    assert fake.calls == 3


def test_find_holder_is_none_for_an_unlocked_file(tmp_path: Path) -> None:
    path = tmp_path / LOCK_FILENAME
    path.write_bytes(b"")
    assert find_holder(path) is None


def test_decode_segment() -> None:
    assert decode_segment("a~0020b") == "a b"
    assert decode_segment("~002E~002E") == ".."
    assert decode_segment("~D83D~DE00x") == "\U0001F600x"
    assert decode_segment("plain-id_1.2") == "plain-id_1.2"


def test_symlink_at_session_lock_is_refused_and_never_followed(tmp_path: Path) -> None:
    from dshlog.errors import ExitCode, Refused

    victim = tmp_path / "victim"
    session_dir = tmp_path / "s"
    session_dir.mkdir()
    (session_dir / LOCK_FILENAME).symlink_to(victim)
    with pytest.raises(Refused) as info:
        acquire_session_lock(session_dir)
    assert info.value.exit_code == ExitCode.CONFLICT
    assert "session.lock is a symbolic link" in info.value.message
    assert not victim.exists()
    victim.write_bytes(b"")
    with pytest.raises(Refused, match="symbolic link"):
        acquire_session_lock(session_dir)  # an existing target is not locked through the link either


def test_fifo_or_directory_at_session_lock_is_refused_without_hanging(tmp_path: Path) -> None:
    from dshlog.errors import DshlogError, Refused

    fifo_dir = tmp_path / "f"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / LOCK_FILENAME)
    with pytest.raises(Refused, match="not a regular file"):
        acquire_session_lock(fifo_dir)
    dir_dir = tmp_path / "d"
    (dir_dir / LOCK_FILENAME).mkdir(parents=True)
    with pytest.raises(DshlogError):
        acquire_session_lock(dir_dir)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files away needs root")
def test_created_directory_and_lock_file_go_to_the_sessions_owner(tmp_path: Path) -> None:
    session_dir = tmp_path / "new"
    with session_lock(session_dir, owner=(12345, 23456)):
        pass
    for p in (session_dir, session_dir / LOCK_FILENAME):
        assert (p.stat().st_uid, p.stat().st_gid) == (12345, 23456)
    existing = tmp_path / "old"
    existing.mkdir()
    (existing / LOCK_FILENAME).touch()
    with session_lock(existing, owner=(12345, 23456)):
        pass  # what was there is left as it is
    assert (existing / LOCK_FILENAME).stat().st_uid == 0 and existing.stat().st_uid == 0
