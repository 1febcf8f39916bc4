"""Every command behaves the way a person expects, the same way on the same input.

Each test drives the real command line through a test environment (``run_env``:
in-memory streams, chosen terminal, home and cwd) and checks one policy: the
exit-code policy, the output policy, the ``-o`` path policy.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, dshlog_argv, ev, jsonl, run_env, run_process, v4_header
from dshlog.errors import ExitCode
from dshlog.protocol.layout import encode_segment, project_key

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
CRASH = FIXTURES / "v4" / "crash" / "session.v4.jsonl"
READERS = ["info", "events", "stats", "tail", "show", "export", "surface", "requests", "validate"]


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def store(tmp_path: Path, src: Path = CRASH, sid: str = "crash-0001", cwd: str = "/home/ann/demo") -> tuple[Path, Path]:
    """A persistence root holding ``src`` where dsh keeps it; returns (root, generation)."""
    root = tmp_path / "home" / "sessions"
    d = root / project_key(cwd) / encode_segment(sid)
    d.mkdir(parents=True)
    shutil.copy(src, d / src.name)
    return root, d / src.name


# ----------------------------------------------------------------- 1: --check never writes


@pytest.mark.parametrize("extra", [["--write"], ["-o", "copy.v4.jsonl"]])
def test_repair_check_never_writes(tmp_path, extra) -> None:
    log = tmp_path / "session.v4.jsonl"
    shutil.copy(CRASH, log)
    before = log.read_bytes()
    args = [a if a != "copy.v4.jsonl" else str(tmp_path / a) for a in extra]
    code, _, err = run_env("repair", str(log), "--check", *args)
    assert code == ExitCode.USAGE, err
    assert log.read_bytes() == before and not (tmp_path / "copy.v4.jsonl").exists()
    assert run_env("repair", str(log), "--check")[0] == ExitCode.PENDING


# ----------------------------------------------------------------- 3: a closed stdout is normal


@pytest.mark.parametrize("command", ["info", "show", "events", "stats", "requests"])
def test_closed_stdout_exits_quietly(command) -> None:
    p = subprocess.Popen(dshlog_argv(command, str(LOOP)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(1)
    p.stdout.close()  # as `| head -c1` does
    err = p.stderr.read()
    assert p.wait() == 0, err
    assert err == b""


# ----------------------------------------------------------------- 5: migrate reports on stdout, one rule for the batch


def test_migrate_batch_results_on_stdout_naming_sessions(tmp_path) -> None:
    good = tmp_path / "good"
    shutil.copytree(FIXTURES / "v0" / "text-turn", good)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "session.v2.jsonl").write_bytes(b'{"type":"session","version":2,"id":\n')
    code, out, err = run_env("migrate", "--no-children", str(good), str(bad))
    text = out.decode()
    assert f"migrated {good}/session.jsonl" in text
    assert any(line.startswith(f"failed {bad}") for line in text.splitlines()), text
    assert code == ExitCode.CORRUPT, err
    assert b"1 migrated" in err  # the summary is a note, on stderr


def test_batch_exit_is_the_most_severe_outcome() -> None:
    from dshlog.ops.outcome import worst

    assert worst([ExitCode.UNSUPPORTED, ExitCode.CORRUPT]) == ExitCode.CORRUPT
    assert worst([ExitCode.CONFLICT, ExitCode.CORRUPT, ExitCode.UNSUPPORTED]) == ExitCode.CORRUPT
    assert worst([ExitCode.PENDING, ExitCode.OK]) == ExitCode.PENDING
    assert worst([ExitCode.PENDING, ExitCode.UNSUPPORTED]) == ExitCode.UNSUPPORTED
    assert worst([]) == ExitCode.OK


# ----------------------------------------------------------------- 6: fork into a persistence root


def test_fork_into_a_root_places_the_child_where_dsh_keeps_it(tmp_path) -> None:
    root, parent = store(tmp_path)
    code, out, err = run_env("fork", str(parent), "--at", "9", "--id", "child-1", "-o", str(root))
    assert code == 0, err
    child = root / project_key("/home/ann/demo") / "child-1" / "session.v4.jsonl"
    assert child.is_file(), out
    code, out, _ = run_env("ls", str(root), "--json")
    assert code == 0 and b'"id":"child-1"' in out
    # without -o: next to the parent, in its root
    code, _, err = run_env("fork", str(parent), "--at", "9", "--id", "child-2")
    assert code == 0, err
    assert (root / project_key("/home/ann/demo") / "child-2" / "session.v4.jsonl").is_file()


def test_fork_rejects_an_empty_id(tmp_path) -> None:
    code, _, err = run_env("fork", str(CRASH), "--id", "", "-o", str(tmp_path) + "/")
    assert code == ExitCode.USAGE, err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------- 7: a refused log is said first, not cut silently

V0_REFUSED = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "v0" / "upstream" / \
    "examples__acp-agent__tests__snapshots__agent-instructions__session.jsonl"


@pytest.mark.skipif(not V0_REFUSED.is_file(), reason=f"corpus file {V0_REFUSED} absent (set DSHLOG_SHARED)")
def test_show_of_a_refused_log_is_marked() -> None:
    code, out, err = run_env("show", str(V0_REFUSED))
    assert code == ExitCode.UNSUPPORTED
    assert out.splitlines()[0].startswith(b"!!! dsh refuses to open this session: ")
    assert b"=== turn 1 " in out  # the stored rows, shown after the refusal
    assert err.startswith(b"dshlog: unsupported: ")
    code, out, _ = run_env("export", str(V0_REFUSED))
    assert code == ExitCode.UNSUPPORTED
    assert out.split(b"\n")[2].startswith(b"> **dsh refuses to open this session:** ")


# ----------------------------------------------------------------- 9: show/export default to the current session


@pytest.mark.parametrize("command", ["show", "export"])
def test_show_and_export_default_to_the_current_session(tmp_path, command) -> None:
    root, _ = store(tmp_path)
    code, out, err = run_env(command, dsh_home=str(root.parent), cwd="/home/ann/demo")
    assert code == 0, err
    assert b"crash-0001" in out and b"using session crash-0001" in err


def test_usage_errors_are_one_line() -> None:
    code, out, err = run_env("rebuild", str(LOOP))
    assert code == ExitCode.USAGE and out == b""
    assert err.count(b"\n") == 1 and err.startswith(b"dshlog: usage: ") and b"--request" in err


# ----------------------------------------------------------------- 10: one exit-code policy


def damaged(tmp_path: Path, kind: str) -> Path:
    lines = lines_of(LOOP)
    p = tmp_path / f"{kind}.v4.jsonl"
    if kind == "corrupt-line":
        lines.insert(10, b'{"garbage\n')
    elif kind == "unsupported-version":
        lines[0] = lines[0].replace(b'"version":4', b'"version":5')
        p = tmp_path / f"{kind}.jsonl"
    p.write_bytes(b"".join(lines))
    return p


@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("kind, expected", [("corrupt-line", ExitCode.CORRUPT), ("unsupported-version", ExitCode.UNSUPPORTED)])
def test_every_reader_exits_with_the_damage_class(tmp_path, command, kind, expected) -> None:
    code, _, err = run_env(command, str(damaged(tmp_path, kind)))
    assert code == expected, (command, kind, err)
    assert b"internal error" not in err


@pytest.mark.parametrize("args", [["events", "--turn", "9"], ["events", "--from", "99"], ["events", "--to", "99"],
                                  ["surface", "--at", "99"], ["rebuild", "--request", "99"]])
def test_out_of_range_is_a_usage_error_everywhere(args) -> None:
    code, out, err = run_env(args[0], str(LOOP), *args[1:])
    assert code == ExitCode.USAGE, err
    assert out == b""


def test_select_naming_no_session_is_an_error() -> None:
    code, out, err = run_env("events", str(LOOP), "--select", "nope")
    assert code == ExitCode.USAGE and out == b"", err


def test_exit_3_is_labelled_unsupported_not_refused(tmp_path) -> None:
    code, _, err = run_env("show", str(damaged(tmp_path, "unsupported-version")))
    assert code == ExitCode.UNSUPPORTED and err.startswith(b"dshlog: unsupported: ")


# ----------------------------------------------------------------- 11 and 15: one -o rule


def test_repair_into_an_existing_directory_and_a_new_one(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    code, _, err = run_env("repair", str(CRASH), "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert (tmp_path / "out" / "session.v4.jsonl").is_file()
    code, _, err = run_env("repair", str(CRASH), "-o", str(tmp_path / "newdir") + "/")
    assert code == 0, err
    assert (tmp_path / "newdir").is_dir() and (tmp_path / "newdir" / "session.v4.jsonl").is_file()


def test_export_into_a_directory_and_to_stdout(tmp_path) -> None:
    code, _, err = run_env("export", str(LOOP), "-o", str(tmp_path) + "/")
    assert code == 0, err
    assert (tmp_path / "loop-0001.md").is_file()
    code, out, err = run_env("export", str(LOOP), "-o", "-", cwd=str(tmp_path))
    assert code == 0 and out.startswith(b"# dsh session loop-0001"), err
    assert not (tmp_path / "-").exists()


def test_writers_refuse_dash_for_a_log(tmp_path) -> None:
    for args in (["repair", str(CRASH), "-o", "-"], ["fork", str(CRASH), "-o", "-"]):
        code, _, err = run_env(*args, cwd=str(tmp_path))
        assert code == ExitCode.USAGE, err
    assert not (tmp_path / "-").exists() and not Path("-").exists()


# ----------------------------------------------------------------- 13: validate puts the cause first


def test_validate_groups_consequences_after_their_cause(tmp_path) -> None:
    lines = lines_of(LOOP)
    lines.insert(3, b'{"type":"bogus/x","seq":3,"time":1,"data":{}}\n')
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(lines))
    code, out, err = run_env("validate", str(p))
    assert code == ExitCode.CORRUPT
    text = out.decode().splitlines()
    assert len(text) < 12, text
    assert "line 4" in text[0]
    assert any("more seq-gap problems" in line for line in text)


def test_validate_missing_file_is_unreadable_and_names_it_once(tmp_path) -> None:
    missing = str(tmp_path / "nothere.jsonl")
    code, out, err = run_env("validate", missing)
    assert code == ExitCode.IO
    assert out.decode().count(missing) == 1
    code, out, _ = run_env("validate", missing, "--json")
    assert b'"status": "unreadable"' in out


# ----------------------------------------------------------------- 14: unknown types and requests


def test_unknown_type_error_mentions_allow_unknown(tmp_path) -> None:
    lines = lines_of(LOOP)
    lines.append(b'{"type":"bogus/x","seq":41,"time":1792499042300,"data":{}}\n')
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(lines))
    code, out, err = run_env("requests", str(p))
    assert code == ExitCode.UNSUPPORTED
    assert b"--allow-unknown" in err
    assert out == b""  # no table header before the failure


# ----------------------------------------------------------------- 16: --debug anywhere


def test_debug_after_the_subcommand() -> None:
    code, out, err = run_env("info", str(LOOP), "--debug")
    assert code == 0, err
    assert out.startswith(b"file ")


# ----------------------------------------------------------------- 18: small things


def test_empty_id_matches_no_session(tmp_path) -> None:
    root, _ = store(tmp_path)
    code, out, err = run_env("info", "", dsh_home=str(root.parent))
    assert code == ExitCode.USAGE and out == b"", err


@pytest.mark.parametrize("value, expected", [("0", "never"), ("false", "never"), ("1", "always"), ("", "auto")])
def test_force_color_zero_means_no_colour(value, expected) -> None:
    from dshlog.cli.env import colour_policy

    assert colour_policy({"FORCE_COLOR": value}) == expected
    assert colour_policy({"FORCE_COLOR": "1", "NO_COLOR": "1"}) == "never"


def test_validate_counts_are_singular_when_one(tmp_path) -> None:
    lines = lines_of(LOOP)
    lines.insert(10, b'{"garbage\n')
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(b"".join(lines))
    _, out, _ = run_env("validate", str(p))
    assert b"1 error," in out and b"1 errors" not in out  # the verdict is a result: stdout


def test_readers_report_a_torn_tail(tmp_path) -> None:
    p = tmp_path / "session.v4.jsonl"
    p.write_bytes(LOOP.read_bytes() + b'{"type":"turn/st')
    for command in ("events", "show", "info"):
        code, _, err = run_env(command, str(p))
        assert code == 0 and b"torn tail" in err, (command, err)


def test_turn_end_without_a_reason_kind_is_not_python_none(tmp_path) -> None:
    p = tmp_path / "session.jsonl"
    p.write_bytes(jsonl(v4_header(), ev(0, "turn/start", {"turn": 1}), ev(1, "turn/end", {"turn": 1})))
    _, out, _ = run_env("events", str(p), "--format-version", "4")
    assert b"None" not in out and b"1 turn/end reason=(none)" in out


def test_previews_are_cut_by_display_width_with_an_ellipsis() -> None:
    from dshlog.output.text import display_width, preview

    p = preview({"content": [{"type": "text", "text": "第一点是" * 20}]}, 30)
    assert p.endswith("…") and display_width(p) <= 30
    assert preview({"content": [{"type": "text", "text": "short"}]}, 30) == "short"


@pytest.mark.parametrize("text", ["a long message that goes on " * 4, "第一点是" * 20, "line\n" * 30])
def test_event_lines_cut_their_preview_by_display_width_with_an_ellipsis(tmp_path, text: str) -> None:
    """``events`` and ``tail`` show a message as JS quotes it, cut to 40 columns with ``…``, not mid-way silently."""
    from dshlog.output.text import display_width
    from dshlog.protocol.jsjson import stringify

    p = tmp_path / "session.jsonl"
    msg = {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": "m1"}
    p.write_bytes(jsonl(v4_header(), ev(0, "user/message", msg, surfaceOp="append")))
    for command in (["events", str(p)], ["tail", "-n", "1", str(p)]):
        code, out, _ = run_env(*command, "--format-version", "4")
        assert code == 0, (command, out)
        line = out.decode().splitlines()[-1]
        shown = line.split("user: ", 1)[1]
        assert shown.endswith("…") and display_width(shown) <= 40, (command, line)
        assert stringify(text).startswith(shown[:-1])


def test_a_preview_of_a_short_text_is_the_whole_quoted_text() -> None:
    from dshlog.output.text import cut, quoted_preview

    assert quoted_preview("go", 40) == '"go"'
    assert quoted_preview("x" * 38, 40) == '"' + "x" * 38 + '"'  # exactly 40 columns: not cut
    assert quoted_preview("x" * 39, 40) == '"' + "x" * 38 + "…"
    assert cut("日本語", 6) == "日本語" and cut("日本語x", 6) == "日本…"


def test_token_counts_have_thousands_separators() -> None:
    from dshlog.output import labels

    assert labels.tokens_text({"inputTokens": 1234567, "outputTokens": 12}) == "in 1,234,567, out 12"


def test_session_ids_and_option_values_complete(tmp_path) -> None:
    root, _ = store(tmp_path)
    def complete(words: str, cword: int) -> list[str]:
        env = {"_DSHLOG_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword), "DSH_HOME": str(root.parent)}
        done = run_process(env=env, cwd=ROOT, timeout=None)
        return done.stdout.decode().split()

    assert complete("dshlog info cr", 2) == ["crash-0001"]
    assert complete("dshlog export -f ", 3) == ["md", "html", "json"]
    assert complete("dshlog ls --sort ", 3) == ["time", "size", "id", "turns"]


def test_a_truncated_zstd_log_says_its_last_write_was_lost(tmp_path) -> None:
    src = FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd"
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(src.read_bytes()[:-20])
    code, out, err = run_env("info", str(p))
    assert code == 0, err
    assert b"0 bytes ignored" not in out
    assert b"incomplete" in out and b"events of that write are lost" in err
