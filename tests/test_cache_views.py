"""The cache serves the reading commands of one log: ``validate``, ``stats``, ``info`` and ``surface`` of a file.

A second run on an unchanged file is answered from the cache without opening the log,
and prints the very bytes, with the very exit code, of a run without the cache; the
typed results round-trip exactly through their plain forms; a changed file, or a root
that now makes dsh refuse the session, is read again.  (Damaged cache files and two
writers at once: ``tests/test_cache.py``, whose commands include these.)
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import CORPUS, FIXTURES, corpus_files, dshlog_argv, process_env, requires_corpus, run_env, run_process

from dshlog.errors import DshlogError
from dshlog.executor import InProcess
from dshlog.ops import stats as stats_ops
from dshlog.ops import surface as surface_ops
from dshlog.ops import transcript as transcript_ops
from dshlog.ops import validate as validate_ops
from dshlog.ops import info as info_ops
from dshlog.read import cache as cache_mod
from dshlog.read.cache import CACHE_FILE, Kind, cached_map, close_caches, open_cache
from dshlog.read.store import session_dir

FILES = sorted(str(p) for p in FIXTURES.glob("v*/*/session*") if p.is_file())

#: Each command of one log, as a test runs it (the path is appended).
COMMANDS = [
    ("validate",),
    ("validate", "--json"),
    ("info",),
    ("info", "--json"),
    ("stats",),
    ("stats", "--json"),
    ("surface",),
    ("surface", "--json"),
    ("surface", "--json", "--messages"),
    ("surface", "--at", "5"),
]


#: each test opens its cache files anew, as a new process would
pytestmark = pytest.mark.usefixtures("fresh_cache_connections")


@pytest.fixture
def no_reading(monkeypatch):
    """Makes every open of a log by ``validate``, ``stats`` and ``info``, and ``surface``'s fold, fail, and lists them.

    ``surface --messages`` still reads the messages from the log: its opens are listed, not refused.
    """

    def forbid() -> list[object]:
        opened: list[object] = []

        def unreadable(target: object, *_args: object, **_kwargs: object) -> object:
            opened.append(target)
            raise AssertionError("the log was opened: the answer was not served from the cache")

        real_open = surface_ops.open_target

        def listed(target: object, **options: object) -> object:
            opened.append(("messages", getattr(target, "path", target)))
            return real_open(target, **options)  # type: ignore[arg-type]  # the patched opener takes the real one's options as given

        monkeypatch.setattr(info_ops, "open_target", unreadable)
        monkeypatch.setattr(validate_ops, "open_log", unreadable)
        monkeypatch.setattr(stats_ops, "open_target", unreadable)
        monkeypatch.setattr(surface_ops, "_surface_rows", unreadable)
        monkeypatch.setattr(surface_ops, "open_target", listed)
        return opened

    return forbid


def _entries(cache: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(cache / CACHE_FILE)
    try:
        return [(kind.split("/")[0], key.split("\0")[0]) for kind, key in db.execute("SELECT kind, key FROM entries")]
    finally:
        db.close()


def test_the_command_sees_the_read_being_forbidden(no_reading, tmp_path):
    """The guard below works: without a cache, a forbidden read fails the command."""
    for cmd in COMMANDS:
        opened = no_reading()
        code, _out, _err = run_env(*cmd, FILES[0], cache_dir=None)
        assert len(opened) == 1 and code != 0


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(Path(p).relative_to(FIXTURES)))
def test_a_second_run_is_served_from_the_cache(cmd, path, tmp_path, no_reading):
    cache = tmp_path / "cache"
    off = run_env(*cmd, path, cache_dir=None)
    cold = run_env(*cmd, path, cache_dir=cache)
    assert cold == off
    if off[0] != 0 and cmd[0] == "surface":  # a log dsh refuses has no surface: nothing is kept, it is asked again
        assert ("surface", path) not in _entries(cache)
        return
    assert (cmd[0], path) in _entries(cache)
    close_caches()
    opened = no_reading()
    warm = run_env(*cmd, path, cache_dir=cache)
    assert opened == ([("messages", path)] if "--messages" in cmd else [])
    assert warm == off


#: The readers for a person, whose first pass (dsh's decision on the whole log) the cache spares.
READERS = [("show",), ("export",), ("export", "--format", "json")]


@pytest.mark.parametrize("cmd", READERS, ids=" ".join)
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(Path(p).relative_to(FIXTURES)))
def test_a_second_look_is_not_decided_again(cmd, path, tmp_path, monkeypatch):
    """show and export of a log dsh opens decide it once while it is unchanged; a refused log is decided each time."""
    cache = tmp_path / "cache"
    off = run_env(*cmd, path, cache_dir=None)
    assert run_env(*cmd, path, cache_dir=cache) == off
    refused = off[0] in (3, 4)
    assert (("opens", path) in _entries(cache)) is not refused
    close_caches()
    decided: list[object] = []
    real = transcript_ops.dsh_refusal

    def deciding(open_strict: Any) -> Any:
        decided.append(open_strict)
        return real(open_strict)

    monkeypatch.setattr(transcript_ops, "dsh_refusal", deciding)
    assert run_env(*cmd, path, cache_dir=cache) == off
    assert len(decided) == (1 if refused else 0)


def test_a_changed_log_is_decided_again(tmp_path, monkeypatch):
    """A log dsh opened, then damaged in place, is decided afresh: show opens with the refusal the cache did not keep."""
    p = tmp_path / "session.v4.jsonl"
    lines = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join(lines))
    cache = tmp_path / "cache"
    assert run_env("show", str(p), cache_dir=cache)[0] == 0
    close_caches()
    p.write_bytes(b"".join(lines[:3] + [lines[3].replace(b'"seq":', b'"seq":9', 1)] + lines[4:]))
    off = run_env("show", str(p), cache_dir=None)
    assert off[0] != 0 and off == run_env("show", str(p), cache_dir=cache)
    close_caches()  # and the refusal is not kept: it is decided again on the next look
    decided: list[object] = []
    real = transcript_ops.dsh_refusal
    monkeypatch.setattr(transcript_ops, "dsh_refusal", lambda open_strict: decided.append(1) or real(open_strict))
    assert run_env("show", str(p), cache_dir=cache) == off and decided == [1]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(Path(p).relative_to(FIXTURES)))
def test_the_typed_results_round_trip_exactly(path):
    """Each kind's plain form, through msgpack, gives back a result equal to the one it was made of."""

    def again(kind: Kind, result: object) -> object:
        return kind.decode(msgspec.msgpack.decode(msgspec.msgpack.encode(kind.encode(result))))

    info = info_ops.session_info(path)
    back = again(info_ops.INFO, info)
    assert back == info and back.summary == info.summary and back.torn == info.torn  # type: ignore[attr-defined]  # the record's decoded value is the kind's result type, typed Any by the cache
    report = next(validate_ops.validate_many([path]))
    back = again(validate_ops.REPORT, report)
    assert back == report and back.as_dict() == report.as_dict()  # type: ignore[attr-defined]  # the record's decoded value is the kind's result type, typed Any by the cache
    try:
        rows = surface_ops.surface_rows(path)
    except DshlogError:
        return  # dsh refuses it: no surface
    kept: Any = dataclasses.replace(again(surface_ops.SURFACE, rows), reread=rows.reread)  # type: ignore[type-var]  # the surface kind's value is a dataclass the cache types loosely
    assert list(kept.rows()) == list(rows.rows()) and list(kept.replacements()) == list(rows.replacements())
    assert (kept.notes, kept.path, kept.suppressed, kept.allow_unknown) == (rows.notes, rows.path, rows.suppressed,
                                                                             rows.allow_unknown)
    assert b"".join(kept.json_pieces(messages=True)) == b"".join(rows.json_pieces(messages=True))


def test_a_torn_tail_round_trips(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes((FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes() + b'{"type":"turn/st')
    info = info_ops.session_info(str(p))
    assert info.torn is not None and info.torn.data
    assert info_ops.INFO.decode(msgspec.msgpack.decode(msgspec.msgpack.encode(info_ops.INFO.encode(info)))) == info
    cache = tmp_path / "cache"
    off = [run_env(*cmd, str(p), cache_dir=None) for cmd in COMMANDS]
    assert [run_env(*cmd, str(p), cache_dir=cache) for cmd in COMMANDS] == off
    close_caches()
    assert [run_env(*cmd, str(p), cache_dir=cache) for cmd in COMMANDS] == off


@pytest.mark.parametrize("change", ["append", "touch", "replace"])
def test_a_changed_log_is_read_again(tmp_path, change):
    p = tmp_path / "session.v4.jsonl"
    source = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes()
    lines = source.splitlines(keepends=True)
    p.write_bytes(b"".join(lines[:-3]))
    cache = tmp_path / "cache"
    before = [run_env(*cmd, str(p), cache_dir=cache) for cmd in COMMANDS]
    close_caches()
    st = p.stat()
    if change == "append":
        with open(p, "ab") as fh:
            fh.write(b"".join(lines[-3:]))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime: the size tells
    elif change == "touch":
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    else:  # another log under the same name and times
        q = tmp_path / "other.jsonl"
        q.write_bytes(source)
        os.utime(q, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(q, p)
    off = [run_env(*cmd, str(p), cache_dir=None) for cmd in COMMANDS]
    assert [run_env(*cmd, str(p), cache_dir=cache) for cmd in COMMANDS] == off
    if change != "touch":
        assert off != before  # the answers did change: a stale entry would have shown
    close_caches()
    assert [run_env(*cmd, str(p), cache_dir=cache) for cmd in COMMANDS] == off


def test_validate_judges_the_root_again(tmp_path):
    """A flat file put in the root makes dsh refuse every session of it: the file's verdict changes, unchanged."""
    root = tmp_path / "sessions"
    d = session_dir(root, "/home/ann/demo", "loop-0001")
    d.mkdir(parents=True)
    p = d / "session.v4.jsonl"
    shutil.copyfile(FIXTURES / "v4" / "loop" / "session.v4.jsonl", p)
    cache = tmp_path / "cache"
    clean = run_env("validate", str(p), cache_dir=cache)
    assert clean[0] == 0
    close_caches()
    (d.parent / "stray.jsonl").write_bytes(b"")
    off = run_env("validate", str(p), cache_dir=None)
    assert off[0] != 0 and off != clean
    assert run_env("validate", str(p), cache_dir=cache) == off
    close_caches()
    assert run_env("validate", str(p), cache_dir=cache) == off
    (d.parent / "stray.jsonl").unlink()
    assert run_env("validate", str(p), cache_dir=cache) == clean


def test_options_that_change_the_answer_are_part_of_the_key(tmp_path):
    p = str(FIXTURES / "v0" / "text-turn" / "session.jsonl")
    cache = tmp_path / "cache"
    for args in (("--format", "0"), ("--format", "1"), ()):
        for cmd in (("validate", "--json"), ("info", "--json"), ("stats", "--json")):
            off = run_env(*cmd, *args, p, cache_dir=None)
            assert run_env(*cmd, *args, p, cache_dir=cache) == off
            close_caches()
            assert run_env(*cmd, *args, p, cache_dir=cache) == off
    plugin = ("--system-prompt-plugin", "@x1a0f3n9/dsh-system-prompt")
    off = run_env(*plugin, "validate", "--json", p, cache_dir=None)
    assert run_env(*plugin, "validate", "--json", p, cache_dir=cache) == off


def test_standard_input_is_never_cached(tmp_path, monkeypatch):
    """``-`` names the caller's standard input, even where a file named ``-`` exists."""
    monkeypatch.chdir(tmp_path)
    Path("-").write_bytes(b"a file named -\n")
    calls: list[str] = []
    kind = Kind("test-stdin", 1, lambda v: v, lambda v: v)

    def fn(item: str) -> str:
        calls.append(item)
        return f"read {len(calls)}"

    for _ in range(2):
        assert list(cached_map(open_cache(tmp_path / "c"), kind, fn, ["-"], InProcess())) == [f"read {len(calls)}"]
    assert calls == ["-", "-"]
    log = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes()
    off = run_env("info", "-", stdin=log, cache_dir=None)
    assert run_env("info", "-", stdin=log, cache_dir=tmp_path / "c") == off
    assert run_env("validate", "-", stdin=log, cache_dir=tmp_path / "c") == run_env("validate", "-", stdin=log, cache_dir=None)


def test_a_value_larger_than_the_bound_is_not_kept(tmp_path, monkeypatch):
    p = tmp_path / "log"
    p.write_bytes(b"x\n")
    kind = Kind("test-big", 1, lambda v: v, lambda v: v)
    cache = open_cache(tmp_path / "c")
    assert cache is not None
    stamp = cache_mod.stamp_of(str(p))
    assert stamp is not None
    monkeypatch.setattr(cache_mod, "MAX_VALUE_BYTES", 1000)
    cache.put(kind, "small", stamp, "x" * 900)
    cache.put(kind, "large", stamp, "x" * 1100)
    cache.flush()
    assert cache.get(kind, "small", stamp) == "x" * 900
    assert cache.get(kind, "large", stamp) is None


def test_a_surface_larger_than_the_bound_is_read_afresh(tmp_path, monkeypatch):
    path = str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")
    cache = tmp_path / "cache"
    off = run_env("surface", "--json", path, cache_dir=None)
    monkeypatch.setattr(surface_ops, "MAX_VALUE_BYTES", 200)  # the fold's nodes alone pass it: the record stops early
    assert run_env("surface", "--json", path, cache_dir=cache) == off
    assert ("surface", path) not in _entries(cache)
    monkeypatch.undo()
    assert run_env("surface", "--json", path, cache_dir=cache) == off
    assert ("surface", path) in _entries(cache)


@requires_corpus
def test_the_corpus_answers_the_same_with_the_cache(tmp_path):
    """Every corpus file: ``validate`` and ``stats`` (all at once), ``info`` and ``surface`` (each) off, cold and warm."""
    files = [str(p) for p in corpus_files()]
    assert files, f"no session file in {CORPUS}"
    cache = tmp_path / "cache"
    runs = [("validate", "--json", *files), ("stats", "--json", *files)]
    runs += [(cmd, "--json", f) for f in files for cmd in ("info", "surface")]
    off = [run_env(*r, cache_dir=None) for r in runs]
    assert [run_env(*r, cache_dir=cache) for r in runs] == off
    close_caches()
    assert [run_env(*r, cache_dir=cache) for r in runs] == off
    kinds = {k for k, _ in _entries(cache)}
    assert {"validate", "stats", "info", "surface"} <= kinds


def _cli_env(cache_home: Path) -> dict[str, str | None]:
    """What a command's process changes of this one's environment: the cache where the test looks."""
    return {"DSHLOG_NO_CACHE": None, "COLUMNS": None, "XDG_CACHE_HOME": str(cache_home), "TZ": "UTC"}


def _cli(*args: str, cache_home: Path) -> subprocess.CompletedProcess[bytes]:
    return run_process(*args, env=_cli_env(cache_home), timeout=300)


def test_two_processes_fill_the_cache_with_one_log_at_once(tmp_path):
    xdg = tmp_path / "xdg"
    loop = str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")
    cmds = [("validate", "--json", *FILES), ("info", "--json", FILES[0]), ("stats", "--json", *FILES), ("surface", loop)]
    off = [_cli("--no-cache", *c, cache_home=xdg) for c in cmds]
    assert not xdg.exists()
    for c, want in zip(cmds, off):
        procs = [subprocess.Popen(dshlog_argv(*c), env=process_env(_cli_env(xdg)), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(2)]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert (proc.returncode, out, err) == (want.returncode, want.stdout, want.stderr)
    db = sqlite3.connect(xdg / "dshlog" / CACHE_FILE)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    for c, want in zip(cmds, off):
        warm = _cli(*c, cache_home=xdg)
        assert (warm.returncode, warm.stdout, warm.stderr) == (want.returncode, want.stdout, want.stderr)
