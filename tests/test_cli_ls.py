"""``dshlog ls`` over a temporary root, and FILE resolution (ids, the current session) in the commands."""

from __future__ import annotations

import os
import shutil

import orjson
import pytest

from conftest import FIXTURES, run_env
from dshlog.errors import ExitCode
from dshlog.read.store import session_dir
from test_store import put


@pytest.fixture
def root(tmp_path):
    """A root laid out as dsh does, built from the fixtures."""
    r = tmp_path / "sessions"
    put(r, "loop", sid="loop-0001", mtime=1_000)
    put(r, "crash", sid="crash-0001", mtime=2_000)
    put(r, "crash", sid="fork-0002", parentSession="loop-0001", mtime=3_000)
    d = session_dir(r, "/srv/zz", "zstd-0003")
    d.mkdir(parents=True)
    z = FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd"
    shutil.copyfile(z, d / "session.v4.jsonl.zstd")  # its header says loop-0001 in /home/ann/demo
    return r


def ndjson(out: bytes) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines()]


def test_ls_json_shape(root):
    code, out, err = run_env("ls", str(root), "--json", "--sort", "id")
    assert code == 0
    rows = ndjson(out)
    assert [r["id"] for r in rows] == ["crash-0001", "fork-0002", "loop-0001", "loop-0001"]
    want = {"shape", "id", "title", "prompt", "cwd", "project", "dir", "path", "generation", "version", "size", "events", "turns",
            "createdAt", "lastActivity", "lastEventTime", "mtime", "parentSession", "origin", "children", "error"}
    for r in rows:
        assert set(r) == want and r["shape"] == 1
    loop = rows[2]
    assert (loop["turns"], loop["events"], loop["version"], loop["generation"], loop["cwd"]) == (4, 41, 4, "session.v4.jsonl", "/home/ann/demo")
    assert loop["size"] == (FIXTURES / "v4/loop/session.v4.jsonl").stat().st_size
    assert loop["children"] == ["fork-0002"] and rows[1]["parentSession"] == "loop-0001"
    z = rows[3]
    assert z["generation"] == "session.v4.jsonl.zstd" and z["project"] == "--srv-zz--"
    assert "does not match header id" in z["error"]  # header and location disagree: dsh refuses, in its words


def test_ls_plain_is_tab_separated_when_piped(root):
    code, out, err = run_env("ls", str(root), "--sort", "id", timezone="UTC")
    assert code == 0
    lines = out.decode().splitlines()
    assert lines[0].split("\t") == ["id", "title", "cwd", "generation", "size", "turns", "last activity (UTC)", "links"]
    cells = dict((ln.split("\t")[0], ln.split("\t")) for ln in lines[1:3])
    assert cells["fork-0002"][7] == "parent loop-0001"
    assert cells["crash-0001"][5] == "1"
    assert b"does not match header id" in err  # the misplaced generation is reported on stderr


def test_ls_sort_and_reverse(root):
    _, out, _ = run_env("ls", str(root), "--json", "--sort", "size")
    sizes = [r["size"] for r in ndjson(out)]
    assert sizes == sorted(sizes, reverse=True)
    _, out, _ = run_env("ls", str(root), "--json", "--sort", "size", "--reverse")
    assert [r["size"] for r in ndjson(out)] == sorted(sizes)
    _, out, _ = run_env("ls", str(root), "--json", "--sort", "turns")
    assert [r["turns"] for r in ndjson(out)] == [4, 4, 1, 1]
    _, out, _ = run_env("ls", str(root), "--json", "--sort", "time")
    times = [r["lastActivity"] for r in ndjson(out)]
    assert times == sorted(times, reverse=True)
    code, _, err = run_env("ls", str(root), "--sort", "colour")
    assert code == ExitCode.USAGE and b"--sort" in err


def test_ls_filters(root, tmp_path):
    _, out, _ = run_env("ls", str(root), "--json", "--cwd", "/srv/zz")
    assert [r["generation"] for r in ndjson(out)] == ["session.v4.jsonl.zstd"]
    # message text; tool output ("echo: one") is not message text
    _, out, _ = run_env("ls", str(root), "--json", "--grep", "第二点")
    assert sorted(r["path"].endswith("zstd") for r in ndjson(out)) == [False, True]
    _, out, _ = run_env("ls", str(root), "--json", "--grep", "ECHO: ONE")
    assert ndjson(out) == []
    # smart case: a lower-case needle ignores case, a capital letter asks for that case exactly
    _, out, _ = run_env("ls", str(root), "--json", "--grep", "deploy TO")
    assert ndjson(out) == []
    _, out, _ = run_env("ls", str(root), "--json", "--grep", "deploy to")
    assert {r["id"] for r in ndjson(out)} == {"crash-0001", "fork-0002"}
    _, out, _ = run_env("ls", str(root), "--json", "--grep", "DEPLOY")
    assert ndjson(out) == []
    # fixture events are from October 2026: a date before keeps them, one after drops them
    _, out, _ = run_env("ls", str(root), "--json", "--since", "2026-10-01")
    assert len(ndjson(out)) == 4
    _, out, _ = run_env("ls", str(root), "--json", "--since", "2026-10-21")
    assert ndjson(out) == []
    code, _, err = run_env("ls", str(root), "--since", "soon")
    assert code == ExitCode.USAGE


def test_ls_default_root_from_dsh_home(root):
    code, out, _ = run_env("ls", "--json", dsh_home=str(root.parent))
    assert code == 0 and len(ndjson(out)) == 4


def test_ls_missing_root(tmp_path):
    code, _, err = run_env("ls", str(tmp_path / "nope"))
    assert code == ExitCode.IO and b"session root" in err


@pytest.mark.parametrize("cmd", ["ls", "stats", "tail"])
def test_help_shows_an_example(cmd):
    code, out, _ = run_env(cmd, "--help")
    assert code == 0 and b"Example: dshlog " + cmd.encode() in out


# ----------------------------------------------------------------------------- resolution in commands


@pytest.fixture
def here(tmp_path):
    """DSH_HOME with two sessions of a project directory ``work``; the crash log is the more recent."""
    work = tmp_path / "work"
    work.mkdir()
    cwd = os.path.realpath(work)
    root = tmp_path / "home" / "sessions"
    put(root, "loop", sid="loop-0001", cwd=cwd)
    crash = put(root, "crash", sid="crash-0001", cwd=cwd)
    return crash


def in_here(here, *args: str, **env):
    """``dshlog ARGS`` run in ``work`` with ``DSH_HOME`` at the fixture's home (through the test Env)."""
    home = here.parents[3]
    return run_env(*args, dsh_home=str(home), cwd=os.path.realpath(home.parent / "work"), **env)


def test_info_without_file_uses_the_current_session(here):
    code, out, err = in_here(here, "info", "--json")
    assert code == 0
    assert orjson.loads(out)["header"]["id"] == "crash-0001"
    assert f"dshlog: using session crash-0001 ({here})".encode() in err


def test_rebuild_by_id_prefix(here):
    code, out, err = in_here(here, "rebuild", "loop", "--request", "3", "--messages-only")
    assert code == 0, err
    assert len(orjson.loads(out)) == 6
    assert b"using session loop-0001" in err


def test_repair_and_validate_resolve_too(here):
    before = here.read_bytes()
    code, out, err = in_here(here, "repair", "--json")
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["path"] == str(here) and doc["healthy"] is False
    assert here.read_bytes() == before  # nothing written without --write
    code, out, err = in_here(here, "validate", "cra")
    assert b"using session crash-0001" in err
    code, out, err = in_here(here, "fork", "-o", str(here.parent.parent.parent / "child.jsonl"), "--json")
    assert code == 0, err
    assert orjson.loads(out)["parentId"] == "crash-0001"


def test_ambiguous_prefix_in_a_command(here):
    code, _, err = in_here(here, "events", "loop-0001")
    assert code == 0
    code, _, err = in_here(here, "events", "c")  # only crash-0001 starts with c
    assert code == 0
    put(here.parent.parent.parent, "loop", sid="crash-0002", cwd="/x")
    code, _, err = in_here(here, "events", "crash")
    assert code == ExitCode.USAGE and b"ambiguous" in err and b"crash-0002" in err


def test_stdin_is_still_stdin(here):
    data = (FIXTURES / "v4/loop/session.v4.jsonl").read_bytes()
    code, out, err = in_here(here, "events", "-", stdin=data)
    assert code == 0 and out.count(b"\n") == 41 and b"using session" not in err


def test_a_reason_many_sessions_share_is_said_once(root):
    """The fixture root mixes encodings, so dsh refuses each of its plain sessions for the one
    compressed generation: stderr says that once, with how many and the first, not once a session."""
    code, out, err = run_env("ls", str(root), "--sort", "id")
    lines = err.decode().splitlines()
    shared = [ln for ln in lines if "configured for compression" in ln]
    assert len(shared) == 1, lines
    assert shared[0].startswith(f"dshlog: 3 sessions, the first {root}")
    assert sum("does not match header id" in ln for ln in lines) == 1  # a reason of one session names it alone
    assert len(out.decode().splitlines()) == 5  # every session is still a row
