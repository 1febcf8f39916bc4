"""Regression tests, through the CLI, for facts that used to have two disagreeing owners.

Each case is one of the disagreements a review of the package found (two copies of a
protocol fact giving different answers, so two commands judged the same file
differently).  Every fact now has one owner; these tests show that the commands
reading the same input agree.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import zstandard

from conftest import FIXTURES, jsonl, run_env, run_process

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
LOOP_ZSTD = FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd"
TEXT_TURN_V2 = FIXTURES / "v2" / "text-turn" / "session.v2.jsonl"


def _loop_lines() -> list[bytes]:
    return LOOP.read_bytes().splitlines()


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _appended(tmp_path: Path, event: dict[str, Any] | bytes) -> Path:
    """The loop fixture with one more event line at its end."""
    lines = _loop_lines()
    raw = event if isinstance(event, bytes) else json.dumps(event, separators=(",", ":")).encode()
    return _write(tmp_path / "s" / "session.v4.jsonl", [*lines, raw])


def _with_seq(tmp_path: Path, index: int, seq_text: bytes) -> Path:
    """The loop fixture with the ``seq`` of body row ``index`` written as ``seq_text``."""
    lines = _loop_lines()
    needle = f'"seq":{index},'.encode()
    assert needle in lines[index + 1]
    lines[index + 1] = lines[index + 1].replace(needle, b'"seq":' + seq_text + b",", 1)
    return _write(tmp_path / "s" / "session.v4.jsonl", lines)


# ------------------------------------------------------------------ 1. event vocabulary


def test_working_directory_change_is_known_to_every_command(tmp_path: Path) -> None:
    """``working-directory/change`` is a v4 type: the fold once had its own list without it."""
    log = str(_appended(tmp_path, {"type": "working-directory/change", "seq": 41, "time": 1792499082300,
                                   "data": {"cwd": "/home/ann/other"}}))
    for argv in (["validate", log], ["surface", log], ["requests", log], ["rebuild", log, "--request", "1"],
                 ["diff", log, "-r", "1", "-r", "2"]):
        code, _out, err = run_env(*argv)
        assert code == 0, (argv, err)


# ------------------------------------------------------------------ 2. one JSON reader


def test_a_number_that_overflows_is_refused_by_every_reader(tmp_path: Path) -> None:
    """``1e400`` is Infinity to JSON.parse and refused by dsh's lossless check.

    A private reader once turned it into ``inf``: ``validate`` said ok and
    ``events --v4 --json`` printed ``null`` for it.
    """
    log = str(_appended(tmp_path, b'{"type":"x/custom","seq":41,"time":1792499082300,"ignorable":true,"data":{"n":1e400}}'))
    code, out, err = run_env("validate", log)
    assert code == 4 and b"line 43" in out + err
    code, out, err = run_env("events", "--v4", "--json", log)
    assert b'"n":null' not in out and b"x/custom" not in out and b"line 43" in err
    code, _out, err = run_env("surface", log)
    assert code == 4 and b"line 43" in err


def test_lone_surrogates_are_read_alike_by_listing_and_reading(tmp_path: Path) -> None:
    """A lone surrogate escape is valid JSON for dsh; ``ls`` once reported the header unreadable."""
    root = tmp_path / "root"
    lines = _loop_lines()
    header = json.loads(lines[0])
    header["id"] = "loop-\ud800"
    d = root / "--home-ann-demo--" / "loop-~D800"
    _write(d / "session.v4.jsonl", [json.dumps(header, separators=(",", ":")).encode(), *lines[1:]])
    code, out, err = run_env("ls", str(root), "--json")
    assert code == 0, err
    row = json.loads(out.splitlines()[0])
    assert row["error"] is None and row["turns"] == 4
    code, out, err = run_env("info", "--json", str(d))
    assert code == 0 and json.loads(out)["header"]["id"] == "loop-\ud800", err


# ------------------------------------------------------------------ 3. child facts, migrated once


def _root_with_v2_child(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    parent = root / "--tmp-p--" / "P"
    _write(parent / "session.v3.jsonl", [b'{"type":"session","version":3,"id":"P","createdAt":1,"cwd":"/tmp/p","isSeeded":false,"delegationDepth":0}'])
    lines = TEXT_TURN_V2.read_bytes().splitlines()
    body = [json.loads(x) for x in lines[1:]]
    header = {"type": "session", "version": 2, "id": "child-1", "createdAt": 5, "cwd": "/tmp/p", "parentSession": "P",
              "isSeeded": False, "origin": "subagent", "delegationDepth": 1}
    body.append({"type": "subagent/descriptor", "seq": len(body), "time": body[-1]["time"],
                 "data": {"version": 3, "mode": "one-shot", "provider": "spawn", "label": "helper"}})
    (root / "--tmp-p--" / "child-1").mkdir(parents=True)
    (root / "--tmp-p--" / "child-1" / "session.v2.jsonl").write_bytes(jsonl(header, *body))
    return parent


def test_a_v2_subagent_child_gives_its_parent_its_real_mode(tmp_path: Path) -> None:
    """The child's v4 view is read once; migrated twice, its facts failed and the catalog said ``unknown``."""
    parent = _root_with_v2_child(tmp_path)
    code, out, err = run_env("events", "--v4", "--json", str(parent))
    assert code == 0, err
    catalog = [json.loads(x) for x in out.splitlines() if b"subagent/catalog" in x]
    assert [c["data"] for c in catalog] == [
        {"version": 0, "childId": "child-1", "childCreatedAt": 5, "mode": "one-shot", "label": "helper"}
    ]
    code, out, err = run_env("migrate", str(parent))
    assert code == 0, err
    published = (parent / "session.v4.jsonl").read_bytes()
    assert b'"mode":"one-shot","label":"helper"' in published and b'"mode":"unknown"' not in published


# ------------------------------------------------------------------ 4. String(number)


def test_numbers_read_as_javascript_prints_them(tmp_path: Path) -> None:
    """``1e-5`` is ``0.00001`` in JavaScript; copies of ``String(number)`` once printed ``1e-05``.

    Tool arguments are shown as dsh's JSON (``JSON.stringify`` of the parsed value).
    """
    loop = LOOP.read_text().replace('{\\"text\\":\\"one\\"}', '{\\"text\\":\\"one\\",\\"n\\":0.00001}')
    log = tmp_path / "s" / "session.v4.jsonl"
    log.parent.mkdir()
    log.write_text(loop)
    code, out, err = run_env("show", str(log))
    assert code == 0, err
    assert b'"n": 0.00001' in out and b"1e-05" not in out


# ------------------------------------------------------------------ 5. safe integers


def test_an_integral_float_seq_is_an_integer_to_every_command(tmp_path: Path) -> None:
    """``"seq":5.0`` is the integer 5 to dsh; the reader once called it corrupt while the fold accepted it."""
    log = str(_with_seq(tmp_path, 5, b"5.0"))
    for argv in (["validate", log], ["info", log], ["surface", log], ["events", log], ["requests", log]):
        code, _out, err = run_env(*argv)
        assert code == 0, (argv, err)
        assert b"must be" not in err and b"corrupt" not in err, (argv, err)


def test_negative_zero_seq_is_seq_zero_in_every_command(tmp_path: Path) -> None:
    """``"seq":-0.0`` is seq 0 to dsh (``-0 === 0`` in its decoder and restore; dsh's persistence
    code holds such a log), and so to every command: one place used to refuse it."""
    log = str(_with_seq(tmp_path, 0, b"-0.0"))
    for argv in (["validate", log], ["surface", log], ["events", log, "--v4"], ["info", log]):
        code, _out, err = run_env(*argv)
        assert code == 0, (argv, err)


# ------------------------------------------------------------------ 6. the placeholder rule


def _projection_v0(tmp_path: Path, cwd: str) -> Path:
    lines = (FIXTURES / "v0" / "text-turn" / "session.jsonl").read_bytes().splitlines()
    header = json.loads(lines[0])
    header["cwd"] = cwd
    body = []
    for line in lines[1:]:
        row = json.loads(line)
        for key in ("seq", "time", "seq0", "time0"):
            row.pop(key, None)
        body.append(row)
    d = tmp_path / cwd.replace("/", "_").replace("{", "").replace("}", "")
    d.mkdir()
    (d / "session.jsonl").write_bytes(jsonl(header, *body))
    return d


@pytest.mark.parametrize("cwd", ["{{cwd}}/workspace", "x{{cwd}}"])
def test_a_placeholder_inside_a_cwd_is_a_projection_for_validate_and_migrate(tmp_path: Path, cwd: str) -> None:
    """One placeholder rule: ``validate`` and ``migrate`` once read ``x{{cwd}}`` differently."""
    d = _projection_v0(tmp_path, cwd)
    code, out, err = run_env("validate", str(d))
    assert code == 0, out + err
    code, out, err = run_env("migrate", "--dry-run", "--no-children", str(d))
    assert code == 0, out + err


def test_a_brace_number_is_not_a_placeholder_for_anyone(tmp_path: Path) -> None:
    d = _projection_v0(tmp_path, "{{1}}")
    code, out, err = run_env("validate", str(d))
    assert code == 4 and b"cwd must be absolute" in out
    code, out, err = run_env("migrate", "--dry-run", "--no-children", str(d))
    assert code == 4 and b"cwd must be absolute" in out + err


# ------------------------------------------------------------------ 7. generation choice


def test_a_child_directory_mixing_encodings_is_refused_by_reading_and_by_child_discovery(tmp_path: Path) -> None:
    """dsh refuses a directory with plain and compressed generations; child discovery once picked one."""
    parent = _root_with_v2_child(tmp_path)
    child = parent.parent / "child-1"
    plain = child / "session.v2.jsonl"
    (child / "session.v1.jsonl.zstd").write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    code, _out, err = run_env("info", str(child))
    assert code == 3 and b"mixes plain" in err
    # dsh refuses every session of a root where a generation uses the other encoding, the parent too
    code, out, err = run_env("events", "--v4", "--json", str(parent))
    assert code == 4 and b"session.v1.jsonl.zstd\" uses .jsonl.zstd, but this backend is configured for compression" in err, err
    assert b"child-1" not in out


# ------------------------------------------------------------------ 9. project directory rule


def test_a_directory_named_dashes_is_not_a_project_for_ls_nor_for_migrate(tmp_path: Path) -> None:
    """``--`` is not a project key (``projectKey`` always has a slug): ``ls`` skipped it, migrate took it for one."""
    root = tmp_path / "root"
    d = root / "--" / "P"
    _write(d / "session.v3.jsonl", [b'{"type":"session","version":3,"id":"P","createdAt":1,"cwd":"/tmp/p","isSeeded":false,"delegationDepth":0}'])
    code, out, _err = run_env("ls", str(root), "--json")
    assert out.strip() == b""
    code, out, err = run_env("migrate", "--dry-run", str(d))
    assert code == 2 and b"not inside a dsh persistence root" in out + err


# ------------------------------------------------------------------ 11. one zstd frame walk


def _frames(data: bytes) -> list[bytes]:
    """Split a multi-frame file into its frames (with libzstd's own view of where each ends)."""
    out, pos = [], 0
    while pos < len(data):
        obj = zstandard.ZstdDecompressor().decompressobj()
        obj.decompress(data[pos:])
        end = len(data) - len(obj.unused_data)
        out.append(data[pos:end])
        pos = end
    return out


def test_a_reserved_frame_bit_is_corruption_for_reading_and_for_following(tmp_path: Path) -> None:
    """Descriptor bit 0x10 is reserved (FORMAT §1.5): ``tail -f`` once had its own walker that skipped the check."""
    frames = _frames(LOOP_ZSTD.read_bytes())
    assert len(frames) > 2
    bad = bytearray(frames[2])
    bad[4] |= 0x10
    path = tmp_path / "s" / "session.v4.jsonl.zstd"
    path.parent.mkdir()
    path.write_bytes(b"".join(frames[:2]) + bytes(bad) + b"".join(frames[3:]))
    code, _out, err = run_env("events", str(path))
    assert code == 4 and b"reserved frame-header bit" in err
    proc = run_process("tail", "-f", str(path), timeout=30)  # a process: a follow that never ends is stopped
    assert proc.returncode == 4 and b"reserved frame-header bit" in proc.stderr


def test_a_non_canonical_directory_name_is_no_session_id_for_listing_nor_for_locking(tmp_path: Path) -> None:
    """Disagreement 8: the store's segment decoder refused ``~0041bc`` (``A`` needs no escape)
    while the lock's decoded it to ``Abc``, so a lock refusal named a session that ``ls`` and an
    id lookup never show.  One codec: neither takes the name for the id ``Abc``, and a writer
    into that session directory holds its lock and names the directory as it is."""
    from conftest import lock_held_elsewhere

    d = tmp_path / "sessions" / "-home-ann-demo-" / "~0041bc"
    d.mkdir(parents=True)
    shutil.copyfile(LOOP, d / "session.v4.jsonl")
    code, out, err = run_env("ls", str(tmp_path / "sessions"), "--json")
    assert b'"id":"Abc"' not in out
    code, _, err = run_env("info", "Abc", "--json")
    assert code != 0
    with lock_held_elsewhere(d):
        code, _, err = run_env("fork", str(LOOP), "-o", str(d / "child.jsonl"))
    assert code == 5, err
    assert b"Abc" not in err and b"~0041bc" in err, err
    assert not (d / "child.jsonl").exists()


def test_every_writer_compares_the_source_by_the_same_identity(tmp_path: Path) -> None:
    """Disagreement 10: ``repair`` compared (dev, ino, size, mtime) and ``migrate`` also the
    ctime, so a rewrite that kept size and mtime passed one and not the other.  One identity:
    a source whose ctime alone moves during the run is refused by both."""
    import os

    from dshlog.write import transaction

    real = transaction.Publication.verify_staged
    for argv, src in (
        (["repair", "{p}", "--write"], FIXTURES / "v4" / "crash" / "session.v4.jsonl"),
        (["migrate", "--no-children", "{d}"], FIXTURES / "v0" / "text-turn" / "session.jsonl"),
    ):
        d = tmp_path / argv[0]
        d.mkdir()
        p = d / src.name
        shutil.copyfile(src, p)

        def touch_ctime(self: Any, *a: Any, _p: Path = p, **k: Any) -> None:
            real(self, *a, **k)
            os.chmod(_p, os.stat(_p).st_mode & 0o7777)  # same mode, same size, same mtime: only the ctime moves

        transaction.Publication.verify_staged = touch_ctime  # type: ignore[method-assign]  # restored below
        try:
            code, _, err = run_env(*(a.format(p=p, d=d) for a in argv))
        finally:
            transaction.Publication.verify_staged = real  # type: ignore[method-assign]  # the real method back
        assert code == 5 and b"changed" in err, (argv, err)
