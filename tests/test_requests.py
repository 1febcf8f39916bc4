"""Request reconstruction (SEMANTICS §4; dsh spec cases §9 items 35-36) and the real v4 corpus."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import FIXTURES, corpus_files, corpus_ids, read_log, requires_corpus
from dshlog.errors import CorruptLog, UsageError
from dshlog.model.requests import RequestBuilder, ToolHistory, request_header, iter_requests, rebuild
from dshlog.check.surface import fold

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
    assert request_header(h) == h and list(request_header(h)) == ["config", "adapterDefaults", "tools"]
    assert request_header({"config": {"provider": "p"}, "adapterDefaults": {"maxTokens": False}}) == {
        "config": {"provider": "p"}
    }
    assert request_header({"config": {}, "tools": []}) == {"config": {}}
    assert request_header({"config": {}, "tools": "{{tools}}"}) == {"config": {}, "tools": "{{tools}}"}


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


# ---------------------------------------------------------------- fast paths == the straightforward fold
#
# iter_requests skips work the plain fold repeats at every request: it compares a pair of
# headers once (they change only at request/header events), takes just the messages instead
# of building the whole request, and packs rows without RequestInfo's general scans.  The
# reference below is that plain fold, written out, and every log we have must give the same
# rows -- and stop with the same error at the same request -- both ways.


def _reference_requests(events: list[dict], *, strict_unknown: bool = True,
                        require_header: bool = False) -> tuple[list[tuple], BaseException | None]:
    """Rows (RequestInfo field order) of the straightforward fold, and the error that ended it."""
    from dshlog.model.requests import _extends, _markers, _tools_text, _usage_of
    from dshlog.check.surface import json_equal

    order = ["compaction replace", "system prompt change", "new series", "header change", "tool change",
             "history rewritten"]

    def number(value: Any) -> int | None:
        return None if isinstance(value, bool) or not isinstance(value, (int, float)) else int(value)

    rows: list[tuple] = []
    builder = RequestBuilder(strict_unknown=strict_unknown)
    previous: list | None = None
    previous_header: dict | None = None
    previous_generation = -1
    try:
        for event in events:
            if not builder.is_settlement(event) or event.get("seq") != builder.surface.next_seq:
                builder.apply(event)
                continue
            messages = builder.build(require_header=require_header)["messages"]
            header = builder.header
            changes = ["new series"] if builder._since_series else []
            if previous is None:
                extends, changes = None, []
            else:
                for kind in builder._since_replacements:
                    reason = "system prompt change" if kind == "system/message" else "compaction replace"
                    if reason not in changes:
                        changes.append(reason)
                if previous_header is not None and header is not None:
                    if not json_equal(previous_header.get("config"), header.get("config")) or _markers(
                        previous_header) != _markers(header):
                        changes.append("header change")
                    if _tools_text(previous_header) != _tools_text(header):
                        changes.append("tool change")
                if builder._since_projection:
                    changes.append("history rewritten")
                if builder.surface.content_generation == previous_generation:
                    extends = len(messages) >= len(previous)
                else:
                    extends = _extends(previous, messages)
            changes.sort(key=order.index)
            data = event.get("data") if isinstance(event.get("data"), dict) else {}
            usage = _usage_of(event) or {}
            rows.append((
                builder.settlements + 1, event["seq"], event["type"], data.get("turn"), data.get("step"),
                len(messages), extends, (changes[0] if changes else "history rewritten") if extends is False else None,
                changes, builder.header_seq, builder._since_header_reason, data.get("interrupted") is True,
                number(usage.get("inputTokens")), number(usage.get("outputTokens")),
                number(usage.get("cacheReadTokens")), number(usage.get("reasoningTokens")),
            ))
            previous, previous_header = messages, header
            previous_generation = builder.surface.content_generation
            builder.apply(event)
    except Exception as exc:  # noqa: BLE001 - any error must be the same error
        return rows, exc
    return rows, None


def _typed(rows: list[tuple]) -> list[tuple]:
    """Rows compared with types: ``True`` is not ``1`` here."""
    return [tuple((type(v), v) for v in row) for row in rows]


def _error(exc: BaseException | None) -> tuple | None:
    return None if exc is None else (type(exc), str(exc), getattr(exc, "seq", None))


def assert_same_as_reference(events: list[dict], **kw: Any) -> int:
    """iter_requests == the straightforward fold on ``events``; returns the number of requests."""
    rows: list[tuple] = []
    error: BaseException | None = None
    try:
        for info in iter_requests(events, **kw):
            rows.append(info._values())
    except Exception as exc:  # noqa: BLE001
        error = exc
    expected, expected_error = _reference_requests(events, **kw)
    assert _typed(rows) == _typed(expected)
    assert _error(error) == _error(expected_error)
    return len(rows)


def _log_events(path: Path) -> list[dict]:
    """The events ``dshlog requests`` folds (older versions migrated), as far as they read."""
    from dshlog.errors import DshlogError
    from dshlog.read.session import open_log

    events: list[dict] = []
    try:
        with open_log(path, strict=False) as log:
            for event in log.v4():
                events.append(event)
    except DshlogError:
        pass  # a reader error ends both folds alike; the prefix is what they differ on, if at all
    return events


def test_header_pairs_compared_once_give_every_change() -> None:
    """Headers that come and go, equal but distinct objects, config-only and marker-only changes."""
    cfg2 = {"provider": "p", "model": "m2"}
    log = numbered([
        user(0), header(0, [A]), assistant(0), assistant(0),                       # 1, 2: same pair again
        header(0, [A, B], reason="change"), assistant(0), assistant(0),            # 3: tools, 4: none
        header(0, [A, B], reason="change"), assistant(0),                          # 5: equal copy
        header(0, [A, B], reason="change", config=cfg2), assistant(0),             # 6: config only
        header(0, [A, B], reason="change", config=cfg2,
               extra_header={"adapterDefaults": {"maxTokens": True}}), assistant(0),  # 7: markers
        header(0, [A], reason="change", config=cfg2), assistant(0),                # 8: markers and tools
        header(0, "{{tools}}", reason="change", config=cfg2), assistant(0), assistant(0),  # 9, 10
        header(0, [A], reason="change"), header(0, [A], reason="change"), assistant(0),  # 11
        # Equal to Python, not to JSON.stringify: key order and true/1 count.
        header(0, [dict(reversed(A.items()))], reason="change"), assistant(0),       # 12
        header(0, [dict(A, strict=1)], reason="change"), assistant(0),               # 13
        header(0, [dict(A, strict=True)], reason="change"), assistant(0),            # 14
    ])
    infos = list(iter_requests(log))
    assert [i.changes for i in infos] == [
        [], [], ["tool change"], [], [], ["header change"], ["header change"], ["header change", "tool change"],
        ["tool change"], [], ["header change", "tool change"], ["tool change"], ["tool change"], ["tool change"],
    ]
    assert all(i.extends is True for i in infos[1:])
    assert assert_same_as_reference(log) == 14
    assert assert_same_as_reference(log, require_header=True) == 14


def test_requests_errors_match_reference() -> None:
    """A request without a header (require_header) and a broken seq stop both folds alike."""
    log = numbered([user(0), assistant(0), header(0, [A]), assistant(0), user(0), assistant(0)])
    assert assert_same_as_reference(log) == 3
    assert assert_same_as_reference(log, require_header=True) == 0
    broken = log[:4] + [dict(log[4], seq=9)] + log[5:]
    assert assert_same_as_reference(broken) == 2


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name.startswith("session")),
                         ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixtures_match_reference(path: Path) -> None:
    events = _log_events(path)
    assert events, f"{path} should read"
    for strict in (True, False):
        assert_same_as_reference(events, strict_unknown=strict)


def test_generated_log_matches_reference(tmp_path: Path) -> None:
    """The benchmark generator's shapes (retries, compactions, parallel tools), rare ones often."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("bench_generate", FIXTURES.parent / "bench" / "generate.py")
    gen = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]  # the bench script exists: the spec is not None
    sys.modules.setdefault("bench_generate", gen)
    spec.loader.exec_module(gen)  # type: ignore[union-attr]  # a file spec has a loader
    path = gen.generate(tmp_path, "1M", 4, seed=5, zstd=False, rare=8.0)["plain"]
    assert assert_same_as_reference(_log_events(path)) > 50


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=corpus_ids())
def test_corpus_matches_reference(path: Path) -> None:
    events = _log_events(path)
    for strict in (True, False):
        assert_same_as_reference(events, strict_unknown=strict)
        assert_same_as_reference(events, strict_unknown=strict, require_header=True)


# ---------------------------------------------------------------- packed rows: fast path == general path

_ODD_NUMBERS = [None, 0, 1, -1, 7, 2**31 - 1, 2**31, -(2**31), -(2**31) + 1, -(2**31) + 2, 2**63 - 1, 2**63,
                -(2**63), -(2**63) + 2, 2**70, True, False, 1.5, 2.0, "3", [1]]
_ODD_CODED = [None, True, False, 0, 1, 2, "assistant/message", "assistant/attempt", "compaction replace",
              "tool change", "weird", "", {"k": 1}, ["x"], 1.0]


def _row_values() -> Any:
    """Rows of the usual shape (each field drawn from the values requests give), with up to
    three fields swapped for odd values, so both packing paths and their borders get exercised."""
    from hypothesis import strategies as st

    from dshlog.model.requests import _CHANGE_ORDER

    number = st.one_of(st.none(), st.integers(min_value=-(2**31) - 2, max_value=2**31 + 2),
                       st.sampled_from([-(2**31), -(2**31) + 1, -(2**31) + 2, 2**31 - 1, 2**31]))
    changes = st.lists(st.sampled_from(_CHANGE_ORDER), unique=True).map(
        lambda cs: [c for c in _CHANGE_ORDER if c in cs])
    usual = st.tuples(
        number, number, st.sampled_from(["assistant/message", "assistant/attempt"]), number, number, number,
        st.sampled_from([None, True, False]), st.sampled_from([None, *_CHANGE_ORDER]), changes, number,
        st.none(), st.booleans(), number, number, number, number,
    )
    odd_changes = st.one_of(st.lists(st.sampled_from([*_CHANGE_ORDER, "other", 1, None]), max_size=4),
                            st.sampled_from([None, (), ("tool change",), "tool change"]))
    odd = st.one_of(st.sampled_from(_ODD_NUMBERS), st.sampled_from(_ODD_CODED), odd_changes,
                    st.integers(min_value=-(2**65), max_value=2**65))
    swaps = st.lists(st.tuples(st.integers(min_value=0, max_value=15), odd), max_size=3)

    def swap(row: tuple, changes_: list[tuple[int, Any]]) -> tuple:
        values = list(row)
        for i, value in changes_:
            values[i] = value
        return tuple(values)

    return st.builds(swap, usual, swaps)


def test_fast_packing_equals_general_packing() -> None:
    """Wherever ``_pack_common`` packs a row, ``_pack_any`` packs the very same bytes and no extras;
    and every field reads back as given (types included), whichever path packed it."""
    from hypothesis import given, settings

    from dshlog.model.requests import RequestInfo, _pack_any, _pack_common

    served = [0]  # rows the fast path packed

    @settings(max_examples=3000, deadline=None)
    @given(_row_values())
    def check(values: tuple) -> None:
        fast = _pack_common(values)
        packed, extra = _pack_any(values)
        if fast is not None:
            assert (fast, None) == (packed, extra)
            served[0] += 1
        info = RequestInfo(*values)
        expected = list(values)
        expected[8] = [] if values[8] is None else values[8]
        assert _typed([info._values()]) == _typed([tuple(expected)])

    check()
    assert served[0] > 100
    typical = (3, 41, "assistant/message", 2, 1, 7, True, None, [], 40, None, False, 1200, 80, 0, None)
    assert _pack_common(typical) is not None  # the fast path does serve the usual row
    assert _pack_common(typical[:8] + (["compaction replace", "new series"],) + typical[9:]) is not None
