"""`dshlog repair` and `dshlog fork` on files: the seed's golden outputs, and nothing lost."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
import zstandard

from conftest import FIXTURES, GOLDEN, lock_held_elsewhere, run_env
from dshlog.errors import ExitCode
from dshlog.protocol.jsjson import dumps
from dshlog.check.surface import derive_messages
from dshlog.read.session import open_log

CRASH = FIXTURES / "v4" / "crash" / "session.v4.jsonl"
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


def golden(name):
    return json.loads((GOLDEN / name).read_text())


def events_of(path):
    with open_log(path) as s:
        return list(s.v4())


def test_repair_default_shows_closers_and_writes_nothing(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    shutil.copyfile(CRASH, p)
    before = p.read_bytes()
    code, out, err = run_env("repair", str(p), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["closers"] == golden("crash-closers.json")
    assert [dumps(c) for c in doc["closers"]] == [dumps(c) for c in golden("crash-closers.json")]
    assert doc["healthy"] is False and doc["openTurn"] == 1 and doc["openStep"] == 1
    assert [(c["callId"], c["started"]) for c in doc["pendingCalls"]] == [("c1", True), ("c2", False)]
    assert p.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["session.v4.jsonl"]
    code, _, _ = run_env("repair", str(p), "--check")
    assert code == ExitCode.PENDING


def test_repair_write_appends_exactly_dsh_closers(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    shutil.copyfile(CRASH, p)
    before = p.read_bytes()
    code, out, err = run_env("repair", str(p), "--write")
    assert code == 0, err
    data = p.read_bytes()
    assert data.startswith(before)
    assert data[len(before):] == b"".join(dumps(e) + b"\n" for e in golden("crash-closers.json"))
    with open_log(p) as s:
        from dshlog.check.surface import fold

        st = fold(s.v4())
    assert [m["role"] for m in st.messages()] == ["system", "user", "assistant", "tool", "tool"]
    # healthy now: a second run leaves it alone
    code, out, _ = run_env("repair", str(p), "--write")
    assert code == 0 and b"healthy" in out and p.read_bytes() == data


def test_repair_write_cuts_torn_tail_into_sidecar(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    torn = b'{"type":"tool/result","seq":10,"ti'
    p.write_bytes(CRASH.read_bytes() + torn)
    code, out, err = run_env("repair", str(p), "--write")
    assert code == 0, err
    sidecars = [x for x in tmp_path.iterdir() if ".torn-" in x.name]
    assert len(sidecars) == 1 and sidecars[0].read_bytes() == torn
    assert p.read_bytes() == CRASH.read_bytes() + b"".join(dumps(e) + b"\n" for e in golden("crash-closers.json"))


def test_repair_write_zstd_appends_a_frame(tmp_path):
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    lines = CRASH.read_bytes().splitlines(keepends=True)
    p = tmp_path / "session.v4.jsonl.zstd"
    frames = [cctx.compress(lines[0])] + [cctx.compress(b"".join(lines[i : i + 3])) for i in range(1, len(lines), 3)]
    p.write_bytes(b"".join(frames) + cctx.compress(b'{"type":"x"}\n')[:-6])  # torn last frame
    code, out, err = run_env("repair", str(p), "--write")
    assert code == 0, err
    with open_log(p) as s:
        evs = list(s.v4())
        assert s.info.torn is None
    assert evs[-4:] == golden("crash-closers.json")
    assert p.read_bytes().startswith(b"".join(frames))


def test_repair_write_refused_under_lock(tmp_path):
    p = tmp_path / "session.v4.jsonl"
    shutil.copyfile(CRASH, p)
    with lock_held_elsewhere(tmp_path) as pid:
        code, out, err = run_env("repair", str(p), "--write")
        assert code == ExitCode.CONFLICT and b"already owned" in err and f"pid {pid}".encode() in err
        assert p.read_bytes() == CRASH.read_bytes()


def test_repair_copy_of_old_version(tmp_path):
    out = tmp_path / "repaired.jsonl"
    src = FIXTURES / "v0" / "text-turn" / "session.jsonl"
    code, _, err = run_env("repair", str(src), "-o", str(out))
    assert code == 0, err
    with open_log(out) as s:
        assert s.version == 4 and sum(1 for _ in s.v4()) == 17
    code, _, err = run_env("repair", str(src), "--write")
    assert code == ExitCode.USAGE and b"migrate" in err


def _fork(src, at, out):
    code, o, err = run_env("fork", str(src), "--at", str(at), "-o", str(out), "--id", "child-1", "--json")
    assert code == 0, err
    return json.loads(o)


def test_fork_a_matches_seed(tmp_path):
    doc = _fork(LOOP, 15, tmp_path / "a.jsonl")
    evs = events_of(tmp_path / "a.jsonl")
    assert len(evs) == 17 and doc["events"] == 17
    assert evs[16] == {"type": "session/end-seed", "seq": 16, "time": evs[15]["time"], "data": {"inherited": True}}
    parent_lines = LOOP.read_bytes().splitlines()[1:17]
    assert (tmp_path / "a.jsonl").read_bytes().splitlines()[1:17] == parent_lines  # prefix copied byte for byte
    child = [dumps(m) for m in derive_messages(evs)]
    parent = [dumps(m) for m in derive_messages(events_of(LOOP)[:16])]
    assert len(parent) == 5 and child[:5] == parent
    header = json.loads((tmp_path / "a.jsonl").read_bytes().splitlines()[0])
    assert header["parentSession"] == "loop-0001" and header["isSeeded"] is True and header["id"] == "child-1"


def test_fork_b_matches_seed(tmp_path):
    doc = _fork(CRASH, 9, tmp_path / "b.jsonl")
    evs = events_of(tmp_path / "b.jsonl")
    assert len(evs) == 15
    tail = [(e["seq"], e["type"]) for e in evs[10:]]
    assert tail == [(10, "session/end-seed"), (11, "tool/result"), (12, "tool/result"), (13, "step/end"), (14, "turn/end")]
    assert evs[10]["data"] == {"inherited": True}
    assert evs[11]["data"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN" and evs[11]["sourceEventSeqs"] == [9]
    assert evs[11]["data"]["message"]["id"] == "forked-tool-result-c1-11"
    assert evs[12]["data"]["error"]["code"] == "TOOL_NOT_STARTED" and "sourceEventSeqs" not in evs[12]
    assert evs[13]["data"] == {"turn": 1, "step": 1}
    assert evs[14]["data"] == {"turn": 1, "reason": {"kind": "forked"}}
    child = [dumps(m) for m in derive_messages(evs)]
    parent = [dumps(m) for m in derive_messages(events_of(CRASH))]
    assert len(parent) == 3 and child[:3] == parent and [json.loads(c)["role"] for c in child[3:]] == ["tool", "tool"]
    assert len(doc["closers"]) == 4


def test_fork_never_touches_parent_nor_overwrites(tmp_path):
    before = hashlib.sha256(LOOP.read_bytes()).hexdigest()
    out = tmp_path / "c.jsonl"
    _fork(LOOP, 20, out)
    first = out.read_bytes()
    code, _, err = run_env("fork", str(LOOP), "--at", "20", "-o", str(out))
    assert code == ExitCode.CONFLICT and out.read_bytes() == first
    assert hashlib.sha256(LOOP.read_bytes()).hexdigest() == before


def test_fork_bad_boundaries(tmp_path):
    code, _, err = run_env("fork", str(LOOP), "--at", "41", "-o", str(tmp_path / "x.jsonl"))
    assert code == ExitCode.USAGE and b'fork boundary 41 does not exist in session "loop-0001" (last seq: 40)' in err
    assert not (tmp_path / "x.jsonl").exists() and not list(tmp_path.iterdir())
    code, _, err = run_env("fork", str(LOOP), "--at-turn", "9", "-o", str(tmp_path / "x.jsonl"))
    assert code == ExitCode.USAGE and not list(tmp_path.iterdir())


def test_fork_at_turn_and_zstd_parent(tmp_path):
    zsrc = FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd"
    code, out, err = run_env("fork", str(zsrc), "--at-turn", "2", "-o", str(tmp_path) + "/", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["at"] == 24 and doc["path"].endswith("session.v4.jsonl.zstd")
    assert len(events_of(doc["path"])) == 26


def _breaks_a_v4_rule(tmp_path):
    """A log the strict reader accepts but dsh's v4 rules reject (a step/start naming the wrong turn)."""
    data = CRASH.read_bytes()
    bad = data.replace(b'"type":"step/start","seq":3,"time":1792499131142,"data":{"turn":1,', b'"type":"step/start","seq":3,"time":1792499131142,"data":{"turn":7,', 1)
    assert bad != data
    p = tmp_path / "src" / "session.v4.jsonl"
    p.parent.mkdir()
    p.write_bytes(bad)
    return p


def test_repair_copy_and_fork_refuse_a_source_that_breaks_a_v4_rule(tmp_path):
    """Both used to publish a log that `validate` rejects. They now read the source as dsh
    restores it, so such a source is refused up front as corrupt, naming it and the seq,
    and nothing is published."""
    src = _breaks_a_v4_rule(tmp_path)
    code, out_, _ = run_env("validate", str(src))
    assert code == ExitCode.CORRUPT and b"step/start does not match the open turn" in out_
    out = tmp_path / "out"
    out.mkdir()
    for argv in (["repair", str(src), "-o", str(out / "r.jsonl")], ["fork", str(src), "-o", str(out / "c.jsonl")]):
        code, _, err = run_env(*argv)
        assert code == ExitCode.CORRUPT, err
        assert str(src).encode() in err and b"seq 3: step/start does not match the open turn" in err, err
        assert err.count(b"\n") == 1, err
    assert list(out.iterdir()) == []


def test_the_read_back_refuses_a_staged_log_that_breaks_a_v4_rule(tmp_path):
    """The last line of defence for every writer: a staged file the strict reader decodes but
    dsh's rules reject never passes verification (and names the seq)."""
    from dshlog.errors import Refused
    from dshlog.write.verify import ReadBack

    staged = _breaks_a_v4_rule(tmp_path)
    n = len(staged.read_bytes().splitlines()) - 1
    with ReadBack(staged, None, compressed=False, snapshot=False, subject="repaired copy", stream=False) as rb:
        with pytest.raises(Refused, match="repaired copy does not verify at seq 3"):
            rb.verify(staged, events=n, plain=None)
    good = CRASH
    with ReadBack(good, None, compressed=False, snapshot=False, subject="copy", stream=False) as rb:
        rb.verify(good, events=len(good.read_bytes().splitlines()) - 1, plain=None)


def test_repair_outputs_refuse_a_tail_inside_an_open_compaction(tmp_path):
    """dsh's closers end only the turn and its reader then refuses that turn/end: repair shows the
    closers with a warning, but publishes no such log (neither -o nor --write)."""
    lines = LOOP.read_bytes().splitlines(keepends=True)
    turn3 = next(i for i, ln in enumerate(lines) if b'"type":"turn/start"' in ln and b'"turn":3' in ln)
    seq = turn3  # line i holds seq i-1; the next seqs continue the log
    opened = lines[: turn3 + 1] + [
        b'{"type":"compaction/start","seq":%d,"time":1792499042300,"data":{"turn":3,"compactionId":"c-1","trigger":"manual"}}\n' % seq
    ]
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(opened))
    code, out, err = run_env("repair", str(p))
    if b"compaction transaction" not in err:
        pytest.skip(f"the hand-made compaction/start is not one the reader accepts: {err!r}")
    before = p.read_bytes()
    code, _, err = run_env("repair", str(p), "-o", str(tmp_path / "r.jsonl"))
    assert code == ExitCode.CONFLICT and b"crosses an open compaction" in err, err
    code, _, err = run_env("repair", str(p), "--write")
    assert code == ExitCode.CONFLICT and b"crosses an open compaction" in err, err
    assert p.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["session.lock", "session.v4.jsonl"]


def test_fork_of_an_empty_parent_is_refused_as_dsh_refuses_it(tmp_path):
    """dsh's fork seed needs an existing boundary seq, so a parent without events cannot be
    forked (it used to give a child whose only event was timed by the wall clock)."""
    parent = tmp_path / "session.v4.jsonl"
    parent.write_bytes(LOOP.read_bytes().splitlines(keepends=True)[0])
    code, out, err = run_env("fork", str(parent), "-o", str(tmp_path / "c.jsonl"), "--json")
    assert code == ExitCode.USAGE, err
    assert out == b"" and b"there is no seq to fork at" in err and str(parent).encode() in err
    assert not (tmp_path / "c.jsonl").exists()


def test_the_seed_of_an_empty_seed_is_its_marker_alone_and_lists_no_closer():
    """The library keeps dsh's child constructor: an empty seed gets only the marker; the
    marker used to be reported as a closer."""
    from dshlog.model.fork import ForkPlan, build_fork_seed

    plan: list[ForkPlan] = []
    seed = list(build_fork_seed([], session_id="s", now_ms=5, plan=plan))
    assert [e["type"] for e in seed] == ["session/end-seed"] and seed[0]["time"] == 5
    assert plan and not plan[0].closers


def test_repair_dry_run_reports_a_torn_zstd_frame_as_write_cuts_it(tmp_path):
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    lines = CRASH.read_bytes().splitlines(keepends=True)
    p = tmp_path / "session.v4.jsonl.zstd"
    frames = [cctx.compress(lines[0])] + [cctx.compress(b"".join(lines[i : i + 3])) for i in range(1, len(lines), 3)]
    torn = cctx.compress(b'{"type":"tool/result","seq":10}\n')[:9]  # a frame cut before any of it decodes
    p.write_bytes(b"".join(frames) + torn)
    code, out, err = run_env("repair", str(p), "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["tornBytes"], plan["tornFrame"]) == (len(torn), len(frames))
    code, out, err = run_env("repair", str(p))
    assert f"torn tail: zstd frame {len(frames)} is incomplete ({len(torn)} bytes on disk".encode() in out
    code, out, err = run_env("repair", str(p), "--write")
    assert code == 0, err
    sidecars = [x for x in tmp_path.iterdir() if ".torn-" in x.name]
    assert len(sidecars) == 1 and sidecars[0].read_bytes() == torn  # exactly what the dry run said


def test_fork_that_fails_leaves_nothing_behind(tmp_path):
    loop = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    made = tmp_path / "child"
    code, out, err = run_env("fork", str(loop), "--at", "999", "-o", f"{made}/")
    assert code == 2 and b"does not exist" in err
    assert not made.exists()  # neither the directory it made nor a session.lock in it
    kept = tmp_path / "existing"
    kept.mkdir()
    code, _, err = run_env("fork", str(loop), "--at", "999", "-o", str(kept))
    assert code == 2 and list(kept.iterdir()) == []  # the directory was there before: it stays, empty
    # into a persistence root: no project or session directory is left either
    root = tmp_path / "home" / "sessions"
    root.mkdir(parents=True)
    code, _, err = run_env("fork", str(loop), "--at", "999", "-o", str(root))
    assert code == 2 and list(root.iterdir()) == [], list(root.rglob("*"))
    # and a fork that works still leaves its lock, as dsh's writers do
    code, _, err = run_env("fork", str(loop), "--at", "10", "-o", f"{made}/")
    assert code == 0, err
    assert sorted(x.name for x in made.iterdir()) == ["session.lock", "session.v4.jsonl"]
