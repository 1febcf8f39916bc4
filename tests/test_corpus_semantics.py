"""Properties that hold over every real session file of the shared corpus.

* the model view folds and every request rebuilds (from the prefix and from the whole log alike);
* a fork at every cut point gives a child that validates and whose messages start with the parent's;
* repairing every prefix gives a log that validates with a closed tail;
* every historical file either migrates (the published successor validates, its surface and messages
  equal the read-only migration's, the source is untouched) or is refused with dsh's own text.
"""

from __future__ import annotations

import hashlib
import re
import shutil

import pytest

from conftest import CORPUS, corpus_files, requires_corpus
from dshlog.read.source import Source
from dshlog.errors import DshlogError
from dshlog.model.fork import build_fork_seed, child_header
from dshlog.protocol.jsjson import dumps
from dshlog.check.surface import derive_messages
from dshlog.model.repair import open_compaction_of, open_turn_closers
from dshlog.model.requests import iter_requests, rebuild
from dshlog.read.session import open_log
from dshlog.check.surface import fold
from dshlog.check.validate import Validator


def load(path):
    """(v4 header, v4 events, snapshot?) or None when dsh itself refuses the file."""
    try:
        with open_log(path) as s:
            evs = list(s.v4())
            snapshot = s.snapshot
            header = s.v4().header if s.header is not None else None
            return header, evs, snapshot
    except DshlogError:
        return None


LOADED = {p: load(p) for p in corpus_files()} if CORPUS.is_dir() else {}
READABLE = [p for p, v in LOADED.items() if v is not None]
IDS = [str(p.relative_to(CORPUS)) for p in READABLE]


def errors(problems):
    return [f"{p.code}: {p.message} (seq {p.seq})" for p in problems if p.severity == "error"]


def check(header, events, snapshot):
    v = Validator(header, projection=snapshot)
    out = []
    for e in events:
        out += v.feed(e)
    out += v.finish()
    return errors(out)


def new_errors(header, events, snapshot, parent_errors):
    """Problems of ``events`` that the parent log did not already have (fork and repair add none)."""
    return [e for e in check(header, events, snapshot) if e not in parent_errors]


@requires_corpus
def test_most_of_the_corpus_is_readable():
    assert len(READABLE) >= 150


@requires_corpus
@pytest.mark.parametrize("path", READABLE, ids=IDS)
def test_model_view_and_every_request(path):
    header, evs, _ = LOADED[path]
    unknown_ok = path.name == "snapshots__sdk__text-turn__session.v4.jsonl" and "hebilicious" in str(path)
    st = fold(evs, strict_unknown=not unknown_ok)
    assert len(st.messages()) <= len(st.nodes)
    infos = list(iter_requests(evs, strict_unknown=not unknown_ok))
    for info in infos:
        whole = rebuild(evs, info.number, require_header=False, strict_unknown=not unknown_ok)
        prefix = rebuild(evs[: info.seq + 1], info.number, require_header=False, strict_unknown=not unknown_ok)
        assert dumps(whole) == dumps(prefix)
        assert len(whole["messages"]) == info.message_count


@requires_corpus
@pytest.mark.parametrize("path", READABLE, ids=IDS)
def test_fork_at_every_cut(path):
    header, evs, snapshot = LOADED[path]
    if header is None or not evs:
        pytest.skip("no header to derive a child header from")
    if any(e.get("type") == "agent/harness" for e in evs):
        pytest.skip("fork-only event type unknown to dsh")
    child_h = child_header(header, new_id="child-of-" + str(header.get("id")), created_at=1)
    inherited = set(check(header, evs, snapshot))  # e.g. a fixture-made compaction with no compaction/start
    for cut in range(len(evs)):
        seed = list(build_fork_seed(evs, cut, session_id=str(header.get("id")), now_ms=1))
        assert new_errors(child_h, seed, snapshot, inherited) == [], f"cut {cut}"
        parent = [dumps(m) for m in derive_messages(evs[: cut + 1])]
        child = [dumps(m) for m in derive_messages(seed)]
        assert child[: len(parent)] == parent, f"cut {cut}"


@requires_corpus
@pytest.mark.parametrize("path", READABLE, ids=IDS)
def test_repair_of_every_prefix(path):
    header, evs, snapshot = LOADED[path]
    if any(e.get("type") == "agent/harness" for e in evs):
        pytest.skip("fork-only event type unknown to dsh")
    inherited = set(check(header, evs, snapshot))
    for n in range(1, len(evs) + 1):
        prefix = evs[:n]
        if header is not None and header.get("isSeeded") is True and not any(
            e.get("type") == "session/end-seed" and (e.get("data") or {}).get("inherited") is True for e in prefix
        ):
            continue  # a seeded log is written with its inherited marker; shorter prefixes never exist
        if open_compaction_of(prefix) is not None:
            # dsh's closers end only the turn; its reader then refuses the turn/end that crosses
            # the open compaction.  repair reports this instead of inventing a compaction/end.
            continue
        repaired = prefix + open_turn_closers(prefix, "interrupted")
        assert new_errors(header, repaired, snapshot, inherited) == [], f"prefix of {n} events"
        assert open_turn_closers(repaired, "interrupted") == []


# dsh's own refusals (FORMAT.md 4): files its migration chain does not convert.
DSH_REFUSALS = re.compile(
    # refusals dsh throws as unsupported: its chain passes them on without the edge's name
    r": (subagent/descriptor \d+ uses unsupported descriptor version"
    r"|format v2 surface before first step cannot acquire a system head"
    r"|format v2 changed request prompt outside an open step"
    r")"
    # headers dsh's codecs refuse before reading a row (test-snapshot headers without them)
    r"|: released v\d physical header lacks required member"
    r"|: Session format version must be a non-negative safe integer"
    # plain format errors inside an edge (payload rules), wrapped with the edge's name
    r"|refuses this format v\d Session: request/header \d+ header tools\[\d+\] must be a JSON object"
    # dsh's v4 restore of the migrated artifact
    r"|: Session migration from v\d to v4 refuses the transformed artifact: "
    r"|seq gap"
    r"|uses log format v5"
    r"|staged successor does not verify"  # dsh's publication verifier applies the full v4 rules
)
HISTORICAL = [p for p in corpus_files() if p.suffix == ".jsonl"] if CORPUS.is_dir() else []


def _version_of(path):
    try:
        with open_log(path, strict=False) as s:
            return s.version, s.header is not None, s.info.container
    except DshlogError:
        return None, False, None


@requires_corpus
@pytest.mark.parametrize("path", HISTORICAL, ids=[str(p.relative_to(CORPUS)) for p in HISTORICAL])
def test_every_historical_file_migrates_or_is_refused_as_dsh_refuses(path, tmp_path):
    from dshlog.ops.migrate import migrate_session
    from dshlog.ops.validate import validate_log

    version, has_header, container = _version_of(path)
    if version is None or version >= 4 or not has_header or container != "jsonl":
        pytest.skip("not a historical session generation with a header")
    d = tmp_path / "sess"
    d.mkdir()
    name = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    src = d / name
    shutil.copyfile(path, src)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    out = migrate_session(src, children="none")
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before
    if out.status != "migrated":
        assert out.status == "failed" and DSH_REFUSALS.search(out.error or ""), out.error
        assert not (d / "session.v4.jsonl").exists()
        return
    successor = d / "session.v4.jsonl"
    report = validate_log(str(successor))
    assert not report.errors, [p.as_dict() for p in report.errors]
    with open_log(successor) as s:
        published = list(s.v4())
    with open_log(path) as s:
        in_memory = list(s.v4(child_facts=[]))
    assert len(published) == len(in_memory) == out.events
    a, b = fold(published), fold(in_memory)
    assert a.nodes == b.nodes
    assert [dumps(m) for m in a.messages()] == [dumps(m) for m in b.messages()]


@requires_corpus
@pytest.mark.parametrize("path", HISTORICAL, ids=[str(p.relative_to(CORPUS)) for p in HISTORICAL])
def test_forked_read_back_decides_as_the_in_process_one(path, tmp_path, monkeypatch):
    """migrate verifies the successor in a forked process where it can; the in-process
    read-back of the staged file must publish the same bytes or refuse with the same text."""
    import os

    from dshlog import forked
    from dshlog.ops import migrate as publish
    from dshlog.write import verify

    version, has_header, container = _version_of(path)
    if version is None or version >= 4 or not has_header or container != "jsonl":
        pytest.skip("not a historical session generation with a header")
    name = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    monkeypatch.setattr(verify, "FORK_MIN_BYTES", 0)  # corpus files are small
    results = []
    for fork in (True, False):
        d = tmp_path / ("forked" if fork else "in-process")
        d.mkdir()
        shutil.copyfile(path, d / name)
        out = publish.migrate_session(Source(d / name, parallel=fork), children="none")
        successor = d / "session.v4.jsonl"
        error = re.sub(r"session\.migration\.[0-9a-f]+\.", "<staged>.", (out.error or "").replace(str(d), "<dir>"))
        results.append((out.status, error, out.events, out.bytes, successor.read_bytes() if successor.exists() else None))
        if fork and forked.can_fork(True):
            with pytest.raises(ChildProcessError):
                os.waitpid(-1, os.WNOHANG)  # the read-back child was reaped
    assert results[0] == results[1]
