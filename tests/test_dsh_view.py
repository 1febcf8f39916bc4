"""dsh's view: header admission, the recovering read, refusals in dsh's words, and the v4 restore.

Each case is a rule of dsh's own code (the shared oracle is its arbiter; the
differential suite in ``tests/system`` compares whole files): these pin the rules
one by one, without Node, so they run everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CORPUS, FIXTURES, ev, jsonl, requires_corpus, run_env, v4_header
from dshlog.errors import CorruptLog, ExitCode, MigrationRefused, UnsupportedVersion
from dshlog.read.header import read_header
from dshlog.read.session import open_log

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
TEXT_TURN = FIXTURES / "v0" / "text-turn" / "session.jsonl"
V0 = {"type": "session", "version": 0, "id": "s", "createdAt": 1, "cwd": "/p", "delegationDepth": 0}


def _write(tmp_path: Path, data: bytes, name: str = "session.v4.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _loop_with(tmp_path: Path, header: dict | None = None, tail: list[object] = ()) -> Path:
    lines = LOOP.read_bytes().splitlines()
    head = json.dumps(header, separators=(",", ":")).encode() if header is not None else lines[0]
    body = b"".join(line + b"\n" for line in lines[1:])
    return _write(tmp_path, head + b"\n" + body + jsonl(*tail))


# ------------------------------------------------------------------ header admission


@pytest.mark.parametrize(("header", "reason"), [
    ({k: v for k, v in V0.items() if k != "delegationDepth"}, 'released v0 physical header lacks required member "delegationDepth"'),
    ({**V0, "extra": 1}, 'released v0 physical header has unexpected member "extra"'),
    ({**V0, "id": 7}, "released v0 header id must be a string"),
    ({**V0, "cwd": "rel"}, "format v0 header cwd must be absolute"),
    ({k: v for k, v in V0.items() if k != "version"}, "Session format version must be a non-negative safe integer"),
    ({**V0, "version": None}, "Session format version must be a non-negative safe integer"),
    ({**V0, "version": "0"}, "Session format version must be a non-negative safe integer"),
    ({k: v for k, v in v4_header().items() if k != "id"}, "released v2 physical header lacks id"),
    ({**v4_header(), "extra": 1}, "released v2 physical header has unexpected field extra"),
    ({**v4_header(), "cwd": "rel", "version": 3}, "format v2 header cwd must be absolute"),
    ({**v4_header(), "createdAt": -1}, "released v2 header createdAt must be a non-negative safe integer"),
])
def test_a_header_dsh_refuses_is_refused_before_any_row_with_dsh_words(header: dict, reason: str) -> None:
    decision = read_header(header)
    assert decision.status == "malformed" and decision.reason == reason


def test_a_header_dsh_admits_becomes_the_v4_header() -> None:
    decision = read_header({**V0, "seedLength": 0, "parentSession": "p"})
    assert decision.status == "migration-required" and decision.stored_version == 0
    assert decision.header == {"type": "session", "version": 4, "id": "s", "createdAt": 1, "cwd": "/p",
                               "parentSession": "p", "isSeeded": True, "delegationDepth": 0}
    assert read_header(v4_header()).status == "current"
    assert read_header({**v4_header(), "version": 5}).status == "unsupported"


def test_strict_open_refuses_and_lenient_open_shows_with_a_note(tmp_path: Path) -> None:
    header = {k: v for k, v in V0.items() if k != "delegationDepth"}
    p = _write(tmp_path, jsonl(header, ev(0, "turn/start", {"turn": 1})), "session.jsonl")
    with pytest.raises(CorruptLog, match='lacks required member "delegationDepth"') as info:
        open_log(p)
    assert info.value.loc is not None and info.value.loc.line == 1
    with open_log(p, strict=False) as log:
        assert [r.event["type"] for r in log.stored()] == ["turn/start"]
        assert any("dsh refuses this header" in n.message for n in log.notes)


def test_a_first_line_without_type_is_a_damaged_header(tmp_path: Path) -> None:
    header = {k: v for k, v in v4_header().items() if k != "type"}
    p = _write(tmp_path, jsonl(header, ev(0, "turn/start", {"turn": 1})))
    with pytest.raises(CorruptLog, match="released v2 physical header lacks type"):
        open_log(p)


def test_every_dsh_view_refuses_the_header_and_validate_says_so(tmp_path: Path) -> None:
    header = {k: v for k, v in V0.items() if k != "delegationDepth"}
    d = tmp_path / "s"
    d.mkdir()
    (d / "session.jsonl").write_bytes(TEXT_TURN.read_bytes().split(b"\n", 1)[1].join(
        [json.dumps(header, separators=(",", ":")).encode() + b"\n", b""]))
    log = str(d / "session.jsonl")
    for argv in (["events", "--v4", log], ["surface", log], ["requests", log],
                 ["migrate", "--dry-run", "--no-children", str(d)]):
        code, out, err = run_env(*argv)
        assert code == ExitCode.CORRUPT, argv
        assert b'released v0 physical header lacks required member "delegationDepth"' in err, (argv, err)
        assert not out.strip() or argv[0] == "migrate", argv
    code, out, err = run_env("events", log)  # the stored rows are still shown
    assert code == 0 and len(out.splitlines()) == 43
    code, out, err = run_env("show", log)  # and a transcript of them, opening with dsh's refusal
    assert code == ExitCode.CORRUPT
    assert out.startswith(b'!!! dsh refuses to open this session: released v0 physical header lacks required member "delegationDepth"\n')
    assert b"READY" in out and b'lacks required member "delegationDepth"' in err
    code, out, _ = run_env("validate", log)
    assert code == ExitCode.CORRUPT and b'error: corrupt: released v0 physical header lacks required member "delegationDepth"' in out


# ------------------------------------------------------------------ the recovering read


def test_damage_after_the_last_turn_end_is_dropped_as_dsh_drops_it(tmp_path: Path) -> None:
    p = _loop_with(tmp_path, tail=[ev(42, "turn/start", {"turn": 5})])  # the next seq is 41
    with open_log(p) as log:
        held = list(log.v4())
    assert len(held) == 41
    assert any(n.code == "recovered-tail" and "released v2 row 41 has seq gap (expected 41, got 42)" in n.message for n in log.notes)
    with open_log(p) as log:  # the stored view of a strict open still refuses the row
        with pytest.raises(CorruptLog, match="seq gap in committed region"):
            list(log.stored())
    code, out, _ = run_env("events", "--v4", "--json", str(p))
    assert code == 0 and len(out.splitlines()) == 41


def test_damage_committed_by_a_later_turn_end_is_refused_with_dsh_text(tmp_path: Path) -> None:
    end = ev(42, "turn/end", {"turn": 5, "reason": {"kind": "completed"}})
    p = _loop_with(tmp_path, tail=[[], end])
    with open_log(p) as log, pytest.raises(CorruptLog, match=r"^corrupt session log: invalid committed event at line 42: released v2 row 41 must be an object$"):
        list(log.v4())
    v0 = _write(tmp_path, TEXT_TURN.read_bytes() + jsonl([], ev(43, "turn/end", {"turn": 2, "reason": {"kind": "completed"}})), "session.jsonl")
    with open_log(v0) as log, pytest.raises(CorruptLog, match=r"^released Session row 24 must be a JSON object$"):
        list(log.v4())


def test_repair_write_cuts_a_dropped_tail_as_dsh_write_open_does(tmp_path: Path) -> None:
    crash = (FIXTURES / "v4" / "crash" / "session.v4.jsonl").read_bytes()
    p = _write(tmp_path, crash + jsonl(ev(99, "turn/start", {"turn": 2})))
    from dshlog.ops.repair import repair_in_place

    result = repair_in_place(str(p))
    assert result.written and result.sidecar
    assert Path(result.sidecar).read_bytes() == jsonl(ev(99, "turn/start", {"turn": 2}))
    assert p.read_bytes().startswith(crash) and len(p.read_bytes().splitlines()) == len(crash.splitlines()) + 4


# ------------------------------------------------------------------ refusals in dsh's words


def test_an_unsupported_edge_refusal_passes_through_unwrapped(tmp_path: Path) -> None:
    rows = [V0, ev(0, "subagent/descriptor", {"mode": "one-shot", "version": 2, "provider": "p"})]
    p = _write(tmp_path, jsonl(*rows), "session.jsonl")
    with open_log(p) as log, pytest.raises(MigrationRefused) as info:
        list(log.v4(child_facts=[]))
    assert info.value.message == "subagent/descriptor 0 uses unsupported descriptor version 2"
    assert info.value.exit_code == ExitCode.UNSUPPORTED


def test_a_plain_format_error_inside_an_edge_is_wrapped_with_the_edge(tmp_path: Path) -> None:
    rows = [V0, ev(0, "approval/policy", {"policy": "on-request"})]
    p = _write(tmp_path, jsonl(*rows), "session.jsonl")
    with open_log(p) as log, pytest.raises(MigrationRefused) as info:
        list(log.v4(child_facts=[]))
    assert info.value.message == ("@deepseek-ai/dsh-session-format-v0-to-v1 refuses this format v0 Session: "
                                  "approval/policy 0 policy must be one of ask, never")


@requires_corpus
def test_a_migrated_artifact_dsh_restore_refuses_is_refused_as_dsh_wraps_it() -> None:
    path = CORPUS / "v0" / "upstream" / "examples__acp-agent__tests__snapshots__agent-instructions__session.jsonl"
    code, out, err = run_env("events", "--v4", "--json", str(path))
    assert code == ExitCode.UNSUPPORTED and out == b""
    assert err.rstrip().endswith(b"Session migration from v0 to v4 refuses the transformed artifact: "
                                 b"compaction checkpoint has no matching compaction/start")


def test_an_unknown_type_in_a_v4_log_refuses_every_dsh_view_and_prints_nothing(tmp_path: Path) -> None:
    p = _loop_with(tmp_path, tail=[ev(41, "x/unknown", {}, time=1792499082300 - 41)])
    for argv in (["events", "--v4", "--json", str(p)], ["repair", str(p)], ["surface", str(p)]):
        code, out, err = run_env(*argv)
        assert code == ExitCode.UNSUPPORTED and out == b"", argv
        assert err.rstrip().endswith(b'format v4 contains unknown event type "x/unknown" at seq 41'), (argv, err)
    code, out, _ = run_env("surface", "--allow-unknown", str(p))
    assert code == 0 and out
    code, out, _ = run_env("events", "--json", str(p))
    assert code == 0 and len(out.splitlines()) == 42


def test_a_newer_version_is_unsupported_for_every_reader(tmp_path: Path) -> None:
    p = _write(tmp_path, jsonl({**v4_header(), "version": 5}), "session.v5.jsonl")
    with pytest.raises(UnsupportedVersion, match="uses log format v5"):
        open_log(p)


# ------------------------------------------------------------------ fork, and fork-built logs


def test_a_fork_of_a_log_without_events_is_a_usage_error(tmp_path: Path) -> None:
    p = _write(tmp_path, jsonl(v4_header()))
    code, _out, err = run_env("fork", str(p), "-o", str(tmp_path / "child.jsonl"))
    assert code == ExitCode.USAGE and b"no seq to fork at" in err
    assert not (tmp_path / "child.jsonl").exists()


@requires_corpus
def test_the_system_prompt_plugin_option_reproduces_a_fork_build(tmp_path: Path) -> None:
    source = CORPUS / "v3" / "lunfengchen" / "snapshots__sdk__serial-created__session.v3.jsonl"
    d = tmp_path / "s"
    d.mkdir()
    (d / "session.v3.jsonl").write_bytes(source.read_bytes())
    code, _out, err = run_env("migrate", "--no-children", str(d))
    assert code == ExitCode.UNSUPPORTED and b"message must have system-prompt source" in err
    assert not (d / "session.v4.jsonl").exists()
    code, out, err = run_env("--system-prompt-plugin", "@x1a0f3n9/dsh-system-prompt", "migrate", "--no-children", "--json", str(d))
    assert code == 0, err
    report = json.loads(out)["sessions"][0]
    assert report["status"] == "migrated" and any("@x1a0f3n9/dsh-system-prompt" in n for n in report["notes"])
    published = (d / "session.v4.jsonl").read_text()
    assert '"source":{"kind":"system-prompt"}' in published and "plugin:@x1a0f3n9" not in published
