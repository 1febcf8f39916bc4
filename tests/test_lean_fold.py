"""The lean fold (``keep_messages=False``) decides every event exactly as the full fold.

The validator and dsh's restore fold with ``keep_messages=False``: a node keeps its
type and only what a later rule reads (a digest of a tool result's non-content
data, the whole message only when it holds an image); ``requests`` folds with
``digests=True`` as well, and its digests must be those of the full fold's messages.  These tests fold the same
events both ways, event by event, and require the same outcome: the same refusal
text and type, or the same surface, on hand-made cases of the two rules that read a
node's payload.  The lean fold is a fast path (``dshlog/fastpaths.py``): the whole
suite runs with it and without it, the differential suite compares every corpus
file's surface and messages with dsh's own in both runs, and the fuzzer compares the
two modes of ``validate``, ``surface`` and ``requests`` on every mutation class.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_surface import ev, tool, user

from dshlog.check.keys import equality_digest, message_digest
from dshlog.check.surface import SurfaceFold
from dshlog.errors import DshlogError
from dshlog.protocol.jsjson import json_equal


def _outcomes(events: list[Any]) -> list[tuple[Any, ...]]:
    """Fold ``events`` fully and leanly side by side; one outcome per event (both must agree)."""
    full = SurfaceFold(strict_unknown=False, keep_replacements=False)
    lean = SurfaceFold(strict_unknown=False, keep_replacements=False, keep_messages=False)
    hashed = SurfaceFold(strict_unknown=False, keep_replacements=False, keep_messages=False, digests=True)
    out: list[tuple[Any, ...]] = []
    for event in events:
        results = []
        for state in (full, lean, hashed):
            try:
                state.apply(event)
                results.append(("ok", list(state.nodes), state.content_generation, sorted(state.projected)))
            except DshlogError as exc:
                results.append((type(exc).__name__, exc.message))
                state.next_seq += 1  # as the validator does: skip the refused event and go on
        assert results[0] == results[1] == results[2], f"event {len(out)}: full, lean, digests: {results!r}"
        assert hashed.message_digests() == [message_digest(m) for m in full.messages()]
        out.append(results[0])
    return out


def _image_user(seq: int, images: int = 2) -> dict:
    content: list[dict] = [{"type": "text", "text": "see"}]
    content += [{"type": "image", "attachment": {"attachmentId": f"a{i}"}} for i in range(images)]
    return user(seq, content=content)


def _rewrite(seq: int, target: int, call: str = "c1", **kw: Any) -> dict:
    return tool(seq, call, "shorter", op={"op": "replace", "startSeq": target, "endSeq": target}, sources=[target], **kw)


@pytest.mark.parametrize(
    "events",
    [
        # tool/result rewrites: content may change, nothing else; 1 and 1.0 are one number
        [tool(0, meta={"n": 1}), _rewrite(1, 0, meta={"n": 1.0})],
        [tool(0, meta={"n": 1}), _rewrite(1, 0, meta={"n": True})],
        [tool(0, meta={"a": 1, "b": [0, -0.0]}), _rewrite(1, 0, meta={"b": [0.0, 0], "a": 1})],
        [tool(0, meta={"n": 2**70}), _rewrite(1, 0, meta={"n": 2**70})],
        [tool(0, meta={"s": "\ud800"}), _rewrite(1, 0, meta={"s": "\ud800"})],
        [tool(0), _rewrite(1, 0, is_error=True)],
        [tool(0), _rewrite(1, 0, msg_id="other")],
        [tool(0), _rewrite(1, 0), _rewrite(2, 1)],
        [user(0), _rewrite(1, 0)],
        # image/offload: a message without images, with images, twice, out of range
        [user(0), ev(1, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0]}]})],
        [_image_user(0), ev(1, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0, 1]}]}),
         ev(2, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [1]}]})],
        [_image_user(0), ev(1, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [2]}]})],
        [tool(0), ev(1, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0]}]})],
        [_image_user(0, 1), ev(1, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0]}]}),
         _rewrite(2, 0)],
    ],
)
@pytest.mark.fast_paths
def test_rules_that_read_a_node_decide_alike(events: list[dict]) -> None:
    _outcomes(events)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e300, 2.0**53, 2.0**70, 1.5e-7, "\ud800", "1.0"])
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(a=_json, b=_json)
def test_equality_digest_is_json_equal(a: Any, b: Any) -> None:
    assert (equality_digest(a) == equality_digest(b)) == json_equal(a, b)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(a=_json)
def test_equality_digest_of_equal_values(a: Any) -> None:
    """Equal values written differently (key order, integral floats) meet on one digest."""
    def rewrite(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: rewrite(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [rewrite(x) for x in v]
        if type(v) is int and abs(v) < 2**53:
            return float(v)
        return v

    assert equality_digest(a) == equality_digest(rewrite(a))
