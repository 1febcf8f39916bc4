"""``rescue`` at store scale: ``-R ROOT`` rescues every session it can, ``--check`` says whether one needs it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, build_corpus_store, run_env, run_process
from dshlog.errors import ExitCode

V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def refused_session(root: Path, name: str) -> Path:
    """A v0 session of ``root`` dsh refuses (its header lacks delegationDepth); rescue brings it back."""
    d = root / "-home-ann-demo-" / name
    d.mkdir(parents=True)
    src = d / "session.jsonl"
    src.write_bytes(V0.read_bytes().replace(b',"delegationDepth":0}', b"}", 1))
    return src


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_corpus_store(tmp_path_factory.mktemp("home"), one_encoding=True)  # both encodings: dsh opens none


# ----------------------------------------------------------------------------- -R ROOT --publish


def test_a_store_is_rescued_as_far_as_it_can_be(store: Path, tmp_path: Path) -> None:
    before = files(store)
    code, out, err = run_env("rescue", "-R", str(store), "--all", "--json")
    assert files(store) == before, "a dry run wrote"
    dry = json.loads(out)
    assert dry["rescuable"] > 50 and dry["rescued"] == 0
    # every reason shows a real refusal, digits kept, and one of its own sessions says exactly that
    refusals = {o["refusal"]["message"] for o in dry["outcomes"] if o.get("refusal")}
    for r in dry["reasons"]:
        assert r["example"] in refusals and re.sub(r"\d+", "N", r["example"]) == r["reason"]
    assert any(re.search(r"\d", r["example"]) for r in dry["reasons"])

    copy = tmp_path / "sessions"
    shutil.copytree(store, copy, symlinks=True)
    code, out, err = run_env("rescue", "-R", str(copy), "--all", "--publish", "--json")
    run = json.loads(out)
    assert run["rescued"] == dry["rescuable"], err
    assert code in (ExitCode.CORRUPT, ExitCode.UNSUPPORTED)  # the worst outcome: sessions rescue cannot bring back
    rescued = [o for o in run["outcomes"] if o["status"] == "rescued"]
    assert all(Path(o["target"]).is_file() and Path(o["record"]).is_file() for o in rescued)
    # dsh opens every rescued session now: only those rescue cannot bring back are still refused
    code, out, err = run_env("rescue", "-R", str(copy), "--all", "--json")
    again = json.loads(out)
    assert again["refused"] == dry["refused"] - dry["rescuable"] and again["rescuable"] == 0
    # and a second publishing run changes nothing
    snap = files(copy)
    run_env("rescue", "-R", str(copy), "--all", "--publish")
    assert files(copy) == snap


def test_the_store_summary_has_headed_columns_and_real_refusals(store: Path) -> None:
    code, out, err = run_env("rescue", "-R", str(store))
    lines = out.decode().splitlines()
    head = lines.index("refused\trescuable\treason (first example)")
    rows = [line.split("\t") for line in lines[head + 1:-1]]
    assert rows and all(a.isdigit() and b.isdigit() for a, b, _ in rows)
    reasons = [reason for _, _, reason in rows]
    assert 'released v0 physical header lacks required member "delegationDepth"' in reasons or \
           'released v1 physical header lacks required member "delegationDepth"' in reasons
    assert not any(" vN " in r or "seq N" in r for r in reasons), reasons
    assert re.fullmatch(r"\d+ sessions, dsh refuses \d+, rescue brings back \d+", lines[-1]), lines[-1]
    assert not any(line.startswith("would rescue ") for line in lines)  # nothing allowed: each needs --allow
    assert any(line.startswith("not allowed ") for line in lines)


def test_a_generated_store_published_with_allow(tmp_path: Path) -> None:
    root = tmp_path / "root"
    a, b = refused_session(root, "s-1"), refused_session(root, "s-2")
    code, out, err = run_env("rescue", "-R", str(root), "--allow", "header-delegation-depth")
    assert code == 0, err
    assert out.decode().splitlines()[:2] == [f"would rescue {a} (header-delegation-depth)", f"would rescue {b} (header-delegation-depth)"]
    assert not any(p.name.startswith("session.v4") for p in root.rglob("*"))
    code, out, err = run_env("rescue", "-R", str(root), "--allow", "header-delegation-depth", "--publish")
    assert code == 0, err
    assert out.decode().splitlines()[0] == f"rescued {a} -> {a.parent / 'session.v4.jsonl'} (17 events; header-delegation-depth)"
    for s in (a, b):
        assert (s.parent / "session.v4.jsonl.rescue.json").is_file()
        code, _, err = run_env("validate", str(s.parent))
        assert code == 0, err


# ----------------------------------------------------------------------------- --check


def test_check_exits_10_when_a_session_needs_rescue(tmp_path: Path) -> None:
    root = tmp_path / "root"
    src = refused_session(root, "s-1")
    before = files(root)
    code, out, err = run_env("rescue", "-R", str(root), "--check")
    assert code == ExitCode.PENDING, err
    code, out, err = run_env("rescue", str(src), "--check")
    assert code == ExitCode.PENDING, err
    assert files(root) == before, "--check wrote"
    for argv in (["-R", str(root), "--all", "--publish", "--check"], [str(src), "--all", "--publish", "--check"],
                 [str(src), "--check", "-o", str(tmp_path / "x.jsonl")]):
        code, _, err = run_env("rescue", *argv)
        assert code == ExitCode.USAGE and err.count(b"\n") == 1, (argv, err)
    assert files(root) == before
    run_env("rescue", "-R", str(root), "--all", "--publish")
    code, out, err = run_env("rescue", "-R", str(root), "--check")
    assert code == 0, out + err
    code, out, err = run_env("rescue", str(src.parent), "--check")
    assert code == 0, out + err


# ----------------------------------------------------------------------------- validate and migrate name rescue


def test_validate_and_migrate_name_rescue_when_it_brings_the_session_back(tmp_path: Path) -> None:
    src = refused_session(tmp_path / "root", "s-1")
    note = f"rescue can bring this session back: dshlog rescue {src}"
    code, out, err = run_env("validate", str(src))
    assert code == ExitCode.CORRUPT and f"{src}: {note}\n".encode() in err, err
    code, out, err = run_env("validate", str(src), "--json")
    assert json.loads(out)["files"][0]["rescue"] == note
    code, out, err = run_env("migrate", str(src), "--no-children")
    assert code == ExitCode.CORRUPT and f"dshlog: {src}: {note}\n".encode() in err, err
    # a log dsh opens, or one rescue cannot bring back, gets no such note
    ok = tmp_path / "ok" / "session.jsonl"
    ok.parent.mkdir()
    ok.write_bytes(V0.read_bytes())
    broken = tmp_path / "broken" / "session.jsonl"
    broken.parent.mkdir()
    broken.write_bytes(V0.read_bytes().replace(b'"type":"turn/start"', b'"type":"turn/begun"'))
    for path, exit_code in ((ok, 0), (broken, ExitCode.UNSUPPORTED)):
        code, out, err = run_env("validate", str(path))
        assert code == exit_code and b"dshlog rescue" not in out + err, (path, code, err)


def test_the_store_notes_name_rescue_exactly_for_the_sessions_it_brings_back(store: Path) -> None:
    code, out, err = run_env("rescue", "-R", str(store), "--json")
    rescuable = sorted(o["source"] for o in json.loads(out)["outcomes"] if o["status"] in ("rescuable", "needs-allow"))
    code, out, err = run_env("migrate", "-R", str(store), "--dry-run", "-j", "1", "--json")
    noted = sorted(o["source"] for o in json.loads(out)["sessions"]
                   if any(n.startswith("rescue can bring this session back: dshlog rescue ") for n in o.get("notes", ())))
    assert noted == rescuable and rescuable


# ----------------------------------------------------------------------------- what rescue will not open


def test_a_dangling_link_is_an_io_error_and_a_device_is_never_opened(tmp_path: Path) -> None:
    d = tmp_path / "root" / "-home-ann-demo-" / "s-1"
    d.mkdir(parents=True)
    (d / "session.jsonl").symlink_to(tmp_path / "gone.jsonl")
    code, out, err = run_env("rescue", str(d / "session.jsonl"))
    assert code == ExitCode.IO and err.count(b"\n") == 1 and b"session.jsonl" in err, err
    (d / "session.jsonl").unlink()
    (d / "session.jsonl").symlink_to("/dev/zero")
    code, out, err = run_env("rescue", str(d / "session.jsonl"), "--all", "--publish")
    assert code == ExitCode.USAGE and b"not a regular file" in err and err.count(b"\n") == 1, err
    assert sorted(p.name for p in d.iterdir()) == ["session.jsonl"]


def test_an_unreadable_log_is_an_io_error(tmp_path: Path) -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is absent: no way to run as an unprivileged user")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if run_process("--version", prefix=nobody, cwd="/", timeout=None).returncode != 0:
        pytest.skip("needs a checkout the unprivileged user can run (this one sits in a private directory)")
    tmp_path.chmod(0o755)
    src = refused_session(tmp_path / "root", "s-1")
    for p in (tmp_path / "root", src.parent.parent, src.parent):
        p.chmod(0o755)
    src.chmod(0o000)
    proc = run_process("rescue", str(src), prefix=nobody, timeout=120, cwd=tmp_path)
    if b"Permission denied" in proc.stderr and b"dshlog" not in proc.stderr:
        pytest.skip(f"the unprivileged user cannot run the interpreter here: {proc.stderr[:200]!r}")
    assert proc.returncode == ExitCode.IO and proc.stderr.count(b"\n") == 1, proc.stderr


def test_a_session_refused_for_where_it_sits_is_not_offered_rescue(tmp_path: Path) -> None:
    """A successor beside it would sit in the same place: rescue, validate and migrate say so, never "rescue can"."""
    from dshlog.output.labels import PLACE_NOT_RESCUED

    root = tmp_path / "sessions"
    d = root / "--home-ann-demo--" / "another-id"  # the header says 5f0c2d1e-...: dsh refuses the lookup by this id
    d.mkdir(parents=True)
    src = d / "session.jsonl"
    src.write_bytes(V0.read_bytes().replace(b',"delegationDepth":0}', b"}", 1))
    code, out, err = run_env("rescue", str(src), "--json")
    outcome = json.loads(out)
    assert outcome["status"] == "cannot" and outcome["why"].startswith(f"{PLACE_NOT_RESCUED}: "), outcome
    assert 'requested id "another-id" does not match header id' in outcome["why"]
    assert code == ExitCode.CORRUPT
    for argv in (["validate", str(src)], ["migrate", str(src.parent), "--no-children", "--dry-run"]):
        code, out, err = run_env(*argv)
        assert code == ExitCode.CORRUPT and b"dshlog rescue" not in out + err, (argv, out, err)
    # written elsewhere (-o), the successor is not bound to this place: rescue goes on
    code, out, err = run_env("rescue", str(src), "--all", "-o", str(tmp_path / "out.jsonl"))
    assert code == ExitCode.OK, err


def test_the_banner_of_a_session_refused_for_where_it_sits_names_no_rescue(tmp_path: Path) -> None:
    """show, export md and export json say dsh's refusal, and that rescue does not change where it sits."""
    from dshlog.output.labels import PLACE_NOT_RESCUED

    d = tmp_path / "sessions" / "--home-ann-demo--" / "another-id"
    d.mkdir(parents=True)
    (d / "session.jsonl").write_bytes(V0.read_bytes())  # a log dsh opens, stored under another id
    code, out, err = run_env("show", str(d))
    assert code == ExitCode.CORRUPT, err
    first, second = out.decode().splitlines()[:2]
    assert 'requested id "another-id" does not match header id' in first, first
    assert second.endswith(PLACE_NOT_RESCUED) and "dshlog rescue" not in out.decode(), second
    code, out, err = run_env("export", str(d), "-f", "json")
    assert json.loads(out)["refusal"]["rescue"] is None
    code, out, err = run_env("export", str(d), "-f", "md")
    assert PLACE_NOT_RESCUED in out.decode() and "dshlog rescue" not in out.decode()
