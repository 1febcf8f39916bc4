"""One session stored by every writer version (fixtures/v0..v3, built from the format description)
reads, validates and migrates to the same v4 log."""

from __future__ import annotations

import copy

import pytest

from conftest import FIXTURES, run_env
from dshlog.protocol.jsjson import dumps
from dshlog.read.session import open_log

V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
LATER = {1: FIXTURES / "v1" / "text-turn" / "session.v1.jsonl", 2: FIXTURES / "v2" / "text-turn" / "session.v2.jsonl", 3: FIXTURES / "v3" / "text-turn" / "session.v3.jsonl"}


def v4_events(path):
    with open_log(path) as s:
        return list(s.v4(child_facts=[])), s.version


def blank_system_ids(events):
    """System messages created by migration get ids derived from their source position."""
    out = copy.deepcopy(events)
    for e in out:
        if e["type"] == "system/message":
            e["data"]["message"]["id"] = "*"
    return out


@pytest.mark.parametrize("version", [1, 2, 3])
def test_each_version_migrates_to_the_same_v4_log(version):
    reference, v = v4_events(V0)
    assert v == 0 and len(reference) == 17
    events, v = v4_events(LATER[version])
    assert v == version
    assert [dumps(e) for e in blank_system_ids(events)] == [dumps(e) for e in blank_system_ids(reference)]


def test_stored_shapes_differ_as_the_versions_say():
    with open_log(LATER[1]) as s:
        recs = list(s.stored())
    msg = next(r for r in recs if r.event["type"] == "assistant/message")
    assert b'"sourceEventSeqs":[[12,39]]' in msg.raw and msg.event["sourceEventSeqs"] == list(range(12, 40))
    with open_log(LATER[2]) as s:
        evs = list(r.event for r in s.stored())
    assert len(evs) == 15 and not any(e["type"] == "assistant/chunk" for e in evs)
    assert "system" in next(e for e in evs if e["type"] == "request/header")["data"]["header"]
    with open_log(LATER[3]) as s:
        evs = list(r.event for r in s.stored())
    assert [e["seq"] for e in evs if e["type"] == "system/message"] == [7, 11]
    assert evs[11]["surfaceOp"] == {"op": "replace", "startSeq": 7, "endSeq": 7}


@pytest.mark.parametrize("path", [V0, *LATER.values()], ids=["v0", "v1", "v2", "v3"])
def test_each_version_validates_and_publishes(path, tmp_path):
    code, _, err = run_env("validate", str(path))
    assert code == 0, err
    d = tmp_path / "s"
    d.mkdir()
    (d / path.name).write_bytes(path.read_bytes())
    code, _, err = run_env("migrate", str(d), "--no-children")
    assert code == 0, err
    with open_log(d) as s:
        assert s.version == 4 and sum(1 for _ in (r.event for r in s.stored())) == 17
    assert (d / path.name).read_bytes() == path.read_bytes()
