"""`dshlog migrate`: publish session.v4.jsonl beside the old file, safely, as dsh's write open does."""

from __future__ import annotations

import hashlib
import json
import shutil
import time

import pytest
import zstandard

from conftest import CORPUS, FIXTURES, lock_held_elsewhere, requires_corpus, run_env
from dshlog.errors import ExitCode
from dshlog.ops import migrate as publish
from dshlog.read.session import open_log
from dshlog.read.source import Source
from dshlog.write import verify

TEXT_TURN = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def sha(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def session_dir(tmp_path, src=TEXT_TURN, name="session.jsonl"):
    d = tmp_path / "sess"
    d.mkdir()
    shutil.copyfile(src, d / name)
    return d


def test_text_turn_25_rows_become_17_events(tmp_path):
    d = session_dir(tmp_path)
    assert len((d / "session.jsonl").read_bytes().splitlines()) == 25
    before = sha(d / "session.jsonl")
    code, out, err = run_env("migrate", str(d), "--no-children")
    assert code == 0, err
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl", "session.lock", "session.v4.jsonl"]
    assert sha(d / "session.jsonl") == before
    assert (d / "session.lock").stat().st_size == 0
    with open_log(d) as s:
        assert s.version == 4 and s.info.container == "jsonl"
        evs = list(r.event for r in s.stored())
    assert len(evs) == 17
    assert [e["type"] for e in evs][6:12] == ["step/start", "system/message", "user/message", "user/message", "session/title", "system/message"]
    # what dsh publishes: a plain header line then compact event lines
    lines = (d / "session.v4.jsonl").read_bytes().splitlines()
    assert json.loads(lines[0]) == {"type": "session", "version": 4, "id": "5f0c2d1e-8a43-4b7e-9d61-2c9a7e3b1f00", "createdAt": 1783600629539, "cwd": "/home/ann/demo", "isSeeded": False, "delegationDepth": 0}
    # the successor keeps the source's owner, group and mode (dsh's own logs are 0600, so is theirs)
    src, succ = (d / "session.jsonl").stat(), (d / "session.v4.jsonl").stat()
    assert (succ.st_mode & 0o7777, succ.st_uid, succ.st_gid) == (src.st_mode & 0o7777, src.st_uid, src.st_gid)


def test_successor_of_a_0600_source_is_0600(tmp_path):
    d = session_dir(tmp_path)
    (d / "session.jsonl").chmod(0o600)
    code, _, err = run_env("migrate", str(d), "--no-children")
    assert code == 0, err
    assert ((d / "session.v4.jsonl").stat().st_mode & 0o777) == 0o600


def test_second_run_changes_nothing(tmp_path):
    d = session_dir(tmp_path)
    run_env("migrate", str(d), "--no-children")
    snap = {p.name: sha(p) for p in d.iterdir()}
    code, out, err = run_env("migrate", str(d), "--no-children")
    assert code == 0 and b"1 skipped" in err
    assert {p.name: sha(p) for p in d.iterdir()} == snap


def test_check_and_dry_run_write_nothing(tmp_path):
    d = session_dir(tmp_path)
    code, out, _ = run_env("migrate", str(d), "--check", "--no-children")
    assert code == ExitCode.PENDING and b"needs migration" in out
    code, out, _ = run_env("migrate", str(d), "--dry-run", "--no-children", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["sessions"][0]["status"] == "would-migrate" and doc["sessions"][0]["events"] == 17
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl"]
    run_env("migrate", str(d), "--no-children")
    code, out, _ = run_env("migrate", str(d), "--check")
    assert code == 0


def test_children_must_be_stated_outside_a_root(tmp_path):
    d = session_dir(tmp_path)
    code, out, err = run_env("migrate", str(d))
    assert code == ExitCode.USAGE and b"--no-children" in err
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl"]


def test_compressed_source_gets_compressed_successor(tmp_path):
    d = tmp_path / "sess"
    d.mkdir()
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    lines = TEXT_TURN.read_bytes().splitlines(keepends=True)
    (d / "session.jsonl.zstd").write_bytes(cctx.compress(lines[0]) + b"".join(cctx.compress(b"".join(lines[i : i + 5])) for i in range(1, len(lines), 5)))
    code, _, err = run_env("migrate", str(d), "--no-children")
    assert code == 0, err
    assert (d / "session.v4.jsonl.zstd").exists() and not (d / "session.v4.jsonl").exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copyfile(TEXT_TURN, plain / "session.jsonl")
    run_env("migrate", str(plain), "--no-children")
    # same plaintext in both encodings
    assert zstandard.ZstdDecompressor().stream_reader((d / "session.v4.jsonl.zstd").read_bytes(), read_across_frames=True).read() == (plain / "session.v4.jsonl").read_bytes()


def test_refused_while_lock_is_held(tmp_path):
    d = session_dir(tmp_path)
    with lock_held_elsewhere(d) as pid:
        code, out, err = run_env("migrate", str(d), "--no-children")
        assert code == ExitCode.CONFLICT
        assert f"pid {pid}".encode() in err
        assert not (d / "session.v4.jsonl").exists()
    code, _, _ = run_env("migrate", str(d), "--no-children")
    assert code == 0


def test_existing_successor_is_never_overwritten(tmp_path, monkeypatch):
    d = session_dir(tmp_path)
    from dshlog.write import atomic

    real = atomic.publish_no_overwrite

    def racing_publish(temp, final, **kw):
        final.write_bytes(b"someone else's file\n")  # appears between our check and our link
        return real(temp, final, **kw)

    monkeypatch.setattr(atomic, "publish_no_overwrite", racing_publish)
    out = publish.migrate_session(d / "session.jsonl", children="none")
    assert out.status == "failed" and out.exit_code == ExitCode.CONFLICT
    assert (d / "session.v4.jsonl").read_bytes() == b"someone else's file\n"
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]


def test_interrupted_before_publishing_leaves_no_successor(tmp_path, monkeypatch):
    d = session_dir(tmp_path)
    before = sha(d / "session.jsonl")

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(verify.ReadBack, "verify", boom)
    with pytest.raises(KeyboardInterrupt):
        publish.migrate_session(d / "session.jsonl", children="none")
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl", "session.lock"]
    assert sha(d / "session.jsonl") == before


def test_source_changed_during_migration_is_refused(tmp_path, monkeypatch):
    d = session_dir(tmp_path)
    real_verify = verify.ReadBack.verify

    def touch_then_verify(*a, **k):
        real_verify(*a, **k)
        time.sleep(0.01)
        with open(d / "session.jsonl", "ab") as fh:
            fh.write(b"")
        import os

        os.utime(d / "session.jsonl", ns=(time.time_ns(), time.time_ns()))

    monkeypatch.setattr(verify.ReadBack, "verify", touch_then_verify)
    out = publish.migrate_session(d / "session.jsonl", children="none")
    assert out.status == "failed" and "changed during migration" in out.error
    assert out.exit_code == ExitCode.CONFLICT and str(d / "session.jsonl") in out.error
    assert not (d / "session.v4.jsonl").exists()


def test_leftover_temp_is_cleaned_by_next_run(tmp_path):
    d = session_dir(tmp_path)
    (d / "session.migration.0123456789abcdef.jsonl.tmp").write_bytes(b"half")
    code, _, err = run_env("migrate", str(d), "--no-children")
    assert code == 0, err
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl", "session.lock", "session.v4.jsonl"]


def test_recursive_walk_with_failures_continues(tmp_path):
    root = tmp_path / "root"
    for i in range(3):
        # each copy its own id, in the directory named for it (dsh refuses a session stored under another id)
        dd = root / "--home-ann-demo--" / f"s{i}"
        dd.mkdir(parents=True)
        (dd / "session.jsonl").write_bytes(TEXT_TURN.read_bytes().replace(b'"id":"5f0c2d1e-8a43-4b7e-9d61-2c9a7e3b1f00"', b'"id":"s%d"' % i, 1))
    bad = root / "--home-ann-demo--" / "s1" / "session.jsonl"
    bad.write_bytes(bad.read_bytes().replace(b'"turn":1,"step":1,"index":0,"dt"', b'"turn":1,"step":1,"index":0,"dT"', 1))
    code, out, err = run_env("migrate", "--recursive", str(root), "--json")
    doc = json.loads(out)
    assert doc["summary"]["migrated"] == 2 and doc["summary"]["failed"] == 1
    assert code == ExitCode.CORRUPT
    assert not (root / "--home-ann-demo--" / "s1" / "session.v4.jsonl").exists()


@requires_corpus
def test_corpus_v1_text_turn_projection_migrates_to_17(tmp_path):
    src = CORPUS / "v1" / "knyazev741" / "snapshots__session__text-turn__session.v1.jsonl"
    d = session_dir(tmp_path, src, "session.v1.jsonl")
    code, out, err = run_env("migrate", str(d), "--no-children")
    assert code == 0, err
    with open_log(d) as s:
        assert sum(1 for _ in (r.event for r in s.stored())) == 17
        assert s.version == 4 and s.projection  # written in the same snapshot form as its source


def _tamper(monkeypatch, change):
    """Run ``change(path, compressed)`` on the staged successor just before it is read back."""
    real_verify = verify.ReadBack.verify

    def tamper_then_verify(self, path, **k):
        change(path, self.compressed)
        return real_verify(self, path, **k)

    monkeypatch.setattr(verify.ReadBack, "verify", tamper_then_verify)


def _rewrite_plaintext(path, compressed, edit):
    data = path.read_bytes()
    if compressed:
        data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    data = edit(data)
    if compressed:
        data = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    path.write_bytes(data)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "zstd"])
@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda b: b[:-1], "ends in a torn line"),
        (lambda b: b.replace(b'"seq":3,', b'"seq":4,', 1), "bytes differ from what was written"),  # same length
        (lambda b: b + b"\n", "bytes differ from what was written"),
    ],
    ids=["torn", "changed", "longer"],
)
def test_staged_successor_that_does_not_read_back_is_never_published(tmp_path, monkeypatch, compressed, edit, message):
    """The read-back compares the staged plaintext with what was written before any rule runs."""
    name = "session.jsonl.zstd" if compressed else "session.jsonl"
    d = tmp_path / "sess"
    d.mkdir()
    raw = TEXT_TURN.read_bytes()
    (d / name).write_bytes(zstandard.ZstdCompressor(write_checksum=True).compress(raw) if compressed else raw)
    before = sha(d / name)
    _tamper(monkeypatch, lambda path, comp: _rewrite_plaintext(path, comp, edit))
    if compressed and message == "ends in a torn line":
        message = "complete frame contains a torn JSONL record"  # a frame cannot end mid-record
    out = publish.migrate_session(d / name, children="none")
    assert out.status == "failed" and message in out.error, out.error
    assert sorted(p.name for p in d.iterdir()) == sorted([name, "session.lock"])
    assert sha(d / name) == before


@pytest.mark.fast_paths
def test_read_back_process_that_dies_publishes_nothing(tmp_path, monkeypatch):
    """Where the read-back runs in a forked process, losing that process is a refusal."""
    import os

    from dshlog import forked

    if not forked.can_fork(True):
        pytest.skip("no forked read-back on this machine (one CPU or no fork)")
    monkeypatch.setattr(verify, "FORK_MIN_BYTES", 0)
    monkeypatch.setattr(verify._ForkedReadBack, "_child", staticmethod(lambda *a: os._exit(3)))
    d = session_dir(tmp_path)
    before = sha(d / "session.jsonl")
    out = publish.migrate_session(Source(d / "session.jsonl", parallel=True), children="none")
    assert out.status == "failed" and "ended without a verdict" in out.error
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl", "session.lock"]
    assert sha(d / "session.jsonl") == before
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_small_sessions_are_read_back_in_process(tmp_path, monkeypatch):
    """A fork costs more than the read-back of a small successor; a batch over thousands of
    small sessions must not pay it for each."""

    def no_fork(*a, **k):
        raise AssertionError("forked a read-back for a small session")

    monkeypatch.setattr(verify, "_ForkedReadBack", no_fork)
    d = session_dir(tmp_path)
    assert (d / "session.jsonl").stat().st_size < verify.FORK_MIN_BYTES
    out = publish.migrate_session(Source(d / "session.jsonl", parallel=True), children="none")  # forking allowed, not worth it
    assert out.status == "migrated", out.error


def test_read_back_in_process_when_fork_fails(tmp_path, monkeypatch):
    import errno
    import os

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(verify, "FORK_MIN_BYTES", 0)
    monkeypatch.setattr(os, "fork", no_fork)
    d = session_dir(tmp_path)
    out = publish.migrate_session(Source(d / "session.jsonl", parallel=True), children="none")
    assert out.status == "migrated", out.error
    assert out.events == 17
