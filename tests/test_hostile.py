"""Hostile input: never an internal error, never a terminal escape, never a bomb.

One regression test (or a few) per failure class that hostile logs reached:
deep nesting, decompression bombs and huge lines, ``-0`` as a seq, readers that
stopped early, misleading refusals under concurrent change, symlinked session
directories.  Each drives the CLI in this process (``bench/fuzz.py``'s
``run_command``) or, where a whole set of commands must end cleanly, the
fuzzer's own per-input check (every reader and writer, forked, with a timeout
and a memory limit).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from conftest import FIXTURES, load_bench_script
from dshlog.protocol.jsjson import MAX_DEPTH, JsonError, loads

FUZZ = load_bench_script("fuzz")
HEADER = '{"type":"session","version":4,"id":"s1","createdAt":1,"cwd":"/p","isSeeded":false,"delegationDepth":0}'


@pytest.fixture(autouse=True, scope="module")
def _command_server():
    """The fuzzer's command server must not outlive this module (later tests count child processes)."""
    yield
    FUZZ.stop_server()


def _deep(n: int) -> str:
    return "[" * n + "0" + "]" * n


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sha(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- 1. deep nesting


def test_the_reader_refuses_a_value_nested_beyond_its_limit() -> None:
    assert loads(_deep(MAX_DEPTH)) is not None
    with pytest.raises(JsonError) as exc:
        loads(_deep(MAX_DEPTH + 1))
    assert exc.value.kind == "depth"
    with pytest.raises(JsonError):
        loads('{"a":' * (MAX_DEPTH + 1) + "0" + "}" * (MAX_DEPTH + 1))
    # brackets inside strings are text, not nesting
    assert loads('{"a":"' + "[" * 5000 + '"}') == {"a": "[" * 5000}


@pytest.mark.parametrize("where", ["seq", "time", "turn", "refs", "version"])
def test_deep_nesting_beyond_the_limit_is_a_clear_refusal_in_every_command(tmp_path: Path, where: str) -> None:
    """About 1000 levels (orjson parses them, Python's walkers did not): exit 3 naming the line, never exit 1."""
    event = {
        "seq": '{"type":"turn/start","seq":%s,"time":1,"data":{"turn":1}}' % _deep(1000),
        "time": '{"type":"turn/start","seq":0,"time":%s,"data":{"turn":1}}' % _deep(1000),
        "turn": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":%s}}' % _deep(1000),
        "refs": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"sourceEventSeqs":%s}' % _deep(1000),
        "version": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
    }[where]
    header = HEADER.replace('"version":4', '"version":%s' % _deep(1000)) if where == "version" else HEADER
    f = _write(tmp_path / "session.v4.jsonl", header, event)
    before = _sha(f)
    for argv in (["info", str(f)], ["validate", str(f)], ["events", str(f)], ["show", str(f)], ["requests", str(f)],
                 ["export", str(f), "--format", "md", "--redact", "-o", str(tmp_path / "x.md")],
                 ["repair", "--write", str(f)], ["fork", str(f), "-o", str(tmp_path / "c.jsonl")]):
        code, out, err = FUZZ.run_command(argv)
        assert code == 3, (argv, err)
        assert b"nested deeper than" in err + out and b"internal error" not in err, (argv, err)
    assert _sha(f) == before  # never treated as a damaged tail to cut off
    assert not (tmp_path / "x.md").exists() and not (tmp_path / "c.jsonl").exists()


def test_values_nested_up_to_the_limit_go_through_every_command(tmp_path: Path) -> None:
    """At the limit itself every reader and writer (the fuzzer's full set, forked) ends cleanly."""
    import orjson

    rows = []
    for line in (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes().splitlines():
        o = orjson.loads(line)
        if o.get("type") == "request/header":
            o["data"]["header"]["config"]["x"] = "@@D@@"
            line = orjson.dumps(o).replace(b'"@@D@@"', _deep(MAX_DEPTH - 5).encode())
        elif o.get("type") == "user/message":
            o["data"]["content"][0]["text"] = "@@D@@"
            line = orjson.dumps(o).replace(b'"@@D@@"', _deep(MAX_DEPTH - 5).encode())
        elif o.get("type") == "turn/start":
            o["data"]["turn"] = "@@D@@"
            line = orjson.dumps(o).replace(b'"@@D@@"', _deep(MAX_DEPTH - 3).encode())
        rows.append(line)
    data = b"\n".join(rows) + b"\n"
    failures = FUZZ.check_input(data, "session.v4.jsonl", tmp_path)
    assert not failures, "\n".join(map(str, failures))
