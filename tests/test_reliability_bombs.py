"""Resource bombs and path safety.

Bombs: a huge single line, a million-element array, JSON nested 100 000 deep, as
JSONL rows and as JSON documents.  Each command must end (a timeout catches
hangs) with a result or a clean error, and its peak memory — the child's
``ru_maxrss`` from ``wait4`` — must stay bounded: a small multiple of the longest
line, never a function of nesting depth.

Paths: a session id or cwd from inside a log (``../../x``, ``/etc/passwd``) never
becomes a path; ``migrate`` writes only in the session directory and ``fork -o``
only where it was told.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from collections.abc import Iterable, Iterator

import orjson
import pytest

from conftest import dshlog_argv
from test_reliability_support import TRACEBACK, record_figures, run, snapshot

HEADER = b'{"type":"session","version":4,"id":"bomb","createdAt":1,"cwd":"/p","isSeeded":false,"delegationDepth":0}\n'
ALLOWED = {0, 2, 3, 4, 10}
MB = 1 << 20


def _write(path: Path, chunks: Iterable[bytes]) -> Path:
    """Write lazily: a GB-sized input never exists in memory."""
    with open(path, "wb") as fh:
        for c in chunks:
            fh.write(c)
    return path


def _repeat(piece: bytes, total: int) -> Iterator[bytes]:
    block = piece * max(1, (4 * MB) // len(piece))
    left = total
    while left > 0:
        chunk = block[: min(left, len(block))]
        left -= len(chunk)
        yield chunk


# A fresh interpreter forks dshlog and reports RUSAGE_CHILDREN: a child forked straight from
# the (large) test process would inherit its RSS high-water mark, which survives exec.
_WRAPPER = r"""
import resource, subprocess, sys
with open(sys.argv[1], "wb") as err:
    rc = subprocess.run(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=err).returncode
with open(sys.argv[2], "w") as fh:
    fh.write(f"{rc} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""


def measure(argv: list[str], timeout: float) -> tuple[int, int, bytes]:
    """Run ``dshlog argv``; return (exit code, peak RSS in bytes, stderr). Fails on a hang."""
    import signal
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as t:
        err_path, res_path = Path(t) / "err", Path(t) / "res"
        p = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(err_path), str(res_path), *dshlog_argv(*argv, script=True)],
                             start_new_session=True)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            pytest.fail(f"dshlog {' '.join(argv)} did not finish within {timeout}s")
        code, rss = (int(x) for x in res_path.read_text().split())
        return code, rss * 1024, err_path.read_bytes()


def _check(path: Path, commands: list[list[str]], limit: int, timeout: float = 120) -> int:
    worst = 0
    for cmd in commands:
        code, rss, err = measure([*cmd, str(path)], timeout)
        assert code in ALLOWED, (cmd, code, err[-500:])
        assert TRACEBACK not in err and b"internal error" not in err, err[-500:]
        assert rss < limit, f"{cmd}: peak RSS {rss / MB:.0f} MiB exceeds {limit / MB:.0f} MiB"
        worst = max(worst, rss)
    return worst


READERS = [["info"], ["events", "--json"], ["validate"], ["surface"]]


def _huge_line(tmp_path: Path, size: int) -> tuple[Path, Path]:
    s = _write(tmp_path / "string.v4.jsonl", [HEADER, b'{"type":"user/message","seq":0,"time":1,"data":{"x":"',
                                               *_repeat(b"a", size), b'"}}\n'])
    g = _write(tmp_path / "garbage.v4.jsonl", [HEADER, *_repeat(b"z{[", size)])  # no newline: one torn tail
    return s, g


def test_huge_single_line_bounded_memory(tmp_path: Path) -> None:
    """A 50 MB line: memory grows with the line (a few copies of it), nothing else."""
    s, g = _huge_line(tmp_path, 50 * MB)
    _check(s, READERS, 64 * MB + 6 * 50 * MB)
    _check(g, READERS, 64 * MB + 4 * 50 * MB)


@pytest.mark.stress
def test_one_gigabyte_line(tmp_path: Path) -> None:
    s, g = _huge_line(tmp_path, 1024 * MB)
    worst = _check(s, [["info"], ["events", "--json"]], 64 * MB + 6 * 1024 * MB, timeout=600)
    worst = max(worst, _check(g, [["info"], ["validate"]], 64 * MB + 4 * 1024 * MB, timeout=600))
    record_figures("1 GB single line", trials=4, faults=0, failures=0, peakRssMiB=worst // MB)


def _deep(n: int) -> bytes:
    return b"[" * n + b"0" + b"]" * n


def test_deep_nesting_bounded(tmp_path: Path) -> None:
    """100 000 levels: a JSONL row, a JSON array document, a result.json and a behavior.json.

    The documents used to need tens of GB (ijson keeps a prefix string per level).
    """
    n = 100_000
    files = [
        _write(tmp_path / "row.v4.jsonl", [HEADER, b'{"type":"x","seq":0,"time":1,"data":', _deep(n), b"}\n"]),
        _write(tmp_path / "array.json", [_deep(n)]),
        _write(tmp_path / "objects.json", [b"[", b'{"a":' * n, b"0", b"}" * n, b"]"]),
        _write(tmp_path / "result.json", [b'{\n"events": ', _deep(n), b"}"]),
        _write(tmp_path / "behavior.json", [b'{\n"logs": [{"file": "a", "lines": ', _deep(n), b"}]}"]),
        _write(tmp_path / "other.json", [b'{\n"x": ', _deep(n), b"}"]),
    ]
    for f in files:
        _check(f, [["info"], ["events"], ["repair"]], 256 * MB, timeout=60)


def _million(tmp_path: Path, n: int) -> list[Path]:
    ev = b'{"type":"turn/start","seq":%d,"time":1,"data":{"turn":1}}'
    return [
        _write(tmp_path / "wide.v4.jsonl", [HEADER, b'{"type":"user/message","seq":0,"time":1,"data":[',
                                            b",".join([b"0"] * n), b"]}\n"]),
        _write(tmp_path / "many.json", [b"[", b",".join(ev % i for i in range(n)), b"]"]),
    ]


def test_large_arrays(tmp_path: Path) -> None:
    """A million-element array in one row; a JSON document of 100 000 events (1 000 000 in the stress run)."""
    wide, many = _million(tmp_path, 1_000_000)
    _check(wide, READERS, 512 * MB)
    (tmp_path / "s").mkdir()
    small = _million(tmp_path / "s", 100_000)[1]
    _check(small, [["info"], ["validate"]], 256 * MB, timeout=120)


@pytest.mark.stress
def test_million_event_document(tmp_path: Path) -> None:
    many = _million(tmp_path, 1_000_000)[1]
    worst = _check(many, [["info"], ["events", "--json"], ["validate"]], 512 * MB, timeout=900)
    record_figures("1M-event JSON document", trials=3, faults=0, failures=0, peakRssMiB=worst // MB)


# ----------------------------------------------------------------------------- path safety

HOSTILE_IDS = ["../../x", "/etc/passwd", "..", "nul\u0000"]


def _hostile_session(base: Path, sid: str, cwd: str, v0: bool) -> Path:
    d = base / "root" / "--p--" / "sess"
    d.mkdir(parents=True)
    if v0:
        src = (Path(__file__).resolve().parents[1] / "fixtures" / "v0" / "text-turn" / "session.jsonl").read_bytes()
        lines = src.splitlines(keepends=True)
        h = orjson.loads(lines[0])
        h["id"], h["cwd"] = sid, cwd
        (d / "session.jsonl").write_bytes(orjson.dumps(h) + b"\n" + b"".join(lines[1:]))
    else:
        src = (Path(__file__).resolve().parents[1] / "fixtures" / "v4" / "crash" / "session.v4.jsonl").read_bytes()
        lines = src.splitlines(keepends=True)
        h = orjson.loads(lines[0])
        h["id"], h["cwd"] = sid, cwd
        (d / "session.v4.jsonl").write_bytes(orjson.dumps(h) + b"\n" + b"".join(lines[1:]))
    return d


@pytest.mark.parametrize("sid", HOSTILE_IDS)
def test_ids_from_a_log_never_become_paths(tmp_path: Path, sid: str) -> None:
    """Header ids and cwds like ``../../x`` or ``/etc/passwd``: writes stay in the session / output directory."""
    passwd = Path("/etc/passwd").read_bytes() if Path("/etc/passwd").exists() else None
    for v0 in (True, False):
        base = tmp_path / ("v0" if v0 else "v4")
        d = _hostile_session(base, sid, sid, v0)
        before = snapshot(base)
        out = base / "out"
        argvs = [["migrate", str(d)], ["migrate", "--no-children", str(d)]] if v0 else [
            ["repair", "--write", str(d / "session.v4.jsonl")]]
        argvs += [["fork", str(d), "-o", str(out) + "/"], ["fork", str(d), "-o", str(out / "c.jsonl"), "--id", sid.replace("\u0000", "")],
                  ["repair", str(d), "-o", str(out / "r.jsonl")]]
        for argv in argvs:
            p = run(*argv, timeout=60)
            assert p.returncode != 1 and TRACEBACK not in p.stderr, (argv, p.stderr)
        after = snapshot(base)
        new = {k for k in set(after) - set(before)}
        allowed_prefixes = (os.path.relpath(d, base) + "/", "out/")
        assert all(k.startswith(allowed_prefixes) or k == "out/" for k in new), sorted(new)
        for k, v in before.items():
            if not k.endswith("session.v4.jsonl") or v0:  # repair --write may rewrite only the log itself
                assert after.get(k) == v, f"{k} changed"
    assert not list(tmp_path.glob("**/x")) and not list(tmp_path.glob("**/passwd"))
    if passwd is not None:
        assert Path("/etc/passwd").read_bytes() == passwd
