"""Containers and framing: plain JSONL, zstd frames, JSON arrays, wrapped streams, directories, stdin."""

from __future__ import annotations

import subprocess
import sys

import pytest
import zstandard

from conftest import FIXTURES, GOLDEN, ev, jsonl, v4_header
from dshlog.errors import CorruptLog, IOFailure, UnsupportedVersion, UsageError
from dshlog.read.session import open_log
from dshlog.read.source import Source
from dshlog.protocol.layout import parse_generation
from dshlog.read.container import select_generation

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
LOOP_ZSTD = FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd"


def records(path, **kw):
    with open_log(path, **kw) as s:
        return [(r.event, r.raw) for r in s.stored()], s


def test_plain_jsonl_keeps_original_bytes():
    lines = LOOP.read_bytes().split(b"\n")[1:-1]
    recs, s = records(LOOP)
    assert [raw for _, raw in recs] == lines
    assert s.version == 4 and s.header["id"] == "loop-0001"
    assert [e["seq"] for e, _ in recs] == list(range(41))


def test_zstd_multiframe_equals_plain():
    plain, _ = records(LOOP)
    packed, s = records(LOOP_ZSTD)
    assert packed == plain
    assert s.info.container == "jsonl.zstd" and s.info.frames > 5


def test_container_detected_by_content_not_name(tmp_path):
    odd = tmp_path / "log.txt"
    odd.write_bytes(LOOP_ZSTD.read_bytes())
    recs, s = records(odd)
    assert s.info.container == "jsonl.zstd" and len(recs) == 41


def test_json_array_streams_golden():
    recs, s = records(GOLDEN / "loop-events.json")
    assert s.info.container == "json-array" and s.header is None and s.version == 4
    assert [e["seq"] for e, _ in recs] == list(range(41))


def test_torn_last_line_is_recovered_and_reported(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(LOOP.read_bytes() + b'{"type":"turn/st')
    recs, s = records(p)
    assert len(recs) == 41
    assert s.info.torn.length == len(b'{"type":"turn/st')
    assert "torn-tail" in s.notes.counts


def test_torn_last_frame_recovers_complete_lines(tmp_path):
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    body = jsonl(*[ev(i, "plan/mode", {"active": True}) for i in range(50)])
    cut = body.rfind(b"\n", 0, 400) + 1
    data = cctx.compress(jsonl(v4_header())) + cctx.compress(body[:cut]) + cctx.compress(body[cut:])
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(data[:-20])  # cut inside the last frame
    recs, s = records(p)
    assert s.info.torn is not None and s.info.torn.frame == 2
    assert 0 < len(recs) < 50
    assert [e["seq"] for e, _ in recs] == list(range(len(recs)))


def test_damaged_complete_frame_is_corruption(tmp_path):
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    body = cctx.compress(jsonl(*[ev(i, "plan/mode", {"active": True}) for i in range(50)]))
    data = bytearray(cctx.compress(jsonl(v4_header())) + body)
    data[-2] ^= 0xFF  # checksum of the complete last frame
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(bytes(data))
    with pytest.raises(CorruptLog, match="frame at byte 106 failed validation") as exc:  # dsh's words
        records(p)
    assert exc.value.loc is not None and exc.value.loc.frame == 1  # dshlog's location around them


def test_record_split_across_complete_frames_is_corruption(tmp_path):
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    body = jsonl(ev(0, "plan/mode", {"active": True}), ev(1, "plan/mode", {"active": False}))
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(cctx.compress(jsonl(v4_header())) + cctx.compress(body[:30]) + cctx.compress(body[30:]))
    with pytest.raises(CorruptLog, match="torn JSONL record"):
        records(p)


def test_bad_frame_magic(tmp_path):
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(cctx.compress(jsonl(v4_header())) + b"GARBAGEGARBAGE")
    with pytest.raises(CorruptLog, match="invalid frame magic at byte"):
        records(p)


def test_session_directory_picks_highest_generation(tmp_path):
    d = tmp_path / "sess"
    d.mkdir()
    (d / "session.jsonl").write_bytes(jsonl({"type": "session", "version": 0, "id": "x", "createdAt": 1, "delegationDepth": 0}))
    (d / "session.v4.jsonl").write_bytes(jsonl(v4_header(id="x")))
    (d / "session.v01.jsonl").write_bytes(b"not a generation\n")
    (d / "session.migration.0123456789abcdef.jsonl.tmp").write_bytes(b"temp\n")
    assert select_generation(d).name == "session.v4.jsonl"
    _, s = records(d)
    assert s.version == 4


def test_mixed_directory_is_refused(tmp_path):
    d = tmp_path / "sess"
    d.mkdir()
    (d / "session.v4.jsonl").write_bytes(jsonl(v4_header()))
    (d / "session.v4.jsonl.zstd").write_bytes(zstandard.ZstdCompressor().compress(jsonl(v4_header())))
    with pytest.raises(UnsupportedVersion, match="mixes plain"):
        select_generation(d)


def test_canonical_names():
    assert parse_generation("session.jsonl").version == 0
    assert parse_generation("session.v4.jsonl.zstd").version == 4
    for bad in ("session.v0.jsonl", "session.v01.jsonl", "Session.jsonl", "session.v4.jsonl.tmp", "session.1.jsonl"):
        assert parse_generation(bad) is None


def test_stdin(tmp_path):
    code = "import sys; from dshlog.read.session import open_log; s=open_log('-'); print(sum(1 for _ in s.stored()), s.version)"
    out = subprocess.run([sys.executable, "-c", code], input=LOOP_ZSTD.read_bytes(), capture_output=True, check=True)
    assert out.stdout.split() == [b"41", b"4"]
    out = subprocess.run([sys.executable, "-c", code], input=(GOLDEN / "loop-events.json").read_bytes(), capture_output=True, check=True)
    assert out.stdout.split() == [b"41", b"4"]


def test_missing_file_and_directory_errors(tmp_path):
    with pytest.raises(IOFailure, match="no such file"):
        open_log(tmp_path / "nope.jsonl")
    with pytest.raises(UsageError, match="no session generation"):
        open_log(tmp_path)


def test_stream_json_and_jsonrpc_unwrapped(tmp_path):
    events = [ev(i, "plan/mode", {"active": True}) for i in range(3)]
    sj = tmp_path / "stream.jsonl"
    sj.write_bytes(jsonl(*({"type": "session_event", "sessionId": "a", "event": e} for e in events), {"type": "result", "ok": True}))
    recs, s = records(sj)
    assert s.info.container == "stream-json" and [e for e, _ in recs] == events
    rpc = tmp_path / "notif.jsonl"
    rows = [{"method": "session.status", "params": {"sessionId": "a", "status": "running"}}]
    rows += [{"method": "session.event", "params": {"sessionId": "a", "event": e}} for e in events]
    rpc.write_bytes(jsonl(*rows))
    recs, s = records(rpc)
    assert s.info.container == "jsonrpc" and [e for e, _ in recs] == events


def test_interleaved_child_stream_is_split(tmp_path):
    parent = [ev(i, "plan/mode", {"active": True}) for i in range(4)]
    child = [ev(i, "todo/write", {"todos": []}) for i in range(3)]
    order = [parent[0], parent[1], child[0], child[1], parent[2], child[2], parent[3]]
    p = tmp_path / "notif.jsonl"
    p.write_bytes(jsonl(*({"method": "session.event", "params": {"sessionId": "{{sessionId}}", "event": e}} for e in order)))
    recs, s = records(p)
    assert [e for e, _ in recs] == parent
    recs, s = records(Source(p, select="{{sessionId}}#2"))
    assert [e for e, _ in recs] == child


# --------------------------------------------------------------------------- the forked zstd decoder


def _many_frames(n: int = 400, per: int = 5) -> tuple[bytes, list[int]]:
    """A header frame plus one checksummed frame per ``per`` events; also each frame's start."""
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    frames = [cctx.compress(jsonl(v4_header()))]
    events = [ev(i, "plan/mode", {"active": bool(i % 2), "note": "x" * (i % 50)}) for i in range(n)]
    for i in range(0, n, per):
        frames.append(cctx.compress(jsonl(*events[i : i + per])))
    starts = [sum(len(f) for f in frames[:k]) for k in range(len(frames))]
    return b"".join(frames), starts


def _decode(path, parallel: bool):
    from dshlog.read.container import SourceInfo, iter_zstd_lines

    info = SourceInfo(str(path), "jsonl.zstd")
    got: list = []
    error = None
    with open(path, "rb") as fh:
        try:
            for r in iter_zstd_lines(fh, info, parallel=parallel, min_bytes=0):  # small: forked all the same
                got.append((r.raw, r.line, r.offset, r.frame))
        except Exception as exc:  # noqa: BLE001 - whatever it is, compared below
            error = (type(exc), str(exc), exc.where() if hasattr(exc, "where") else None)
    torn = info.torn and (info.torn.offset, info.torn.length, info.torn.frame, info.torn.frame_offset, info.torn.data)
    return got, error, info.frames, info.decoded_bytes, torn


def _damage(kind: str, data: bytes, starts: list[int]) -> bytes:
    b = bytearray(data)
    mid = starts[len(starts) // 2]
    if kind == "checksum":
        b[starts[len(starts) // 2 + 1] - 2] ^= 0xFF  # last checksum byte of the middle frame
    elif kind == "magic":
        b[mid] ^= 0xFF
    elif kind == "torn-last-frame":
        del b[len(b) - 20 :]
    elif kind == "split-record":
        cctx = zstandard.ZstdCompressor(write_checksum=True)
        tail = jsonl(ev(10_000, "plan/mode", {"active": True}))
        return bytes(b) + cctx.compress(tail[:9]) + cctx.compress(tail[9:])
    elif kind == "torn-magic":
        b += b"\x28\xb5\x2f"  # three bytes of a next frame's magic: a torn last frame
    return bytes(b)


@pytest.mark.parametrize("kind", ["intact", "checksum", "magic", "torn-last-frame", "split-record", "torn-magic"])
def test_forked_decoder_agrees_with_the_serial_walk(tmp_path, kind):
    """Same records, locations, error (type, text, where), frame count and torn tail either way."""
    data, starts = _many_frames()
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(_damage(kind, data, starts))
    serial, forked = _decode(p, False), _decode(p, True)
    assert serial == forked
    assert (serial[1] is None) == (kind in ("intact", "torn-last-frame", "torn-magic"))
    assert (serial[4] is not None) == kind.startswith("torn")
    assert len(serial[0]) > 100


def test_forked_decoder_stops_and_is_reaped_when_the_reader_stops(tmp_path):
    import os

    from dshlog.read.container import SourceInfo, iter_zstd_lines

    data, _ = _many_frames(n=20_000, per=5)
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(data)
    with open(p, "rb") as fh:
        lines = iter_zstd_lines(fh, SourceInfo(str(p), "jsonl.zstd"), parallel=True, min_bytes=0)
        assert next(lines).line == 1
        assert next(lines).line == 2  # the worker runs now, blocked on a full pipe
        lines.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind, not even a zombie


def test_forked_decoder_does_not_keep_the_parents_lock(tmp_path):
    """The worker closes every inherited descriptor but its input and pipe: a lock the
    reader holds is free as soon as the reader releases it, mid-decode."""
    from dshlog.write.lock import session_lock
    from dshlog.read.container import SourceInfo, iter_zstd_lines

    data, _ = _many_frames(n=20_000, per=5)
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(data)
    probe = (
        "import sys; from pathlib import Path; from dshlog.write.lock import session_lock\n"
        "with session_lock(Path(sys.argv[1])):\n    print('acquired')"
    )
    with open(p, "rb") as fh:
        with session_lock(tmp_path):
            lines = iter_zstd_lines(fh, SourceInfo(str(p), "jsonl.zstd"), parallel=True, min_bytes=0)
            next(lines)
            next(lines)  # worker forked while the lock is held
        other = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert other.stdout.strip() == "acquired", other.stderr
        assert sum(1 for _ in lines) > 10_000  # and the decode goes on


@pytest.mark.parametrize("projection", [False, True], ids=["rows", "projection"])
@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("peeks", [0, 1, 2, 3])
def test_peeking_at_the_first_row_loses_nothing(tmp_path, peeks, projection, n):
    """is_projection_hint takes the first body row out and puts it back; repeated peeks give
    the same answer, and the plain-file fast path that reads the rest straight from the file
    sees every row."""
    p = tmp_path / "session.v4.jsonl"
    rows = [ev(i, "plan/mode", {"active": bool(i % 2)}) for i in range(n)]
    if projection:
        rows = [{k: v for k, v in r.items() if k not in ("seq", "time")} for r in rows]
    p.write_bytes(jsonl(v4_header(), *rows) + b'{"type":"plan/m')
    with open_log(p) as s:
        for _ in range(peeks):
            assert s.projection is projection
        got = [(r.event, r.raw, r.loc.line, r.loc.offset) for r in s.stored()]
        torn = s.info.torn
    with open_log(p) as s:
        expected = [(r.event, r.raw, r.loc.line, r.loc.offset) for r in s.stored()]
    assert got == expected and [e["seq"] for e, *_ in got] == list(range(n))
    assert torn is not None and torn.length == len(b'{"type":"plan/m')


def test_forked_decoder_falls_back_when_fork_fails(tmp_path, monkeypatch):
    """Process limits (EAGAIN) must not turn into an error: the body is decoded in process."""
    import errno
    import os

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    data, _ = _many_frames()
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(data)
    serial = _decode(p, False)
    monkeypatch.setattr(os, "fork", no_fork)
    assert _decode(p, True) == serial
