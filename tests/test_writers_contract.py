"""Every writing command honours the one publication contract (``dshlog.write.transaction``).

The same cases run for ``migrate``, ``repair --write``, ``repair -o``, ``fork -o`` and
``export -o`` (the ``-o`` writers both into a plain directory and into another
session's directory):

* killed (SIGKILL) right after each step of the transaction, or failing with an
  exception at each step: the source is intact, the final name holds nothing or
  the complete file, and whatever is left is a recognised staging name that the
  next run of *another* writer into that directory removes;
* leftovers of earlier killed runs of any writer are removed (a live one is kept);
* an existing file or symlink at the final name is never overwritten or followed
  (only ``repair --write`` replaces, and it refuses a symlinked log);
* owner, group and mode: those of the source (v4 logs) or the runner's usual ones
  (exports), also when the run is not allowed to give a file away;
* a symlink at ``session.lock`` is refused, and a held lock of the target session
  refuses the ``-o`` writers too;
* a source changed during the run (its ctime alone) is refused with exit 5,
  naming the log, not the staged file.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, lock_held_elsewhere, run_env
from test_reliability_support import assert_clean_failure, leftovers, run

from dshlog.errors import ExitCode, IOFailure
from dshlog.ops.rescue import rescue_session
from dshlog.write import atomic, transaction

V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
CRASH = FIXTURES / "v4" / "crash" / "session.v4.jsonl"
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
TORN = b'{"type":"tool/result","seq":10,"ti'
PROJECT = "--home-ann-demo--"  # the fixtures' cwd (/home/ann/demo): dsh binds a session to the project of its cwd


def session_id(log: Path) -> str:
    """The header id of a fixture: a session's directory is named for it, as dsh's storage identity asks."""
    return str(json.loads(log.read_bytes().split(b"\n", 1)[0])["id"])

WRITERS = ["migrate", "repair --write", "repair -o", "fork -o", "export -o"]
OUTPUT_WRITERS = ["repair -o", "fork -o", "export -o"]
# every writer, and the -o writers once more aimed into another session's directory
PLACES = [(w, False) for w in WRITERS] + [(w, True) for w in OUTPUT_WRITERS]
PLACE_IDS = [w + (" into a session" if s else "") for w, s in PLACES]


@dataclass
class Scene:
    """One writer set up on fresh files below ``base``."""

    writer: str
    argv: list[str]
    source: Path  # the log the writer reads
    target_dir: Path  # where the output appears (and leftovers would be)
    final: Path  # the output's final name
    lock_dir: Path | None  # the session directory whose lock the writer must hold
    source_bytes: bytes

    @property
    def in_place(self) -> bool:
        return self.writer == "repair --write"

    @property
    def v4_output(self) -> bool:
        return self.writer != "export -o"


def make_scene(base: Path, writer: str, into_session: bool = False) -> Scene:
    root = base / "root" / PROJECT
    if writer == "migrate":
        d = root / session_id(V0)
        d.mkdir(parents=True)
        src = d / "session.jsonl"
        src.write_bytes(V0.read_bytes())
        return Scene(writer, ["migrate", "--no-children", str(d)], src, d, d / "session.v4.jsonl", d, src.read_bytes())
    if writer == "repair --write":
        d = root / session_id(CRASH)
        d.mkdir(parents=True)
        log = d / "session.v4.jsonl"
        log.write_bytes(CRASH.read_bytes() + TORN)
        return Scene(writer, ["repair", "--write", str(log)], log, d, log, d, log.read_bytes())
    fixture = CRASH if writer == "repair -o" else LOOP
    sd = root / session_id(fixture)
    sd.mkdir(parents=True)
    src = sd / "session.v4.jsonl"
    src.write_bytes(fixture.read_bytes())
    if into_session:
        out = root / "other-001"  # another session: its generation and its lock file
        out.mkdir(parents=True)
        (out / "session.v4.jsonl").write_bytes(LOOP.read_bytes().replace(b"loop-0001", b"other-001"))
        (out / "session.lock").touch()
    else:
        out = base / "out"
        out.mkdir(parents=True)
    lock = out if into_session else None
    if writer == "repair -o":
        final = out / "repaired.jsonl"
        argv = ["repair", str(src), "-o", str(final)]
    elif writer == "fork -o":
        final = out / "child.jsonl"
        argv = ["fork", str(src), "-o", str(final), "--id", "child-1"]
    else:
        final = out / "export.html"
        argv = ["export", str(src), "-f", "html", "-o", str(final)]
    return Scene(writer, argv, src, out, final, lock, src.read_bytes())


def normal(data: bytes) -> bytes:
    """Output bytes without the one clock-dependent field (a fork child's createdAt)."""
    return re.sub(rb'"createdAt":[0-9]+', b'"createdAt":0', data, count=1)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """What an uninterrupted run of each writer publishes."""
    out: dict[str, bytes] = {}
    for writer in WRITERS:
        sc = make_scene(tmp_path_factory.mktemp("ref"), writer)
        p = run(*sc.argv)
        assert p.returncode == 0, p.stderr
        out[writer] = normal(sc.final.read_bytes())
    return out


def sweeper(sc: Scene, name: str = "sweep.md") -> list[str]:
    """Another writer (an export) into the same directory: the "next run of any writer"."""
    return ["export", str(LOOP), "-o", str(sc.target_dir / name)]


def assert_intact_or_complete(sc: Scene, reference: dict[str, bytes]) -> str:
    """The invariant after any interruption; returns what is at the final name."""
    if sc.in_place:
        data = sc.final.read_bytes()
        assert data == sc.source_bytes or normal(data) == reference[sc.writer], "half-repaired log"
        return "original" if data == sc.source_bytes else "complete"
    assert sc.source.read_bytes() == sc.source_bytes, "source changed"
    if not os.path.lexists(sc.final):
        return "absent"
    assert normal(sc.final.read_bytes()) == reference[sc.writer], "a partial file under the final name"
    return "complete"


def other_names(sc: Scene) -> set[str]:
    """Names in the target directory besides what the scene put there and the outputs."""
    known = {sc.final.name, sc.source.name, "session.lock", "session.v4.jsonl", "sweep.md", "sweep2.md"}
    return {n for n in os.listdir(sc.target_dir) if n not in known and ".torn-" not in n}


# ----------------------------------------------------------------------------- crash at each step

# Run the CLI with SIGKILL right after (or, for verify/dirsync, right before) one step.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from dshlog.write import atomic, transaction

    step = sys.argv[1]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def after(owner, name):
        real = getattr(owner, name)

        def wrapped(*a, **k):
            result = real(*a, **k)
            die()
            return result

        setattr(owner, name, wrapped)

    if step == "stage":
        after(atomic, "stage_file")
    elif step == "write":
        after(atomic.StagedFile, "write")
    elif step == "sync":
        after(atomic.StagedFile, "sync_and_close")
    elif step == "verify":
        transaction.Publication.verify_staged = lambda *a, **k: die()
    elif step == "link":
        after(os, "link")
    elif step == "rename":
        after(os, "replace")
    elif step == "dirsync":
        atomic.fsync_dir = lambda *a, **k: die()
    from dshlog.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)
STEPS = ["stage", "write", "sync", "verify", "link", "rename", "dirsync"]


def _reached(writer: str, step: str) -> bool:
    return step != "rename" or writer == "repair --write"


KILLS = [(w, s, st) for (w, s) in PLACES for st in STEPS if _reached(w, st)]


@pytest.mark.parametrize("writer, into_session, step", KILLS,
                         ids=[f"{w}{' into a session' if s else ''}-{st}" for w, s, st in KILLS])
def test_kill9_at_each_step_leaves_nothing_partial_and_the_next_writer_cleans(
    tmp_path: Path, reference: dict[str, bytes], writer: str, into_session: bool, step: str
) -> None:
    sc = make_scene(tmp_path, writer, into_session)
    p = subprocess.run([sys.executable, "-c", KILLER, step, *sc.argv], capture_output=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stderr)
    state = assert_intact_or_complete(sc, reference)
    if step in ("link", "dirsync") and not sc.in_place:
        assert state == "complete", "killed after link(): the file is published"
    if step in ("stage", "write", "sync", "verify"):
        assert state in ("absent", "original"), "published before it was verified"
    rest = other_names(sc)
    assert rest <= set(leftovers(sc.target_dir)), f"unrecognised files {rest}"
    if step in ("stage", "write", "sync", "verify"):
        assert rest, "the kill should have left the staged file"
    # the next run of a different writer into the same directory removes every leftover
    q = run(*sweeper(sc))
    assert q.returncode == 0, q.stderr
    assert leftovers(sc.target_dir) == [], "the next writer did not clean the leftovers"
    # and the killed writer, run again, completes (or refuses a complete output it never overwrites)
    r = run(*sc.argv)
    assert r.returncode == (5 if state == "complete" and not sc.in_place and writer != "migrate" else 0), r.stderr
    assert normal(sc.final.read_bytes()) == reference[writer]
    assert sc.source.read_bytes() == sc.source_bytes or sc.in_place
    assert leftovers(sc.target_dir) == []


# ----------------------------------------------------------------------------- exception at each step


def _inject(monkeypatch: pytest.MonkeyPatch, step: str, exc: BaseException) -> None:
    def boom(*a: object, **k: object) -> None:
        raise exc

    def os_boom(*a: object, **k: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO)) if not isinstance(exc, KeyboardInterrupt) else exc

    target = {
        "stage": (atomic, "stage_file", boom),
        "write": (atomic.StagedFile, "write", boom),
        "sync": (atomic.StagedFile, "sync_and_close", boom),
        "verify": (transaction.Publication, "verify_staged", boom),
        "link": (os, "link", os_boom),
        "rename": (os, "replace", os_boom),
    }[step]
    monkeypatch.setattr(*target)


@pytest.mark.parametrize("kind", ["io-error", "interrupt"])
@pytest.mark.parametrize("step", ["stage", "write", "sync", "verify", "link", "rename"])
@pytest.mark.parametrize("writer", WRITERS)
def test_failure_at_each_step_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    writer: str, step: str, kind: str,
) -> None:
    if not _reached(writer, step):
        pytest.skip("only repair --write renames")
    sc = make_scene(tmp_path, writer)
    exc: BaseException = IOFailure("injected failure", path="x") if kind == "io-error" else KeyboardInterrupt()
    with monkeypatch.context() as m:
        _inject(m, step, exc)
        code, _, err = run_env(*sc.argv)
    assert code == (130 if kind == "interrupt" else ExitCode.IO), err
    if sc.in_place:
        assert sc.final.read_bytes() == sc.source_bytes
    else:
        assert not os.path.lexists(sc.final)
        assert sc.source.read_bytes() == sc.source_bytes
    assert leftovers(sc.target_dir) == [], "a failed run left its staged file"
    assert not [n for n in os.listdir(sc.target_dir) if ".torn-" in n] or step == "rename"
    # the lock was released: the same run now succeeds
    code, _, err = run_env(*sc.argv)
    assert code == 0, err


# ----------------------------------------------------------------------------- earlier leftovers


@pytest.mark.parametrize("writer, into_session", PLACES, ids=PLACE_IDS)
def test_leftovers_of_any_earlier_run_are_removed_but_a_live_one_is_kept(
    tmp_path: Path, reference: dict[str, bytes], writer: str, into_session: bool
) -> None:
    sc = make_scene(tmp_path, writer, into_session)
    d = sc.target_dir
    dead = [
        d / ".repaired.jsonl.dshlog-0123456789abcdef.tmp",  # a killed repair -o
        d / ".child.jsonl.dshlog-1111111111111111.tmp",  # a killed fork -o
        d / ".export.html.dshlog-2222222222222222.tmp",  # a killed export -o
        d / ".session.v4.jsonl.dshlog-3333333333333333.tmp",  # a killed repair --write
    ]
    migration = d / "session.migration.4444444444444444.jsonl.tmp"  # a killed migrate (or dsh)
    live = d / ".other.jsonl.dshlog-5555555555555555.tmp"
    for p in [*dead, migration, live]:
        p.write_bytes(b"partial")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = run(*sc.argv)
        assert p.returncode == 0, p.stderr
        assert not any(x.exists() for x in dead)
        assert live.exists(), "a live writer's staged file was removed"
        # dsh's migration name carries no mark of its own: only a holder of the session lock removes it
        assert migration.exists() == (sc.lock_dir is None)
    finally:
        os.close(fd)
    assert normal(sc.final.read_bytes()) == reference[writer]


# ----------------------------------------------------------------------------- existing targets


def _plant(sc: Scene, what: str, victim: Path) -> None:
    if what == "file":
        sc.final.write_bytes(b"keep me\n")
        return
    if what == "symlink":
        victim.write_bytes(b"keep me too\n")
    sc.final.symlink_to(victim)


@pytest.mark.parametrize("what", ["file", "dangling symlink", "symlink"])
@pytest.mark.parametrize("when", ["before", "during"])
@pytest.mark.parametrize("writer", [w for w in WRITERS if w != "repair --write"])
def test_existing_target_is_never_overwritten_nor_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    writer: str, when: str, what: str,
) -> None:
    """Taken before the run (the early check) or while it runs (then link() itself refuses)."""
    if writer == "migrate" and when == "before":
        pytest.skip("a file at the successor's name is the session's newest generation: migrate reads it instead")
    sc = make_scene(tmp_path, writer)
    victim = tmp_path / "victim"
    if when == "before":
        _plant(sc, what, victim)
    else:
        real = transaction.Publication.verify_staged

        def plant_then_verify(self: transaction.Publication, *a: object, **k: object) -> None:
            real(self, *a, **k)
            _plant(sc, what, victim)

        monkeypatch.setattr(transaction.Publication, "verify_staged", plant_then_verify)
    code, _, err = run_env(*sc.argv)
    assert code == ExitCode.CONFLICT, err
    assert b"already exists" in err or b"refusing to overwrite" in err, err
    if what == "file":
        assert sc.final.read_bytes() == b"keep me\n"
    else:
        assert sc.final.is_symlink()
    assert (victim.read_bytes() == b"keep me too\n") if what == "symlink" else not victim.exists()
    assert sc.source.read_bytes() == sc.source_bytes
    assert leftovers(sc.target_dir) == []


def test_repair_write_replaces_the_log_itself_and_refuses_a_symlinked_one(tmp_path: Path, reference: dict[str, bytes]) -> None:
    sc = make_scene(tmp_path, "repair --write")
    inode = sc.final.stat().st_ino
    assert run(*sc.argv).returncode == 0
    assert normal(sc.final.read_bytes()) == reference["repair --write"] and sc.final.stat().st_ino != inode
    other = make_scene(tmp_path / "2", "repair --write")
    real = other.target_dir / "real.v4.jsonl"
    other.final.rename(real)
    other.final.symlink_to(real.name)
    line = assert_clean_failure(run(*other.argv), (5,))
    assert "symbolic link" in line, line
    assert real.read_bytes() == other.source_bytes and other.final.is_symlink()
    assert leftovers(other.target_dir) == []


# ----------------------------------------------------------------------------- owner, group and mode

OWNER = (12345, 23456)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another owner needs root")
@pytest.mark.parametrize("writer, into_session", PLACES, ids=PLACE_IDS)
def test_owner_group_and_mode_of_the_source_are_kept(tmp_path: Path, writer: str, into_session: bool) -> None:
    """Run as root on a session that belongs to someone else: the output stays theirs (exports are the runner's)."""
    sc = make_scene(tmp_path, writer, into_session)
    os.chown(sc.source, *OWNER)
    os.chmod(sc.source, 0o640)
    lock = sc.lock_dir / "session.lock" if sc.lock_dir is not None else None
    created_lock = lock is not None and not lock.exists()
    p = run(*sc.argv)
    assert p.returncode == 0, p.stderr
    st = sc.final.stat()
    if sc.v4_output:
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (*OWNER, 0o640)
    else:
        umask = os.umask(0o22)
        os.umask(umask)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o666 & ~umask)
    if created_lock and sc.v4_output:
        ls = lock.stat()  # type: ignore[union-attr]  # created_lock: the lock path is known
        assert (ls.st_uid, ls.st_gid) == OWNER, "the session's owner could no longer lock it"
    if writer == "repair --write":
        side = [n for n in os.listdir(sc.target_dir) if ".torn-" in n]
        assert len(side) == 1
        ss = (sc.target_dir / side[0]).stat()
        assert (ss.st_uid, ss.st_gid, stat.S_IMODE(ss.st_mode)) == (*OWNER, 0o640)
    assert b"warning" not in p.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another owner needs root")
def test_fork_into_a_new_directory_gives_it_to_the_parents_owner(tmp_path: Path) -> None:
    src = tmp_path / "parent" / "session.v4.jsonl"
    src.parent.mkdir()
    src.write_bytes(LOOP.read_bytes())
    os.chown(src, *OWNER)
    out = tmp_path / "child"
    p = run("fork", str(src), "-o", str(out) + "/")
    assert p.returncode == 0, p.stderr
    for path in (out, out / "session.lock", out / "session.v4.jsonl"):
        st = path.stat()
        assert (st.st_uid, st.st_gid) == OWNER, path
    assert stat.S_IMODE(out.stat().st_mode) == 0o700


def _setpriv() -> list[str] | None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if run("--version", prefix=prefix).returncode != 0:
        return None  # e.g. the checkout is not readable by that user
    return prefix


@pytest.mark.parametrize("writer", OUTPUT_WRITERS)
def test_a_run_that_cannot_give_the_file_away_keeps_what_it_can_and_says_so(writer: str) -> None:
    """Not root: the output stays the runner's, the source's mode still applies, and a warning says so."""
    prefix = _setpriv()
    if prefix is None:
        pytest.skip("needs root, setpriv, and a checkout another user can run")
    base = Path(tempfile.mkdtemp(prefix="dshlog-owner-"))  # outside pytest's 0700 directories
    try:
        sc = make_scene(base, writer)
        for dirpath, _, _ in os.walk(base):
            os.chmod(dirpath, 0o777)
        os.chown(sc.source, *OWNER)
        os.chmod(sc.source, 0o644)
        p = run(*sc.argv, prefix=prefix, timeout=60)
        assert p.returncode == 0, p.stderr
        st = sc.final.stat()
        assert (st.st_uid, st.st_gid) == (65534, 65534)
        if sc.v4_output:
            assert stat.S_IMODE(st.st_mode) == 0o644
            assert b"warning" in p.stderr and b"kept owner uid 65534, gid 65534" in p.stderr, p.stderr
        else:
            assert b"warning" not in p.stderr  # an export is the runner's anyway
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ----------------------------------------------------------------------------- session.lock


@pytest.mark.parametrize("writer, into_session", [pl for pl in PLACES if pl[0] in ("migrate", "repair --write") or pl[1]],
                         ids=[i for pl, i in zip(PLACES, PLACE_IDS) if pl[0] in ("migrate", "repair --write") or pl[1]])
def test_symlink_at_session_lock_is_refused(tmp_path: Path, writer: str, into_session: bool) -> None:
    sc = make_scene(tmp_path, writer, into_session)
    assert sc.lock_dir is not None
    lock = sc.lock_dir / "session.lock"
    if lock.exists():
        lock.unlink()
    victim = tmp_path / "elsewhere.lock"
    lock.symlink_to(victim)
    line = assert_clean_failure(run(*sc.argv), (5,))
    assert "session.lock is a symbolic link" in line, line
    assert not victim.exists(), "the lock was opened through the symlink"
    assert lock.is_symlink()
    assert_intact_or_nothing(sc)


def assert_intact_or_nothing(sc: Scene) -> None:
    if sc.in_place:
        assert sc.final.read_bytes() == sc.source_bytes
    else:
        assert not os.path.lexists(sc.final)
    assert sc.source.read_bytes() == sc.source_bytes
    assert leftovers(sc.target_dir) == []


@pytest.mark.parametrize("writer", OUTPUT_WRITERS)
def test_output_into_a_session_directory_holds_its_lock(tmp_path: Path, writer: str) -> None:
    """-o into another session's directory waits for nobody: refused (exit 5) while that session is held."""
    sc = make_scene(tmp_path, writer, into_session=True)
    with lock_held_elsewhere(sc.target_dir) as pid:
        line = assert_clean_failure(run(*sc.argv), (5,))
        assert "already owned" in line and f"pid {pid}" in line, line
        assert_intact_or_nothing(sc)
    assert run(*sc.argv).returncode == 0


def test_a_generation_is_never_published_next_to_another_sessions(tmp_path: Path) -> None:
    """fork -o DIR/ (or repair -o DIR/session.v4.jsonl) into a directory holding a session would
    change which log dsh reads there: refused, nothing written."""
    sc = make_scene(tmp_path, "fork -o", into_session=True)
    (sc.target_dir / "session.v4.jsonl").rename(sc.target_dir / "session.jsonl")
    before = sorted(os.listdir(sc.target_dir))
    for argv in (["fork", str(sc.source), "-o", str(sc.target_dir) + "/"],
                 ["repair", str(sc.source), "-o", str(sc.target_dir / "session.v4.jsonl")]):
        line = assert_clean_failure(run(*argv), (5,))
        assert "already holds the session generation session.jsonl" in line, line
    assert sorted(os.listdir(sc.target_dir)) == before


# ----------------------------------------------------------------------------- source changed


@pytest.mark.parametrize("change", ["ctime", "append"])
@pytest.mark.parametrize("writer", WRITERS)
def test_source_changed_during_the_run_is_refused_naming_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str, change: str
) -> None:
    sc = make_scene(tmp_path, writer)
    real = transaction.Publication.verify_staged

    def change_then_verify(self: transaction.Publication, *a: object, **k: object) -> None:
        real(self, *a, **k)
        if change == "ctime":
            os.chmod(sc.source, stat.S_IMODE(os.stat(sc.source).st_mode))  # same mode: only the ctime moves
        else:
            with open(sc.source, "ab") as fh:
                fh.write(b"\n")

    monkeypatch.setattr(transaction.Publication, "verify_staged", change_then_verify)
    code, _, err = run_env(*sc.argv)
    assert code == ExitCode.CONFLICT, err
    line = err.decode().strip().splitlines()[-1] if writer != "migrate" else err.decode()
    assert str(sc.source) in line and ".tmp" not in line, line
    assert "changed" in line
    if sc.in_place:
        assert sc.final.read_bytes().startswith(sc.source_bytes)  # only what the test appended
    else:
        assert not os.path.lexists(sc.final)
    assert leftovers(sc.target_dir) == []


# ----------------------------------------------------------------------------- rescue
# ``rescue`` publishes a successor (and, just before its name appears, the rescue record)
# through the same transaction: the same kills and the same invariants, through the CLI.

RESCUE_STEPS = ["stage", "write", "sync", "verify", "link", "dirsync"]


def rescue_scene(base: Path) -> tuple[Path, Path, bytes]:
    """A v0 session dsh refuses (its header lacks delegationDepth): (source, successor, source bytes)."""
    d = base / "root" / PROJECT / session_id(V0)
    d.mkdir(parents=True)
    src = d / "session.jsonl"
    src.write_bytes(V0.read_bytes().replace(b',"delegationDepth":0}', b"}", 1))
    return src, d / "session.v4.jsonl", src.read_bytes()


def _rescue(src: Path, step: str | None = None) -> subprocess.CompletedProcess[bytes]:
    code = KILLER if step is not None else KILLER.replace("step = sys.argv[1]", "step = None")
    argv = [step or "-", "rescue", str(src), "--all", "--publish"]
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def rescued_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    """(successor, record) of an uninterrupted rescue."""
    src, final, _ = rescue_scene(tmp_path_factory.mktemp("rescue-ref"))
    p = _rescue(src)
    assert p.returncode == 0, p.stderr
    record = final.with_name(final.name + ".rescue.json")
    return final.read_bytes(), record.read_bytes().replace(str(src.resolve()).encode(), b"SOURCE")


def test_rescue_reference_is_a_rescue(rescued_reference: tuple[bytes, bytes]) -> None:
    successor, record = rescued_reference
    assert successor.startswith(b'{"type":"session","version":4,')
    assert b'"transformations": [\n    "header-delegation-depth"\n  ]' in record


@pytest.mark.parametrize("step", RESCUE_STEPS)
def test_rescue_kill9_at_each_step_keeps_the_source_and_publishes_all_or_nothing(
    tmp_path: Path, rescued_reference: tuple[bytes, bytes], step: str
) -> None:
    src, final, source_bytes = rescue_scene(tmp_path)
    record = final.with_name(final.name + ".rescue.json")
    p = _rescue(src, step)
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stderr)
    assert src.read_bytes() == source_bytes, "source changed"
    if os.path.lexists(final):
        assert step in ("link", "dirsync") and final.read_bytes() == rescued_reference[0], "a partial successor"
        assert record.exists(), "a successor without its rescue record"
    if record.exists():
        assert record.read_bytes().replace(str(src.resolve()).encode(), b"SOURCE") == rescued_reference[1]
    if step in ("stage", "write", "sync", "verify"):
        assert not os.path.lexists(final) and not record.exists(), "published before it was verified"
        assert leftovers(src.parent), "the kill should have left the staged file"
    # run again: it completes (after a complete run it refuses to overwrite), the source untouched
    complete = os.path.lexists(final)
    q = _rescue(src)
    assert q.returncode == (ExitCode.CONFLICT if complete else 0), q.stderr
    assert final.read_bytes() == rescued_reference[0]
    assert record.read_bytes().replace(str(src.resolve()).encode(), b"SOURCE") == rescued_reference[1]
    assert src.read_bytes() == source_bytes
    assert leftovers(src.parent) == []


@pytest.mark.parametrize("kind", ["io-error", "interrupt"])
@pytest.mark.parametrize("step", ["stage", "write", "sync", "verify", "link"])
def test_rescue_failure_at_each_step_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, kind: str
) -> None:
    src, final, source_bytes = rescue_scene(tmp_path)
    exc: BaseException = IOFailure("injected failure", path="x") if kind == "io-error" else KeyboardInterrupt()
    with monkeypatch.context() as m:
        _inject(m, step, exc)
        if kind == "interrupt":
            with pytest.raises(KeyboardInterrupt):
                rescue_session(src, all_=True, publish=True)
        else:
            out = rescue_session(src, all_=True, publish=True)
            assert out.status == "failed" and out.exit_code == ExitCode.IO, out.as_dict()
    assert src.read_bytes() == source_bytes
    assert not os.path.lexists(final)
    assert not os.path.lexists(final.with_name(final.name + ".rescue.json"))
    assert leftovers(src.parent) == [], "a failed run left its staged file"
    out = rescue_session(src, all_=True, publish=True)
    assert out.status == "rescued", out.as_dict()
    assert src.read_bytes() == source_bytes
