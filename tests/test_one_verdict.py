"""One verdict for the same input: every form of a reader that shows what it can of a damaged log exits alike.

A damaged row (here the ``tool/call`` of the loop fixture cut in half) is skipped by
every reader that shows what it can; each says so on stderr and exits 4, whatever
its output form (``info`` and ``info --json``, ``stats`` and ``report``, ``events``
and ``search``), and a store report names the sessions it counted only in part,
in its text, its JSON and on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, run_env

from dshlog.errors import ExitCode
from dshlog.protocol.layout import project_key

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


def _damaged(directory: Path) -> Path:
    """The loop fixture with its ``tool/call`` row cut in half (a later ``turn/end`` proves it was committed)."""
    lines = LOOP.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b'"type":"tool/call"' in line)
    lines[at] = lines[at][: len(lines[at]) // 2]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "session.v4.jsonl"
    path.write_bytes(b"\n".join(lines))
    return path


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A root with two sessions of one project: the loop fixture intact, and a damaged copy."""
    root = tmp_path / "sessions"
    project = root / project_key("/home/ann/demo")
    intact = project / "loop-0002" / "session.v4.jsonl"
    intact.parent.mkdir(parents=True)
    intact.write_bytes(LOOP.read_bytes().replace(b"loop-0001", b"loop-0002"))
    damaged = _damaged(project / "loop-0001")
    return root, intact, damaged


@pytest.mark.parametrize("command", [
    ("info",), ("info", "--json"), ("stats",), ("stats", "--json"), ("events",), ("events", "--json"),
    ("search", "one"), ("search", "--json", "one"), ("report",), ("report", "--json"), ("report", "--csv"),
])
def test_every_form_of_a_reader_exits_4_on_a_damaged_row(store: tuple[Path, Path, Path], command: tuple[str, ...]) -> None:
    _, _, damaged = store
    code, out, err = run_env(*command, str(damaged))
    assert code == ExitCode.CORRUPT, (command, err)
    assert out, "what could be read is shown"
    said = out + err if "--json" in command else err  # a JSON document holds its notes; text forms say them on stderr
    assert b"line 11" in said and b"unparsable" in said, (out[-300:], err)


@pytest.mark.parametrize("command", [("info",), ("info", "--json"), ("stats",), ("events",), ("search", "one"), ("report",)])
def test_the_intact_log_is_clean_in_every_form(store: tuple[Path, Path, Path], command: tuple[str, ...]) -> None:
    _, intact, _ = store
    code, _, err = run_env(*command, str(intact))
    assert (code, err) == (ExitCode.OK, b"")


def test_a_store_report_names_the_sessions_counted_in_part(store: tuple[Path, Path, Path]) -> None:
    root, intact, damaged = store
    code, out, err = run_env("report", "--by", "session", str(root))
    assert code == ExitCode.CORRUPT
    text = out.decode()
    assert "1 session counted in part" in text
    lines = err.decode().splitlines()
    assert lines == [f"dshlog: {damaged}: counted in part: line 11, byte {_offset(damaged, 11)}: unparsable: "
                     "corrupt session log: unparsable committed event at line 10"], lines
    code, out, _ = run_env("report", "--json", "--by", "session", str(root))
    doc = json.loads(out)
    assert code == ExitCode.CORRUPT
    assert [p["path"] for p in doc["countedInPart"]] == [str(damaged)]
    assert [p["id"] for p in doc["countedInPart"]] == ["loop-0001"]
    assert doc["errors"] == []
    # both sessions are counted: the damaged one with the rows that could be read (one tool call fewer)
    by_session = {r["key"][0] if isinstance(r.get("key"), list) else r["session"]: r for r in doc["rows"]}
    assert len(by_session) == 2, doc["rows"]


def test_a_clean_store_report_says_nothing_of_parts(store: tuple[Path, Path, Path]) -> None:
    root, _, damaged = store
    damaged.write_bytes(LOOP.read_bytes())
    code, out, err = run_env("report", "--json", str(root))
    assert (code, err) == (ExitCode.OK, b"")
    assert json.loads(out)["countedInPart"] == []
    code, out, _ = run_env("report", str(root))
    assert b"counted in part" not in out


def test_stats_and_report_count_the_same_rows_of_a_damaged_log(store: tuple[Path, Path, Path]) -> None:
    _, _, damaged = store
    _, out, _ = run_env("stats", "--json", str(damaged))
    stats = json.loads(out)["total"]
    _, out, _ = run_env("report", "--json", str(damaged))
    total = json.loads(out)["total"]
    assert total["toolCalls"] == sum(c["calls"] for c in stats["toolCalls"].values())
    assert total["modelCalls"] == stats["modelCalls"]


def _offset(path: Path, line: int) -> int:
    """The byte at which 1-based ``line`` starts."""
    return sum(len(x) + 1 for x in path.read_bytes().split(b"\n")[: line - 1])
