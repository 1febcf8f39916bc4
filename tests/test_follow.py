"""``dshlog tail`` and the follower, against files being written by another process."""

from __future__ import annotations

import signal
import os
import subprocess
import sys
import textwrap
import time

import pytest
import zstandard

from conftest import FIXTURES, dshlog_argv, run_env
from dshlog.errors import CorruptLog, ExitCode, Refused
from dshlog.read.follow import Follower, follow

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
LOOP_LINES = LOOP.read_bytes().splitlines()  # header + 41 events


def frame(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


# ----------------------------------------------------------------------------- Follower, step by step


def test_plain_torn_line_waits_for_its_newline(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(LOOP_LINES[0] + b"\n" + LOOP_LINES[1][:20])
    f = Follower(p)
    assert f.poll() == [LOOP_LINES[0]]
    assert f.poll() == []
    with open(p, "ab") as fh:
        fh.write(LOOP_LINES[1][20:])
    assert f.poll() == []  # complete bytes, but no newline yet
    with open(p, "ab") as fh:
        fh.write(b"\n" + LOOP_LINES[2] + b"\n")
    assert f.poll() == [LOOP_LINES[1], LOOP_LINES[2]]
    assert f.offset == p.stat().st_size


def test_plain_rolled_back_tail_is_reread(tmp_path):
    """dsh truncates a failed write away and writes again: the torn bytes are never shown."""
    p = tmp_path / "s.jsonl"
    p.write_bytes(LOOP_LINES[0] + b"\n" + b'{"garbage')
    f = Follower(p)
    assert f.poll() == [LOOP_LINES[0]]
    with open(p, "r+b") as fh:
        fh.truncate(len(LOOP_LINES[0]) + 1)
        fh.seek(0, 2)
        fh.write(LOOP_LINES[1] + b"\n")
    assert f.poll() == [LOOP_LINES[1]]


def test_plain_shrinking_below_committed_data_is_refused(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\n".join(LOOP_LINES[:3]) + b"\n")
    f = Follower(p)
    assert len(f.poll()) == 3
    with open(p, "r+b") as fh:
        fh.truncate(5)
    with pytest.raises(Refused):
        f.poll()


def test_zstd_torn_frame_is_incomplete_until_the_rest_arrives(tmp_path):
    p = tmp_path / "session.v4.jsonl.zstd"
    body = frame(b"\n".join(LOOP_LINES[1:4]) + b"\n")
    p.write_bytes(frame(LOOP_LINES[0] + b"\n") + body[:7])
    f = Follower(p)
    assert f.poll() == [LOOP_LINES[0]]
    for cut in (11, len(body) - 4, len(body) - 1):  # in a block, before the checksum, one byte short
        with open(p, "r+b") as fh:
            fh.truncate(f.offset)
            fh.seek(0, 2)
            fh.write(body[:cut])
        assert f.poll() == []
    with open(p, "ab") as fh:
        fh.write(body[len(body) - 1 :])
    assert f.poll() == LOOP_LINES[1:4]
    assert f.frames_read == 2


def test_zstd_corrupt_complete_frame_is_an_error(tmp_path):
    p = tmp_path / "s.jsonl.zstd"
    bad = bytearray(frame(LOOP_LINES[1] + b"\n"))
    bad[-1] ^= 0xFF  # checksum
    p.write_bytes(frame(LOOP_LINES[0] + b"\n") + bytes(bad))
    f = Follower(p)
    with pytest.raises(CorruptLog, match="frame at byte 126 failed validation"):  # dsh's words for frame 1
        f.poll()


def test_zstd_frame_without_final_newline_is_corrupt(tmp_path):
    p = tmp_path / "s.jsonl.zstd"
    p.write_bytes(frame(LOOP_LINES[0] + b"\n") + frame(LOOP_LINES[1]))
    with pytest.raises(CorruptLog, match="torn JSONL record"):
        Follower(p).poll()


def test_follow_stops_on_idle_timeout_and_stop(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\n".join(LOOP_LINES[:2]) + b"\n")
    t0 = time.monotonic()
    assert list(follow(p, poll_interval=0.01, idle_timeout=0.1)) == LOOP_LINES[:2]
    assert time.monotonic() - t0 < 5
    assert list(follow(p, poll_interval=0.01, stop=lambda: True)) == LOOP_LINES[:2]
    assert list(follow(p, poll_interval=0.01, timeout=0.05)) == LOOP_LINES[:2]


# ----------------------------------------------------------------------------- a real writer process

WRITER = textwrap.dedent(
    """
    import sys, time, zstandard
    path, mode = sys.argv[1], sys.argv[2]
    lines = open(sys.argv[3], "rb").read().splitlines(keepends=True)
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    pause = 0.15

    def put(b):
        with open(path, "ab") as fh:
            fh.write(b)
            fh.flush()
            import os; os.fsync(fh.fileno())

    if mode == "plain":
        put(lines[0])
        for ln in lines[1:5]:
            time.sleep(pause); put(ln)
        time.sleep(pause); put(lines[5][:17])          # a line written in two halves
        time.sleep(pause * 2); put(lines[5][17:])
        time.sleep(pause); put(b"".join(lines[6:]))    # the rest in one batch
    else:
        put(cctx.compress(lines[0]))
        batches = [lines[1:3], lines[3:4], lines[4:9]]
        for b in batches:
            time.sleep(pause); put(cctx.compress(b"".join(b)))
        fr = cctx.compress(b"".join(lines[9:20]))
        time.sleep(pause); put(fr[: len(fr) // 2])      # a frame written in two halves
        time.sleep(pause * 2); put(fr[len(fr) // 2 :])
        time.sleep(pause); put(cctx.compress(b"".join(lines[20:])))
    """
)


@pytest.mark.parametrize("mode", ["plain", "zstd"])
def test_follow_a_live_writer(tmp_path, mode):
    p = tmp_path / ("session.v4.jsonl" + (".zstd" if mode == "zstd" else ""))
    p.touch()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(p), mode, str(LOOP)])
    got: list[bytes] = []
    try:
        for line in follow(p, poll_interval=0.02, timeout=30, stop=lambda: writer.poll() is not None and len(got) >= len(LOOP_LINES)):
            got.append(line)
            if len(got) >= len(LOOP_LINES):
                break
    finally:
        writer.wait(timeout=30)
    assert writer.returncode == 0
    assert got == LOOP_LINES


# ----------------------------------------------------------------------------- the command


def test_tail_prints_the_last_events_like_events():
    code, out, _ = run_env("events", str(LOOP))
    every = out.splitlines()
    code, out, _ = run_env("tail", str(LOOP))
    assert code == 0 and out.splitlines() == every[-10:]
    code, out, _ = run_env("tail", str(LOOP), "-n", "3", "--json")
    assert out.splitlines() == LOOP_LINES[-3:]  # exact stored bytes
    code, out, _ = run_env("tail", str(LOOP), "-n", "0")
    assert code == 0 and out == b""
    code, out, _ = run_env("tail", str(FIXTURES / "v4" / "loop-zstd"), "-n", "2")
    assert out.splitlines() == every[-2:]


def test_tail_f_refuses_stdin():
    code, _, err = run_env("tail", "-f", "-")
    assert code == ExitCode.USAGE and b"standard input" in err


@pytest.mark.parametrize("zstd", [False, True])
def test_tail_f_command_follows_and_exits_cleanly_on_ctrl_c(tmp_path, zstd):
    p = tmp_path / ("session.v4.jsonl" + (".zstd" if zstd else ""))
    head = b"".join(ln + b"\n" for ln in LOOP_LINES[:11])  # header + 10 events
    p.write_bytes(frame(head) if zstd else head)
    proc = subprocess.Popen(
        dshlog_argv("tail", "-f", "-n", "2", "--interval", "0.02", str(p)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = [proc.stdout.readline() for _ in range(2)]
        assert [ln.split(b" ")[0] for ln in first] == [b"8", b"9"]
        more = b"".join(ln + b"\n" for ln in LOOP_LINES[11:13])
        with open(p, "ab") as fh:
            if zstd:
                fh.write(frame(more))
            else:
                fh.write(more[:30])
                fh.flush()
                time.sleep(0.2)
                fh.write(more[30:])
        nxt = [proc.stdout.readline() for _ in range(2)]
        assert nxt[0].startswith(b"10 tool/result") and nxt[1].startswith(b"11 step/end")
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read() if proc.stderr else b""
    assert rc == 130, err  # interrupted, as the README's exit-code table says
    assert b"Traceback" not in err


def test_tail_f_says_when_the_log_is_replaced_under_it_and_follows_the_new_file(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(ln + b"\n" for ln in LOOP_LINES[:11]))  # header + 10 events
    proc = subprocess.Popen(
        dshlog_argv("tail", "-f", "-n", "1", "--interval", "0.02", str(p)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith(b"9 ")
        new = tmp_path / "new"
        new.write_bytes(b"".join(ln + b"\n" for ln in LOOP_LINES[:13]))  # the same log, two events longer
        os.replace(new, p)  # a new inode under the name, as repair --write leaves it
        assert proc.stdout.readline().startswith(b"10 tool/result")
        note = proc.stderr.readline()
        assert b"the file was replaced while being followed" in note and str(p).encode() in note, note
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 130
