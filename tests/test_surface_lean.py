"""``dshlog surface`` folds leanly and prints exactly what the full view prints.

The command keeps a row per node instead of its message and reads the messages
again from the log for ``--json --messages`` (``dshlog/ops/surface.py``).  The old
path is the library's :func:`dshlog.surface` (every message held): its
``as_dict`` is the document the command printed, and the table is rendered here
as the command rendered it.  Both paths run over the shared corpus (every version,
migrated in memory), the fixtures, generated logs of both shapes, hand-made image
offloads and rewrites (a projected preview, a surface out of seq order), prefixes
(``--at``) and standard input; each must give the same bytes, or the same refusal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import FIXTURES, GOLDEN, corpus_files, load_bench_script, requires_corpus, run_env
from test_surface import ev, user

import dshlog
from dshlog.errors import DshlogError
from dshlog.check.surface import SurfaceShare
from dshlog.check.validate import Validator
from dshlog.ops import surface as surface_ops
from dshlog.ops.surface import surface_rows
from dshlog.output.table import plain_table
from dshlog.model.content import EVENT_LINE, PREVIEW, SEARCH, message_text
from dshlog.output.text import cut, preview, sanitize
from dshlog.protocol.jsjson import Items, dumps_pretty, pretty_pieces

FORMS: tuple[tuple[str, ...], ...] = ((), ("--json",), ("--json", "--messages"))


def _old_rows(view: Any) -> list[list[Any]]:
    """The table rows the command printed from the full view."""
    return [[n["seq"], n["type"], (n["role"] or "") + (" (empty)" if n["empty"] else ""), preview(n["message"])]
            for n in view.nodes]


def _old_output(view: Any, form: tuple[str, ...]) -> bytes:
    """What ``surface`` printed (not on a terminal) when it held every message."""
    if form:
        return dumps_pretty(view.as_dict(messages="--messages" in form)) + b"\n"
    parts: list[bytes] = []
    plain_table(parts.append, None, ["seq", "type", "role", "preview"], _old_rows(view))
    lines = [f"nodes: {[n['seq'] for n in view.nodes]}", f"roles: {', '.join(str(r) for r in view.roles)}"]
    lines += [f"replacement: seq {r['seq']} replaced {r['start']}..{r['end']} (shadowed {', '.join(map(str, r['shadowedSeqs']))})"
              for r in view.replacements]
    return b"".join(parts) + b"".join(sanitize(line).encode() + b"\n" for line in lines)


def _full(path: Path, **kw: Any) -> Any:
    try:
        return dshlog.surface(path, **kw)
    except DshlogError as exc:
        return (type(exc).__name__, exc.message)


def _same(path: Path, *, at: int | None = None, allow_unknown: bool = False, stdin: bytes | None = None) -> bool:
    """Both paths agree on ``path``; whether the full view folded (``False``: both refused alike)."""
    view = _full(path, at=at, allow_unknown=allow_unknown)
    try:
        lean: Any = surface_rows(path, at=at, allow_unknown=allow_unknown)
    except DshlogError as exc:
        lean = (type(exc).__name__, exc.message)
    if isinstance(view, tuple) or isinstance(lean, tuple):
        assert lean == view, path
        return False
    assert [[r.seq, r.type, (r.role or "") + (" (empty)" if r.empty else ""), r.preview] for r in lean.rows()] == _old_rows(view)
    assert lean.roles == view.roles
    assert list(lean.replacements()) == list(view.replacements)
    assert list(lean.messages()) == list(view.messages)
    args = (["--at", str(at)] if at is not None else []) + (["--allow-unknown"] if allow_unknown else [])
    target = "-" if stdin is not None else str(path)
    for form in FORMS:
        code, out, err = run_env("surface", target, *args, *form, stdin=stdin or b"")
        assert out == _old_output(view, form), (path, form, err)
    return True


def test_fixtures_print_alike() -> None:
    loop = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    for path in [GOLDEN / "loop-events.json", loop, FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd",
                 *sorted(FIXTURES.glob("v[0-3]/**/*.jsonl"))]:
        _same(path)
    for at in (-1, 0, 5, 15, 20, 99):
        _same(GOLDEN / "loop-events.json", at=at)
    assert _same(loop, stdin=loop.read_bytes())  # a stream is read once: the fold keeps the messages


def _log(tmp_path: Path, events: list[dict]) -> Path:
    """The events as a JSON array (a header-less v4 log)."""
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))  # json: it writes a lone surrogate as its escape
    return path


def _odd_user(seq: int, text: str, id_: object) -> dict:
    event = user(seq, text)
    event["data"]["id"] = id_
    return event


def _image_user(seq: int) -> dict:
    content = [{"type": "text", "text": "see"}, {"type": "image", "attachment": {"attachmentId": f"a{seq}"}}]
    return user(seq, content=content)


@pytest.mark.parametrize(
    "events",
    [
        # an offloaded image: the projected message is the node's now (its preview, its derived message)
        [_image_user(0), user(1), ev(2, "image/offload", {"targets": [{"seq": 0, "imageIndexes": [0]}]})],
        # a rewritten node takes a new seq in the old place: the surface is out of seq order
        [user(0), user(1), user(2), user(3, "edited", op={"op": "replace", "startSeq": 1, "endSeq": 1}, sources=[1])],
        # a compaction: a summary before the nodes it keeps
        [user(0), user(1), user(2), user(3), user(4, "summary", op={"op": "replace", "startSeq": 0, "endSeq": 2},
                                                  sources=[0, 1, 2])],
        # what the packed note cannot hold (a NUL in an id), and lone surrogates and a NUL in text and ids
        [_odd_user(0, "a\ud800b\x00c", "x\x00y"), _odd_user(1, "\udfff" * 70, "u1"), _odd_user(2, "ok", "\ud800")],
    ],
    ids=["offload", "rewrite", "compaction", "odd-text"],
)
def test_hand_made_surfaces_print_alike(tmp_path: Path, events: list[dict]) -> None:
    path = _log(tmp_path, events)
    assert _same(path)
    for at in range(len(events)):
        _same(path, at=at)


@pytest.mark.parametrize("compaction", [True, False], ids=["default", "no-compaction"])
def test_generated_logs_print_alike(tmp_path: Path, compaction: bool) -> None:
    gen = load_bench_script("generate")
    path = gen.generate(tmp_path, "1M", 4, seed=5, zstd=True, shape=gen.Shape(compaction=compaction), rare=8.0)
    for key in ("plain", "zstd"):
        assert _same(path[key])
    events = path["plain"].read_bytes().count(b"\n") - 1
    for at in (events // 3, events // 2 + 1):
        assert _same(path["plain"], at=at)


@requires_corpus
@pytest.mark.fast_paths  # the lean command against the full view: in the exact mode both fold in full
def test_corpus_prints_alike() -> None:
    folded = 0
    for path in corpus_files():
        folded += _same(path)
        folded += _same(path, allow_unknown=True)
    assert folded > 200


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b\n", "1", "0", "\ud800"]), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(doc=st.dictionaries(st.sampled_from(["shape", "nodes", "2", "x\ty"]), _json, max_size=4), lazy=st.booleans())
def test_pieces_are_the_pretty_document(doc: dict[str, Any], lazy: bool) -> None:
    """The streamed writer gives ``dumps_pretty``'s bytes, with arrays given whole or as iterables."""
    given_doc = {k: Items(iter(v)) if lazy and isinstance(v, list) else v for k, v in doc.items()}
    assert b"".join(pretty_pieces(given_doc)) == dumps_pretty(doc)


_text = st.lists(st.sampled_from(["a", "\n", "é", "中", "\u0301", "…", " ", "x" * 50, "\u0301" * 1100, "y" * 1100]), max_size=12).map("".join)
_block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _text),
    st.builds(lambda t: {"type": "reasoning", "text": t}, _text),
    st.just({"type": "tool-call", "toolName": "x", "arguments": "{}"}),
    st.just({"type": "image"}),
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(content=st.one_of(st.lists(_block, max_size=5), _text), limit=st.sampled_from([0, 1, 5, 60, 2000]),
       rule=st.sampled_from([PREVIEW, EVENT_LINE, SEARCH]))
def test_preview_of_a_prefix_is_the_whole_texts(content: Any, limit: int, rule: Any) -> None:
    """``preview`` gathers only the start of a long text; it must cut where the whole text's cut is."""
    message = {"content": content}
    assert preview(message, limit, rule) == cut(" ".join(message_text(message, rule).split("\n")), limit)


def test_the_whole_log_is_folded_once_where_the_restore_found_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Of a clean log the command prints the restore's own fold; a prefix (``--at``) is folded by the command."""
    folds: list[dict[str, Any]] = []
    real = surface_ops.command_fold

    def counted(**kw: Any) -> Any:
        folds.append(kw)
        return real(**kw)

    monkeypatch.setattr(surface_ops, "command_fold", counted)
    loop = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    assert _same(loop)
    assert folds == []  # neither the library call nor any form of the command
    assert _same(loop, at=5)
    assert len(folds) == 1 + len(FORMS)


def _restore_fold(header: dict[str, Any] | None, events: list[dict[str, Any]], *, projection: bool = False) -> Any:
    rules = Validator(header, projection=projection, share=SurfaceShare(note=surface_ops.node_note, replacements=True))
    for event in events:
        rules.feed(event)
        assert rules.clean_fold is None  # not before the end: the last event may still be refused
    rules.finish()
    return rules.clean_fold


def test_the_restores_fold_stands_for_the_commands_only_on_a_log_without_problems() -> None:
    with dshlog.open_session(FIXTURES / "v4" / "loop" / "session.v4.jsonl") as log:
        header, events = log.v4().header, list(log.v4())
    fold = _restore_fold(header, events)
    assert fold is not None and [seq for seq, *_ in fold.node_notes()] == list(fold.nodes)
    # an error, and a warning (a projection's placeholder: dsh's checking fold may refuse what it explains)
    assert _restore_fold({**header, "id": 7}, events) is None
    assert _restore_fold({**header, "cwd": "{{cwd}}"}, events, projection=True) is None
    assert _restore_fold(header, events[:-1] + [{**events[-1], "seq": 0}]) is None
