"""`dshlog rescue` as a person runs it: a dry run by default, publication only when asked and allowed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import FIXTURES, run_env
from dshlog.errors import ExitCode

V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def refused_session(base: Path, name: str = "s-1") -> Path:
    """A v0 session dsh refuses: its physical header lacks delegationDepth."""
    d = base / "root" / "-home-ann-demo-" / name
    d.mkdir(parents=True)
    src = d / "session.jsonl"
    data = V0.read_bytes().replace(b',"delegationDepth":0}', b"}", 1)
    assert data != V0.read_bytes()
    src.write_bytes(data)
    return src


def listing(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_the_default_is_a_dry_run_that_names_the_refusal_and_each_change(tmp_path: Path) -> None:
    src = refused_session(tmp_path)
    before = listing(src.parent)
    code, out, err = run_env("rescue", str(src))
    assert code == 0, err
    text = out.decode()
    assert 'dsh refuses it: corrupt: released v0 physical header lacks required member "delegationDepth"' in text
    assert "header-delegation-depth (not allowed)" in text and '(none) -> {"delegationDepth":0}' in text
    assert b"--allow NAME or --all" in err
    assert listing(src.parent) == before, "a dry run wrote something"


def test_publish_needs_the_transformations_allowed(tmp_path: Path) -> None:
    src = refused_session(tmp_path)
    before = listing(src.parent)
    code, _, err = run_env("rescue", str(src), "--publish")
    assert code == ExitCode.CONFLICT, err
    assert listing(src.parent) == before


def test_publish_writes_a_successor_dsh_accepts_and_a_record_of_the_source(tmp_path: Path) -> None:
    src = refused_session(tmp_path)
    source_bytes = src.read_bytes()
    code, _, err = run_env("rescue", str(src), "--allow", "header-delegation-depth", "--publish", "--json")
    assert code == 0, err
    successor = src.parent / "session.v4.jsonl"
    record = json.loads((src.parent / "session.v4.jsonl.rescue.json").read_bytes())
    assert record["source"]["sha256"] == hashlib.sha256(source_bytes).hexdigest()
    assert record["source"]["size"] == len(source_bytes)
    assert record["transformations"] == ["header-delegation-depth"]
    assert src.read_bytes() == source_bytes
    code, out, err = run_env("validate", str(successor))
    assert code == 0, out + err
    # a second run never overwrites what the first published
    code, _, err = run_env("rescue", str(src), "--all", "--publish")
    assert code == ExitCode.CONFLICT, err


def test_output_elsewhere_and_the_usage_errors(tmp_path: Path) -> None:
    src = refused_session(tmp_path)
    out = tmp_path / "rescued.v4.jsonl"
    code, _, err = run_env("rescue", str(src), "--all", "-o", str(out))
    assert code == 0, err
    assert out.read_bytes().startswith(b'{"type":"session","version":4,')
    for argv in (["--all", "--publish", "-o", str(tmp_path / "x.jsonl")], ["--dry-run", "--publish"], ["--allow", "no-such-thing"]):
        code, _, err = run_env("rescue", str(src), *argv)
        assert code == ExitCode.USAGE and err.count(b"\n") == 1, (argv, err)
    code, _, err = run_env("rescue", str(src), "-R", str(tmp_path))
    assert code == ExitCode.USAGE, err


def test_a_store_summary_counts_refusals_by_reason(tmp_path: Path) -> None:
    refused_session(tmp_path, "s-1")
    refused_session(tmp_path, "s-2")
    ok = tmp_path / "root" / "-home-ann-demo-" / "s-3"
    ok.mkdir()
    (ok / "session.jsonl").write_bytes(V0.read_bytes())
    code, out, err = run_env("rescue", "-R", str(tmp_path / "root"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["sessions"], doc["refused"], doc["rescuable"]) == (3, 2, 2)
    assert doc["reasons"] == [{"reason": 'released vN physical header lacks required member "delegationDepth"',
                               "example": 'released v0 physical header lacks required member "delegationDepth"',
                               "sessions": 2, "rescuable": 2}]
    code, out, _ = run_env("rescue", "-R", str(tmp_path / "root"))
    assert out.decode().splitlines()[-1] == "3 sessions, dsh refuses 2, rescue brings back 2"
    assert not any(p.name.startswith("session.v4") for p in (tmp_path / "root").rglob("*")), "a store summary wrote"


def test_a_refused_log_too_large_for_the_note_is_pointed_to_rescue_check(tmp_path, monkeypatch) -> None:
    """validate's note judges rescue only on a log it can hold within every reader's memory; a larger
    one is named with ``dshlog rescue FILE --check`` (which judges it) instead of being read whole."""
    from conftest import no_depth_session, run_env

    from dshlog.ops import rescuable

    log = no_depth_session(tmp_path / "s")
    code, _, err = run_env("validate", str(log))
    assert code == 4 and b"rescue can bring this session back: dshlog rescue " in err, err
    monkeypatch.setattr(rescuable, "HINT_LIMIT", log.stat().st_size - 1)
    monkeypatch.setattr(rescuable, "_stored", lambda *a, **k: pytest.fail("a log over the limit is read whole"))
    code, _, err = run_env("validate", str(log))
    assert code == 4
    assert f"rescue may bring this session back (too large to judge here; --check answers): dshlog rescue {log} --check".encode() in err, err
