"""docs/python-api.md: every example runs as written, and every public name is on the page."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dshlog
from conftest import FIXTURES, ROOT, run_env
from test_reliability_support import stored_as
from dshlog.protocol.layout import encode_segment, project_key

PAGE = ROOT / "docs" / "python-api.md"
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"

#: ```python blocks, each after a ``<!-- run: root|session -->`` line naming its argument.
_BLOCK = re.compile(r"(?:<!-- run: (\w+) -->\n)?```python\n(.*?)```", re.S)


def examples() -> list[tuple[str | None, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def _prompt_change_at_request_3(path: Path) -> None:
    """The loop session with a new system prompt logged before its third request (dsh's replace of the head)."""
    rows = [json.loads(line) for line in LOOP.read_text(encoding="utf-8").splitlines()]
    header, events = rows[0], rows[1:]
    out = []
    for event in events:
        out.append(event)
        if event["type"] == "step/start" and event["data"] == {"turn": 2, "step": 1}:
            new = copy.deepcopy(next(e for e in events if e["type"] == "system/message"))
            new["data"].update(turn=2, step=1)
            new["data"]["message"].update(id="system-2", content=[{"type": "text", "text": "Be terse."}])
            new.update(time=event["time"], surfaceOp={"op": "replace", "startSeq": 4, "endSeq": 4}, sourceEventSeqs=[4])
            out.append(new)
    for seq, event in enumerate(out):
        event["seq"] = seq
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                            for r in [dict(header, id="prompt-0001"), *out]), encoding="utf-8")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A persistence root: a v0 session, the loop session (v4), and one whose request 3 changed the prompt."""
    root = tmp_path / "sessions"
    project = root / project_key("/home/ann/demo")
    old = project / encode_segment("old-0001") / "session.jsonl"
    old.parent.mkdir(parents=True)
    old.write_bytes(stored_as(V0.read_bytes(), "old-0001", "/home/ann/demo"))  # where dsh would have stored it
    (project / encode_segment("loop-0001")).mkdir()
    shutil.copy(LOOP, project / encode_segment("loop-0001") / "session.v4.jsonl")
    _prompt_change_at_request_3(project / encode_segment("prompt-0001") / "session.v4.jsonl")
    assert dshlog.validate(*(e.path for e in dshlog.list_sessions(root) if e.path)).exit_code == dshlog.ExitCode.OK
    return root


def run(code: str, arg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, str(arg)], capture_output=True, text=True, cwd=ROOT)


def test_every_example_names_its_argument() -> None:
    found = examples()
    assert len(found) >= 6
    assert all(kind in ("root", "session") for kind, _ in found), "a ```python block without <!-- run: root|session -->"


def test_every_public_name_is_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    missing = [name for name in dshlog.__all__ if f"`{name}`" not in text]
    assert not missing, f"docs/python-api.md does not mention {missing}"


def test_migrate_example(root: Path) -> None:
    code = examples()[0][1]
    assert "migrate_sessions" in code
    done = run(code, root)
    assert done.returncode == 0, done.stderr
    old_dir = root / project_key("/home/ann/demo") / encode_segment("old-0001")
    assert f"migrated {old_dir / 'session.jsonl'} -> {old_dir / 'session.v4.jsonl'}" in done.stdout
    assert "{'migrated': 1, 'current': 2, 'needed': 0, 'would-migrate': 0, 'failed': 0}" in done.stdout
    assert dshlog.validate(old_dir / "session.v4.jsonl").exit_code == dshlog.ExitCode.OK
    again = run(code, root)  # a second run changes nothing
    assert "'migrated': 0, 'current': 3" in again.stdout


def test_migrate_example_reports_a_failure(root: Path) -> None:
    bad = root / project_key("/home/ann/demo") / encode_segment("bad-0001") / "session.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(stored_as(V0.read_bytes(), "bad-0001", "/home/ann/demo").replace(b'"version":0', b'"version":0,"x":'))
    done = run(examples()[0][1], root)
    assert done.returncode == int(dshlog.ExitCode.CORRUPT), done.stderr
    assert f"failed {bad}" in done.stderr


def test_system_prompt_example(root: Path) -> None:
    code = examples()[1][1]
    assert "request_series" in code
    done = run(code, root)
    assert done.returncode == 0, done.stderr
    path = root / project_key("/home/ann/demo") / encode_segment("prompt-0001") / "session.v4.jsonl"
    assert done.stdout.splitlines() == [f"prompt-0001 {path}"]


def test_rebuild_example() -> None:
    code = examples()[2][1]
    assert "rebuild_request" in code
    done = subprocess.run([sys.executable, "-c", code, str(LOOP)], capture_output=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    status, out, _ = run_env("rebuild", str(LOOP), "--request", "6")
    assert status == 0 and done.stdout == out


@pytest.mark.parametrize("index", range(3, len(examples())))
def test_the_other_examples_run(index: int, root: Path) -> None:
    kind, code = examples()[index]
    done = run(code, root if kind == "root" else LOOP)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
