"""Mutation fuzzing of every command (hypothesis over the mutators of ``bench/fuzz.py``).

Inputs start from the shared corpus and the fixtures; hypothesis picks a seed
file and a short list of named mutations: the structural ones (flip, truncate,
duplicate, drop, reorder, retype a field to a hostile value, insert garbage,
splice lines of another log) and the hostile-value and container classes
(``deep_nesting``, ``lone_surrogate``, ``control_chars``, ``rich_markup``,
``numbers``, ``nul_bytes``, ``bom``, ``crlf``, ``no_final_newline``,
``huge_line`` and the ``zstd_*`` frame damage, bombs included).
``test_every_mutation_class`` runs each class at least once, so a failure
names its class.  Each mutated log goes through every reader and writer of
``bench/fuzz.py``'s ``COMMANDS`` (on a pseudo-terminal too), each in a forked
child with a timeout and a memory limit; each must end with a result or a clean
error (never exit 1, a traceback, a signal or a hang), leave the input
untouched, leave no output after an error, and print no raw control
character for a person to see; the reading commands must print the same bytes
with the exact bodies alone (``DSHLOG_PATHS=exact``), which is where the fast
bodies meet every mutation class.  ``make fuzz`` runs the same checks for minutes
with plain random choices, larger huge lines and bombs, and reports counts.
The cache mode (``make fuzz-cache``) runs here on one old log with every damage of
its cache in turn, and on a few mutated inputs with one or two drawn damages: each
answer must be the ``--no-cache`` one.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import load_bench_script, run_env
from dshlog import fastpaths

ROOT = Path(__file__).resolve().parents[1]


FUZZ = load_bench_script("fuzz")
# CI sizes: a 1 MiB line and a bomb decompressing to 4 MiB keep each input near a second or two.
FUZZ.PARAMS.huge_line_bytes = int(float(os.environ.get("DSHLOG_FUZZ_HUGE_MB", "1")) * FUZZ.MB)
FUZZ.PARAMS.bomb_bytes = int(float(os.environ.get("DSHLOG_FUZZ_BOMB_MB", "4")) * FUZZ.MB)
FUZZ.PARAMS.timeout_s = 30
FUZZ.PARAMS.debug_reruns = False  # the failure text names the exception; make fuzz locates it
# The reading commands run again in the exact mode of the fast paths, their bytes compared: in the run
# with DSHLOG_PATHS=fast (the exact run would compare the same pairs again, the other way round).
FUZZ.PARAMS.compare_paths = fastpaths.mode() == "fast"
SEEDS = FUZZ.seed_files()
PLAIN = [FUZZ.decoded(p) for p in SEEDS]
OTHERS = [p for p, _ in PLAIN]
WORK = Path(tempfile.mkdtemp(prefix="dshlog-test-fuzz-"))

@pytest.fixture(autouse=True, scope="module")
def _command_server():
    """The fuzzer forks every command from a small server process; it must not outlive this module
    (other tests check that dshlog leaves no child process behind)."""
    yield
    FUZZ.stop_server()


ops_strategy = st.lists(
    st.tuples(st.sampled_from(sorted(FUZZ.MUTATORS)), st.integers(0, 2**32 - 1)), min_size=1, max_size=4
)
# hypothesis runs a failing example again to report it; the verdict of an input does not change
_VERDICTS: dict[tuple, list] = {}


def _check(index: int, ops: list[tuple[str, int]]) -> None:
    key = (index, tuple(ops))
    if key not in _VERDICTS:
        data = FUZZ.mutate(PLAIN[index][0], PLAIN[index][1], ops, OTHERS)
        _VERDICTS[key] = FUZZ.check_input(data, FUZZ.input_name(SEEDS[index].name, ops), WORK)
    failures = _VERDICTS[key]
    assert not failures, f"{SEEDS[index].name} {ops}:\n" + "\n".join(map(str, failures))


# Shrinking re-runs some thirty commands per step: the failing example is reported as found, unshrunk.
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]


@pytest.mark.skipif(not SEEDS, reason="no corpus or fixtures to mutate")
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(index=st.integers(0, max(0, len(SEEDS) - 1)), ops=ops_strategy)
def test_mutated_logs_end_cleanly(index: int, ops: list[tuple[str, int]]) -> None:
    _check(index, ops)


@pytest.mark.skipif(not SEEDS, reason="no corpus or fixtures to mutate")
@pytest.mark.parametrize("cls", sorted(FUZZ.MUTATORS))
@settings(max_examples=1, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(index=st.integers(0, max(0, len(SEEDS) - 1)), seed=st.integers(0, 2**32 - 1),
       extra=st.lists(st.tuples(st.sampled_from(sorted(FUZZ.MUTATORS)), st.integers(0, 2**32 - 1)), max_size=1))
def test_every_mutation_class(cls: str, index: int, seed: int, extra: list[tuple[str, int]]) -> None:
    """Each named class at least once per CI run (with, sometimes, one more mutation).

    The class name offsets the drawn seed file and seed, so that hypothesis's first (simplest)
    example is a different file for each class, and the same one in every run.
    """
    salt = zlib.crc32(cls.encode())
    ops = [(cls, (seed + salt) % 2**32), *extra]
    if not extra and salt % 3 == 0:
        names = sorted(FUZZ.MUTATORS)
        ops.append((names[salt % len(names)], salt))
    _check((index + salt) % len(SEEDS), ops)


@pytest.mark.stress
@pytest.mark.skipif(not SEEDS, reason="no corpus or fixtures to mutate")
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(index=st.integers(0, max(0, len(SEEDS) - 1)), ops=ops_strategy)
def test_mutated_logs_end_cleanly_stress(index: int, ops: list[tuple[str, int]]) -> None:
    _check(index, ops)


def _unmutated(step: int) -> None:
    bad = {}
    for i, p in enumerate(SEEDS):
        if i % step and ROOT not in p.parents:  # fixtures always, a sample of the corpus in CI
            continue
        failures = FUZZ.check_input(p.read_bytes(), p.name, WORK)
        if failures:
            bad[p.name] = [str(f) for f in failures]
    assert not bad, bad


def test_unmutated_seeds_end_cleanly() -> None:
    """The starting points themselves (fixtures and every 15th corpus file), every command."""
    _unmutated(15)


@pytest.mark.stress
def test_unmutated_seeds_end_cleanly_all() -> None:
    _unmutated(1)


def test_every_mutator_runs_on_every_kind_of_seed() -> None:
    """The mutators themselves never raise, whatever the seed (a fixture, a corpus file, a JSON document)."""
    import random

    picked = [i for i, p in enumerate(SEEDS) if ROOT in p.parents or i % 15 == 0]
    for name in sorted(FUZZ.MUTATORS):
        for i in picked:
            for k in range(3):
                s = random.Random(f"{name}{i}.{k}").randrange(2**32)
                FUZZ.mutate(PLAIN[i][0], PLAIN[i][1], [(name, s)], OTHERS)


# ----------------------------------------------------------------------------- found by the fuzzer


def test_invalid_utf8_in_a_json_document_is_corruption(tmp_path: Path) -> None:
    """The ijson C backend raises UnicodeDecodeError (not JSONError) for bad UTF-8: used to be exit 1."""
    for name, doc in (("a.json", b'[{"type":"x","seq":0,"data":"\xed\xa0\x80"}]'),
                      ("r.json", b'{\n"events": [{"type":"\xff"}]}'),
                      ("b.json", b'{\n"logs": [{"file": "a", "lines": ["\xc3"]}]}')):
        f = tmp_path / name
        f.write_bytes(doc)
        code, out, err = run_env("info", str(f))
        assert code == 4, err
        assert b"internal error" not in err


def test_broken_behavior_document_is_corruption(tmp_path: Path) -> None:
    """A behavior.json that stops parsing half way: exit 4 with one line, not an internal error."""
    f = tmp_path / "behavior.json"
    f.write_bytes(b'{\n"logs": [{"file": "a", "lines": [{"type": "session"}, ]')
    code, out, err = run_env("events", str(f))
    assert code == 4, err
    assert b"internal error" not in err


def test_events_with_non_list_message_content(tmp_path: Path) -> None:
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(
        b'{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
        b'{"type":"assistant/message","seq":0,"time":1,"data":{"message":{"role":"assistant","content":7}}}\n'
    )
    code, out, err = run_env("events", str(f))
    assert code != 1, err


def test_non_string_type_in_the_first_row_of_an_old_log(tmp_path: Path) -> None:
    """``{"type": [..]}`` as the first v0 row: the projection peek used a set lookup on a list (exit 1)."""
    f = tmp_path / "session.jsonl"
    f.write_bytes(b'{"type":"session","id":"s","createdAt":1}\n{"type":["x"],"seq":0,"time":1,"data":{}}\n')
    for cmd in (["surface"], ["migrate", "--dry-run", "--no-children"], ["fork", "-o", str(tmp_path / "c.jsonl")]):
        code, out, err = run_env(*([*cmd[:1], str(f), *cmd[1:]] if cmd[0] == "fork" else [*cmd, str(f)]))
        assert code in (2, 3, 4), err
        assert b"internal error" not in err


def test_validate_with_an_object_as_stream_block_type(tmp_path: Path) -> None:
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(
        b'{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}\n'
        b'{"type":"assistant/message","seq":0,"time":1,"data":{"message":{"role":"assistant","content":[]},'
        b'"stream":[{"type":"chunk","chunk":{"type":"block-start","blockType":{}}}]}}\n'
    )
    code, out, err = run_env("validate", str(f))
    assert code != 1, err


def test_events_json_of_a_deeply_nested_projection_row(tmp_path: Path) -> None:
    """A projection row (no seq/time) is re-serialised by the project's JSON writer, which recursed too deep."""
    f = tmp_path / "session.jsonl"
    deep = b"[" * 500 + b"0" + b"]" * 500
    f.write_bytes(b'{"type":"session","version":0,"id":"s","createdAt":2,"delegationDepth":0}\n'
                  b'{"type":"approval/policy","data":{"policy":"never","x":' + deep + b"}}\n")
    code, out, err = run_env("events", "--json", str(f))
    assert code != 1, err


# ----------------------------------------------------------------------------- the harness itself


def test_a_hang_is_cpu_time_spent_and_the_line_limit_reaches_every_command(tmp_path: Path) -> None:
    """A command past its CPU limit is a hang (not a signal); ``max_line_mib`` is the global option of every run; and
    the child exits with the code ``main`` returns (it ignored it, so every forked run looked like exit 0)."""
    f = tmp_path / "session.v4.jsonl"
    lines = (ROOT / "fixtures" / "v4" / "loop" / "session.v4.jsonl").read_bytes().splitlines(keepends=True)
    with open(f, "wb") as fh:
        fh.write(lines[0])
        for k in range(400_000):  # several CPU seconds of validation
            fh.write(b'{"type":"x","seq":%d,"time":1,"data":{}}\n' % k)
    work = tmp_path / "work"
    work.mkdir()
    run = FUZZ.run_isolated(["validate", str(f)], work=work, cwd=tmp_path, timeout=1)
    assert run.hung and run.signal is None and run.code is None, run
    assert 0.9 <= run.cpu < 3, run
    g = tmp_path / "line.v4.jsonl"
    g.write_bytes(lines[0] + b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"x":"' + b"a" * (2 << 20) + b'"}}\n')
    old = FUZZ.PARAMS.max_line_mib
    FUZZ.PARAMS.max_line_mib = 1
    try:
        run = FUZZ.run_isolated(["info", str(g)], work=work, cwd=tmp_path)
    finally:
        FUZZ.PARAMS.max_line_mib = old
    assert run.code == 3 and b"line-size limit of 1 MiB" in run.err.read_bytes(), run
    assert FUZZ.run_isolated(["info", str(g)], work=work, cwd=tmp_path).code == 0


def test_a_content_block_whose_type_is_a_list(tmp_path: Path) -> None:
    """The previews looked a block's type up in a set: a list there was a TypeError (exit 1) in events and tail."""
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(
        b'{"type":"session","version":4,"id":"s","createdAt":1,"cwd":"/p","isSeeded":false,"delegationDepth":0}\n'
        b'{"type":"user/message","seq":0,"time":1,"data":{"id":"m","role":"user","content":[{"type":["text"],"text":"a"},'
        b'{"type":"text","text":"shown"}],"source":{"kind":"user"}},"surfaceOp":"append"}\n'
    )
    for argv in (["events", str(f)], ["tail", "-n", "5", str(f)]):
        code, out, err = run_env(*argv)
        assert code != 1 and b"internal error" not in err, (argv, err)
        assert b"shown" in out, out


def test_a_snapshot_gets_the_same_verdict_as_a_plain_file_and_as_zstd_frames(tmp_path: Path) -> None:
    """The snapshot test sampled a plain body from wherever the reader stood: after a historical log's rows
    were read, nothing, so a dsh test snapshot (``{{system}}`` placeholders) with a seq gap was damaged
    (exit 4) as a plain file and a snapshot (a warning) as zstd frames."""
    import random

    header = b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/p","delegationDepth":0}\n'
    body = (b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
            b'{"type":"request/header","seq":1,"time":1,"data":{"header":{"system":"{{system}}","tools":"{{tools}}"}}}\n'
            b'{"type":"turn/end","seq":3,"time":1,"data":{"turn":1}}\n')
    plain = tmp_path / "session.jsonl"
    plain.write_bytes(header + body)
    z = tmp_path / "session.jsonl.zstd"
    z.write_bytes(b"".join(FUZZ.frames_of(header + body, random.Random(0))))
    codes = []
    for f in (plain, z):
        code, out, err = run_env("validate", str(f))
        assert b"seq gap" in out + err, out + err
        codes.append(code)
    assert codes[0] == codes[1], codes


def test_ls_of_a_session_whose_last_activity_is_beyond_any_date(tmp_path: Path) -> None:
    """A time of 9e15 ms (year 287396) was a ValueError (exit 1) in ls; it is shown as unknown."""
    sdir = tmp_path / "root" / "--p--" / "s"
    sdir.mkdir(parents=True)
    (sdir / "session.v4.jsonl").write_bytes(
        b'{"type":"session","version":4,"id":"s","createdAt":1,"cwd":"/p","isSeeded":false,"delegationDepth":0}\n'
        b'{"type":"turn/start","seq":0,"time":9000000000000000,"data":{"turn":1}}\n'
    )
    code, out, err = run_env("ls", str(tmp_path / "root"))
    assert code != 1 and b"internal error" not in err, err
    assert b"session.v4.jsonl" in out, out


def test_a_json_rpc_notification_whose_params_are_a_string(tmp_path: Path) -> None:
    """``params`` of a session.event notification was used as an object: a string there was exit 1 in every reader."""
    f = tmp_path / "notifications.jsonl"
    f.write_bytes(b'{"jsonrpc":"2.0","method":"session.event","params":"x"}\n'
                  b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s","event":{"type":"turn/start","seq":0,'
                  b'"time":1,"data":{"turn":1}}}}\n')
    for argv in (["info", str(f)], ["events", str(f)], ["validate", str(f)]):
        code, out, err = run_env(*argv)
        assert code != 1 and b"internal error" not in err, (argv, err)


# ----------------------------------------------------------------------------- the cache mode


def _cache_check(data: bytes, name: str, **kw: object) -> None:
    failures = FUZZ.check_cache_input(data, name, WORK, **kw)
    assert not failures, f"{name}:\n" + "\n".join(map(str, failures))


def test_every_cache_damage_leaves_every_answer_as_without_a_cache() -> None:
    """Each damage of the cache mode once, one after another, on an old log whose successor is proven and read."""
    seed = ROOT / "fixtures" / "v0" / "text-turn" / "session.jsonl"
    _cache_check(seed.read_bytes(), seed.name, damages=list(FUZZ.CACHE_DAMAGES))


@pytest.mark.skipif(not SEEDS, reason="no corpus or fixtures to mutate")
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(index=st.integers(0, max(0, len(SEEDS) - 1)), ops=ops_strategy, seed=st.integers(0, 2**32 - 1))
def test_mutated_logs_answer_as_without_a_damaged_cache(index: int, ops: list[tuple[str, int]], seed: int) -> None:
    data = FUZZ.mutate(PLAIN[index][0], PLAIN[index][1], ops, OTHERS)
    _cache_check(data, FUZZ.input_name(SEEDS[index].name, ops), seed=seed)
