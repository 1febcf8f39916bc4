"""Safe publication: exclusive 0600 staging, link without overwrite, rollback, leftovers."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dshlog.write.atomic import (
    append_durably,
    cleanup_leftovers,
    is_leftover,
    migration_affixes,
    publish_no_overwrite,
    replace_atomically,
    stage_file,
    temp_affixes,
)
from dshlog.errors import IOFailure, Refused


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_staged_file_is_exclusive_0600_and_recognisable(tmp_path: Path) -> None:
    final = tmp_path / "session.v4.jsonl"
    staged = stage_file(tmp_path, *temp_affixes(final))
    try:
        assert stat.S_IMODE(staged.path.stat().st_mode) == 0o600
        assert staged.path.parent == tmp_path
        assert staged.path.name.startswith(".session.v4.jsonl.dshlog-") and is_leftover(staged.path.name)
    finally:
        staged.discard()
    migration = stage_file(tmp_path, *migration_affixes(compressed=True))
    assert migration.path.name.startswith("session.migration.")
    assert migration.path.name.endswith(".jsonl.zstd.tmp") and is_leftover(migration.path.name)
    migration.discard()
    assert listing(tmp_path) == []


def test_publish_no_overwrite(tmp_path: Path) -> None:
    final = tmp_path / "out.jsonl"
    with stage_file(tmp_path, *temp_affixes(final)) as staged:
        staged.write(b"hello\n")
        staged.write(b"world\n")
        publish_no_overwrite(staged, final)
    assert final.read_bytes() == b"hello\nworld\n"
    assert listing(tmp_path) == ["out.jsonl"]
    assert stat.S_IMODE(final.stat().st_mode) == 0o600


def test_publish_refuses_to_overwrite(tmp_path: Path) -> None:
    final = tmp_path / "out.jsonl"
    final.write_bytes(b"original")
    with stage_file(tmp_path, *temp_affixes(final)) as staged:
        staged.write(b"new")
        with pytest.raises(Refused) as info:
            publish_no_overwrite(staged, final)
    assert str(final) in info.value.message and info.value.path == str(final)
    assert final.read_bytes() == b"original"
    assert listing(tmp_path) == ["out.jsonl"]


def test_replace_atomically(tmp_path: Path) -> None:
    final = tmp_path / "log.jsonl"
    final.write_bytes(b"old")
    with stage_file(tmp_path, *temp_affixes(final)) as staged:
        staged.write(b"new")
        replace_atomically(staged, final)
    assert final.read_bytes() == b"new" and listing(tmp_path) == ["log.jsonl"]


def test_unpublished_or_failed_block_leaves_nothing(tmp_path: Path) -> None:
    final = tmp_path / "x"
    with stage_file(tmp_path, *temp_affixes(final)) as staged:
        staged.write(b"abandoned")
    assert listing(tmp_path) == []
    with pytest.raises(RuntimeError):
        with stage_file(tmp_path, *temp_affixes(final)) as staged:
            staged.write(b"data")
            raise RuntimeError("boom")
    assert listing(tmp_path) == []


def test_enospc_while_staging_leaves_no_final_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    final = tmp_path / "session.v4.jsonl"
    real_write = os.write
    calls = 0

    def full_disk(fd: int, data: bytes) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[:3]))  # a short write first
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(IOFailure) as info:
        with stage_file(tmp_path, *temp_affixes(final)) as staged:
            monkeypatch.setattr(os, "write", full_disk)
            try:
                staged.write(b"0123456789")
            finally:
                monkeypatch.undo()
            publish_no_overwrite(staged, final)
    assert "No space left on device" in info.value.message
    assert "\n" not in info.value.one_line()
    assert listing(tmp_path) == []


def test_append_durably_rolls_back_a_partial_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"header":1}\n')
    assert append_durably(path, b'{"a":1}\n') == len(b'{"header":1}\n{"a":1}\n')
    real_write = os.write
    calls = 0

    def full_disk(fd: int, data: bytes) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[:4]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full_disk)
    try:
        with pytest.raises(IOFailure, match="No space left"):
            append_durably(path, b'{"b":2}\n')
    finally:
        monkeypatch.undo()
    assert path.read_bytes() == b'{"header":1}\n{"a":1}\n'


def test_append_to_missing_file_is_io_failure(tmp_path: Path) -> None:
    with pytest.raises(IOFailure) as info:
        append_durably(tmp_path / "nope", b"x")
    assert info.value.path == str(tmp_path / "nope")


FSIZE_CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path
    from dshlog.write.atomic import append_durably, publish_no_overwrite, stage_file, temp_affixes
    from dshlog.errors import IOFailure
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    d = Path(sys.argv[1])
    out = {}
    final = d / "session.v4.jsonl"
    try:
        with stage_file(d, *temp_affixes(final)) as staged:
            staged.write(b"x" * 10000)
            publish_no_overwrite(staged, final)
        out["stage"] = "published"
    except IOFailure as e:
        out["stage"] = e.message
    log = d / "log.jsonl"
    try:
        append_durably(log, b"y" * 10000)
        out["append"] = "appended"
    except IOFailure as e:
        out["append"] = e.message
    print(json.dumps(out))
    """
)


def test_file_size_limit_in_subprocess(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_bytes(b"z" * 100)
    proc = subprocess.run([sys.executable, "-c", FSIZE_CHILD, str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stage"].startswith("cannot write the staged file: ")
    assert out["append"].startswith("cannot append: ")
    assert listing(tmp_path) == ["log.jsonl"]
    assert (tmp_path / "log.jsonl").read_bytes() == b"z" * 100


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory_is_io_failure(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(IOFailure) as info:
            stage_file(ro, ".x.dshlog-", ".tmp")
        assert "Permission denied" in info.value.message
    finally:
        ro.chmod(0o700)


def test_cleanup_leftovers_removes_only_recognised_temp_files(tmp_path: Path) -> None:
    ours = [
        ".session.v4.jsonl.dshlog-0123456789abcdef.tmp",
        "session.migration.0123456789abcdef.jsonl.tmp",
        "session.migration.fedcba9876543210.jsonl.zstd.tmp",
    ]
    others = [
        "session.v4.jsonl",
        "session.lock",
        "session.migration.xyz.jsonl.tmp",
        ".foo.dshlog-short.tmp",
        "session.migration.0123456789ABCDEF.jsonl.tmp",
        "notes.tmp",
    ]
    for name in ours + others:
        (tmp_path / name).write_bytes(b"")
    (tmp_path / ".dir.dshlog-0123456789abcdef.tmp").mkdir()  # directories are never removed
    removed = cleanup_leftovers(tmp_path)
    assert sorted(p.name for p in removed) == sorted(ours)
    assert listing(tmp_path) == sorted(others + [".dir.dshlog-0123456789abcdef.tmp"])
    assert cleanup_leftovers(tmp_path) == []


def test_cleanup_keeps_exempted(tmp_path: Path) -> None:
    staged = stage_file(tmp_path, ".a.dshlog-", ".tmp")
    try:
        assert cleanup_leftovers(tmp_path, keep=lambda p: p == staged.path) == []
        assert staged.path.exists()
    finally:
        staged.discard()


def test_missing_directory_is_io_failure(tmp_path: Path) -> None:
    with pytest.raises(IOFailure) as info:
        stage_file(tmp_path / "absent", ".x.dshlog-", ".tmp")
    assert info.value.message == "cannot create a temporary file: No such file or directory"


def test_migration_names_are_left_alone_without_the_session_lock(tmp_path: Path) -> None:
    """dsh stages a migration holding session.lock but without a mark on the file: only a holder of
    that lock may take such a name for a dead run's."""
    dsh = tmp_path / "session.migration.0123456789abcdef.jsonl.tmp"
    ours = tmp_path / ".out.jsonl.dshlog-0123456789abcdef.tmp"
    dsh.write_bytes(b"")
    ours.write_bytes(b"")
    assert cleanup_leftovers(tmp_path, session_locked=False) == [ours]
    assert dsh.exists()
    assert cleanup_leftovers(tmp_path) == [dsh]


def test_a_leftover_held_by_a_live_process_is_kept(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from dshlog.write.atomic import stage_file\n"
         "s = stage_file(Path(sys.argv[1]), '.x.dshlog-', '.tmp'); print(s.path, flush=True); sys.stdin.readline()",
         str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None
        live = Path(holder.stdout.readline().strip())
        assert live.exists() and cleanup_leftovers(tmp_path) == [] and live.exists()
    finally:
        holder.kill()
        holder.wait()
    assert cleanup_leftovers(tmp_path) == [live]  # the holder died: now it is a leftover


def test_a_leftover_that_cannot_be_removed_is_reported_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sticky directory or another owner's temp must not stop every later writer there."""
    stale = tmp_path / ".out.jsonl.dshlog-0123456789abcdef.tmp"
    stale.write_bytes(b"")

    def denied(path: object) -> None:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "unlink", denied)
    problems: list[str] = []
    assert cleanup_leftovers(tmp_path, problems=problems) == []
    assert len(problems) == 1 and "Operation not permitted" in problems[0] and str(stale) in problems[0]
    with pytest.raises(IOFailure):
        cleanup_leftovers(tmp_path)  # without a list to report to, it is an error as before


def test_a_staged_file_taken_for_a_leftover_is_not_used(tmp_path: Path) -> None:
    """Between the exclusive create and the flock a cleaner may remove the new name: the writer
    notices (the name no longer refers to its inode) instead of writing into an unlinked file."""
    import fcntl

    from dshlog.write import atomic

    path = tmp_path / ".x.dshlog-0123456789abcdef.tmp"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.unlink(path)
        assert atomic._mark_in_use(fd, path) is False
    finally:
        os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    other = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)  # a cleaner holding it while it unlinks
        assert atomic._mark_in_use(fd, path) is False
    finally:
        os.close(other)
        os.close(fd)
