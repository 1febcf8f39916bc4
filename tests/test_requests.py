"""Request reconstruction (SEMANTICS §4; dsh spec cases §9 items 35-36) and the real v4 corpus."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import read_log
from dshlog.errors import CorruptLog, UsageError
from dshlog.requests import RequestBuilder, ToolHistory, canonical_header, iter_requests, rebuild
from dshlog.surface import fold

# ---------------------------------------------------------------- builders (v4 in-memory events)


def ev(seq: int, etype: str, data: Any, **extra: Any) -> dict:
    return {"type": etype, "seq": seq, "time": 0, "data": data, **extra}


def rep(start: int, end: int) -> dict:
    return {"op": "replace", "startSeq": start, "endSeq": end}


def user(seq: int, text: str = "hi", **extra: Any) -> dict:
    extra.setdefault("surfaceOp", "append")
    return ev(seq, "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"},
                                    "role": "user", "id": f"u{seq}"}, **extra)


def system(seq: int, text: str | None = "prompt", **extra: Any) -> dict:
    extra.setdefault("surfaceOp", "append")
    content = [] if text is None else [{"type": "text", "text": text}]
    message = {"role": "system", "content": content, "source": {"kind": "system-prompt"}, "id": f"s{seq}"}
    return ev(seq, "system/message", {"turn": 1, "step": 1, "message": message}, **extra)


def assistant(seq: int, text: str = "ok", usage: dict | None = None) -> dict:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}],
               "source": {"kind": "model", "provider": "p", "model": "m"}, "id": f"a{seq}"}
    data: dict[str, Any] = {"turn": 1, "step": 1, "message": message}
    if usage is not None:
        data["usage"] = usage
    data["stream"] = []
    return ev(seq, "assistant/message", data, surfaceOp="append")


def attempt(seq: int, usage: dict | None = None) -> dict:
    stream = []
    if usage is not None:
        stream.append({"type": "chunk", "time": 0, "chunk": {"type": "usage", "usage": usage}})
    stream.append({"type": "chunk", "time": 0, "chunk": {"type": "finish", "reason": {"kind": "error",
                                                                                       "failure": {"message": "x", "code": "Y"}}}})
    return ev(seq, "assistant/attempt", {"turn": 1, "step": 1, "stream": stream})


def header(seq: int, tools: Any = None, reason: str = "initial", config: dict | None = None, **more: Any) -> dict:
    h: dict[str, Any] = {"config": config or {"provider": "p", "model": "m"}}
    if tools is not None:
        h["tools"] = tools
    h.update(more.pop("extra_header", {}))
    data: dict[str, Any] = {"header": h, "reason": reason, **more}
    return ev(seq, "request/header", data)


def developer(seq: int, blocks: list[dict], header_seq: int | None) -> dict:
    data: dict[str, Any] = {"turn": 1, "step": 1,
                            "message": {"role": "developer", "content": blocks, "source": {"kind": "tool-update"},
                                        "id": f"d{seq}"}}
    if header_seq is not None:
        data["headerSeq"] = header_seq
    return ev(seq, "developer/message", data, surfaceOp="append")


A = {"name": "a", "description": "A", "parameters": {"type": "object"}}
B = {"name": "b", "description": "B", "parameters": {"type": "object"}}


def numbered(events: list[dict]) -> list[dict]:
    """Renumber a hand-written event list 0..n-1 (builders take seq as first argument)."""
    return [dict(e, seq=i) for i, e in enumerate(events)]


# ---------------------------------------------------------------- header and tool history


def test_canonical_header() -> None:
    h = {"config": {"provider": "p", "model": "m", "maxTokens": 5}, "adapterDefaults": {"maxTokens": True},
         "tools": [A]}
    assert canonical_header(h) == h and list(canonical_header(h)) == ["config", "adapterDefaults", "tools"]
    assert canonical_header({"config": {"provider": "p"}, "adapterDefaults": {"maxTokens": False}}) == {
        "config": {"provider": "p"}
    }
    assert canonical_header({"config": {}, "tools": []}) == {"config": {}}
    assert canonical_header({"config": {}, "tools": "{{tools}}"}) == {"config": {}, "tools": "{{tools}}"}


def test_request_key_order_and_config_passthrough() -> None:
    cfg = {"provider": "p", "model": "m", "reasoningEffort": "high", "temperature": 0.5, "maxTokens": 9, "stop": ["x"]}
    log = [user(0), header(1, [A], config=cfg), assistant(2)]
    r = rebuild(log, 1, session_id="sid")
    assert list(r) == ["provider", "model", "reasoningEffort", "temperature", "maxTokens", "stop", "messages",
                       "toolHistory", "tools", "sessionId"]
    assert r["tools"] == [A] and r["sessionId"] == "sid" and "system" not in r
    r = rebuild([user(0), header(1), assistant(2)], 1)
    assert list(r) == ["provider", "model", "messages", "toolHistory"]
    assert r["toolHistory"] == {"tools": [], "updates": []}


def test_tool_history_updates_and_baselines() -> None:
    th = ToolHistory()
    assert th.snapshot() == {"tools": [], "updates": []}
    th.apply(header(0, [A]))
    th.apply(header(1, [A, B], reason="change"))
    # Active names {a, b} but only {a} available: a legacy log without updates.
    assert th.snapshot() == {"tools": [A, B], "updates": []}
    th.apply(developer(2, [{"type": "tool-addition", "toolName": "b"}], header_seq=1))
    snap = th.snapshot()
    assert snap == {"tools": [A], "updates": [{"messageId": "d2", "additions": [B]}]}
    assert list(snap["updates"][0]) == ["messageId", "additions"]
    th.apply(header(3, [A], reason="change"))
    th.apply(developer(4, [{"type": "tool-removal", "toolName": "b"}], header_seq=None))
    assert th.snapshot()["updates"][-1] == {"messageId": "d4", "additions": []}
    th.apply(header(5, [B], reason="series"))
    assert th.snapshot() == {"tools": [B], "updates": []}
    # Redeclaring a known name with a different schema starts a new baseline.
    th.apply(header(6, [B, A], reason="change"))
    th.apply(developer(7, [{"type": "tool-addition", "toolName": "a"}], header_seq=6))
    th.apply(header(8, [dict(A, description="changed")], reason="change"))
    assert th.snapshot() == {"tools": [dict(A, description="changed")], "updates": []}


def test_tool_history_missing_definition() -> None:
    th = ToolHistory()
    th.apply(header(0, [A]))
    th.apply(header(1, [B], reason="change"))
    with pytest.raises(CorruptLog, match="tool history: missing definition for a"):
        th.apply(developer(2, [{"type": "tool-addition", "toolName": "a"}], header_seq=1))


def test_tool_history_in_requests() -> None:
    log = [user(0), header(1, [A]), assistant(2), header(3, [A, B], reason="change"),
           developer(4, [{"type": "tool-addition", "toolName": "b"}], header_seq=3), assistant(5)]
    r1, r2 = rebuild(log, 1), rebuild(log, 2)
    assert r1["toolHistory"] == {"tools": [A], "updates": []} and r1["tools"] == [A]
    assert r2["toolHistory"] == {"tools": [A], "updates": [{"messageId": "d4", "additions": [B]}]}
    assert r2["tools"] == [A, B] and [m["role"] for m in r2["messages"]] == ["user", "assistant", "developer"]


# ---------------------------------------------------------------- numbering and streaming


def test_out_of_range_texts() -> None:
    log = [user(0), header(1), assistant(2)]
    with pytest.raises(UsageError) as info:
        rebuild(log, 2)
    assert info.value.message == "request 2 does not exist: the log holds 1 request"
    with pytest.raises(UsageError) as info:
        rebuild([user(0)], 1)
    assert info.value.message == "request 1 does not exist: the log holds 0 requests"


def test_rebuild_stops_at_its_settlement() -> None:
    log = [user(0), header(1), assistant(2), user(3), assistant(4)]

    def stream() -> Iterator[dict]:
        yield from log[:3]
        raise AssertionError("rebuild read past the settlement of request 1")

    assert len(rebuild(stream(), 1)["messages"]) == 1
    # The request never contains its own response nor anything after it.
    assert [m["id"] for m in rebuild(log, 2)["messages"]] == ["u0", "a2", "u3"]


def test_missing_header() -> None:
    log = [user(0), assistant(1)]
    with pytest.raises(CorruptLog, match="no request header before request 1"):
        rebuild(log, 1)
    assert rebuild(log, 1, require_header=False) == {"messages": [log[0]["data"]], "toolHistory": {"tools": [], "updates": []}}


def test_prefix_theorem_on_constructed_log() -> None:
    """§9.35: request N == request built from prefix(settlement.seq), for every N."""
    log = numbered([system(0), user(0), header(0, [A]), assistant(0), attempt(0), assistant(0), user(0),
                    ev(0, "session/title", {"title": "t"}), assistant(0),
                    user(0, "sum", surfaceOp=rep(1, 6), sourceEventSeqs=[1, 3, 5, 6]),
                    header(0, [A], reason="series"), assistant(0)])
    settlements = [e["seq"] for e in log if e["type"] in ("assistant/message", "assistant/attempt")]
    for n, s in enumerate(settlements, start=1):
        builder = RequestBuilder(session_id="x")
        for e in log[:s]:
            builder.apply(e)
        assert orjson.dumps(builder.build()) == orjson.dumps(rebuild(log, n, session_id="x"))
        assert builder.build()["messages"] == fold(log[:s]).messages()


# ---------------------------------------------------------------- extends / reasons (§9.36)


def test_extends_and_reasons() -> None:
    log = numbered([
        system(0), user(0), header(0, [A]), assistant(0, usage={"inputTokens": 7, "outputTokens": 2}),  # 1 @3
        attempt(0, usage={"inputTokens": 3, "outputTokens": 0}),                                          # 2 @4
        assistant(0),                                                                                     # 3 @5
        user(0, "summary", surfaceOp=rep(1, 5), sourceEventSeqs=[5, 3, 1]),                               # 6
        header(0, [A], reason="series"), assistant(0),                                                    # 4 @8
        system(0, "new prompt", surfaceOp=rep(0, 0), sourceEventSeqs=[0]),                               # 9
        header(0, [A], reason="series"), assistant(0),                                                    # 5 @11
        header(0, [A, B], reason="change", config={"provider": "p", "model": "m2"}), assistant(0),        # 6 @13
        header(0, [A, B], reason="series", config={"provider": "p", "model": "m2"}), assistant(0),        # 7 @15
    ])
    infos = list(iter_requests(log))
    assert [i.seq for i in infos] == [3, 4, 5, 8, 11, 13, 15]
    assert [i.extends for i in infos] == [None, True, True, False, False, True, True]
    assert [i.reason for i in infos] == [None, None, None, "compaction replace", "system prompt change", None, None]
    assert infos[3].changes == ["compaction replace", "new series"]
    assert infos[5].changes == ["header change", "tool change"] and infos[5].header_reason == "change"
    assert infos[6].changes == ["new series"]
    assert (infos[0].input_tokens, infos[0].output_tokens) == (7, 2)
    assert (infos[1].kind, infos[1].input_tokens, infos[1].output_tokens) == ("assistant/attempt", 3, 0)
    assert infos[2].input_tokens is None
    assert [i.message_count for i in infos] == [2, 3, 3, 2, 3, 4, 5]


def test_projection_rewrites_history() -> None:
    img = {"type": "image", "attachment": {"attachmentId": "x"}}
    u = ev(0, "user/message", {"content": [img], "source": {"kind": "user"}, "role": "user", "id": "u0"},
           surfaceOp="append")
    log = [u, header(1), assistant(2), ev(3, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0]}]}),
           assistant(4)]
    infos = list(iter_requests(log))
    assert (infos[1].extends, infos[1].reason) == (False, "history rewritten")
    assert rebuild(log, 2)["messages"][0]["content"][0] == dict(img, offloaded=True)


# ---------------------------------------------------------------- the real v4 corpus


def _shared() -> Path:
    env = os.environ.get("DSHLOG_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"


def load_projection(path: Path) -> list[dict]:
    """Corpus files are test snapshots: the reader restores seq by position (time 0)."""
    return read_log(path)[1]


CORPUS = sorted((_shared() / "corpus" / "v4").glob("*/*.jsonl"))

# Fork-only event types the dsh vocabulary does not know (CORPUS NOTES §6).
FORK_ONLY = {"agent/harness"}


@pytest.mark.skipif(not CORPUS, reason="shared corpus/v4 not found (set DSHLOG_SHARED)")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name[-60:] for p in CORPUS])
def test_corpus_folds_and_rebuilds(path: Path) -> None:
    events = load_projection(path)
    strict = not any(e["type"] in FORK_ONLY for e in events)
    state = fold(events, strict_unknown=strict)
    assert state.next_seq == len(events)
    assert len(state.messages()) <= len(state.nodes)
    infos = list(iter_requests(events, strict_unknown=strict))
    for info in infos:
        seen_header = any(e["type"] == "request/header" for e in events[: info.seq])
        request = rebuild(events, info.number, session_id="{{sessionId}}", require_header=False, strict_unknown=strict)
        assert len(request["messages"]) == info.message_count
        if seen_header:
            rebuild(events, info.number, strict_unknown=strict)  # strict mode too
        else:
            with pytest.raises(CorruptLog):
                rebuild(events, info.number, strict_unknown=strict)
    for node in state.node_info():
        assert node["role"] in {"system", "user", "assistant", "tool", "developer"}


def test_corpus_known_surfaces() -> None:
    """Spot checks against what the corpus files say (MANIFEST/NOTES), not against our output."""
    base = _shared() / "corpus" / "v4"
    revision = base / "ryanzhou416" / "snapshots__sdk__revision-in-place__session.v4.jsonl"
    compaction = base / "zq0929" / "snapshots__session__compaction-recovery__session.v4.jsonl"
    if not revision.is_file() or not compaction.is_file():
        pytest.skip("shared corpus/v4 not found (set DSHLOG_SHARED)")
    rev = load_projection(revision)
    state = fold(rev)
    # The revised question replaced the original question and its answer, then itself.
    assert [m["content"][0]["text"] for m in state.messages()][1:] == ["REVISED_QUESTION", "REVISED_REPLY"]
    comp = load_projection(compaction)
    infos = list(iter_requests(comp))
    assert [i.kind for i in infos] == ["assistant/message", "assistant/attempt", "assistant/message"]
    assert infos[2].extends is False and infos[2].header_reason == "series"
    # The retried request carries the checkpoint in place of the shadowed question.
    last = rebuild(comp, 3)
    assert last["messages"][1]["source"]["kind"] == "compact-checkpoint"
    assert last["tools"] == "{{tools}}" and last["toolHistory"] == {"tools": "{{tools}}", "updates": []}
