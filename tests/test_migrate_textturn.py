"""The seed's text-turn migration (FORMAT §4.8, golden EXPECTED.md "Migration").

The corpus holds the fixture one version later (format v1, projection without
seq/time).  A small local loader restores seq by position, time 0, and expands
packed rows and ranges, as the project's reader does.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import read_log
from dshlog.migrate import migrate_stream

SHARED = Path(os.environ.get("DSHLOG_SHARED", Path(__file__).resolve().parents[2] / "shared"))
FIXTURE = SHARED / "corpus" / "v1" / "knyazev741" / "snapshots__session__text-turn__session.v1.jsonl"

PACKED = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta", "tool-call-chunks": "tool-call-delta"}


def load_rows(lines: list[bytes]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header + logical events of a log given as lines, through the project's reader."""
    header, events = read_log(b"".join(line + b"\n" for line in lines if line.strip()))
    assert header is not None
    return header, events


@pytest.fixture(scope="module")
def fixture_lines() -> list[bytes]:
    if not FIXTURE.is_file():
        pytest.skip(f"shared corpus fixture not found: {FIXTURE} (set DSHLOG_SHARED)")
    return FIXTURE.read_bytes().split(b"\n")


def js_id(session_id: str, seq: int, anchor: str) -> str:
    text = json.dumps(["session-format-v2-to-v3", session_id, seq, anchor], separators=(",", ":"),
                      ensure_ascii=False)
    return "v2-to-v3-system-" + hashlib.sha256(text.encode()).hexdigest()


EXPECTED_TYPES = [
    "permission/preset", "sandbox/mode", "approval/policy", "agent/inbox/spliced", "turn/start",
    "agent/inbox/spliced", "step/start", "system/message", "user/message", "user/message", "session/title",
    "system/message", "request/header", "request/context", "assistant/message", "step/end", "turn/end",
]


def test_fixture_shape(fixture_lines: list[bytes]) -> None:
    header, events = load_rows(fixture_lines)
    assert len([x for x in fixture_lines if x]) == 25
    assert header["version"] == 1 and len(events) == 43  # seq 0..42 per §4.8


def test_text_turn_migrates_to_17_v4_events(fixture_lines: list[bytes]) -> None:
    header, events = load_rows(fixture_lines)
    snapshot = json.dumps(events)
    h4, it = migrate_stream(header, iter(events), child_facts=[], projection=True)
    out = list(it)
    assert json.dumps(events) == snapshot  # inputs never mutated
    assert [e["type"] for e in out] == EXPECTED_TYPES
    assert [e["seq"] for e in out] == list(range(17))
    assert it.inherited_cut == 0
    assert list(h4) == ["type", "version", "id", "createdAt", "cwd", "isSeeded", "delegationDepth"]
    assert h4["version"] == 4 and h4["isSeeded"] is False

    head, repl = out[7], out[11]
    assert list(head) == ["type", "seq", "time", "data", "surfaceOp"]
    assert head["surfaceOp"] == "append"
    assert head["data"] == {"turn": 1, "step": 1, "message": {
        "id": js_id("{{session:1}}", 6, "step/start"), "role": "system", "source": {"kind": "system-prompt"},
        "content": []}}
    assert list(repl) == ["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs"]
    assert repl["surfaceOp"] == {"op": "replace", "startSeq": 7, "endSeq": 7}
    assert repl["sourceEventSeqs"] == [7]
    assert repl["data"]["message"]["id"] == js_id("{{session:1}}", 10, "request/header")
    assert repl["data"]["message"]["content"] == [{"type": "text", "text": "{{system}}"}]
    assert repl["data"]["message"]["source"] == {"kind": "system-prompt"}

    runtime = out[9]["data"]["source"]
    assert list(runtime) == ["kind", "form", "sections"] and runtime["kind"] == "runtime-context"
    assert out[10]["data"]["messageSeqs"] == [8]
    assert "system" not in out[12]["data"]["header"]
    assert out[12]["data"]["header"]["tools"] == "{{tools}}"  # placeholder kept opaque

    msg = out[14]
    assert "sourceEventSeqs" not in msg and msg["surfaceOp"] == "append"
    stream = msg["data"]["stream"]
    assert list(msg["data"])[-1] == "stream"
    assert [r["type"] for r in stream] == ["chunk", "reasoning-chunks", "chunk", "text-chunks", "chunk", "chunk",
                                           "chunk", "chunk"]
    assert stream[0]["chunk"] == {"type": "block-start", "index": 0, "blockType": "reasoning"}
    assert len(stream[1]["texts"]) == 20 and len(stream[1]["dt"]) == 19 and stream[1]["index"] == 0
    assert stream[3] == {"type": "text-chunks", "time0": 0, "index": 1, "dt": [0], "texts": ["P", "ONG"]}
    assert [r["chunk"]["type"] for r in stream[4:]] == ["block-end", "block-end", "usage", "finish"]


def expand_refs(value: list[Any]) -> list[int]:
    """The v1 writer range-encodes sourceEventSeqs; the seed's v0 file lists them expanded."""
    out: list[int] = []
    for m in value:
        out.extend(range(m[0], m[1] + 1)) if isinstance(m, list) else out.append(m)
    return out


def _v0_on_disk(fixture_lines: list[bytes]) -> bytes:
    """The seed's v0 form: upstream plugin scope, real 13-digit seq/time, expanded sources."""
    text = b"\n".join(fixture_lines).decode().replace("@knyazevai/", "@deepseek-ai/")
    lines = [x for x in text.split("\n") if x]
    header = json.loads(lines[0])
    header["version"] = 0
    base = 1783600630000
    rows: list[dict[str, Any]] = []
    seq = 0
    for raw in lines[1:]:
        row = json.loads(raw)
        if row["type"] in PACKED:
            rows.append({"type": row["type"], "seq0": seq, "time0": base + seq, "data": row["data"]})
            seq += len(row["data"]["texts"])
            continue
        ev: dict[str, Any] = {"type": row["type"], "seq": seq, "time": base + seq}
        for key, value in row.items():
            if key != "type":
                ev[key] = expand_refs(value) if key == "sourceEventSeqs" else value
        rows.append(ev)
        seq += 1
    return b"".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
                    for r in [header, *rows])


def test_v0_form_size_changes_by_minus_nine(fixture_lines: list[bytes]) -> None:
    v0 = _v0_on_disk(fixture_lines)
    lines = v0.split(b"\n")
    assert len([x for x in lines if x]) == 25
    header, events = load_rows(lines)
    assert header["version"] == 0 and events[40]["sourceEventSeqs"] == list(range(12, 40))
    h4, it = migrate_stream(header, iter(events), child_facts=[], projection=True)
    out = list(it)
    assert len(out) == 17
    assert out[9]["data"]["source"]["kind"] == "runtime-context"
    v4 = b"".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in [h4, *out])
    assert len(v4) - len(v0) == -9
