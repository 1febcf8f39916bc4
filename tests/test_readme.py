"""The README's examples are real output: each is run and compared exactly.

An example is a README code block (indented four spaces) holding a ``$ dshlog ...``
line followed by the output it prints.  The runner makes a scratch directory
with what the examples name (``fixtures/``, a copy ``fixtures-copy/`` of the v0
fixtures to migrate, with ``no-depth/``, the v0 fixture without the header's
``delegationDepth``, to rescue, and ``root/``, a persistence root holding the two v4
fixtures where dsh keeps them), runs the ``dshlog`` part in-process through a test
environment (a terminal 100 columns wide without colour, or a pipe when the line
goes on with ``| ...``, whose rest runs in ``bash``), and compares stdout and
stderr as a terminal interleaves them with the text below the ``$`` line.

``python tests/test_readme.py --update`` rewrites the README's outputs from a run.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import FIXTURES, ROOT, run_env  # noqa: E402

README = ROOT / "README.md"
WIDTH = 100


@dataclass
class Example:
    line: int  # 1-based line of the `$` line in the README
    command: str
    expected: str
    end: int  # line index just after the output


def examples(text: str) -> list[Example]:
    """Every ``$ dshlog`` line of an indented block, with the block's lines up to the next ``$`` line or its end."""
    lines = text.split("\n")
    found: list[Example] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^    \$ (dshlog .*)$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        out: list[str] = []
        while j < len(lines) and lines[j].startswith("    ") and not lines[j].startswith("    $ "):
            out.append(lines[j][4:])
            j += 1
        found.append(Example(i + 1, m.group(1), "\n".join(out), j))
        i = j
    return found


def scratch(base: Path) -> Path:
    """The directory the examples run in."""
    from dshlog.protocol.layout import session_dir
    from dshlog.read.store import first_header

    work = base / "work"
    shutil.copytree(FIXTURES, work / "fixtures", ignore=shutil.ignore_patterns("build.py", "__pycache__"))
    shutil.copytree(FIXTURES / "v0", work / "fixtures-copy")
    # an early writer's log: the v0 fixture without the header's delegationDepth (what rescue brings back)
    lines = (FIXTURES / "v0" / "text-turn" / "session.jsonl").read_bytes().split(b"\n", 1)
    (work / "fixtures-copy" / "no-depth").mkdir()
    (work / "fixtures-copy" / "no-depth" / "session.jsonl").write_bytes(lines[0].replace(b',"delegationDepth":0', b"") + b"\n" + lines[1])
    for name in ("loop", "crash"):
        src = FIXTURES / "v4" / name / "session.v4.jsonl"
        h = first_header(src) or {}
        d = session_dir(work / "root", h.get("cwd"), h["id"])
        d.mkdir(parents=True)
        shutil.copy(src, d / src.name)
    return work


def run(example: Example, work: Path) -> str:
    """What the example prints, stdout and stderr interleaved as on a terminal."""
    head, _, rest = example.command.partition(" | ")
    args = shlex.split(head)[1:]
    both = io.BytesIO()
    old = os.getcwd()
    os.chdir(work)  # the examples name files relative to where they run
    try:
        run_env(*args, stdout=both, stderr=both, tty=not rest, width=WIDTH, colour="never", cwd=str(work),
                dsh_home=str(work / "home"), pager="", timezone="UTC")  # `ls` prints times in the reader's zone
    finally:
        os.chdir(old)
    out = both.getvalue()
    if rest:
        out = subprocess.run(["bash", "-c", rest], input=out, capture_output=True, cwd=work, check=True).stdout
    return "\n".join(line.rstrip() for line in out.decode().rstrip("\n").split("\n"))


ALL = examples(README.read_text())


def test_the_readme_has_examples() -> None:
    assert len(ALL) >= 12


@pytest.mark.parametrize("example", ALL, ids=[f"line{e.line}" for e in ALL])
def test_readme_example(example: Example, tmp_path) -> None:
    if "| jq" in example.command and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    got = run(example, scratch(tmp_path))
    assert got == example.expected, f"README.md line {example.line}: {example.command}"


def update() -> None:
    """Rewrite every example's output in the README from a fresh run."""
    import tempfile

    text = README.read_text()
    lines = text.split("\n")
    for ex in reversed(examples(text)):
        with tempfile.TemporaryDirectory() as d:
            got = run(ex, scratch(Path(d)))
        lines[ex.line: ex.end] = ["    " + g if g else "" for g in got.split("\n")]
    README.write_text("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        update()
    else:
        sys.exit("usage: python tests/test_readme.py --update")
