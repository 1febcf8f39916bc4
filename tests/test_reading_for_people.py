"""Reading for a person is never refused: show, export and browse show a log dsh refuses, opening with the refusal.

The commands that decide as dsh does still refuse it; which command is which is
one table (``dshlog.ops.stance.STANCES``), and the README says it.
"""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest
from conftest import NO_DEPTH_REASON, ROOT, build_corpus_store, no_depth_session, run_env

from dshlog.errors import ExitCode
from dshlog.ops.stance import STANCES, Stance, commands
from dshlog.read.session import dsh_refusal, open_log
from dshlog.read.store import list_sessions

BANNER = b"!!! dsh refuses to open this session: "
RESCUE = "; to bring it back: dshlog rescue "


# ----------------------------------------------------------------------------- the rule, once


def _listed(sentence: str) -> set[str]:
    """The commands a README sentence names: `events --v4`, `events` without `--v4` (events), `migrate` (and ...)."""
    names = re.findall(r"`([a-z][a-z -]*(?:--v4)?)`( without `--v4`)?", sentence.replace("\n", " "))
    return {name for name, _without in names if name.split()[0] in {c.split()[0] for c in STANCES}}


def test_the_readme_says_which_command_decides_as_dsh_does() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text[text.index("## How dshlog relates to dsh"):]
    dsh = section[section.index("Every command that claims dsh's view decides as dsh does"):]
    dsh = dsh[: dsh.index(": the header")]
    reader = section[section.index("The commands that show a person what\na log holds"):]
    reader = reader[: reader.index(" — read")]
    assert _listed(dsh) == set(commands(Stance.DSH))
    assert _listed(reader) == set(commands(Stance.READER))
    codes = text[text.index("## Exit codes"):text.index("### Limits")]
    bullet = codes[codes.index("* a command that decides as dsh does"):]
    assert _listed(bullet[: bullet.index(";")]) == set(commands(Stance.DSH))
    bullet = codes[codes.index("* a reader for people"):]
    assert _listed(bullet[: bullet.index(";")]) == {"show", "export", "browse"}


@pytest.fixture
def refused(tmp_path: Path) -> Path:
    return no_depth_session(tmp_path / "no-depth")


_ARGS = {
    "migrate": ["--dry-run", "--no-children"], "rebuild": ["-r", "1"], "diff": ["-r", "1", "-r", "1"],
    "fork": ["--at", "3", "-o", "{tmp}/child/"], "export": ["-f", "md"],
}


@pytest.mark.parametrize("command", [c for c in STANCES if c != "browse"])  # browse: test_browse_tmux.py
def test_every_command_treats_a_log_dsh_refuses_as_its_stance_says(command: str, refused: Path, tmp_path: Path) -> None:
    name, *flags = command.split()
    args = [a.replace("{tmp}", str(tmp_path)) for a in _ARGS.get(name, [])]
    code, out, err = run_env(name, *flags, str(refused.parent if name == "migrate" else refused), *args)
    if STANCES[command] is Stance.DSH:
        assert code == ExitCode.CORRUPT, (command, err)
        assert NO_DEPTH_REASON.encode() in err
        assert name == "migrate" or out == b"", (command, out)
    else:
        assert out.strip(), (command, err)  # what the stored rows hold
        assert code in (ExitCode.OK, ExitCode.CORRUPT), (command, err)
    assert not (tmp_path / "child").exists() and sorted(p.name for p in refused.parent.iterdir()) == ["session.jsonl"]


# ----------------------------------------------------------------------------- show and export of a generated refused log


def _err_line(err: bytes, path: Path) -> None:
    """stderr: dsh's refusal as the commands that decide as dsh does say it, and what brings the session back."""
    lines = err.decode().splitlines()
    assert lines == [f"dshlog: corrupt: {path}: line 1, byte 0: {NO_DEPTH_REASON}{RESCUE}{path}"], lines


def test_show_opens_with_dsh_refusal_and_shows_the_stored_rows(refused: Path) -> None:
    code, out, err = run_env("show", str(refused))
    assert code == ExitCode.CORRUPT
    lines = out.decode().splitlines()
    assert lines[:3] == [
        f"!!! dsh refuses to open this session: {NO_DEPTH_REASON}",
        f"!!! shown as far as its stored rows can be read; to bring it back: dshlog rescue {refused}",
        f"session 5f0c2d1e-8a43-4b7e-9d61-2c9a7e3b1f00 (v0) {refused}",
    ]
    assert "  Answer with the single word: READY." in lines and "  READY" in lines and lines[-1] == "--- turn 1 completed"
    _err_line(err, refused)


def test_show_on_a_terminal_opens_with_the_refusal(refused: Path) -> None:
    code, out, err = run_env("show", "--no-pager", str(refused), tty=True, width=80)
    assert code == ExitCode.CORRUPT
    text = out.decode()
    assert text.index("dsh refuses to open this session:") < text.index("session 5f0c2d1e") < text.index("READY")
    assert "dshlog rescue" in text and "─" in text.split("\n")[0]  # a panel, the first thing on the screen


def test_show_of_standard_input(refused: Path) -> None:
    code, out, err = run_env("show", "-", stdin=refused.read_bytes())
    assert code == ExitCode.CORRUPT
    assert out.startswith(BANNER) and b"to bring it back: dshlog rescue -\n" in out and b"READY" in out
    assert err.startswith(b"dshlog: corrupt: -: line 1, byte 0: ")


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_export_opens_with_dsh_refusal(refused: Path, tmp_path: Path, fmt: str) -> None:
    code, out, err = run_env("export", str(refused), "-f", fmt)
    assert code == ExitCode.CORRUPT
    _err_line(err, refused)
    text = out.decode()
    if fmt == "md":
        assert text.split("\n")[:5] == [
            "# dsh session 5f0c2d1e-8a43-4b7e-9d61-2c9a7e3b1f00", "",
            f"> **dsh refuses to open this session:** {NO_DEPTH_REASON}", ">",
            f"> Shown as far as its stored rows can be read; to bring it back: `dshlog rescue {refused}`",
        ]
        assert "READY" in text
    elif fmt == "html":
        header = text[text.index("<header>"):]
        assert header.startswith('<header><div class="refusal" id="refusal" role="alert"><strong>dsh refuses to open this session:</strong> ')
        assert "lacks required member &quot;delegationDepth&quot;" in header and f"<code>dshlog rescue {refused}</code>" in header
        assert "READY" in text
    else:
        doc = json.loads(text)
        assert list(doc)[:3] == ["shape", "refusal", "session"]
        assert doc["refusal"] == {"kind": "corrupt", "reason": NO_DEPTH_REASON, "rescue": f"dshlog rescue {refused}"}
        assert doc["summary"]["turns"] == 1
    # -o OUT: the same file, and the same line and code
    target = tmp_path / f"out.{fmt}"
    code, _, err = run_env("export", str(refused), "-f", fmt, "-o", str(target))
    assert code == ExitCode.CORRUPT and target.read_bytes() == out
    assert err.decode().splitlines()[0] == f"written: {target}"


def test_a_session_dsh_opens_has_no_refusal(tmp_path: Path) -> None:
    from conftest import FIXTURES

    code, out, err = run_env("export", str(FIXTURES / "v0" / "text-turn" / "session.jsonl"), "-f", "json")
    assert code == 0 and err == b""
    assert b'"refusal"' not in out and out.startswith(b'{"shape":1,"session":')


def test_export_of_a_root_writes_the_page_of_a_refused_session(tmp_path: Path) -> None:
    from conftest import FIXTURES

    root = tmp_path / "sessions"
    sid = "5f0c2d1e-8a43-4b7e-9d61-2c9a7e3b1f00"
    no_depth_session(root / "--home-ann-demo--" / sid)  # where dsh keeps it
    good = root / "--home-ann-demo--" / "loop-0001"
    good.mkdir()
    (good / "session.v4.jsonl").write_bytes((FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes())
    code, out, err = run_env("export", str(root), "-f", "html", "-o", str(tmp_path / "site"))
    assert code == ExitCode.CORRUPT, err
    assert b"(2 session pages)" in err and b"not exported" not in err
    assert f"dshlog: {sid}: exported as stored: corrupt: ".encode() in err and f"{RESCUE}{sid}".encode() in err
    page = (tmp_path / "site" / f"{sid}.html").read_text("utf-8")
    assert f"<code>dshlog rescue {sid}</code>" in page  # in a root, the id: rescue finds it there
    assert "dsh refuses to open this session" not in (tmp_path / "site" / "loop-0001.html").read_text("utf-8")


# ----------------------------------------------------------------------------- real sessions dsh refuses


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """The corpus store in one encoding: as built, with both, dsh refuses every session for its root alone."""
    return build_corpus_store(tmp_path_factory.mktemp("home"), one_encoding=True)


def _refused(root: Path) -> list[tuple[str, int, str]]:
    """(generation path, exit code, dsh's words) of every session of ``root`` dsh refuses to open."""
    out = []
    for e in list_sessions(root):
        if e.path is None or e.error is not None:
            continue
        refusal = dsh_refusal(partial(open_log, str(e.path)))
        if refusal is not None:
            out.append((str(e.path), int(refusal.exit_code), refusal.message))
    return out


def test_every_session_of_a_real_store_dsh_refuses_is_shown(store: Path) -> None:
    refused = _refused(store)
    assert len(refused) > 50, "the corpus store holds many sessions dsh refuses"
    assert {code for _, code, _ in refused} == {ExitCode.CORRUPT, ExitCode.UNSUPPORTED}
    for path, code, reason in refused:
        got, out, err = run_env("show", path)
        assert got == code, (path, err)
        assert out.decode().split("\n")[0] == f"!!! dsh refuses to open this session: {reason}", path
        assert b"\nsession " in out and b"internal error" not in err
        got, out, err = run_env("export", path, "-f", "json")
        assert got == code, (path, err)
        assert json.loads(out)["refusal"]["reason"] == reason


def test_export_of_a_real_store_writes_every_readable_session(store: Path, tmp_path: Path) -> None:
    refused = _refused(store)
    entries = list_sessions(store)
    readable = [e for e in entries if e.path is not None and e.error is None]
    code, _, err = run_env("export", str(store), "-f", "html", "-o", str(tmp_path / "site"))
    assert f"({len(readable)} session pages)".encode() in err, err[-2000:]
    assert err.count(b": exported as stored: ") == len(refused)
    assert code == ExitCode.CORRUPT  # the worst of what dsh refuses (and of what could not be read)
