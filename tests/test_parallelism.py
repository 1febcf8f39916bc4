"""Forked helper processes are a policy the caller passes.

The library reads, checks and publishes in the calling process unless asked
otherwise (a script, a thread pool or a server embedding dshlog must never see a
child it did not start); the command line passes its environment's ``parallel``
flag, and then a large zstd body is decoded, and a large output read back, in a
forked helper as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import zstandard

import dshlog
from dshlog import forked
from dshlog.read import container
from dshlog.write import verify

from conftest import run_env

CRASH = Path(__file__).resolve().parents[1] / "fixtures" / "v4" / "crash" / "session.v4.jsonl"


def _zstd_copy(tmp_path: Path) -> Path:
    """The crash fixture (an open tail) as dsh writes a compressed log: one frame per line."""
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    lines = CRASH.read_bytes().splitlines(keepends=True)
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(b"".join(cctx.compress(line) for line in lines))
    return p


@pytest.fixture
def small_is_worth_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixtures are small: let every size pay for a helper, so only the policy decides."""
    monkeypatch.setattr(container, "WORKER_MIN_BYTES", 0)
    monkeypatch.setattr(verify, "FORK_MIN_BYTES", 0)


def test_the_library_never_forks_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_is_worth_it: None) -> None:
    def no_fork() -> int:
        raise AssertionError("the library forked a helper process it was not asked for")

    p = _zstd_copy(tmp_path)
    monkeypatch.setattr(os, "fork", no_fork)
    with dshlog.open_session(p) as log:
        assert sum(1 for _ in log.stored()) == 10
    assert dshlog.validate(p).exit_code == dshlog.ExitCode.OK
    out = dshlog.repair_copy(p, tmp_path / "repaired.v4.jsonl.zstd")  # a publication, read back before it is named
    assert out.written and dshlog.validate(out.written).exit_code == dshlog.ExitCode.OK
    child = dshlog.fork_session(p, tmp_path / "child.v4.jsonl.zstd", at=4)
    assert child.events > 4


def _needs_fork() -> None:
    if not forked.can_fork(True):
        pytest.skip("no forked helper on this machine (one CPU, no fork, or other threads)")


@pytest.mark.fast_paths
def test_the_command_line_hands_the_work_to_forked_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           small_is_worth_it: None) -> None:
    """``Env.parallel`` reaches the zstd decoder and the read-back of a publication."""
    _needs_fork()
    decoders: list[str] = []
    readers: list[str] = []
    real_decoder, real_reader = container._decode_in_worker, verify._ForkedReadBack.__init__

    def decoder(items: Iterator[Any], info: container.SourceInfo, fh: IO[bytes]) -> Iterator[Any]:
        decoders.append(info.path)
        return real_decoder(items, info, fh)

    def reader(self: verify._ForkedReadBack, path: str, *args: Any) -> None:
        readers.append(path)
        real_reader(self, path, *args)

    monkeypatch.setattr(container, "_decode_in_worker", decoder)
    monkeypatch.setattr(verify._ForkedReadBack, "__init__", reader)
    p = _zstd_copy(tmp_path)
    out = tmp_path / "repaired.v4.jsonl.zstd"
    code, _stdout, stderr = run_env("repair", str(p), "-o", str(out), parallel=True)
    assert code == 0, stderr
    assert str(p) in decoders  # the source's body, decoded by a helper
    assert readers and readers[0].startswith(str(tmp_path))  # the staged copy, read back by a helper
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every helper was reaped

    decoders.clear()
    readers.clear()
    code, same, _ = run_env("events", str(out), "--json", parallel=True)
    assert code == 0 and decoders == [str(out)]
    code, serial, _ = run_env("events", str(out), "--json", parallel=False)
    assert code == 0 and decoders == [str(out)] and same == serial  # off: nothing forked, the same bytes


def test_a_threaded_caller_keeps_the_serial_path() -> None:
    """Forking beside other threads could leave a child holding a lock nobody releases."""
    import threading

    assert forked.can_fork(False) is False
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert forked.can_fork(True) is False
    finally:
        stop.set()
        t.join()


@pytest.mark.fast_paths
def test_a_look_at_the_beginning_does_not_move_the_forked_decoder(tmp_path: Path) -> None:
    """The decoder child shares the file's position with the reader: sampling the start of the file
    (``snapshot``) after the body started must not move it (it did, and a large migrate of a v0
    .zstd failed with a 'corrupt' frame in the middle of an intact file)."""
    _needs_fork()
    import base64

    from conftest import ev, jsonl, v4_header

    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(jsonl(v4_header()))]
    events = [ev(i, "plan/mode", {"active": True, "note": base64.b64encode(os.urandom(3000)).decode()}) for i in range(1500)]
    for i in range(0, len(events), 5):
        frames.append(cctx.compress(jsonl(*events[i:i + 5])))
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(b"".join(frames))
    assert p.stat().st_size > 4 * container.WORKER_MIN_BYTES // 2  # several reads of the child's, not one

    def read(parallel: bool) -> list[bytes | None]:
        with dshlog.open_session(dshlog.Source(p, parallel=parallel), strict=False) as log:
            assert log.projection is False  # peeks at the first row: the body (and the decoder) starts
            assert log.snapshot is False  # samples the beginning of the file
            return [r.raw for r in log.stored()]

    assert read(True) == read(False)
    assert len(read(False)) == 1500
