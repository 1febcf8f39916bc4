"""An old log's published v4 successor is read instead of migrating again, only where a read proved it.

``dshlog/read/successor.py``: a view of a v0..v3 file whose plain successor lies beside it
proves, while it migrates, that the successor holds exactly that migration; later views of
the same unchanged file read the successor.  Every answer (stdout, stderr, exit code) is
the one a run without the cache gives; a successor that is not the migration, or that
changed after the proof, and an old log whose read notes anything, are migrated again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_bench_script, run_env

from dshlog import fastpaths
from dshlog.protocol.jsjson import dumps
from dshlog.migrate import chain as chain_mod
from dshlog.read import successor
from dshlog.read.cache import CACHE_FILE, close_caches
from dshlog.read.container import LINE_LIMIT

VIEWS = [("surface",), ("surface", "--json", "--messages"), ("surface", "--at", "40"), ("requests", "--json"),
         ("validate",), ("rebuild", "--request", "3")]


@pytest.fixture(autouse=True)
def _fresh_connections() -> Iterator[None]:
    close_caches()
    yield
    close_caches()


@pytest.fixture
def old(tmp_path: Path) -> Path:
    """A generated v0 log where dsh keeps it, with the successor ``migrate`` published beside it."""
    gen = load_bench_script("generate")
    path: Path = gen.generate(tmp_path / "root", "300K", 0, seed=5, zstd=False)["plain"]
    code, _out, err = run_env("migrate", str(path))
    assert code == 0, err
    assert (path.parent / "session.v4.jsonl").is_file()
    return path


@pytest.fixture
def migrations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the migrations the views run (one entry per call of the chain)."""
    calls: list[int] = []
    chain = chain_mod.migrate_stream  # the views import it when an older log is read: patched at its owner

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return chain(*args, **kw)

    monkeypatch.setattr(chain_mod, "migrate_stream", counted)
    return calls


def _run(cmd: tuple[str, ...], path: Path, cache: Path | None) -> tuple[int, bytes, bytes]:
    result = run_env(*cmd, str(path), cache_dir=cache)
    close_caches()  # the next run opens the file as a new process would
    return result


def _proofs(cache: Path) -> int:
    db = sqlite3.connect(cache / CACHE_FILE)
    try:
        return int(db.execute("SELECT count(*) FROM entries WHERE kind LIKE 'successor/%'").fetchone()[0])
    finally:
        db.close()


def test_the_proven_successor_is_read_and_the_answers_are_the_same(old: Path, tmp_path: Path,
                                                                   migrations: list[int]) -> None:
    off = [_run(cmd, old, None) for cmd in VIEWS]
    assert all(code == 0 for code, _out, _err in off)
    cache = tmp_path / "cache"
    migrations.clear()
    assert _run(("requests", "--json"), old, cache) == off[3]  # migrates once, and proves the successor
    assert migrations == [1]
    assert _proofs(cache) == 1
    migrations.clear()
    for _round in range(2):
        assert [_run(cmd, old, cache) for cmd in VIEWS] == off
    # validate's own listing reads the stored rows; its migrated form (lenient) is proven once, then read;
    # with the fast paths dsh's restore lists the migrated form itself (one restore): read from the proven successor
    if fastpaths.fast():
        assert migrations == [] and _proofs(cache) == 1
    else:
        assert migrations == [1] and _proofs(cache) == 2


def test_a_successor_that_is_not_the_migration_is_never_read(old: Path, tmp_path: Path,
                                                             migrations: list[int]) -> None:
    succ = old.parent / "session.v4.jsonl"
    data = succ.read_bytes()
    i = data.index(b'"text":"') + len(b'"text":"')
    succ.write_bytes(data[:i] + (b"Y" if data[i:i + 1] != b"Y" else b"Z") + data[i + 1:])  # valid, same size, another text
    off = [_run(cmd, old, None) for cmd in VIEWS]
    cache = tmp_path / "cache"
    migrations.clear()
    for _round in range(2):
        assert [_run(cmd, old, cache) for cmd in VIEWS] == off
    assert _proofs(cache) == 0
    assert len(migrations) >= 2 * 4  # every run that is not served whole from the cache migrates


def test_a_successor_changed_after_its_proof_is_not_read(old: Path, tmp_path: Path, migrations: list[int]) -> None:
    cache = tmp_path / "cache"
    off = _run(("requests", "--json"), old, None)
    assert _run(("requests", "--json"), old, cache) == off
    assert _proofs(cache) == 1
    succ = old.parent / "session.v4.jsonl"
    lines = succ.read_bytes().split(b"\n")
    succ.write_bytes(b"\n".join(lines[:-3] + lines[-2:]))  # an event fewer: not what was proven
    migrations.clear()
    assert _run(("requests", "--json"), old, cache) == off
    assert _run(("rebuild", "--request", "3"), old, cache) == _run(("rebuild", "--request", "3"), old, None)
    assert len(migrations) == 3


def test_an_old_log_whose_read_notes_its_rows_is_always_migrated(old: Path, tmp_path: Path,
                                                                  migrations: list[int]) -> None:
    old.write_bytes(old.read_bytes() + b'{"type":"turn/start","se')  # a torn tail: a note naming the old file
    listed = _run(("validate",), old, None)[1]
    assert str(old).encode() in listed and b"torn" in listed  # said of the old file's own bytes
    off = _run(("requests", "--json"), old, None)
    cache = tmp_path / "cache"
    migrations.clear()
    for _round in range(3):
        assert _run(("requests", "--json"), old, cache) == off
    assert migrations == [1, 1, 1]
    assert _proofs(cache) == 0


def test_other_options_prove_on_their_own(old: Path, tmp_path: Path, migrations: list[int]) -> None:
    cache = tmp_path / "cache"
    plugin = ("--system-prompt-plugin", "@acme/prompt")
    off = _run((*plugin, "requests", "--json"), old, None)
    _run(("requests", "--json"), old, cache)
    migrations.clear()
    assert _run((*plugin, "requests", "--json"), old, cache) == off
    assert migrations == [1]  # the proof of the plain run says nothing of a run with other producers


def _claim_beside(tmp_path: Path) -> successor.Claim:
    d = tmp_path / "sess"
    d.mkdir()
    old = d / "session.jsonl"
    old.write_bytes(b'{"type":"session","id":"s"}\n')
    with old.open("rb") as fh:
        (d / "session.v4.jsonl").write_bytes(b"")
        c = successor.claim(str(tmp_path / "cache"), str(old), fh.fileno(), strict=True, version=0, plugins=(), facts=[])
    assert c is not None
    return c


def _write(c: successor.Claim, values: list[object]) -> None:
    Path(c.successor).write_bytes(b"".join(dumps(v) + b"\n" for v in values))


def test_a_witness_proves_exactly_the_bytes_it_saw(tmp_path: Path) -> None:
    c = _claim_beside(tmp_path)
    values: list[object] = [{"type": "session", "version": 4}, {"type": "turn/start", "seq": 0}]
    _write(c, values)
    w = successor.Witness(c)
    for v in values:
        w.line(v)
    w.close(None)
    proof = successor.proven(c)
    assert proof is not None and proof.path == c.successor
    _write(c, [*values, {"type": "turn/end", "seq": 1}])  # the successor changed since: not read
    assert successor.proven(c) is None


def test_a_migration_with_a_line_beyond_the_limit_is_never_proven(tmp_path: Path) -> None:
    """One v4 line may hold many old rows: its successor's reader would refuse what the migration held."""
    c = _claim_beside(tmp_path)
    values: list[object] = [{"type": "session", "version": 4}, {"type": "x", "data": "a" * 2048}]
    _write(c, values)
    before = LINE_LIMIT.max_bytes
    LINE_LIMIT.set(1024)
    try:
        w = successor.Witness(c)
        for v in values:
            w.line(v)
        w.close(None)
    finally:
        LINE_LIMIT.set(before)
    assert successor.proven(c) is None
