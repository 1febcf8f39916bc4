"""Every command documents itself: --help works and shows a real example; errors are one line."""

from __future__ import annotations

import pytest

from conftest import run_cli
from dshlog.cli import COMMANDS as REGISTRY

COMMANDS = sorted(REGISTRY)


def test_every_core_command_is_registered():
    for name in ("events", "info", "validate", "surface", "rebuild", "requests", "repair", "fork", "migrate"):
        assert name in COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_an_example(name, capsysbinary):
    code, out, err = run_cli(capsysbinary, name, "--help")
    assert code == 0, err
    text = out.decode()
    assert "Example:" in text and "dshlog " + name.rstrip("_") in text.split("Example:", 1)[1]


def test_version_and_errors_are_one_line(capsysbinary, tmp_path):
    code, out, _ = run_cli(capsysbinary, "--version")
    assert code == 0 and out.startswith(b"dshlog ")
    missing = tmp_path / "missing.jsonl"
    code, out, err = run_cli(capsysbinary, "info", str(missing))
    assert code == 6 and err.count(b"\n") == 1 and b"Traceback" not in err and str(missing).encode() in err


def test_debug_shows_traceback(capsysbinary, tmp_path):
    bad = tmp_path / "session.v4.jsonl"
    # a damaged row a later turn/end proves committed (dsh holds one after the last turn/end as a torn tail)
    bad.write_bytes(b'{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}\n{oops\n'
                    b'{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    code, _, err = run_cli(capsysbinary, "surface", str(bad))
    assert code == 4 and b"Traceback" not in err and b"line 2" in err
    code, _, err = run_cli(capsysbinary, "--debug", "surface", str(bad))
    assert code == 4 and b"Traceback" in err


def test_shell_completion_completes_commands():
    import os
    import subprocess
    import sys

    env = dict(os.environ, _DSHLOG_COMPLETE="complete_bash", COMP_WORDS="dshlog sur", COMP_CWORD="1")
    out = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'dshlog'; from dshlog.__main__ import main; main()"], env=env, capture_output=True, check=True)
    assert out.stdout.split() == [b"surface"]


HEAVY_MODULES = ("pydantic", "rich", "ijson", "zstandard", "hypothesis", "textual", "markdown_it", "pygments")


@pytest.mark.parametrize("command", ["info", "validate", "events", "surface"])
def test_reading_commands_stay_light(command):
    """Start-up is part of every command's time (a fifth of the parse floor of a 120 MB log
    when typer pulled in pydantic): a plain-JSONL reading command imports none of the heavy
    modules it does not use."""
    import subprocess
    import sys

    from conftest import FIXTURES

    log = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    probe = (
        "import sys\n"
        "from dshlog.cli import main\n"
        f"sys.argv = ['dshlog', {command!r}, {str(log)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


@pytest.mark.parametrize("argv", [["export", "-f", "md"], ["export", "-f", "json"], ["show"], ["stats"], ["requests"]])
def test_only_browse_imports_textual(argv):
    """Textual is browse's alone and Markdown-to-HTML the HTML export's: no other command pays for them."""
    import subprocess
    import sys

    from conftest import FIXTURES

    log = str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")
    probe = (
        "import sys\n"
        "from dshlog.cli import main\n"
        f"sys.argv = ['dshlog', {argv[0]!r}, {log!r}, *{argv[1:]!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('textual', 'markdown_it', 'pygments', 'dshlog.browse') if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
