"""The cache of per-session results (``dshlog/read/cache.py``): the same answers with it and without it.

A warm run must print the very bytes and exit with the very code of a run without the
cache; an entry is served only for the file it was derived from; a cache file that is
damaged, truncated, foreign or of another layout is made again, never trusted; two
processes may fill it at once; ``--no-cache`` and ``DSHLOG_NO_CACHE`` leave none behind;
and nothing is ever written into dsh's store.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import FIXTURES, dshlog_argv, load_bench_script, process_env, run_env, run_process

from dshlog.cli.env import cache_directory
from dshlog.executor import InProcess
from dshlog.read import cache as cache_mod
from dshlog.read.cache import CACHE_FILE, Kind, cached_map, close_caches, open_cache, stamp_of
from dshlog.read.store import session_dir
from test_store import put

DAMAGE = load_bench_script("cache_damage")  # the damages the fuzzer's cache mode draws from, too

COMMANDS = [
    ("report",),
    ("report", "--by", "session", "--json"),
    ("report", "--by", "model", "--since", "2026-10-01"),
    ("stats", "--json"),
    ("ls", "--json"),
    ("ls",),
    ("validate",),
    ("validate", "--json"),
    ("info", "--json"),
    ("surface", "--json"),
]


#: each test opens its cache files anew, as a new process would
pytestmark = pytest.mark.usefixtures("fresh_cache_connections")


def _damaged(root: Path) -> Path:
    """A session with an unparsable row in its middle: the reader notes it and the commands exit 4."""
    p = put(root, "loop", sid="damaged-0004", mtime=4_000)
    lines = p.read_bytes().split(b"\n")
    lines.insert(3, b'{"type":"turn/start","seq":')
    p.write_bytes(b"\n".join(lines))
    os.utime(p, (4_000, 4_000))
    return p


@pytest.fixture
def home(tmp_path):
    """``DSH_HOME`` of a small store: fixtures of each kind, a fork, a zstd log, a damaged one."""
    h = tmp_path / "home"
    r = h / "sessions"
    put(r, "loop", sid="loop-0001", mtime=1_000)
    put(r, "crash", sid="crash-0001", mtime=2_000)
    put(r, "crash", sid="fork-0002", parentSession="loop-0001", mtime=3_000)
    _damaged(r)
    d = session_dir(r, "/srv/zz", "zstd-0003")
    d.mkdir(parents=True)
    (d / "session.v4.jsonl.zstd").write_bytes((FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd").read_bytes())
    return h


def _files(home: Path) -> list[str]:
    return sorted(str(p) for p in (home / "sessions").rglob("session*.jsonl*"))


def _args(home: Path, cmd: tuple[str, ...]) -> tuple[str, ...]:
    """The command over the store's files (``info``: the damaged one, whose notes are on stderr; ``surface``: one dsh reads)."""
    if cmd[0] in ("stats", "validate"):
        return (*cmd, *_files(home))
    if cmd[0] == "info":
        return (*cmd, next(f for f in _files(home) if "damaged" in f))
    if cmd[0] == "surface":
        return (*cmd, next(f for f in _files(home) if "loop-0001" in f))
    return cmd


def _run(home: Path, cmd: tuple[str, ...], cache: Path | None) -> tuple[int, bytes, bytes]:
    return run_env(*_args(home, cmd), dsh_home=str(home), cache_dir=cache)


def _tree(root: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*"))


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_same_answers_with_and_without_the_cache(home, tmp_path, cmd):
    cache = tmp_path / "cache"
    off = _run(home, cmd, None)
    before = _tree(home)
    cold = _run(home, cmd, cache)
    close_caches()  # the warm run opens the file as a new process would
    warm = _run(home, cmd, cache)
    assert cold == off
    assert warm == off
    assert (cache / CACHE_FILE).is_file()
    assert _tree(home) == before  # nothing written into dsh's store


def test_a_damaged_session_still_exits_4_warm(home, tmp_path):
    cache = tmp_path / "cache"
    for _ in range(2):
        code, _out, err = _run(home, ("report",), cache)
        assert code == 4 and b"damaged-0004" in err
        close_caches()
    rows = sqlite3.connect(cache / CACHE_FILE).execute("SELECT count(*) FROM entries").fetchone()[0]
    assert rows >= 5


def _counting(calls: list[str]):
    def fn(path: str) -> list[object]:
        calls.append(path)
        return [Path(path).read_bytes().count(b"\n")]

    return fn


KIND = Kind("test-lines", 1, lambda v: v, lambda v: list(v))


def _lines(paths: list[str], cache_dir: Path, calls: list[str]) -> list[object]:
    return list(cached_map(open_cache(cache_dir), KIND, _counting(calls), paths, InProcess()))


def test_a_warm_run_reads_no_log(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"log{i}.jsonl"
        p.write_bytes(b"x\n" * (i + 1))
        paths.append(str(p))
    calls: list[str] = []
    assert _lines(paths, tmp_path / "c", calls) == [[1], [2], [3]]
    assert calls == paths
    calls.clear()
    assert _lines(paths, tmp_path / "c", calls) == [[1], [2], [3]]
    assert calls == []


@pytest.mark.parametrize("change", ["append", "touch", "replace", "same-size-rewrite"])
def test_a_stale_entry_is_never_served(tmp_path, change):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"a\nb\n")
    calls: list[str] = []
    assert _lines([str(p)], tmp_path / "c", calls) == [[2]]
    st = p.stat()
    if change == "append":
        with open(p, "ab") as fh:
            fh.write(b"c\n")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime: the size tells
    elif change == "touch":
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    elif change == "replace":  # another file of the same size, under the same name and times
        q = tmp_path / "other.jsonl"
        q.write_bytes(b"\n\n\n\n")
        os.utime(q, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(q, p)
    else:  # rewritten in place, same size, mtime put back
        p.write_bytes(b"\n\n\n\n")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    calls.clear()
    want = [p.read_bytes().count(b"\n")]
    assert _lines([str(p)], tmp_path / "c", calls) == [want]
    assert calls == [str(p)]


def test_the_tail_digest_is_part_of_the_stamp(tmp_path):
    """Content changed behind an unchanged identity (a clock that did not move) is still a miss."""
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"a\n" * 20_000)
    cache = open_cache(tmp_path / "c")
    assert cache is not None
    s = stamp_of(str(p))
    assert s is not None
    cache.put(KIND, "k", s, [1])
    cache.flush()
    assert cache.get(KIND, "k", s) == [1]
    forged = cache_mod.Stamp(s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns, bytes(16))
    assert cache.get(KIND, "k", forged) is None


def test_only_regular_files_are_cached(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert stamp_of(str(fifo)) is None  # opened without blocking, never read
    assert stamp_of(str(tmp_path)) is None
    assert stamp_of(str(tmp_path / "gone")) is None


def test_a_fifo_is_not_opened_for_its_stamp(tmp_path):
    """Opening a FIFO to stamp it met its writer, and the command's own read then found nobody writing."""
    fifo = tmp_path / "session.v4.jsonl"
    os.mkfifo(fifo)
    opened = threading.Event()

    def writer() -> None:
        with open(fifo, "wb") as fh:  # blocks until a reader opens the FIFO
            opened.set()
            fh.write(b"the log\n")

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    assert stamp_of(str(fifo)) is None
    assert not opened.wait(0.3)  # the writer still waits for the reader that will read it
    with open(fifo, "rb") as fh:
        assert fh.read() == b"the log\n"
    t.join(5)


@pytest.mark.parametrize("kind", ["garbage", "truncated", "empty", "schema", "foreign", "values", "swap"])
def test_a_damaged_cache_file_is_made_again(home, tmp_path, kind):
    cache = tmp_path / "cache"
    off = [_run(home, cmd, None) for cmd in COMMANDS]
    assert [_run(home, cmd, cache) for cmd in COMMANDS] == off
    close_caches()
    DAMAGE.damage(kind, cache / CACHE_FILE)
    assert [_run(home, cmd, cache) for cmd in COMMANDS] == off
    close_caches()
    assert [_run(home, cmd, cache) for cmd in COMMANDS] == off
    close_caches()
    db = sqlite3.connect(cache / CACHE_FILE)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] > 0  # in use again


def test_random_damage_to_the_cache_never_changes_an_answer(home, tmp_path):
    cmds = [("report", "--by", "session", "--json"), ("stats", "--json"), ("ls", "--json"), ("validate", "--json"),
            ("info", "--json"), ("surface", "--json")]
    off = [_run(home, cmd, None) for cmd in cmds]
    cache = tmp_path / "cache"
    db = cache / CACHE_FILE
    rng = random.Random(20261205)
    for _round in range(25):
        assert [_run(home, cmd, cache) for cmd in cmds] == off
        close_caches()
        DAMAGE.damage("bytes", db, rng)
        assert [_run(home, cmd, cache) for cmd in cmds] == off
        close_caches()


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return run_process(*args, env=env, timeout=300)


def _process_env(home: Path, cache_home: Path, **more: str) -> dict[str, str]:
    return process_env({"DSHLOG_NO_CACHE": None, "COLUMNS": None, "DSH_HOME": str(home), "XDG_CACHE_HOME": str(cache_home), "TZ": "UTC", **more})


def test_two_processes_fill_the_cache_at_once(home, tmp_path):
    for i in range(20):  # enough sessions that the two writers meet
        put(home / "sessions", "loop", sid=f"more-{i:04d}", mtime=5_000 + i)
    env = _process_env(home, tmp_path / "xdg")
    off = _cli("--no-cache", "report", "--by", "session", "-j", "1", env=env)
    procs = [subprocess.Popen(dshlog_argv("report", "--by", "session", "-j", "1"), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    for code, out, err in results:
        assert (code, out, err) == (off.returncode, off.stdout, off.stderr)
    db = sqlite3.connect(tmp_path / "xdg" / "dshlog" / CACHE_FILE)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == len(_files(home))
    warm = _cli("report", "--by", "session", "-j", "1", env=env)
    assert (warm.returncode, warm.stdout, warm.stderr) == (off.returncode, off.stdout, off.stderr)


def test_no_cache_leaves_no_cache_file(home, tmp_path):
    cache = tmp_path / "cache"
    for cmd in COMMANDS:
        run_env("--no-cache", *_args(home, cmd), dsh_home=str(home), cache_dir=cache)
    assert not cache.exists()


def test_the_environment_variable_leaves_no_cache_file(home, tmp_path):
    assert cache_directory({"DSHLOG_NO_CACHE": "1"}, tmp_path) is None
    assert cache_directory({"DSHLOG_NO_CACHE": "0"}, tmp_path) == tmp_path / ".cache" / "dshlog"
    assert cache_directory({"XDG_CACHE_HOME": "/x"}, tmp_path) == Path("/x/dshlog")
    assert cache_directory({"XDG_CACHE_HOME": "rel"}, tmp_path) == tmp_path / ".cache" / "dshlog"
    xdg = tmp_path / "xdg"
    r = _cli("report", env=_process_env(home, xdg, DSHLOG_NO_CACHE="1"))
    assert r.returncode == 4
    assert not xdg.exists()
    r = _cli("ls", env=_process_env(home, xdg))
    assert r.returncode == 0 and (xdg / "dshlog" / CACHE_FILE).is_file()


def test_a_cache_directory_inside_the_store_is_not_used(home):
    before = _tree(home)
    inside = home / "sessions" / "cache"
    for cmd in COMMANDS:
        _run(home, cmd, inside)
    assert not inside.exists()
    assert _tree(home) == before


def test_a_cache_that_cannot_be_created_is_not_used(home, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    for cmd in COMMANDS:
        assert _run(home, cmd, blocker / "cache") == _run(home, cmd, None)
