"""dshlog against dsh's own persistence code: the cases where they used to disagree.

``../shared/oracle-persistence/cases/*/`` holds one small store per class, with
dsh's answer when it opens the session by id in that root (``expected.json``:
the events it holds, ``tornTruncateTo`` where its next write truncates a damaged
tail, the closers a resuming session appends, or the error class and message).
Each case is checked here, and so are generated variants of it (the damaged row
cut at every byte, the damage in every frame of a small zstd log), whose answer
is the case's own.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from dshlog.errors import ExitCode
from dshlog.write.writer import frame

from conftest import FIXTURES, SHARED, run_env

CASES = SHARED / "oracle-persistence" / "cases"
requires_cases = pytest.mark.skipif(not CASES.is_dir(), reason=f"dsh's persistence cases not found at {CASES} (set DSHLOG_SHARED)")
LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"

#: dsh's error class -> the exit code dshlog gives the same refusal
_CODES = {"SessionFormatUnsupportedError": ExitCode.UNSUPPORTED}


def _case(name: str) -> tuple[Path, dict[str, Any]]:
    d = next(CASES.glob(f"{name}-*"))
    return d / "root", json.loads((d / "expected.json").read_text())


def _generation(root: Path) -> Path:
    return next(p for p in root.rglob("session*.jsonl*") if p.is_file())


def _dsh_sentence(message: str, root: Path) -> str:
    """dsh's own sentence inside its message: without the backend's wrapping and raw-log suffix."""
    core = re.sub(r" \(raw log: [^)]*\)\Z", "", message)
    core = re.sub(r'\Asession "[^"]*": stored log is corrupt: Error: ', "", core)
    return core.replace("<root>", str(root))


def _copy(root: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "root"
    shutil.copytree(root, dst)
    return dst


def check_like_dsh(root: Path, expected: dict[str, Any], tmp_path: Path) -> None:
    """dshlog's dsh views give dsh's answer for the session in ``root``."""
    path = _generation(root)
    code, out, err = run_env("events", str(path), "--v4", "--json")
    if expected["status"] == "refused":
        want = _CODES.get(expected["error"]["name"], ExitCode.CORRUPT)
        assert code == want, err
        assert out == b""
        assert _dsh_sentence(expected["error"]["message"], root) in err.decode(), err
        code, _, err = run_env("repair", str(path), "--json")
        assert code == want, err
        return
    assert code == ExitCode.OK, err
    assert len(out.splitlines()) == expected["events"]
    code, out, err = run_env("repair", str(path), "--json")
    assert json.loads(out)["closers"] == expected["closers"], err
    # dsh's write open: the damaged tail cut at tornTruncateTo, the closers appended
    copy = _generation(_copy(root, tmp_path))
    before = copy.read_bytes()
    code, _, err = run_env("repair", str(copy), "--write")
    assert code == ExitCode.OK, err
    after = copy.read_bytes()
    cut = expected["tornTruncateTo"]
    if not expected["closers"]:
        assert after == before  # nothing to append: dsh leaves the file as it is
        return
    if cut is None:
        cut = len(before)
    assert after[:cut] == before[:cut]
    assert [json.loads(line) for line in after[cut:].splitlines()] == expected["closers"]


@requires_cases
@pytest.mark.parametrize("name", ["1a", "1b", "2", "4", "5"])
def test_each_case_gets_dsh_answer(name: str, tmp_path: Path) -> None:
    root, expected = _case(name)
    check_like_dsh(root, expected, tmp_path)


def _store(tmp_path: Path, body: bytes, name: str = "session.v4.jsonl", sid: str = "loop-0001") -> Path:
    root = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
    d = root / "--home-ann-demo--" / sid
    d.mkdir(parents=True)
    (d / name).write_bytes(body)
    return root


@requires_cases
def test_unparsable_last_row_cut_at_every_byte(tmp_path: Path) -> None:
    """Case 1a with the final row garbled as any prefix of itself: dsh holds the 40 events before it."""
    _, expected = _case("1a")
    lines = LOOP.read_bytes().splitlines(keepends=True)
    head, last = b"".join(lines[:-1]), lines[-1].rstrip(b"\n")
    assert len(head) == expected["tornTruncateTo"]
    for k in range(len(last)):
        root = _store(tmp_path, head + last[:k] + b"\n")
        check_like_dsh(root, expected, tmp_path / f"w{k}")


@requires_cases
def test_unparsable_row_in_an_open_last_turn(tmp_path: Path) -> None:
    """Case 1b rebuilt: a row of the last turn garbled, rows after it kept, none a turn/end."""
    root, expected = _case("1b")
    lines = LOOP.read_bytes().splitlines(keepends=True)
    case = _generation(root).read_bytes().splitlines(keepends=True)
    assert case[:36] == lines[:36] and case[37:] == lines[37:39] and case[36] != lines[36]
    # a second damaged row after the first changes nothing
    again = b"".join(lines[:36]) + b"{\n" + b"not json\n" + lines[38]
    check_like_dsh(_store(tmp_path, again), expected, tmp_path / "w")


def test_an_unparsable_row_before_a_turn_end_is_refused(tmp_path: Path) -> None:
    """dsh's scanner: a later turn/end proves the damage committed, in dsh's words (event rows counted)."""
    lines = LOOP.read_bytes().splitlines(keepends=True)
    root = _store(tmp_path, b"".join(lines[:30]) + b"{oops\n" + b"".join(lines[31:]))
    code, out, err = run_env("events", str(_generation(root)), "--v4", "--json")
    assert (code, out) == (ExitCode.CORRUPT, b"")
    offset = len(b"".join(lines[:30]))
    assert err.decode().endswith(f": line 31, byte {offset}: corrupt session log: unparsable committed event at line 30\n"), err


def test_historical_row_not_json_is_worded_as_dsh_historical_reader(tmp_path: Path) -> None:
    """A historical generation's reader says ``row N is not valid JSON`` (the current scanner's text is its own)."""
    v0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
    lines = v0.read_bytes().splitlines(keepends=True)
    end = max(i for i, line in enumerate(lines) if b'"turn/end"' in line)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:2]) + b"{oops\n" + b"".join(lines[2:end + 1]))
    code, _, err = run_env("events", str(path), "--v4", "--json")
    assert code == ExitCode.CORRUPT
    assert "corrupt session log: row 2 is not valid JSON" in err.decode(), err


def _framed(lines: list[bytes]) -> bytes:
    """A zstd generation as dsh frames one: the header frame, then one frame per row."""
    return b"".join(frame(line) for line in lines)


@requires_cases
def test_damage_in_every_frame_of_a_zstd_log(tmp_path: Path) -> None:
    """Case 2 and its variants: an issue inside a complete frame of a current zstd generation.

    With no later turn/end dsh refuses (``complete frame contains a torn JSONL record``);
    before a turn/end the issue itself is dsh's refusal; in a torn last frame dsh holds the prefix.
    """
    root2, expected = _case("2")
    check_like_dsh(root2, expected, tmp_path / "case")
    torn_text = _dsh_sentence(expected["error"]["message"], root2)
    lines = LOOP.read_bytes().splitlines(keepends=True)
    last_end = max(i for i, line in enumerate(lines) if b'"turn/end"' in line)
    for k in range(1, len(lines)):
        damaged = lines[:k] + [b"{oops\n"] + lines[k + 1:]
        root = _store(tmp_path, _framed(damaged), "session.v4.jsonl.zstd")
        code, out, err = run_env("events", str(_generation(root)), "--v4", "--json")
        assert (code, out) == (ExitCode.CORRUPT, b""), (k, err)
        want = torn_text if k >= last_end else f"corrupt session log: unparsable committed event at line {k}"
        assert err.decode().rstrip("\n").endswith(want), (k, err)
    # the same damage in a torn last frame: dsh holds what precedes it
    body = _framed(lines) + frame(b'{"type":"turn/start","seq":44,"time":0,"data":{"turn":99}}\n')[:-3]
    code, out, err = run_env("events", str(_generation(_store(tmp_path, body, "session.v4.jsonl.zstd"))), "--v4", "--json")
    assert (code, len(out.splitlines())) == (ExitCode.OK, 41), err


@requires_cases
def test_negative_zero_seq_is_seq_zero(tmp_path: Path) -> None:
    """Case 5: dsh compares ``-0 === 0`` and holds the event as seq 0 (``JSON.stringify`` writes ``0``)."""
    root, expected = _case("5")
    check_like_dsh(root, expected, tmp_path)
    code, out, _ = run_env("events", str(_generation(root)), "--v4", "--json")
    assert b'"seq":-0' not in out and json.loads(out.splitlines()[0])["seq"] == 0
    for command in ("surface", "requests"):
        code, _, err = run_env(command, str(_generation(root)))
        assert code == ExitCode.OK, (command, err)


@requires_cases
def test_current_slot_with_an_older_header_is_unsupported(tmp_path: Path) -> None:
    """Case 4 and every older version in the current slot: unsupported, in dsh's words."""
    root, expected = _case("4")
    check_like_dsh(root, expected, tmp_path)
    header = json.loads(LOOP.read_bytes().splitlines()[0])
    for v in (1, 2, 3):
        body = json.dumps({**header, "version": v}).encode() + b"\n"
        code, _, err = run_env("events", str(_generation(_store(tmp_path, body))), "--v4", "--json")
        assert code == ExitCode.UNSUPPORTED, err
        assert f'session "loop-0001" uses log format v{v}, older than the supported v4, and this build ships no upgrade path for it' in err.decode()


@requires_cases
@pytest.mark.parametrize("name", ["3a", "3b"])
def test_store_identity_is_dsh_bound_identity(name: str, tmp_path: Path) -> None:
    """Cases 3a, 3b: the dsh views refuse a session whose place in the store is not its header's;
    the person's readers show it (``show`` opens with dsh's refusal)."""
    root, expected = _case(name)
    check_like_dsh(root, expected, tmp_path)
    path = str(_generation(root))
    for argv in (["surface", path], ["requests", path]):
        code, out, err = run_env(*argv)
        assert code == ExitCode.CORRUPT and _dsh_sentence(expected["error"]["message"], root) in err.decode(), (argv, err)
    for argv in (["info", path], ["events", path]):
        assert run_env(*argv)[0] == ExitCode.OK, argv
    code, out, err = run_env("show", path)
    assert code == ExitCode.CORRUPT and _dsh_sentence(expected["error"]["message"], root).encode() in err, err
    assert b"loop-0001" in out  # the transcript is shown, after dsh's refusal


def test_every_identity_mismatch(tmp_path: Path) -> None:
    """A session directory not named for the header's id, or a project directory not its cwd's."""
    body = LOOP.read_bytes()  # id loop-0001, cwd /home/ann/demo
    places = {
        ("--home-ann-demo--", "loop-0002"): 'requested id "loop-0002" does not match header id "loop-0001"',
        ("--home-ann-demo--", "loop~002D0001"): None,  # not a name dsh gives a directory: not judged
        ("_no-cwd", "loop-0001"): 'header id "loop-0001" and cwd identify "{root}/--home-ann-demo--/loop-0001/session.v4.jsonl"',
        ("--home-ann--", "loop-0001"): 'header id "loop-0001" and cwd identify "{root}/--home-ann-demo--/loop-0001/session.v4.jsonl"',
        ("--home-ann-demo--", "loop-0001"): "",
    }
    for i, ((project, segment), want) in enumerate(places.items()):
        root = tmp_path / f"r{i}"
        d = root / project / segment
        d.mkdir(parents=True)
        (d / "session.v4.jsonl").write_bytes(body)
        code, _, err = run_env("events", str(d / "session.v4.jsonl"), "--v4", "--json")
        if want:
            assert code == ExitCode.CORRUPT, (project, segment, err)
            assert want.format(root=root) in err.decode(), err
        else:
            assert code == ExitCode.OK, (project, segment, err)
    # outside any store layout nothing is judged
    other = tmp_path / "plain" / "x"
    other.mkdir(parents=True)
    (other / "session.v4.jsonl").write_bytes(body)
    assert run_env("events", str(other / "session.v4.jsonl"), "--v4", "--json")[0] == ExitCode.OK


# ----------------------------------------------------------------------------- dsh's words (REPORT.md, "Same verdict, different words")


def _block_header_at(f: bytes) -> int:
    """Offset of a frame's first block header (after magic, descriptor, window, dictionary id, content size)."""
    desc = f[4]
    single = (desc >> 5) & 1
    fcs_flag = desc >> 6
    fcs_len = single if fcs_flag == 0 else (1, 2, 4, 8)[fcs_flag]
    return 5 + (0 if single else 1) + (0, 1, 2, 4)[desc & 3] + fcs_len


def _refused(path: Path, sentence: str) -> None:
    """Every view refuses ``path`` (exit 4) with dsh's sentence in its message."""
    for argv in (["events", str(path), "--v4", "--json"], ["info", str(path)], ["repair", str(path), "--json"]):
        code, _, err = run_env(*argv)
        assert code == ExitCode.CORRUPT and sentence in err.decode(), (argv, sentence, err)


def test_zstd_frame_refusals_are_dsh_scanner_and_decoder_texts(tmp_path: Path) -> None:
    """A damaged frame of every kind, in every frame of a small zstd log: dsh's frame scanner's and decoder's texts,
    with the byte dsh names (the descriptor, the block header, the frame's start)."""
    lines = LOOP.read_bytes().splitlines(keepends=True)[:12]
    frames = [frame(line) for line in lines]
    assert all(f[4] & 0x04 for f in frames)  # content checksums, as dsh writes them
    for k in range(len(frames)):
        start = sum(len(f) for f in frames[:k])
        kinds: dict[str, tuple[int, int]] = {
            f"reserved frame-header bit at byte {start + 4}": (4, 0x10),
            f"reserved block type at byte {start + _block_header_at(frames[k])}": (_block_header_at(frames[k]), 0x06),
            f"frame at byte {start} failed validation": (len(frames[k]) - 1, 0x01),  # its checksum
        }
        if k:
            kinds[f"invalid frame magic at byte {start}"] = (0, 0x01)
        for sentence, (at, bits) in kinds.items():
            bad = bytearray(frames[k])
            bad[at] |= bits if bits != 0x01 else 0
            bad[at] ^= bits if bits == 0x01 else 0
            body = b"".join(frames[:k]) + bytes(bad) + b"".join(frames[k + 1:])
            _refused(_generation(_store(tmp_path, body, "session.v4.jsonl.zstd")), "corrupt Zstandard session log: " + sentence)


def test_a_damaged_first_magic_and_an_empty_zstd_log_are_dsh_texts(tmp_path: Path) -> None:
    """dsh reads a ``.zstd`` generation as frames: a damaged first magic is ``invalid frame magic at byte 0``
    (not a header that is not UTF-8), an empty one ``empty or header-less Zstandard session log``."""
    frames = [frame(line) for line in LOOP.read_bytes().splitlines(keepends=True)]
    for at in range(4):
        bad = bytearray(frames[0])
        bad[at] ^= 0x01
        path = _generation(_store(tmp_path, bytes(bad) + b"".join(frames[1:]), "session.v4.jsonl.zstd"))
        _refused(path, "corrupt Zstandard session log: invalid frame magic at byte 0")
    for body in (b"", frames[0][:3]):
        path = _generation(_store(tmp_path, body, "session.v4.jsonl.zstd"))
        code, _, err = run_env("events", str(path), "--v4", "--json")
        assert code == ExitCode.CORRUPT and "empty or header-less Zstandard session log" in err.decode(), err
    code, _, err = run_env("events", str(_generation(_store(tmp_path, b""))), "--v4", "--json")
    assert code == ExitCode.CORRUPT and "empty or header-less session log" in err.decode() and "Zstandard" not in err.decode(), err


def test_a_committed_row_the_codec_refuses_is_worded_as_dsh_current_scanner(tmp_path: Path) -> None:
    """dsh's current-slot scanner wraps its codec's refusal: ``invalid committed event at line N: …`` (event rows
    counted); a historical generation's reader does not."""
    lines = LOOP.read_bytes().splitlines(keepends=True)
    last_end = max(i for i, line in enumerate(lines) if b'"turn/end"' in line)
    for k in range(1, last_end):
        gap = json.loads(lines[k])
        gap["seq"] += 5
        body = b"".join(lines[:k]) + json.dumps(gap, separators=(",", ":")).encode() + b"\n" + b"".join(lines[k + 1:])
        code, out, err = run_env("events", str(_generation(_store(tmp_path, body))), "--v4", "--json")
        want = f"corrupt session log: invalid committed event at line {k}: released v2 row {k - 1} has seq gap (expected {k - 1}, got {k + 4})"
        assert (code, out) == (ExitCode.CORRUPT, b"") and want in err.decode(), (k, err)


def test_a_session_id_not_in_the_store_is_dsh_not_found(tmp_path: Path) -> None:
    """dsh opens a session by id: ``session "…" not found``; dshlog says where it looked around it."""
    root = _store(tmp_path, LOOP.read_bytes())
    home = tmp_path / "home"
    root.rename(home / "sessions") if (home.mkdir() or True) else None
    code, out, err = run_env("events", "no-such-session", dsh_home=str(home))
    assert (code, out) == (ExitCode.USAGE, b"") and 'session "no-such-session" not found' in err.decode(), err
    empty = home / "sessions" / "--home-ann-demo--" / "gone-0001"
    empty.mkdir()
    code, out, err = run_env("events", str(empty))
    assert code == ExitCode.USAGE and 'session "gone-0001" not found' in err.decode(), err


# ----------------------------------------------------------------------------- the root dsh opens a session in


def test_a_root_dsh_refuses_is_named_for_each_of_its_sessions(tmp_path: Path) -> None:
    """dsh refuses every session of a root holding a flat ``<project>/<name>.jsonl[.zstd]`` file, or a generation
    of the other encoding; the dsh views and ``validate`` refuse in dsh's words, ``ls`` names each session."""
    body = LOOP.read_bytes()
    flat = _store(tmp_path, body)
    (flat / "--home-ann-demo--" / "loop-0001.jsonl").write_bytes(body)
    mixed = _store(tmp_path, body)
    other = mixed / "--home-ann-demo--" / "other-session"
    other.mkdir()
    own = body.replace(b'"id":"loop-0001"', b'"id":"other-session"', 1)
    (other / "session.v4.jsonl.zstd").write_bytes(b"".join(frame(line) for line in own.splitlines(keepends=True)))
    cases = {
        flat: f'session artifact "{flat}/--home-ann-demo--/loop-0001.jsonl" uses the unsupported flat-file layout; '
              "use a separate root or move it into a project/session directory before loading",
        mixed: f'session artifact "{other}/session.v4.jsonl.zstd" uses .jsonl.zstd, but this backend is configured for '
               'compression "none"; use a separate root or select the matching compression mode',
    }
    for root, sentence in cases.items():
        path = root / "--home-ann-demo--" / "loop-0001" / "session.v4.jsonl"
        for argv in (["events", str(path), "--v4", "--json"], ["validate", str(path)], ["validate", str(path.parent)]):
            code, _, err = run_env(*argv)
            assert code == ExitCode.CORRUPT, (argv, err)
        code, out, _ = run_env("validate", str(path))
        assert sentence in out.decode(), out
        code, out, err = run_env("ls", str(root), "--json")
        errors = {json.loads(line)["id"]: json.loads(line)["error"] for line in out.splitlines()}
        assert errors["loop-0001"] == sentence, errors
    # the zstd session of the mixed root is refused naming the plain one
    code, out, _ = run_env("validate", str(other / "session.v4.jsonl.zstd"))
    assert code == ExitCode.CORRUPT and f'session artifact "{mixed}/--home-ann-demo--/loop-0001/session.v4.jsonl" uses .jsonl, but' in out.decode()


@requires_cases
@pytest.mark.parametrize("name", ["3a", "3b"])
def test_validate_and_ls_name_an_identity_refusal(name: str, tmp_path: Path) -> None:
    """``validate`` (which lists rows leniently) adds dsh's identity refusal; ``ls`` names it in dsh's words."""
    root, expected = _case(name)
    sentence = _dsh_sentence(expected["error"]["message"], root)
    code, out, _ = run_env("validate", str(_generation(root)))
    assert code == ExitCode.CORRUPT and sentence in out.decode(), out
    code, out, _ = run_env("ls", str(root), "--json")
    assert [json.loads(line)["error"] for line in out.splitlines()] == [sentence]
