"""Hostile input: never an internal error, never a terminal escape, never a bomb.

One regression test (or a few) per failure class that hostile logs reached:
deep nesting, decompression bombs and huge lines, ``-0`` as a seq, readers that
stopped early, misleading refusals under concurrent change, symlinked session
directories.  Each drives the CLI in this process (``run_env``) or, where a whole set of commands must end cleanly, the
fuzzer's own per-input check (every reader and writer, forked, with a timeout
and a memory limit).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from conftest import FIXTURES, load_bench_script, run_env
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
    deep = _deep(1000)
    event = {
        "seq": '{"type":"turn/start","seq":@D,"time":1,"data":{"turn":1}}',
        "time": '{"type":"turn/start","seq":0,"time":@D,"data":{"turn":1}}',
        "turn": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":@D}}',
        "refs": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"sourceEventSeqs":@D}',
        "version": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
    }[where].replace("@D", deep)
    header = HEADER.replace('"version":4', '"version":' + deep) if where == "version" else HEADER
    f = _write(tmp_path / "session.v4.jsonl", header, event)
    before = _sha(f)
    for argv in (["info", str(f)], ["validate", str(f)], ["events", str(f)], ["show", str(f)], ["requests", str(f)],
                 ["export", str(f), "--format", "md", "--redact", "-o", str(tmp_path / "x.md")],
                 ["repair", "--write", str(f)], ["fork", str(f), "-o", str(tmp_path / "c.jsonl")]):
        code, out, err = run_env(*argv)
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


# ----------------------------------------------------------------------------- 5. huge lines and bombs


def _bomb(path: Path, plaintext_bytes: int) -> Path:
    """The loop fixture framed as dsh frames it, plus one small frame that decodes to a huge message line."""
    import zstandard

    src = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes()
    c = zstandard.ZstdCompressor(write_checksum=True)
    frames = [c.compress(x) for x in src.splitlines(keepends=True)]
    head = b'{"type":"user/message","seq":41,"time":1,"data":{"id":"m","role":"user","content":[{"type":"text","text":"'
    tail = b'"}]},"surfaceOp":"append"}\n'
    z = zstandard.ZstdCompressor(level=3, write_checksum=True).compressobj(size=len(head) + plaintext_bytes + len(tail))
    bomb = [z.compress(head)] + [z.compress(b"a" * (1 << 20)) for _ in range(plaintext_bytes >> 20)] + [z.compress(tail), z.flush()]
    path.write_bytes(b"".join(frames + bomb))
    return path


def test_a_line_over_the_limit_is_refused_naming_the_line_and_its_size(tmp_path: Path) -> None:
    f = _write(tmp_path / "session.v4.jsonl", HEADER, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"x":"%s"}}' % ("a" * (2 << 20)))
    for argv in (["info", str(f)], ["validate", str(f)], ["events", "--json", str(f)], ["repair", "--write", str(f)]):
        code, out, err = run_env("--max-line-size", "1", *argv)
        assert code == 3, (argv, err)
        assert b"line 2" in err + out and b"line-size limit of 1 MiB" in err + out, err
        assert b"--max-line-size" in err + out
    # under the limit the same line reads
    assert run_env("--max-line-size", "4", "validate", str(f))[0] in (0, 4)


def test_a_decompression_bomb_stops_at_the_limit_in_bounded_memory(tmp_path: Path) -> None:
    """A few KB that decode to 64 MiB: refused after about the limit, memory a small multiple of the limit."""
    import tracemalloc

    f = _bomb(tmp_path / "session.v4.jsonl.zstd", 64 << 20)
    assert f.stat().st_size < 64 << 10
    tracemalloc.start()
    try:
        code, out, err = run_env("--max-line-size", "1", "validate", str(f))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 3, err
    assert b"line 43" in err + out and b"line-size limit" in err + out
    assert peak < 16 << 20, f"peak {peak >> 20} MiB for a 1 MiB limit"


def test_zstd_frames_decode_in_bounded_pieces() -> None:
    """The one frame walk never hands out more than a bounded piece, whatever the compression ratio."""
    import io

    import zstandard

    from dshlog.protocol.zstd import FrameWalker

    z = zstandard.ZstdCompressor(write_checksum=True).compressobj(size=256 << 20)
    frame = b"".join([z.compress(b"a" * (1 << 20)) for _ in range(256)] + [z.flush()])
    biggest = max(len(data) for _, _, data, _ in FrameWalker(io.BytesIO(frame).read, "f").pieces())
    assert biggest <= 8 << 20


# ----------------------------------------------------------------------------- 6. -0


def test_the_reader_keeps_the_sign_of_minus_zero_as_json_parse_does() -> None:
    import math

    v = loads(b'{"seq":-0,"s":"2024-01-02 -0","f":-0.5,"z":0}')
    assert v["seq"] == 0 and math.copysign(1.0, v["seq"]) < 0  # the double -0
    assert v["s"] == "2024-01-02 -0" and v["f"] == -0.5 and v["z"] == 0 and type(v["z"]) is int


@pytest.mark.parametrize("field", ["seq", "time", "turn"])
def test_minus_zero_is_refused_where_dsh_refuses_it(tmp_path: Path, field: str) -> None:
    """``"time":-0`` was accepted by validate: orjson read it as 0.  dsh's counts refuse -0, but a
    seq is compared with ``===`` (``-0 === 0``): dsh's persistence code holds ``"seq":-0`` as seq 0."""
    first = {"seq": '{"type":"turn/start","seq":-0,"time":1,"data":{"turn":1}}',
             "time": '{"type":"turn/start","seq":0,"time":-0,"data":{"turn":1}}',
             "turn": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":-0}}'}[field]
    f = _write(tmp_path / "session.v4.jsonl", HEADER, first,
               '{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}')
    code, out, err = run_env("validate", str(f))
    assert code == (0 if field == "seq" else 4), out + err
    # the same log with a valid number there is fine
    g = _write(tmp_path / "ok.v4.jsonl", HEADER, first.replace("-0", "1" if field == "turn" else "0"),
               '{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}')
    code, out, err = run_env("validate", str(g))
    assert code == 0, out + err


# ----------------------------------------------------------------------------- 9. migrate -R and symlinks


def test_migrate_recursive_follows_symlinked_session_directories(tmp_path: Path) -> None:
    """A linked session directory was skipped silently ("0 migrated"); now it is migrated, once, and a cycle ends."""
    src = FIXTURES / "v0" / "text-turn" / "session.jsonl"
    root = tmp_path / "root" / "--home-ann-demo--"  # the fixture's cwd: each copy sits where dsh looks for its id
    (root / "real").mkdir(parents=True)
    sid = b"5f0c2d1e-8a43-4b7e-9d61-2c9a7e3b1f00"
    (root / "real" / "session.jsonl").write_bytes(src.read_bytes().replace(sid, b"real", 1))
    (tmp_path / "elsewhere" / "linked").mkdir(parents=True)
    (tmp_path / "elsewhere" / "linked" / "session.jsonl").write_bytes(src.read_bytes().replace(sid, b"linked", 1))
    os.symlink("../../elsewhere/linked", root / "linked")
    os.symlink("..", root / "real" / "loop")  # a cycle back to the project directory
    code, out, err = run_env("migrate", "--check", "--recursive", "--no-children", str(tmp_path / "root"))
    assert code == 10, err
    assert b"2 need migration" in out + err, out + err
    code, out, err = run_env("migrate", "--recursive", "--no-children", str(tmp_path / "root"))
    assert code == 0, err
    assert (tmp_path / "elsewhere" / "linked" / "session.v4.jsonl").exists()
    assert (root / "real" / "session.v4.jsonl").exists()


# ----------------------------------------------------------------------------- 8. refusals under concurrent change


def test_a_refused_read_back_of_a_changed_source_says_the_source_changed(tmp_path: Path) -> None:
    """The read-back tripped over a staged file built from a log replaced meanwhile: exit 5 naming the log, not 4 naming the temp file."""
    from dshlog.errors import CorruptLog, Refused
    from dshlog.write.transaction import Publication

    src = _write(tmp_path / "session.v4.jsonl", HEADER)
    pub = Publication(src, replace=True, source=src, changed="the log changed while it was being repaired; nothing was written")
    with pytest.raises(Refused) as exc:
        with pub:
            pub.stage().write(src.read_bytes() + b"x\n")

            def verify(staged: Path) -> None:
                with open(src, "ab") as fh:  # a foreign writer appends without the lock
                    fh.write(b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n')
                raise CorruptLog("row carries seq/time unlike the rows before it", path=str(staged))

            pub.publish(verify)
    assert exc.value.exit_code == 5 and exc.value.path == str(src)
    assert "changed" in exc.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.v4.jsonl"]


def test_repair_write_refuses_a_projection_up_front(tmp_path: Path) -> None:
    """A test-snapshot projection with an open turn: a clear usage refusal before staging, not a failed read-back."""
    rows = [HEADER.replace('"createdAt":1', '"createdAt":0'),
            '{"type":"turn/start","data":{"turn":1}}',
            '{"type":"user/message","data":{"id":"m1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"}']
    f = _write(tmp_path / "session.v4.jsonl", *rows)
    before = _sha(f)
    code, out, err = run_env("repair", "--write", str(f))
    assert code == 2, err
    assert b"projection" in err and b"-o OUT" in err, err
    # session.lock is dsh's, never removed once made; nothing else appears
    assert _sha(f) == before and sorted(p.name for p in tmp_path.iterdir()) in (["session.v4.jsonl"], ["session.lock", "session.v4.jsonl"])
    code, out, err = run_env("repair", str(f), "-o", str(tmp_path / "copy.jsonl"))
    assert code in (0, 3, 4), err  # the copy path speaks for itself; never an internal error
    assert b"internal error" not in err


# ----------------------------------------------------------------------------- 4. empty arguments


def test_an_empty_file_or_id_is_a_usage_error_everywhere(tmp_path: Path) -> None:
    """``repair --write ""`` took "" as an id prefix of every session and repaired an unrelated one in place."""
    import shutil

    home = tmp_path / "home"
    sdir = home / "sessions" / "--home-ann-demo--" / "crash-0001"
    sdir.mkdir(parents=True)
    log = sdir / "session.v4.jsonl"
    shutil.copy(FIXTURES / "v4" / "crash" / "session.v4.jsonl", log)
    before = _sha(log)
    for argv in (["repair", "--write", ""], ["repair", ""], ["info", ""], ["validate", ""], ["events", ""], ["show", ""],
                 ["fork", "", "-o", str(tmp_path / "c.jsonl")], ["migrate", "--no-children", ""], ["export", "", "--format", "md"]):
        code, out, err = run_env(*argv, dsh_home=str(home))
        assert code == 2, (argv, code, err)
        assert b"empty" in err, (argv, err)
    assert _sha(log) == before
    assert sorted(p.name for p in sdir.iterdir()) == ["session.v4.jsonl"]


def test_the_line_size_limit_is_a_global_option(tmp_path: Path) -> None:
    from dshlog.read.container import DEFAULT_MAX_LINE_BYTES, LINE_LIMIT

    f = _write(tmp_path / "session.v4.jsonl", HEADER, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"x":"%s"}}' % ("a" * (2 << 20)))
    try:
        code, out, err = run_env("--max-line-size", "1", "info", str(f))
        assert code == 3 and b"line 2" in err and b"1 MiB" in err, err
        code, out, err = run_env("--max-line-size", "3", "info", str(f))
        assert code == 0, err
    finally:
        LINE_LIMIT.set(DEFAULT_MAX_LINE_BYTES)


# ----------------------------------------------------------------------------- export --redact on long word runs


def test_redact_is_linear_on_long_word_runs() -> None:
    """The e-mail pattern scanned to the end of a run from every position: 128 KiB of letters took 100 s."""
    import time

    from dshlog.output.redact import redact

    start = time.process_time()
    assert redact("a" * (128 << 10)) == "a" * (128 << 10)
    assert time.process_time() - start < 10
    assert redact("write to ann.lee@example.com") == "write to [REDACTED:email]"


# ----------------------------------------------------------------------------- rescue of a log of a million tiny rows


def test_rescue_of_a_bomb_of_tiny_rows_stays_in_bounded_memory(tmp_path: Path) -> None:
    """A few KB that decode to 100 000 rows of ``{"type":"x"}``: rescue holds the events, not a list of encoded rows.

    Each encoded row is a bytes object of a few KiB whatever its length; the judge's
    candidate was built as a list of them, so a 256 MiB bomb of such rows took rescue
    past 3 GiB (and orjson died by SIGSEGV on a failed allocation).
    """
    import zstandard

    src = (FIXTURES / "v4" / "loop" / "session.v4.jsonl").read_bytes()
    c = zstandard.ZstdCompressor(write_checksum=True)
    frames = [c.compress(x) for x in src.splitlines(keepends=True)]
    f = tmp_path / "session.v4.jsonl.zstd"
    f.write_bytes(b"".join(frames) + c.compress(b'{"type":"x"}\n' * 100_000))
    assert f.stat().st_size < 64 << 10
    work = tmp_path / "work"
    work.mkdir()
    old = FUZZ.PARAMS.mem_bytes
    FUZZ.PARAMS.mem_bytes = 1 << 30
    try:
        for argv in (["rescue", str(f)], ["rescue", str(f), "--all", "-o", str(tmp_path / "out.jsonl")]):
            run = FUZZ.run_isolated(argv, work=work, cwd=tmp_path, timeout=300)
            err = run.err.read_bytes()
            assert run.signal is None and not run.hung and run.code in (0, 2, 3, 4, 5, 6, 10), (argv, run, err[-500:])
            assert b"Traceback" not in err and b"internal error" not in err, err[-500:]
            assert run.maxrss < 256 << 20, f"{argv[0]}: peak RSS {run.maxrss >> 20} MiB for 100 000 rows of 13 bytes"
    finally:
        FUZZ.PARAMS.mem_bytes = old


# ----------------------------------------------------------------------------- tables on a terminal


def test_a_table_on_a_terminal_measures_no_more_of_a_cell_than_the_screen_shows(tmp_path: Path) -> None:
    """``ls`` on a terminal over a log whose header cwd is 8 MiB of non-ASCII text: Rich measured and cut every
    character of it in Python (1 s of CPU for 8 MiB; a 256 MiB line, under the default limit, would be a hang)."""
    sdir = tmp_path / "root" / "--p--" / "sess"
    sdir.mkdir(parents=True)
    cwd = "/" + "é" * (8 << 20)
    (sdir / "session.v4.jsonl").write_text(HEADER.replace('"cwd":"/p"', f'"cwd":"{cwd}"') + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    run = FUZZ.run_isolated(["ls", str(tmp_path / "root")], work=work, cwd=tmp_path, tty=True)
    assert run.code == 0, run.err.read_bytes()[-300:]
    shown = run.out.read_bytes().decode("utf-8", "replace")
    assert "…éé" in shown  # the path is shown cut (on the left, where paths give way), not measured whole
    assert run.cpu < 2, f"ls on a terminal took {run.cpu:.2f}s of CPU for one 8 MiB cell (8.8 s before)"


def _project_key_per_unit(cwd: str) -> str:
    """The project key as dsh spells it, one UTF-16 code unit at a time (the reference for the fast one)."""
    b = cwd.encode("utf-16-le", "surrogatepass")
    safe = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
    out: list[str] = []
    prev_sep = False
    for u in (b[i] | (b[i + 1] << 8) for i in range(0, len(b), 2)):
        if u in (0x2F, 0x5C, 0x3A):
            if not prev_sep:
                out.append("-")
            prev_sep = True
            continue
        prev_sep = False
        out.append(chr(u) if u in safe else f"~{u:04X}")
    return f"--{(''.join(out).lstrip('-') or 'root')[:251]}--"


def test_the_project_key_of_a_huge_cwd_costs_what_a_short_one_does() -> None:
    """``ls`` spent 3.6 s of CPU per 2 M characters of a header cwd on its per-code-unit project key."""
    import random
    import time

    from dshlog.protocol.layout import project_key

    r = random.Random(7)
    alphabet = ["/", "\\", ":", "-", "a", "Z", "0", ".", "_", " ", "é", "\u4e2d", "\ud800", "\udc00", "\U0001f600", "~"]
    for _ in range(3000):
        cwd = "".join(r.choice(alphabet) for _ in range(r.choice([1, 2, 5, 40, 300, 600])))
        assert project_key(cwd) == _project_key_per_unit(cwd), repr(cwd)
    for cwd in ("/", "//", "-", "/-/", "a/-/b", "/" * 1000 + "x", "é" * 300, "\U0001f600" * 200, "-" * 300 + "a"):
        assert project_key(cwd) == _project_key_per_unit(cwd), repr(cwd)
    start = time.process_time()
    assert project_key("/" + "é" * (8 << 20)) == "--" + "~00E9" * 50 + "~--" and project_key("/" * (8 << 20) + "x") == "--x--"
    assert project_key("a/" * (4 << 20)) == "--" + ("a-" * 126)[:251] + "--"
    assert time.process_time() - start < 2
