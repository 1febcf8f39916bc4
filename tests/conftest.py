"""Shared test helpers: where the shared corpus lives, small log builders, and how a test runs dshlog.

A test runs a command one way, :func:`run_env` (in this process, in a test environment).
Only a test about a process (a terminal, a kill, start-up, signals, the entry points,
two processes at once) starts dshlog as one, through :func:`run_process`, or through
:func:`dshlog_argv` where it needs the ``Popen`` itself.  ``tests/test_architecture.py``
holds every test module to that.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from dshlog.fastpaths import mode, set_mode

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("DSHLOG_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
GOLDEN = FIXTURES / "golden"
#: the installed console script (``pip install -e .`` puts it next to the interpreter)
DSHLOG_SCRIPT = Path(sys.executable).with_name("dshlog")

# The suite runs under one mode of the fast paths, the CLI's variable (``make test`` runs it
# under both): each fast body must give its exact body's answers to every ordinary test.
set_mode(os.environ.get("DSHLOG_PATHS") or "fast")


def pytest_report_header() -> str:
    return f"dshlog paths: {mode()} (DSHLOG_PATHS)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked ``fast_paths`` is of a fast body itself (that it is taken, its memory, the C
    function beside its Python twin): the fast run runs it, the exact run would only repeat it."""
    if mode() == "exact":
        skip = pytest.mark.skip(reason="a test of the fast bodies themselves: the run with DSHLOG_PATHS=fast runs it")
        for item in items:
            if item.get_closest_marker("fast_paths") is not None:
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _cache_outside_home(tmp_path_factory):
    """The dshlog processes tests start keep their cache in a temporary directory, never the user's.

    Set in ``os.environ``, which they inherit (``run_env`` has no cache unless given ``cache_dir``).
    """
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


def corpus_files() -> list[Path]:
    """Every session file of the shared corpus (walked, so new files are picked up)."""
    if not CORPUS.is_dir():
        return []
    return sorted(
        p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".zstd") and not p.name.startswith("MANIFEST")
    )


def corpus_ids() -> list[str]:
    return [str(p.relative_to(CORPUS)) for p in corpus_files()]


requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"shared corpus not found at {CORPUS} (set DSHLOG_SHARED)")


def load_bench_script(name: str):
    """``bench/<name>.py`` as a module (the benchmarks are scripts, not part of the package).

    Registered as ``bench_<name>`` before it runs (its dataclasses look their module
    up there), once per test session.
    """
    import importlib.util

    key = f"bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def long_session(tmp_path_factory):
    """A generated v4 log of about 5,000 events (11 MB) and a turn at or after 37 with a failing tool.

    Returns ``(path, turn number, tool name, the failing output's first line)``, the truth
    taken from the raw events, for the tests that find that error as a person would.
    """
    import json as _json

    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("long")
    path = gen.generate(out, "11M", 4, zstd=False)["plain"]
    turn = None
    names: dict[str, str] = {}
    for line in path.read_bytes().splitlines()[1:]:
        ev = _json.loads(line)
        data = ev.get("data") or {}
        if ev["type"] == "turn/start":
            turn = data.get("turn")
        elif ev["type"] == "tool/call":
            names[data.get("callId")] = data.get("name")
        elif ev["type"] == "tool/result" and data.get("message", {}).get("isError") and turn is not None and turn >= 37:
            msg = data["message"]
            text = "".join(b.get("text", "") for b in msg.get("content", []) if isinstance(b, dict))
            return path, turn, names.get(msg.get("toolCallId")), text.strip().split("\n")[0]
    raise AssertionError("the generated log has no failing tool after turn 37")


def jsonl(*rows: object) -> bytes:
    """Compact JSONL bytes, one row per line."""
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


def v4_header(**over: object) -> dict:
    h = {"type": "session", "version": 4, "id": "s-1", "createdAt": 1, "cwd": "/tmp/p", "isSeeded": False, "delegationDepth": 0}
    h.update(over)
    return h


def ev(seq: int, type_: str, data: object = None, time: int = 1000, **extra: object) -> dict:
    e = {"type": type_, "seq": seq, "time": time + seq, "data": {} if data is None else data}
    e.update(extra)
    return e


NO_DEPTH_REASON = 'released v0 physical header lacks required member "delegationDepth"'


def no_depth_session(directory: Path) -> Path:
    """``directory/session.jsonl``: the v0 text-turn fixture whose header lacks ``delegationDepth``,
    as an early writer left it (the README's ``no-depth``); dsh refuses it with :data:`NO_DEPTH_REASON`."""
    header, rest = (FIXTURES / "v0" / "text-turn" / "session.jsonl").read_bytes().split(b"\n", 1)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "session.jsonl"
    path.write_bytes(header.replace(b',"delegationDepth":0', b"") + b"\n" + rest)
    return path


HUGE_WORDS = "lorem ipsum dolor sit amet "


def huge_first_message(directory: Path, size: int = 10_000_000) -> Path:
    """``directory/session.v4.jsonl``: the v4 loop fixture whose first user message is ``size`` characters
    on one line (a pasted log), as both the inbox splice and the message carry it."""
    big = (HUGE_WORDS * (size // len(HUGE_WORDS) + 1))[:size]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "session.v4.jsonl"
    path.write_bytes((FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes().replace(b'"text":"go"', b'"text":"%s"' % big.encode()))
    return path


def run_env(*args: str, stdin: bytes = b"", tty: bool = False, **env: object) -> tuple[int, bytes, bytes]:
    """Run ``dshlog ARGS`` in-process in a test environment (``Env.for_test``: in-memory streams,
    no terminal unless ``tty``, a fixed clock; ``dsh_home=``, ``cwd=``, ``colour=``, ``width=`` ... as given).

    Returns (exit code, stdout bytes, stderr bytes).  This is how a test picks a terminal,
    a home or a cwd: through the environment the CLI is given, never by patching globals.
    It is the one way a test runs a command in this process (``tests/test_architecture.py``).
    """
    from dshlog.cli import main
    from dshlog.cli.env import Env

    e = Env.for_test(stdin=stdin, tty=tty, **env)
    code = int(main(list(args), e))
    return code, e.stdout.getvalue(), e.stderr.getvalue()  # type: ignore[attr-defined]  # for_test streams are BytesIO


def dshlog_argv(*args: str, script: bool = False, python: Sequence[str] = ()) -> list[str]:
    """The command line that starts ``dshlog ARGS`` as a process of its own.

    ``python -m dshlog`` (with the interpreter's ``python`` options, e.g. ``-X importtime``),
    or with ``script`` the installed console script (``python -m dshlog`` where it is absent).
    Only a test that needs the ``Popen`` itself uses this; the others call :func:`run_process`.
    """
    if script and DSHLOG_SCRIPT.exists():
        return [str(DSHLOG_SCRIPT), *args]
    return [sys.executable, *python, "-m", "dshlog", *args]


def process_env(changes: Mapping[str, str | None]) -> dict[str, str]:
    """This process's environment with ``changes`` made (a ``None`` value unsets the name), for a child process."""
    out = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def run_process(*args: str, stdin: bytes | None = None, script: bool = False, python: Sequence[str] = (),
                prefix: Sequence[str] = (), env: Mapping[str, str | None] | None = None, timeout: float | None = 120,
                **kw: Any) -> subprocess.CompletedProcess[Any]:
    """Run ``dshlog ARGS`` to completion as a process of its own; stdout and stderr captured.

    For the tests about a process: a real pipe or terminal, a kill, a resource limit or
    another user (``prefix``: the command that starts it, e.g. ``setpriv ...``), start-up
    (``python``: the interpreter's options), the entry points (``script``: the console
    script).  ``env`` changes the inherited environment (``None`` unsets a name); ``kw``
    goes to :func:`subprocess.run` (``cwd``, ``text``, ``check``, ``preexec_fn``, a file as
    ``stdout`` ...).  ``timeout=None`` waits as long as it takes.
    """
    argv = [*prefix, *dshlog_argv(*args, script=script, python=python)]
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(argv, input=stdin, timeout=timeout, env=None if env is None else process_env(env), **kw)


def read_log(source: Path | bytes, tmp_dir: Path | None = None, name: str = "session.jsonl") -> tuple[dict | None, list[dict]]:
    """(header, stored-version events) through the project's reader, leniently.

    ``source`` is a path, or the bytes of a log (written to ``tmp_dir/name`` first).
    Projections get seq by position and time 0; packed rows and ranges are expanded.
    """
    from dshlog.read.session import open_log

    if isinstance(source, (bytes, bytearray)):
        import tempfile

        d = Path(tmp_dir) if tmp_dir is not None else Path(tempfile.mkdtemp())
        path = d / name
        path.write_bytes(bytes(source))
    else:
        path = Path(source)
    with open_log(path, strict=False) as log:
        return log.header, list(r.event for r in log.stored())


def load_golden(name: str) -> list[dict]:
    """One of the seed's golden logs (shipped in fixtures/golden)."""
    return orjson.loads((GOLDEN / name).read_bytes())


def spec_closer_texts() -> dict[tuple[str, bool], str]:
    """The four closer wordings as SEMANTICS.md §6.3 quotes them, keyed by (cause, started)."""
    path = SHARED / "spec" / "SEMANTICS.md"
    if not path.is_file():
        pytest.skip(f"shared spec {path} is absent (set DSHLOG_SHARED)")
    found = re.findall(r"^\* (interrupted|forked), (started|not started): `([^`]+)`$", path.read_text(), re.M)
    texts = {(c, s == "started"): t for c, s, t in found}
    assert len(texts) == 4, "SEMANTICS.md §6.3 should quote four closer texts"
    return texts


@contextlib.contextmanager
def lock_held_elsewhere(session_dir: Path):
    """Another process holding ``session.lock`` of ``session_dir`` for the block; yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from dshlog.write.lock import session_lock\n"
         "with session_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)", str(session_dir)],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def build_corpus_store(home: Path, *, one_encoding: bool = False) -> Path:
    """``home/sessions``: a dsh store built from the shared corpus by its own tool (skips when absent).

    The tool stores every 4th v4 session as ``.zstd``: a root of both encodings, every
    session of which dsh refuses ("a root belongs to one encoding").  ``one_encoding``
    makes it the store a dsh configured for no compression keeps (:func:`as_one_encoding`).
    """
    tool = SHARED / "tools" / "make_store.py"
    if not tool.is_file() or not CORPUS.is_dir():
        pytest.skip(f"{tool} or the shared corpus absent (set DSHLOG_SHARED)")
    subprocess.run([sys.executable, str(tool), "--corpus", str(CORPUS), "--home", str(home)],
                   check=True, capture_output=True, timeout=600)
    root = home / "sessions"
    if one_encoding:
        as_one_encoding(root)
    return root


def as_one_encoding(root: Path) -> None:
    """Every ``.zstd`` generation under ``root`` replaced by its plain text (mtime kept): one encoding."""
    import zstandard

    for packed in sorted(root.rglob("*.jsonl.zstd")):
        st = packed.stat()
        with packed.open("rb") as fh:
            text = b"".join(zstandard.ZstdDecompressor().read_to_iter(fh))  # a torn last frame: what it holds
        plain = packed.with_name(packed.name[: -len(".zstd")])
        plain.write_bytes(text)
        os.utime(plain, ns=(st.st_atime_ns, st.st_mtime_ns))
        packed.unlink()


@pytest.fixture
def fresh_cache_connections():
    """Each test opens its cache files anew, as a new process would (the cache keeps one connection per process)."""
    from dshlog.read.cache import close_caches

    close_caches()
    yield
    close_caches()
