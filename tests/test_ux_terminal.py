"""The command line on a real terminal (a pty): what a person sees, and how soon.

These run ``dshlog`` as a child on a pseudo-terminal of a chosen size, so stdout
*is* a terminal: Rich styling, the pager, widths and unique id prefixes are the
real ones.
"""

from __future__ import annotations

import fcntl
import os
import re
import resource
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, dshlog_argv, ev, jsonl, load_bench_script, run_process, v4_header
from dshlog.protocol.layout import encode_segment, project_key

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a running process has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FIRST_SCREEN: dict[str, float] = {}


def on_pty(args: list[str], *, columns: int = 80, env: dict[str, str] | None = None, until: bytes | None = None,
           timeout: float = 60.0) -> tuple[int | None, bytes, float | None]:
    """Run ``dshlog ARGS`` on a pty ``columns`` wide; returns (exit code, or None when it was still running
    as ``until`` first appeared, what it showed with styling removed, seconds until then).

    When ``until`` appears, the CPU time the command had used is kept in ``FIRST_SCREEN["cpu"]``.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    child_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "PAGER", "LESS")}
    child_env.update({"TERM": "xterm-256color", **(env or {})})
    start = time.monotonic()
    proc = subprocess.Popen(dshlog_argv(*args), stdin=slave, stdout=slave, stderr=slave, cwd=ROOT,
                            env=child_env, close_fds=True, start_new_session=True)
    os.close(slave)
    got = b""
    seen: float | None = None
    try:
        while time.monotonic() - start < timeout:
            r, _, _ = select.select([master], [], [], 0.05)
            if r:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                got += chunk
                if until is not None and seen is None and until in ANSI.sub(b"", got):
                    seen = time.monotonic() - start
                    if proc.poll() is None:
                        FIRST_SCREEN["cpu"] = cpu_seconds(proc.pid)
                    else:
                        FIRST_SCREEN.pop("cpu", None)
                    break
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        os.close(master)
    return (None if seen is not None else code), ANSI.sub(b"", got), seen


def markup_session(root: Path, sid: str, cwd: str) -> Path:
    d = root / project_key(cwd) / encode_segment(sid)
    d.mkdir(parents=True)
    p = d / "session.v4.jsonl"
    msg = {"role": "assistant", "content": [{"type": "text", "text": "calling [red]echo[/red]"}],
           "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a4"}
    p.write_bytes(jsonl(
        v4_header(id=sid, cwd=cwd),
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        ev(2, "session/title", {"title": "[/x] fix [red]the build", "messageSeqs": [], "source": {"kind": "user"}}),
        ev(3, "user/message", {"content": [{"type": "text", "text": "why does [bold]this[/bold] fail?"}], "source": {"kind": "user"}, "role": "user", "id": "u3"}, surfaceOp="append"),
        ev(4, "assistant/message", {"turn": 1, "step": 1, "message": msg, "stream": [], "usage": {"inputTokens": 1, "outputTokens": 1}}, surfaceOp="append"),
        ev(5, "step/end", {"turn": 1, "step": 1}),
        ev(6, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ))
    return p


# ----------------------------------------------------------------- 2: session text is never markup


@pytest.mark.parametrize("command", ["ls", "surface", "stats", "show"])
def test_markup_looking_session_text_on_a_terminal(tmp_path, command) -> None:
    root = tmp_path / "sessions"
    p = markup_session(root, "s-markup", "/home/ann/[/x]")
    args = [command, str(root)] if command == "ls" else [command, str(p)] + (["--no-pager"] if command == "show" else [])
    code, shown, _ = on_pty(args, columns=200)
    assert code == 0, shown.decode(errors="replace")
    assert b"MarkupError" not in shown and b"internal error" not in shown
    wanted = {"ls": b"[/x] fix [red]the build", "surface": b"calling [red]echo[/red]", "stats": b"s-markup",
              "show": b"why does [bold]this[/bold] fail?"}[command]
    assert wanted in shown, shown.decode(errors="replace")


# ----------------------------------------------------------------- 8: tables fit the terminal


def test_ls_fits_80_columns_with_unique_id_prefixes(tmp_path) -> None:
    root = tmp_path / "sessions"
    ids = ["3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", "3f2a9c1e-0000-4e8f-9a0b-1c2d3e4f5a6c", "a81d2e44-7c3b-4f1e-8d2a-9b0c1d2e3f40"]
    for i, sid in enumerate(ids):
        p = markup_session(root, sid, f"/home/ann/project-with-a-long-name-{i}")
        if i == 1:  # no session/title: the first prompt stands for it
            p.write_bytes(b"".join(line for line in p.read_bytes().splitlines(keepends=True) if b"session/title" not in line))
    code, shown, _ = on_pty(["ls", str(root)], columns=80)
    assert code == 0, shown.decode(errors="replace")
    rows = [line for line in shown.decode().splitlines() if line.strip()]
    assert rows[0].split()[:2] == ["id", "title"]  # the header did not fold
    assert len(rows) == 1 + len(ids), rows  # one line per session
    assert all(len(r) <= 80 for r in rows)
    assert not any(sid in shown.decode() for sid in ids)  # ids are shortened on a terminal ...
    for r in rows[1:]:
        prefix = r.split()[0]
        assert sum(sid.startswith(prefix) for sid in ids) == 1  # ... to a prefix naming one session
    assert "why does [bold]" in shown.decode()  # the untitled session shows its first prompt


def test_stats_fits_80_columns() -> None:
    code, shown, _ = on_pty(["stats", str(FIXTURES / "v4" / "loop" / "session.v4.jsonl"), str(FIXTURES / "v4" / "crash" / "session.v4.jsonl")], columns=80)
    assert code == 0
    lines = [line for line in shown.decode().splitlines() if line.strip()]
    header = lines[0]
    assert header.split()[:3] == ["session", "turns", "steps"], lines
    assert all(len(line) <= 80 for line in lines)
    assert any(line.startswith("loop-0001") for line in lines) and any(line.startswith("crash-0001") for line in lines)


# ----------------------------------------------------------------- 4: show streams into the pager


@pytest.fixture(scope="module")
def large_log(tmp_path_factory) -> Path:
    gen = load_bench_script("generate")
    paths = gen.generate(tmp_path_factory.mktemp("large"), "40M", 4, seed=11, zstd=False)
    return Path(paths["plain"])


def test_show_first_screen_is_quick_on_a_large_log(large_log) -> None:
    # `cat` as the pager shows what reaches it as soon as it arrives
    code, shown, seen = on_pty(["show", str(large_log)], columns=120, env={"PAGER": "cat"}, until=b"turn 2", timeout=120)
    assert seen is not None, shown[-2000:].decode(errors="replace")
    # the first screen came while show was still reading the log: it streams into the pager
    assert code is None and "cpu" in FIRST_SCREEN, "show had finished the whole log before its first screen"
    # and it cost dshlog about dsh's decision on the whole log, which show says before its first line
    # (what `validate` costs on the same log), and a little drawing: not the whole transcript. The wall
    # clock on a shared machine is the machine's (how many other processes share the CPU), so it is
    # reported, the CPU time is checked; the absolute figure is a target of bench/browse_open.py
    decided = decision_cpu(large_log)
    assert FIRST_SCREEN["cpu"] < 1.2 * decided + 0.3, \
        f"first screen after {FIRST_SCREEN['cpu']:.2f} s of CPU ({seen:.2f} s wall); dsh's decision alone {decided:.2f} s"


def decision_cpu(log: Path) -> float:
    """The CPU time of ``dshlog validate`` on ``log`` without the cache: dsh's decision on the whole log."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "DSHLOG_NO_CACHE": "1"}
    subprocess.run(dshlog_argv("validate", str(log)), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_show_uses_the_pager_and_ends_when_it_quits(tmp_path) -> None:
    marker = tmp_path / "paged"
    pager = f"{sys.executable} -c \"import sys, pathlib; pathlib.Path({str(marker)!r}).write_bytes(sys.stdin.buffer.read(200))\""
    code, shown, _ = on_pty(["show", str(FIXTURES / "v4" / "loop" / "session.v4.jsonl")], env={"PAGER": pager})
    assert code == 0, shown.decode(errors="replace")
    assert b"session loop-0001" in marker.read_bytes()  # the pager got the transcript, and quit early without harm


# ----------------------------------------------------------------- 12: tail -f follows the name


def test_tail_f_follows_a_repair_that_replaces_the_log(tmp_path) -> None:
    log = tmp_path / "session.v4.jsonl"
    shutil.copy(FIXTURES / "v4" / "crash" / "session.v4.jsonl", log)
    proc = subprocess.Popen(dshlog_argv("tail", "-f", "-n", "1", "--interval", "0.05", str(log)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(b"9 "), first
        done = run_process("repair", "--write", str(log), cwd=ROOT, timeout=None)
        assert done.returncode == 0, done.stderr
        got = [proc.stdout.readline() for _ in range(4)]
        assert [g.split()[:2] for g in got] == [[b"10", b"tool/result"], [b"11", b"tool/result"], [b"12", b"step/end"], [b"13", b"turn/end"]]
        time.sleep(0.3)
        assert proc.poll() is None  # still following, not "the file was replaced"
    finally:
        proc.kill()
        proc.wait()


def test_tail_f_follows_a_newer_generation(tmp_path) -> None:
    d = tmp_path / "s"
    shutil.copytree(FIXTURES / "v3" / "text-turn", d)
    (old,) = [p for p in d.iterdir() if p.name.startswith("session")]
    proc = subprocess.Popen(dshlog_argv("tail", "-f", "-n", "1", "--interval", "0.05", str(d)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.stdout is not None
        last = proc.stdout.readline()
        done = run_process("migrate", "--no-children", str(d), cwd=ROOT, timeout=None)
        assert done.returncode == 0, done.stderr
        new = d / "session.v4.jsonl"
        assert new.is_file()
        with open(new, "ab") as fh:  # dsh appends to the generation it now reads
            seq = int(last.split()[0]) + 1
            fh.write(b'{"type":"session/title","seq":%d,"time":1792499999999,"data":{"title":"after","messageSeqs":[],"source":{"kind":"user"}}}\n' % seq)
        line = proc.stdout.readline()
        assert line.split()[:2] == [str(seq).encode(), b"session/title"], line
    finally:
        proc.kill()
        proc.wait()


def test_stats_shortens_long_ids_on_a_terminal(tmp_path) -> None:
    root = tmp_path / "sessions"
    sid = "3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
    p = markup_session(root, sid, "/home/ann/demo")
    code, shown, _ = on_pty(["stats", str(p)], columns=80)
    assert code == 0, shown.decode(errors="replace")
    lines = [line for line in shown.decode().splitlines() if line.strip()]
    assert lines[1].startswith("3f2a9c1e ") and sid not in shown.decode()
    assert all(len(line) <= 80 for line in lines)
