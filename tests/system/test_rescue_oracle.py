"""``rescue --all`` on every corpus log, judged by dsh's own code (the shared oracle).

For each corpus input (decoded to one plain generation as the differential suite
does), the oracle's ``read`` says whether dsh refuses it (its migration chain, then its
v4 restore).  Then:

* a log dsh accepts: rescue agrees there is nothing to rescue and writes nothing;
* a log dsh refuses: rescue either publishes a successor that the oracle's
  ``read`` accepts, whose derived messages (the oracle's ``messages``) hold every
  message text the source shows on its surface and whose events hold every message
  text of the source, or it is listed in :data:`CANNOT` with the reason it gives.

The source is byte-identical after every run.  Each input is its own test id, so
the outcome per file is the test listing; :func:`test_outcome_table` prints the
counts.  Skipped, with the reason, without node or the oracle, unless
``DSHLOG_REQUIRE_ORACLE=1``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshlog.ops.rescue import read_stored, rescue_session

from . import oracle_support as S
from .test_oracle import FORK_BUILT_V3

UNAVAILABLE = S.unavailable()
if UNAVAILABLE is not None and os.environ.get("DSHLOG_REQUIRE_ORACLE") == "1":
    pytest.fail(f"the rescue suite must run here (DSHLOG_REQUIRE_ORACLE=1), but {UNAVAILABLE}", pytrace=False)
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

INPUTS = S.corpus_inputs() if S.CORPUS.is_dir() else []

#: Corpus logs rescue cannot bring back, each with dsh's refusal that no transformation resolves
#: (the outcome must state it; docs/rescue.md "What rescue cannot do" groups them).
CANNOT: dict[str, str] = {
    # written by a fork build: dsh's Session refuses the system/message source (test_oracle.SESSION_SYSTEM_SOURCE)
    FORK_BUILT_V3[0]: "Session migration from v3 to v4 refuses the transformed artifact: seed system/message at index 9 message must have system-prompt source",
    FORK_BUILT_V3[1]: "Session migration from v3 to v4 refuses the transformed artifact: seed system/message at index 7 message must have system-prompt source",
    'corpus/v0/upstream/apps__web__tests__snapshots__minimal-preset__session.jsonl':
        'format v2 surface before first step cannot acquire a system head without changing chronology',
    'corpus/v0/upstream/apps__web__tests__snapshots__web-search-round__session.jsonl':
        'format v2 surface before first step cannot acquire a system head without changing chronology',
    'corpus/v0/upstream/examples__headless-agent__tests__snapshots__ralph-loop__session.1.jsonl':
        'Session migration from v0 to v4 refuses the transformed artifact: assistant/attempt does not match an open turn and step',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-child__session.1.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-child__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-pin__session.1.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-pin__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__blocked-log__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: hook/result 0 data lacks required member "turn"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__pin-turn__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__plain-turn__session.1.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__plain-turn__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__shared-pin__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0/zsagi1368-zDSH/packages__test-support__session-snapshot__tests__fixtures__suite__plain-turn__session.jsonl':
        'format v2 changed request prompt outside an open step cannot retain source chronology',
    'corpus/v0-early/upstream/examples__acp-agent__tests__snapshots__error-finish__session.golden.jsonl':
        'format v0 contains unknown historical event type "error" at seq 4; migration refuses unknown historical events even when ignorable',
    'corpus/v0-early/upstream/examples__acp-agent__tests__snapshots__hook-cc-posttool-context__session.jsonl':
        'format v0 contains unknown historical event type "context/message" at seq 64; migration refuses unknown historical events even when ignorable',
    'corpus/v0-early/upstream/examples__acp-agent__tests__snapshots__multi-turn__session.golden.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: assistant/message 27 data has unexpected member "content"',
    'corpus/v0-early/upstream/examples__acp-agent__tests__snapshots__tool-call-turn__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: assistant/message 54 data has unexpected member "content"',
    'corpus/v0-early/upstream/examples__sandbox-acp-agent__tests__snapshots__mode-switching__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 3 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/apps__web__tests__snapshots__minimal-preset__session.jsonl':
        'format v2 surface before first step cannot acquire a system head without changing chronology',
    'corpus/v0-enveloped/knyazev741/apps__web__tests__snapshots__web-search-round__session.jsonl':
        'format v2 surface before first step cannot acquire a system head without changing chronology',
    'corpus/v0-enveloped/knyazev741/examples__headless-agent__tests__snapshots__ralph-loop__session.1.jsonl':
        'Session migration from v0 to v4 refuses the transformed artifact: assistant/attempt does not match an open turn and step',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-child__session.1.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-child__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-pin__session.1.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-pin__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__suite__pin-turn__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__suite__plain-turn__session.1.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__suite__plain-turn__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-enveloped/knyazev741/packages__test-support__acp-snapshot__tests__fixtures__suite__shared-pin__session.jsonl':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-wrapped/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-child__behavior.json#0':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-wrapped/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-child__behavior.json#1':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-wrapped/upstream/packages__test-support__acp-snapshot__tests__fixtures__record-suite__rec-pin__behavior.json#0':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-wrapped/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__pin-turn__behavior.json#0':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-wrapped/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__plain-turn__behavior.json#0':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v0-wrapped/upstream/packages__test-support__acp-snapshot__tests__fixtures__suite__plain-turn__behavior.json#1':
        '@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: request/header 0 header config lacks required member "provider"',
    'corpus/v4/hebilicious/snapshots__sdk__text-turn__session.v4.jsonl':
        'format v4 contains unknown event type "agent/harness" at seq 0',
    'corpus/v4-wrapped/zq0929/snapshots__sdk__text-turn__notifications.expected.jsonl':  # the current slot's scanner's words
        'corrupt session log: invalid committed event at line 1: released v2 row 0 has seq gap (expected 0, got 3)',
    'corpus/v5/wangnaiyu/packages__experimental__webworker-runtime__tests__fixtures__vfs-example__home__sessions__--dsh-workspace--__preview-follow-up-builder__session.v5.jsonl':
        'session "preview-follow-up-builder" uses log format v5, but this harness reads only v4: the log was written by a newer harness — upgrade the harness to open it',
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S.Oracle]:
    S.materialize(INPUTS, tmp_path_factory.mktemp("rescue-inputs"))
    o = S.Oracle()
    for inp in INPUTS:
        o.submit(["read", str(inp.path)])
    yield o
    o.close()


OUTCOMES: Counter[str] = Counter()


def _for_oracle(target: Path) -> Path:
    """The successor as the oracle can read it.

    A cwd holding a snapshot placeholder inside a path (``{{cwd}}/workspace``) is a
    documented deviation (README "How dshlog relates to dsh", ``CWD_PLACEHOLDER`` of
    test_oracle.py): dsh's code refuses it, the oracle swaps only a whole
    placeholder.  Such a successor is handed over with the whole placeholder.
    """
    lines = target.read_bytes().split(b"\n", 1)
    header = json.loads(lines[0])
    cwd = header.get("cwd")
    if not (isinstance(cwd, str) and "{{" in cwd and cwd != "{{cwd}}" and cwd.startswith("{{")):
        return target
    header["cwd"] = "{{cwd}}"
    copy = target.with_name("oracle-" + target.name)
    copy.write_bytes(json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" + lines[1])
    return copy


def _surface_texts(path: Path) -> tuple[list[str], list[str]]:
    """(texts of messages the source shows, texts of every message) of the source's stored events.

    A message a later replacement or compaction shadows is not shown (the derived
    messages leave it out, for the source as for the successor).
    """
    stored, _ = read_stored(path)
    shadowed: set[Any] = set()
    for ev in stored.events:
        op = ev.get("surfaceOp")
        if isinstance(op, dict) and type(op.get("start")) is int and type(op.get("end")) is int:
            shadowed.update(range(op["start"], op["end"] + 1))
    shown, every = [], []
    for ev in stored.events:
        if ev.get("type") not in ("user/message", "assistant/message", "tool/result"):
            continue
        texts = [t for t in _texts(ev.get("data")) if t]
        every += texts
        if ev.get("seq") not in shadowed:
            shown += texts
    return shown, every


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            yield value["text"]
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


@pytest.mark.parametrize("inp", INPUTS, ids=[i.id for i in INPUTS])
def test_rescue_outcome(inp: S.Input, oracle: S.Oracle, tmp_path: Path) -> None:
    assert inp.path is not None
    # dsh's read-only open (chain and v4 restore); the fork-built v3 logs are refused by dsh's
    # Session, which the oracle leaves out (a documented deviation of the differential suite)
    refused = oracle.answer(["read", str(inp.path)])["status"] != "ok" or inp.id in FORK_BUILT_V3
    d = tmp_path / "s"
    d.mkdir()
    src = d / inp.path.name
    shutil.copyfile(inp.path, src)
    before = src.read_bytes()
    out = rescue_session(src, all_=True, publish=True)
    assert src.read_bytes() == before, "the source changed"
    if not refused:
        OUTCOMES["accepted by dsh"] += 1
        assert out.status == "accepted", out.as_dict()
        assert sorted(os.listdir(d)) == [src.name], "rescue wrote beside a log dsh accepts"
        return
    if inp.id in CANNOT:
        OUTCOMES["cannot"] += 1
        assert out.status == "cannot", out.as_dict()
        assert out.plan is not None and out.plan.remaining is not None
        assert out.plan.remaining.message == CANNOT[inp.id], out.why_not
        assert out.why_not is not None and CANNOT[inp.id] in out.why_not
        assert sorted(os.listdir(d)) == [src.name]
        return
    assert out.status == "rescued", out.as_dict()
    OUTCOMES["rescued"] += 1
    assert out.target is not None and out.record is not None
    target = _for_oracle(Path(out.target))
    read = oracle.answer(["read", str(target)])
    assert read["status"] == "ok", read
    messages = oracle.answer(["messages", str(target)])
    assert messages["status"] == "ok", messages
    derived = "\n".join(_texts(messages["messages"]))
    held = "\n".join(_texts([json.loads(row) for row in read["logical"]]))
    shown, every = _surface_texts(src)
    assert [t for t in shown if t not in derived] == [], "a message the source shows is not among the derived messages"
    assert [t for t in every if t not in held] == [], "a message text of the source is not in the successor"
    record = json.loads(Path(out.record).read_text("utf-8"))
    assert record["source"]["size"] == len(before)
    assert record["transformations"] == [st.transformation for st in out.plan.steps] if out.plan else False


def test_outcome_table() -> None:
    """The counts of the run above (printed with ``-s``); every refused corpus log has an outcome."""
    print("\nrescue --all over the corpus:", dict(OUTCOMES))
    if OUTCOMES:
        assert OUTCOMES["rescued"] > 0
