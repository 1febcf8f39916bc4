"""The persistence root: dsh's directory names, session listing, and FILE-argument resolution."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from dshlog.errors import UsageError
from dshlog.protocol.layout import default_root
from dshlog.read.store import (
    decode_segment,
    encode_segment,
    list_sessions,
    parse_since,
    project_key,
    resolve_session,
    resolve_target,
    session_dir,
)


def put(root: Path, fixture: str, *, sid: str, cwd: str = "/home/ann/demo", mtime: float | None = None, **header: object) -> Path:
    """Copy a fixture log into ``root`` where dsh would keep it, with its header rewritten."""
    src = FIXTURES / "v4" / fixture / "session.v4.jsonl"
    first, rest = src.read_bytes().split(b"\n", 1)
    h = orjson.loads(first)
    h.update({"id": sid, "cwd": cwd, **header})
    d = session_dir(root, cwd, sid)
    d.mkdir(parents=True)
    p = d / "session.v4.jsonl"
    p.write_bytes(orjson.dumps(h) + b"\n" + rest)
    if mtime is not None:
        os.utime(p, (mtime, mtime))
    return p


# ----------------------------------------------------------------------------- naming (FORMAT.md 1.1)


@pytest.mark.parametrize(
    "cwd, key",
    [
        ("/home/ann/my proj", "--home-ann-my~0020proj--"),
        ("C:\\Users\\x", "--C-Users-x--"),
        ("/home/ann/demo", "--home-ann-demo--"),
        ("//srv///a:b", "--srv-a-b--"),  # runs of separators collapse to one "-"
        ("/", "--root--"),  # leading "-" removed, empty becomes root
        ("/a/-b", "--a--b--"),  # a literal "-" is not a separator run
        ("/x~y", "--x~007Ey--"),  # "~" is not safe
        ("/p/\U0001f600", "--p-~D83D~DE00--"),  # non-BMP: two code units
        ("/é", "--~00E9--"),
        (None, "_no-cwd"),
    ],
)
def test_project_key_examples(cwd, key):
    assert project_key(cwd) == key


def test_project_key_truncates_to_251_and_may_cut_an_escape():
    assert project_key("/" + "a" * 300) == "--" + "a" * 251 + "--"
    k = project_key("/" + "a" * 249 + " ")  # the escape starts at 250 and is cut after "~0"
    assert k == "--" + "a" * 249 + "~0--"


def test_project_key_rejects_empty_cwd():
    with pytest.raises(UsageError):
        project_key("")


@pytest.mark.parametrize(
    "sid, seg",
    [
        ("539aa64c-7f37-40ff-abd8-ed45b717be1b", "539aa64c-7f37-40ff-abd8-ed45b717be1b"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("...", "..."),
        ("a/b", "a~002Fb"),
        ("a~b", "a~007Eb"),
        ("{{session:1}}", "~007B~007Bsession~003A1~007D~007D"),
        ("\U0001f600", "~D83D~DE00"),
    ],
)
def test_encode_segment_examples(sid, seg):
    assert encode_segment(sid) == seg
    assert decode_segment(seg) == sid


def test_encode_segment_rejects_empty():
    with pytest.raises(UsageError):
        encode_segment("")


@pytest.mark.parametrize("bad", ["", ".", "..", "a b", "~002e", "~0041", "~12", "a~", "_no-cwd!"])
def test_decode_segment_rejects_names_encode_never_produces(bad):
    with pytest.raises(UsageError):
        decode_segment(bad)


@given(st.text(min_size=1))
def test_encode_decode_round_trip(sid):
    seg = encode_segment(sid)
    assert decode_segment(seg) == sid
    assert "/" not in seg and "\\" not in seg and seg not in (".", "..")
    assert all(c.isascii() for c in seg)


@given(st.text(min_size=1), st.text(min_size=1))
def test_encode_segment_is_injective(a, b):
    if a != b:
        assert encode_segment(a) != encode_segment(b)


@given(st.text(min_size=1))
def test_project_key_is_a_safe_single_segment(cwd):
    k = project_key(cwd)
    assert k.startswith("--") and k.endswith("--") and len(k) <= 255
    assert "/" not in k and "\\" not in k and ":" not in k


def test_default_root_follows_dsh_home(tmp_path):
    assert default_root(str(tmp_path), Path("/h")) == tmp_path / "sessions"
    assert default_root(None, Path("/h")) == Path("/h/.dsh/sessions")
    assert default_root("", Path("/h")) == Path("/h/.dsh/sessions")


# ----------------------------------------------------------------------------- listing


def test_list_sessions_reads_headers_turns_and_links(tmp_path):
    put(tmp_path, "loop", sid="parent-1")
    put(tmp_path, "crash", sid="child-1", parentSession="parent-1", origin="subagent", isSeeded=False)
    put(tmp_path, "crash", sid="other", cwd="/srv/x")
    (tmp_path / "--home-ann-demo--" / "not-a-session").mkdir()  # no generation: ignored
    (tmp_path / "stray").mkdir()  # not a project directory: ignored
    entries = {e.id: e for e in list_sessions(tmp_path)}
    assert set(entries) == {"parent-1", "child-1", "other"}
    p = entries["parent-1"]
    assert (p.turns, p.events, p.version, p.cwd, p.error) == (4, 41, 4, "/home/ann/demo", None)
    assert p.last_time == 1792499042269
    assert p.children == ["child-1"]
    assert entries["child-1"].parent == "parent-1" and entries["child-1"].origin == "subagent"
    assert entries["other"].project == "--srv-x--"
    only = list_sessions(tmp_path, project="--srv-x--")
    assert [e.id for e in only] == ["other"]


def test_list_sessions_title_is_the_last_title_event(tmp_path):
    p = put(tmp_path, "crash", sid="t")
    with open(p, "ab") as fh:
        for i, title in enumerate(["first", "second"]):
            fh.write(orjson.dumps({"type": "session/title", "seq": 10 + i, "time": 5, "data": {"title": title}}) + b"\n")
    (e,) = list_sessions(tmp_path)
    assert e.title == "second"


def test_list_flags_a_generation_in_the_wrong_place(tmp_path):
    p = put(tmp_path, "crash", sid="right")
    p.parent.rename(p.parent.parent / "wrong")
    (e,) = list_sessions(tmp_path)
    # dsh's answer: it opens the session by the directory's id first
    assert e.id == "right" and 'requested id "wrong" does not match header id "right"' in (e.error or "")


def test_list_sessions_zstd_generation(tmp_path):
    d = tmp_path / "--home-ann-demo--" / "loop-0001"
    d.mkdir(parents=True)
    (d / "session.v4.jsonl.zstd").write_bytes((FIXTURES / "v4/loop-zstd/session.v4.jsonl.zstd").read_bytes())
    (e,) = list_sessions(tmp_path)
    assert (e.id, e.turns, e.events, e.version, e.error) == ("loop-0001", 4, 41, 4, None)


def test_parse_since():
    now = 1_800_000_000.0
    assert parse_since("3d", now=now) == int((now - 3 * 86400) * 1000)
    assert parse_since("90m", now=now) == int((now - 5400) * 1000)
    assert parse_since("2026-11-01T00:00:00+00:00", now=now) == 1793491200000
    with pytest.raises(UsageError):
        parse_since("yesterday", now=0)


# ----------------------------------------------------------------------------- resolution


def test_resolve_paths_and_stdin_as_given(tmp_path):
    assert resolve_target("-", root=tmp_path) == "-"
    f = tmp_path / "x.jsonl"
    f.write_bytes(b"")
    assert resolve_target(str(f), root=tmp_path) == str(f)
    assert resolve_target("missing/file.jsonl", root=tmp_path) == "missing/file.jsonl"  # open reports it


def test_resolve_by_id_and_unique_prefix(tmp_path):
    a = put(tmp_path, "loop", sid="abc-111")
    put(tmp_path, "crash", sid="abd-222")
    r = resolve_session("abc-111", root=tmp_path)
    assert (r.path, r.session_id, r.chosen) == (str(a), "abc-111", True)
    assert resolve_target("abc", root=tmp_path) == str(a)


def test_resolve_exact_id_wins_over_prefix(tmp_path):
    a = put(tmp_path, "loop", sid="ab")
    put(tmp_path, "crash", sid="abc")
    assert resolve_target("ab", root=tmp_path) == str(a)


def test_resolve_ambiguous_prefix_lists_candidates(tmp_path):
    put(tmp_path, "loop", sid="abc-111")
    put(tmp_path, "crash", sid="abd-222")
    with pytest.raises(UsageError) as exc:
        resolve_target("ab", root=tmp_path)
    assert "ambiguous" in exc.value.message and "abc-111" in exc.value.message and "abd-222" in exc.value.message


def test_resolve_unknown_id(tmp_path):
    put(tmp_path, "loop", sid="abc")
    with pytest.raises(UsageError, match="no session id"):
        resolve_target("zzz", root=tmp_path)


def test_resolve_id_with_special_characters_goes_through_the_encoding(tmp_path):
    p = put(tmp_path, "loop", sid="{{session:1}}")
    assert resolve_target("{{session:1}}", root=tmp_path) == str(p)


def test_default_is_the_most_recent_session_of_the_cwd(tmp_path, monkeypatch):
    root = tmp_path / "home" / "sessions"
    work = tmp_path / "work"
    work.mkdir()
    cwd = os.path.realpath(work)
    old = put(root, "loop", sid="old", cwd=cwd)
    new = put(root, "crash", sid="new", cwd=cwd)
    put(root, "loop", sid="elsewhere", cwd="/srv/other")
    # the loop log's events are older than the crash log's: "new" is the most recently active
    r = resolve_session(None, root=root, cwd=str(work))
    assert (r.path, r.session_id, r.chosen) == (str(new), "new", True)
    # a subagent child is never the session a person resumes
    put(root, "crash", sid="sub", cwd=cwd, parentSession="new", origin="subagent")
    with open(old, "ab") as fh:  # old becomes the most recently active
        fh.write(orjson.dumps({"type": "session/title", "seq": 41, "time": 1792499999999, "data": {"title": "x"}}) + b"\n")
    assert resolve_session(None, root=root, cwd=str(work)).session_id == "old"


def test_default_falls_back_to_mtime_for_projections(tmp_path):
    cwd = "/w"
    for sid, mtime in (("a", 1000), ("b", 3000), ("c", 2000)):
        d = session_dir(tmp_path, cwd, sid)
        d.mkdir(parents=True)
        p = d / "session.v4.jsonl"
        p.write_bytes(orjson.dumps({"type": "session", "version": 4, "id": sid, "createdAt": 0, "cwd": cwd, "isSeeded": False, "delegationDepth": 0}) + b"\n"
                      + b'{"type":"turn/start","data":{"turn":1}}\n')
        os.utime(p, (mtime, mtime))
    assert resolve_session(None, root=tmp_path, cwd=cwd).session_id == "b"


def test_default_without_sessions_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no session of this directory"):
        resolve_target(None, root=tmp_path, cwd="/nowhere")
