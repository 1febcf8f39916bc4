"""``migrate --check`` forecasts the run: the same decision as ``--dry-run`` and the real run, without writing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import build_corpus_store, run_env
from dshlog.errors import ExitCode


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(root: Path, *flags: str) -> tuple[int, list[str], str]:
    """(exit code, the sessions that failed, relative to ``root``, the summary line)."""
    code, out, err = run_env("migrate", "-R", str(root), "-j", "1", *flags)
    failed = sorted(str(Path(line.split(" ", 1)[1]).relative_to(root)) for line in out.decode().splitlines()
                    if line.startswith("failed "))
    return code, failed, err.decode().splitlines()[-1]


@pytest.fixture(scope="module", params=["one encoding", "both encodings"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus store as dsh keeps it (one encoding), and as built (both: dsh refuses every session)."""
    return build_corpus_store(tmp_path_factory.mktemp("home"), one_encoding=request.param == "one encoding")


def test_check_forecasts_exactly_what_dry_run_and_the_run_do(store: Path, tmp_path: Path) -> None:
    before = _files(store)
    c_code, c_failed, c_line = _run(store, "--check")
    assert _files(store) == before, "--check writes nothing"
    d_code, d_failed, d_line = _run(store, "--dry-run")
    copy = tmp_path / "sessions"
    shutil.copytree(store, copy, symlinks=True)
    r_code, r_failed, r_line = _run(copy)

    assert c_failed and c_failed == d_failed == r_failed, "the same sessions fail, whichever mode"
    n_failed = len(c_failed)
    would = int(d_line.split(", ")[-1].split()[0])
    migrated = int(r_line.split()[0])
    mixed = any(store.rglob("*.jsonl.zstd"))
    assert would == migrated and (migrated == 0) == mixed, (would, migrated, mixed)  # dsh opens no session of a mixed root
    assert c_line.endswith(f", {n_failed} failed, {migrated} need migration"), c_line
    assert d_line.endswith(f", {n_failed} failed, {migrated} would migrate"), d_line
    assert c_code == d_code == r_code == ExitCode.CORRUPT  # the worst outcome: corrupt logs among them


def test_check_outside_a_root_asks_for_children_as_the_run_does(tmp_path: Path) -> None:
    from conftest import FIXTURES

    d = tmp_path / "text-turn"
    shutil.copytree(FIXTURES / "v0" / "text-turn", d)
    code, _, err = run_env("migrate", str(d), "--check")
    assert code == ExitCode.USAGE and b"--no-children" in err
    code, out, _ = run_env("migrate", str(d), "--check", "--no-children")
    assert code == ExitCode.PENDING and b"needs migration" in out
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl"]
