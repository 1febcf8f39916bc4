"""Every v0..v3 corpus file migrates cleanly or is refused with a clean error.

Headerless files, wrapped containers and headers without ``version`` are the
reader's business and are skipped here.  Rows without seq/time (projections)
get seq by position and time 0, as the reader restores them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import read_log
from dshlog.errors import DshlogError
from dshlog.migrate import migrate_stream

SHARED = Path(os.environ.get("DSHLOG_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CORPUS = SHARED / "corpus"
ERAS = ("v0", "v0-enveloped", "v0-early", "v1", "v2", "v3")
V4_TYPES = {
    "agent-preset/selected", "agent/inbox/spliced", "approval/asked", "approval/decided", "approval/policy",
    "assistant/attempt", "assistant/message", "command/run", "command/done", "compaction/start",
    "compaction/summary", "compaction/end", "compaction/prune", "deliverables/presented", "developer/message",
    "feedback/record", "feedback/message-put", "feedback/message-delete", "goal/change", "hook/invoked",
    "hook/result", "image/offload", "job/registered", "job/settled", "llm/retry", "llm/retry-started",
    "model/selection", "permission/preset", "plan/mode", "request/context", "request/header", "sandbox/mode",
    "schedule/change", "session-log-deepseek/delivery-accepted", "session/end-seed", "session/title",
    "session/title-llm-request", "step/start", "step/end", "subagent/catalog", "subagent/descriptor",
    "subagent/model-selection-policy", "system/message", "team/member", "team/message/delivered",
    "team/message/queued", "team/task", "todo/write", "tool-workflow/run-start", "tool-workflow/run-end",
    "tool-workflow/agent-start", "tool-workflow/agent-end", "tool/call", "tool/ptc-dispatch-start",
    "tool/ptc-dispatch", "tool/result", "turn/start", "turn/end", "user/message",
    "web/deepseek-search-llm-request", "working-directory/change", "workspace/changes",
}
EDGE_TEXT = re.compile(r"^@deepseek-ai/dsh-session-format-v([0-3])-to-v([1-4]) refuses this format v\1 Session: .+")


def _files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for era in ERAS for p in (CORPUS / era).glob("*/*") if p.is_file())


FILES = _files()
REFUSED: dict[str, str] = {}


@pytest.mark.skipif(not FILES, reason=f"shared corpus not found under {CORPUS} (set DSHLOG_SHARED)")
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.parent.name}/{p.name[-60:]}" for p in FILES])
def test_corpus_file_migrates_or_refuses_cleanly(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")
    try:
        header = json.loads(lines[0])
    except ValueError:
        pytest.skip("headerless file (reader's business)")
    if not isinstance(header, dict) or header.get("type") != "session":
        pytest.skip("wrapped container or headerless file (reader's business)")
    if "version" not in header:
        pytest.skip("header without version (reader's business)")
    try:
        _, events = read_log(path)
        h4, it = migrate_stream(header, iter(events), child_facts=[], projection=True)
        out = list(it)
    except DshlogError as err:
        REFUSED[str(path.relative_to(CORPUS))] = err.message
        assert err.message and "\n" not in err.message
        assert EDGE_TEXT.match(err.message) or err.kind in ("corrupt", "unsupported", "refused"), err.message
        return
    assert h4["version"] == 4
    assert [e["seq"] for e in out] == list(range(len(out)))
    for e in out:
        assert e["type"] != "assistant/chunk"
        assert e["type"] in V4_TYPES or e["type"].startswith("plugin:"), e["type"]
        op = e.get("surfaceOp")
        if isinstance(op, dict):
            assert set(op) == {"op", "startSeq", "endSeq"}, op
        if e["type"] in ("tool/result",):
            assert e["data"]["message"]["role"] == "tool"
        for ref in e.get("sourceEventSeqs", []):
            assert ref < e["seq"]


def test_report_refusals() -> None:
    """Not an assertion on our output: prints the refusal list for the report (run with -s)."""
    if not FILES:
        pytest.skip("shared corpus not found")
    for name, message in sorted(REFUSED.items()):
        print(f"REFUSED {name}: {message}")
