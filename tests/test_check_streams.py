"""Stream-record rules (check/streams.py): the one-pass proof agrees with the exact checks."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshlog.check.problems import Problem
from dshlog.check.streams import _stream_passes, check_stream, check_stream_blocks, check_stream_record
from dshlog.protocol.values import MAX_SAFE_INTEGER


class _Found(list):
    report = list.append


# --------------------------------------------------------------------------- stream fast path
# (moved from tests/test_validate.py with the rules; the per-record checks are now a
# function of check/streams.py instead of a Validator method, the assertions are the same)

_SAFE = MAX_SAFE_INTEGER
_scalar = st.one_of(
    st.integers(-2, 2),  # the boundaries of counts
    st.integers(-_SAFE, _SAFE),
    st.sampled_from([_SAFE + 1, -_SAFE - 1, 2**63, 1.0, 1.5, -0.0, True, False, None, "1", [], {}]),
)
_member = st.one_of(st.text(max_size=3), st.sampled_from([1, None, True, [], {}]))


@st.composite
def _stream_record(draw: Any) -> Any:
    kind = draw(st.sampled_from(["chunk", "text-chunks", "reasoning-chunks", "tool-call-chunks", "other"]))
    if kind == "chunk":
        record: dict[str, Any] = {"type": "chunk", "time": draw(_scalar), "chunk": {"type": "text-delta"}}
    else:
        members = draw(st.lists(_member, max_size=4))
        n = max(len(members) - 1, 0) + draw(st.sampled_from([0, 0, 0, 1, -1]))
        record = {"type": kind, "time0": draw(_scalar), "index": draw(_scalar), "dt": draw(st.lists(_scalar, min_size=max(n, 0), max_size=max(n, 0)))}
        if kind == "tool-call-chunks":
            record["id"] = draw(st.sampled_from(["call-1", "", 7]))
            if draw(st.booleans()):
                record["name"] = draw(st.sampled_from(["read", "", None]))
            record["args"] = members
        else:
            record["texts"] = members
    mutation = draw(st.sampled_from(["none"] * 6 + ["extra", "drop", "chunk", "notdict"]))
    if mutation == "extra":
        record["extra"] = 1
    elif mutation == "drop":
        record.pop(draw(st.sampled_from(sorted(record))))
    elif mutation == "chunk" and kind == "chunk":
        record["chunk"] = draw(st.sampled_from([{}, {"type": 3}, "x", None]))
    elif mutation == "notdict":
        return draw(st.sampled_from([None, 3, "chunk", []]))
    return record


@pytest.mark.fast_paths  # the one-pass proof beside the record checks, compared in one process
@settings(max_examples=600, deadline=None)
@given(st.lists(_stream_record(), max_size=5))
def test_stream_fast_path_agrees_with_the_record_checks(stream):
    """The one-pass proof is only ever used where the per-record checks find nothing, and
    it is taken for every clean stream of plain ints and strings (else it would be dead)."""
    found = _Found()
    for pos, record in enumerate(stream):
        check_stream_record(record, 5, pos, found)
    clean = not found
    if _stream_passes(stream):
        assert clean
    elif clean:
        # only a JS-legal float (1.0 counts as an integer in JS) may fall back
        scalars = [r.get(k) for r in stream for k in ("time", "time0", "index")] + [d for r in stream for d in r.get("dt", [])]
        assert any(type(x) is float for x in scalars), stream


# --------------------------------------------------------------------------- texts


def test_record_problems_name_the_record_and_its_settlement() -> None:
    found = _Found()
    stream = [
        {"type": "chunk", "time": 0, "chunk": {"type": "usage"}},
        {"type": "text-chunks", "time0": 0, "index": 0, "dt": [1, 2], "texts": ["a", "b"]},
        {"type": "mystery"},
    ]
    check_stream(stream, 8, found)
    assert [(p.code, p.seq, p.message) for p in found] == [
        ("stream", 8, "stream record 1 of seq 8 dt must have one entry fewer than texts (2 vs 2)"),
        ("stream", 8, "stream record 2 of seq 8 has unknown record type 'mystery'"),
    ]
    found.clear()
    check_stream([{"type": "chunk", "time": 1.0, "chunk": {"type": "usage"}}], 8, found)
    assert found == []  # 1.0 is an integer to JS: the exact checks accept what the proof could not


def test_stream_blocks_refuse_retired_wrappers_and_tool_changes() -> None:
    found = _Found()
    data = {
        "stream": [
            {"type": "chunk", "time": 0, "chunk": {"type": "block-start", "blockType": "tool-result"}},
            {"type": "chunk", "time": 0, "chunk": {"type": "block-end", "block": {"type": "tool-addition"}}},
            {"type": "chunk", "time": 0, "chunk": {"type": "block-end", "block": {"type": "text"}}},
        ]
    }
    check_stream_blocks(data, 3, "retired text", found)
    assert found == [
        Problem("retired", "retired text", seq=3),
        Problem("message", "format v4 tool-change blocks require developer role", seq=3),
    ]
