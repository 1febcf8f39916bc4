"""``rescue --publish`` publishes its successor and its rescue record as one transaction.

The record is published first (it says what the successor will be) and the
successor's ``link`` is the commit point.  These tests kill the command (SIGKILL,
in a forked child) right before each file-system step of an uninterrupted run —
every create, write, sync, chmod, link, unlink and rename, one kill per step —
and check what a kill can leave:

* the sources are byte-identical;
* a successor is either absent or complete, and a complete one always has its
  complete record beside it;
* nothing else is there but staged names and, between the two links, the record
  alone: the trace of a killed run, which the next run of any writer in that
  directory removes (under the session's lock) before it publishes;
* the next run completes the rescue: the tree is then exactly an uninterrupted
  run's.

The same is done for ``rescue -R ROOT --all --publish`` over a small store.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import dshlog.cli.rescue  # noqa: F401 - loaded once here, not again in each forked child
import dshlog.ops.rescue  # noqa: F401
from conftest import FIXTURES, run_env
from dshlog.errors import ExitCode
from test_reliability_support import leftovers, run, stored_as

V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
PROJECT = "--home-ann-rescue--"
RECORD = "session.v4.jsonl.rescue.json"

#: The file-system calls counted as steps (``open`` only when it may create or write).
STEPS = ("open", "write", "fsync", "link", "unlink", "replace", "rename", "ftruncate", "fchmod", "fchown", "mkdir")
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _steps_run(argv: list[str], kill_at: int | None) -> tuple[int | None, int]:
    """Run ``dshlog argv`` in a forked child killed right before its step ``kill_at``.

    Returns (exit code, or ``None`` when killed; the steps the child took).
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            taken = [0]
            real = {name: getattr(os, name) for name in STEPS}
            kill, getpid = os.kill, os.getpid

            def counted(name: str) -> Callable[..., object]:
                def call(*a: object, **k: object) -> object:
                    flags = a[1] if len(a) > 1 else k.get("flags", 0)
                    if name != "open" or (isinstance(flags, int) and flags & _WRITING):
                        if taken[0] == kill_at:
                            kill(getpid(), signal.SIGKILL)
                        taken[0] += 1
                    return real[name](*a, **k)
                return call

            for name in STEPS:
                setattr(os, name, counted(name))
            code = run_env(*argv)[0]
            for name in STEPS:
                setattr(os, name, real[name])
            os.write(w, str(taken[0]).encode())
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        said = fh.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return None, 0
    return os.WEXITSTATUS(status), int(said)


def refused(root: Path, name: str, variant: int = 0) -> Path:
    """A v0 session dsh refuses (its header lacks delegationDepth); rescue brings it back."""
    d = root / PROJECT / name
    d.mkdir(parents=True)
    src = d / "session.jsonl"
    data = V0.read_bytes().replace(b',"delegationDepth":0}', b"}", 1)
    if variant:
        data = data.replace(b"single word: READY.", f"single word: READY{variant}.".encode())  # another log, not a copy
    src.write_bytes(stored_as(data, name, "/home/ann/rescue"))  # where dsh would have stored it
    return src


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (its absolute path, as records name sources, written ROOT)."""
    base = str(root.resolve()).encode()
    return {str(p.relative_to(root)): p.read_bytes().replace(base, b"ROOT")
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "session.lock"}


def _check_kill_image(root: Path, sources: dict[str, bytes], reference: dict[str, bytes]) -> str:
    """The invariants after a kill; returns what the kill left."""
    now = tree(root)
    left = "nothing"
    for name, data in sources.items():
        assert now[name] == data, f"{name}: the source changed"
    for name, data in now.items():
        if name in sources:
            continue
        d = (root / name).parent
        if Path(name).name in leftovers(d):
            left = max(left, "staged")
            continue
        if name.endswith("/session.v4.jsonl"):
            assert data == reference[name], f"{name}: a partial successor under its final name"
            assert now.get(name + ".rescue.json") == reference[name + ".rescue.json"], f"{name}: a successor without its record"
            continue
        assert name.endswith("/" + RECORD), f"unexpected file {name}"
        assert data == reference[name], f"{name}: a partial record"
        if name[: -len(".rescue.json")] not in now:
            left = "orphan record"
    return left


def _kill_everywhere(tmp_path: Path, build: Callable[[Path], list[Path]], argv: Callable[[Path], list[str]],
                     rerun_code: Callable[[dict[str, bytes]], int]) -> set[str]:
    ref = tmp_path / "ref"
    build(ref)
    code, steps = _steps_run(argv(ref), None)
    assert code == 0, code
    reference = tree(ref)
    assert any(n.endswith(RECORD) for n in reference)
    assert steps > 10
    seen: set[str] = set()
    for k in range(steps):
        root = tmp_path / f"kill-{k}"
        sources = {str(p.relative_to(root)): p.read_bytes() for p in build(root)}
        killed, _ = _steps_run(argv(root), k)
        assert killed is None, f"step {k}: the run was not killed"
        seen.add(_check_kill_image(root, sources, reference))
        image = tree(root)
        again, _ = _steps_run(argv(root), None)
        assert again == rerun_code(image), f"step {k}: the next run exits {again}"
        assert tree(root) == reference, f"step {k}: the next run did not complete the rescue"
        for d in {p.parent for p in root.rglob("session.jsonl")}:
            assert leftovers(d) == [], f"step {k}: leftovers in {d}"
        shutil.rmtree(root)
    return seen


def test_a_kill_at_any_step_of_a_rescue_leaves_both_or_neither(tmp_path: Path) -> None:
    def build(root: Path) -> list[Path]:
        return [refused(root, "s-1")]

    def argv(root: Path) -> list[str]:
        return ["rescue", str(root / PROJECT / "s-1" / "session.jsonl"), "--all", "--publish"]

    def rerun_code(image: dict[str, bytes]) -> int:
        complete = any(n.endswith("/session.v4.jsonl") for n in image)
        return ExitCode.CONFLICT if complete else 0  # a complete successor is never overwritten

    seen = _kill_everywhere(tmp_path, build, argv, rerun_code)
    assert {"nothing", "staged", "orphan record"} <= seen, seen


def test_a_kill_at_any_step_of_a_store_rescue_is_completed_by_the_next_run(tmp_path: Path) -> None:
    def build(root: Path) -> list[Path]:
        ok = root / PROJECT / "s-0"
        ok.mkdir(parents=True)
        (ok / "session.v4.jsonl").write_bytes(stored_as(V4.read_bytes(), "s-0", "/home/ann/rescue"))
        return [refused(root, "s-1"), refused(root, "s-2", variant=2), ok / "session.v4.jsonl"]

    def argv(root: Path) -> list[str]:
        return ["rescue", "-R", str(root), "--all", "--publish"]

    seen = _kill_everywhere(tmp_path, build, argv, lambda image: 0)
    assert {"nothing", "staged", "orphan record"} <= seen, seen


def test_an_orphan_record_of_another_run_is_replaced(tmp_path: Path) -> None:
    """A record whose successor never appeared describes nothing: the next rescue publishes its own."""
    src = refused(tmp_path, "s-1")
    orphan = src.parent / RECORD
    orphan.write_bytes(b'{"kind": "dshlog-rescue", "successor": {"name": "session.v4.jsonl"}}\n')
    code, _ = _steps_run(["rescue", str(src), "--all", "--publish"], None)
    assert code == 0
    assert (src.parent / "session.v4.jsonl").is_file()
    assert b'"sha256"' in orphan.read_bytes() and b'"transformations"' in orphan.read_bytes()


def test_a_migration_removes_an_orphan_record(tmp_path: Path) -> None:
    """A successor published by ``migrate`` beside a killed rescue's record must not look rescued."""
    d = tmp_path / PROJECT / "s-1"
    d.mkdir(parents=True)
    (d / "session.jsonl").write_bytes(stored_as(V0.read_bytes(), "s-1", "/home/ann/rescue"))
    (d / RECORD).write_bytes(b'{"kind": "dshlog-rescue"}\n')
    p = run("migrate", "--no-children", "--json", str(d))
    assert p.returncode == 0, p.stderr
    assert (d / "session.v4.jsonl").is_file()
    assert not (d / RECORD).exists()
    assert f"removed leftover {RECORD}".encode() in p.stdout  # the report says what went
