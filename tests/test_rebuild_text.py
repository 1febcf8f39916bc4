"""``dshlog rebuild`` writes the library's request byte for byte without holding it.

The command folds with a note per surface node (its message's text, spilled) and writes
the request piece by piece (:mod:`dshlog.ops.rebuild`); the library's
:func:`~dshlog.rebuild_request` returns the request whole.  These tests hold the two
equal on every kind of log: fixtures of every version, a generated log that compacts,
a log whose messages an ``image/offload`` projected and whose config holds keys named
like the request's own, the corpus, and standard input.  The bounded memory itself is
measured in ``tests/test_memory.py``.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import FIXTURES, corpus_files, corpus_ids, load_bench_script, requires_corpus, run_env
from dshlog.errors import DshlogError, exit_code_of
from dshlog.ops.rebuild import rebuild_request
from dshlog.ops.requests import request_series

OPTIONS = ([], ["--compact"], ["--messages-only"], ["--compact", "--messages-only"])


def _same(path: Path, number: int, *, stdin: bool = False, allow_unknown: bool = False) -> bytes:
    """The command's bytes, checked equal to the library's for every option; the pretty request's.

    Where the library refuses, the command exits with that error's code and writes nothing.
    """
    extra = ["--allow-unknown"] if allow_unknown else []
    refused: DshlogError | None = None
    try:
        expected = rebuild_request(path, number, allow_unknown=allow_unknown)
    except DshlogError as exc:
        refused = exc
    pretty = b""
    for options in OPTIONS:
        source = "-" if stdin else str(path)
        code, out, err = run_env("rebuild", source, "--request", str(number), *options, *extra,
                                 stdin=path.read_bytes() if stdin else b"")
        if refused is not None:
            assert (code, out) == (exit_code_of(refused), b""), (path, number, err)
            continue
        assert code == 0, err
        want = expected.to_json(pretty="--compact" not in options, messages_only="--messages-only" in options)
        assert out == want + b"\n", (path, number, options)
        pretty = pretty or out
    return pretty


def _count(path: Path, allow_unknown: bool = False) -> int:
    return len(request_series(path, allow_unknown=allow_unknown))


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("v*/*/session*") if p.is_file()),
                         ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixtures_print_alike(path: Path) -> None:
    for number in range(1, _count(path) + 1):
        _same(path, number)


def _projected_log(directory: Path) -> Path:
    """The loop fixture's first turn with an image the log later offloads, and a config that
    holds a ``messages`` key (the request's messages take its place) and an index key ``2``."""
    rows = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes().splitlines()
    header, events = orjson.loads(rows[0]), [orjson.loads(r) for r in rows[1:17]]
    events[5]["data"]["content"].insert(0, {"type": "image", "attachment": {"attachmentId": "x"}})
    events[6]["data"]["header"]["config"] = {"provider": "mock", "messages": "cfg", "2": 1, "model": "mock"}
    offload = {"type": "image/offload", "seq": 0, "time": events[10]["time"],
               "data": {"targets": [{"seq": 5, "imageIndexes": [0]}]}}
    events = [*events[:11], offload, *events[11:]]
    for seq, event in enumerate(events):
        event["seq"] = seq
    path = directory / "session.v4.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in [header, *events]))
    return path


def test_a_projected_message_and_config_keys_print_alike(tmp_path: Path) -> None:
    path = _projected_log(tmp_path)
    first, second = _same(path, 1), _same(path, 2)
    assert b'"offloaded": true' not in first and b'"offloaded": true' in second
    request = orjson.loads(second)
    assert list(request)[:4] == ["2", "provider", "messages", "model"] and request["messages"][1]["content"][0]["offloaded"]
    _same(path, 2, stdin=True)


def test_a_generated_log_that_compacts_prints_alike(tmp_path: Path) -> None:
    """Compactions place a new node before older ones: the texts are read back in surface order."""
    gen = load_bench_script("generate")
    path = gen.generate(tmp_path, "1M", 4, seed=5, zstd=False, rare=8.0)["plain"]
    assert b'"op":"replace"' in path.read_bytes()
    count = _count(path)
    for number in (1, count // 3, count // 2 + 1, count):
        _same(path, number)
    _same(path, count, stdin=True)


def test_errors_are_the_library_s(tmp_path: Path) -> None:
    """A request the log does not hold: the library's usage error, and nothing on stdout."""
    path = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    code, out, err = run_env("rebuild", str(path), "--request", str(_count(path) + 1))
    assert (code, out) == (2, b"") and b"does not exist" in err


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=corpus_ids())
def test_corpus_prints_alike(path: Path) -> None:
    """The first two requests of each corpus log (most are snapshots dsh refuses: refused alike)."""
    for number in (1, 2):
        _same(path, number, allow_unknown=True)
