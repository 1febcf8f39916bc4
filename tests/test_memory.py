"""Memory of the streaming model-view commands stays flat as a log grows.

``validate``, ``surface`` and ``requests`` read logs of hundreds of MB in one
pass.  Their state must follow the current surface, the open turn and step,
not the length of the log: the same session four times as long may not need
much more memory.  Each case folds a generated v4 log (turns, parallel tool
calls, retries, compactions that shadow the earlier history, a title) of N and
of 4N bytes and compares the peak of traced allocations.  Structures that grew
with the log (every header's tool schemas, every replacement record, retry and
title bookkeeping as tuples and sets of ints) made the larger log need about
twice as much or more.

A command is measured as a process: ``rebuild`` of the last request of a log that
never compacts runs as a child whose peak resident memory must stay within the bound
every command keeps (64 MB), on a log large enough that holding the request does not.
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from conftest import load_bench_script, run_process
from dshlog.model.requests import RequestInfo, iter_requests
from dshlog.check.surface import RECENT_REPLACEMENTS, SurfaceFold
from dshlog.check.validate import Validator
from dshlog.ops.surface import command_fold

SMALL, LARGE = "1M", "4M"
# Four times the log may hold at most this much more (the current surface varies a little).
GROWTH = 1.5
# What the checking fold may hold per surface node of a log that never compacts (columns in arrays).
NODE_BYTES = 64
# What ``surface``'s fold may hold per node: that, and the row it prints (role, id, a 60-column preview).
SURFACE_NODE_BYTES = 512

#: the memory the fast bodies keep (the exact ones hold every message): the fast run's (conftest)
pytestmark = pytest.mark.fast_paths




class _Log:
    """A generated log as raw rows: parsing them inside the trace counts every byte the
    fold keeps from an event, while no reader buffer blurs the comparison."""

    def __init__(self, path: Path) -> None:
        rows = path.read_bytes().splitlines()
        self.header = orjson.loads(rows[0])
        self.rows = rows[1:]

    def events(self) -> Iterator[dict]:
        for row in self.rows:
            yield orjson.loads(row)


@pytest.fixture(scope="module")
def growing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Log]:
    """The same session never compacted: the surface holds every message of the log."""
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("memory-growing")
    shape = gen.Shape(compaction=False)
    return {size: _Log(gen.generate(out, size, 4, seed=11, zstd=False, shape=shape)["plain"]) for size in (SMALL, LARGE)}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Log]:
    """One seeded session at two lengths.  Rare shapes (retries, cancellations, compactions)
    are eight times as frequent, so compactions keep the surface short and most of what
    a longer log adds is history the fold must not hold."""
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("memory")
    return {size: _Log(gen.generate(out, size, 4, seed=11, zstd=False, rare=8.0)["plain"]) for size in (SMALL, LARGE)}


def _surface(log: _Log, probe: Callable[[], None]) -> SurfaceFold:
    state = SurfaceFold(keep_replacements=False)
    for event in log.events():
        state.apply(event)
    return state


def _surface_all(log: _Log, probe: Callable[[], None]) -> SurfaceFold:
    """The CLI's fold: every replacement record is kept, compactly."""
    state = SurfaceFold()
    for event in log.events():
        state.apply(event)
    return state


def _surface_rows(log: _Log, probe: Callable[[], None]) -> SurfaceFold:
    """The fold of ``dshlog surface``: a row's facts per node instead of its message."""
    state = command_fold()
    for event in log.events():
        state.apply(event)
    return state


def _validate(log: _Log, probe: Callable[[], None]) -> Validator:
    rules = Validator(log.header)
    errors = [p for e in log.events() for p in rules.feed(e) if p.severity == "error"]
    assert errors == []
    return rules


def _requests(log: _Log, probe: Callable[[], None]) -> None:
    for _ in iter_requests(log.events()):
        probe()  # the iterator's state is alive only while it runs


def _deep_size(value: object) -> int:
    """Bytes of a container of plain values and everything it holds."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        return size + sum(_deep_size(k) + _deep_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return size + sum(_deep_size(v) for v in value)
    return size


def _retry_facts(rules: Validator) -> int:
    """What dsh's retry rules must remember for the whole log: a few digests per retry event.

    Once the fold keeps no messages, a validator's other state is so small that these
    per-retry facts (the generated logs retry eight times as often as real ones) would
    decide the comparison; they are bounded on their own in
    :func:`test_retry_facts_are_a_few_digests_per_retry`, the rest must stay flat.
    """
    retries = rules.lifecycle.retries
    return sum(_deep_size(getattr(retries, name)) for name in type(retries).__slots__)


def _held(run: Callable[[_Log, Callable[[], None]], object], log: _Log) -> int:
    """Traced bytes a pass still holds at its end: the state a longer log could grow."""
    run(log, lambda: None)  # lazy imports and caches first, so both sizes start alike
    seen = [0]

    def probe() -> None:
        seen[0] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        state = run(log, probe)
        held = tracemalloc.get_traced_memory()[0] if state is not None else seen[0]
        if isinstance(state, Validator):
            held -= _retry_facts(state)
        del state
        return held
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "run",
    [_surface, _surface_all, _surface_rows, _validate, _requests],
    ids=["surface", "surface-all-replacements", "surface-rows", "validate", "requests"],
)
def test_memory_is_flat_in_log_length(logs: dict[str, _Log], run: Callable) -> None:
    small, large = logs[SMALL], logs[LARGE]
    assert len(large.rows) > 3 * len(small.rows)
    held_small, held_large = _held(run, small), _held(run, large)
    assert held_large < GROWTH * held_small, (
        f"{len(small.rows)} events hold {held_small} B, {len(large.rows)} events hold {held_large} B"
    )


@pytest.mark.parametrize(
    ("run", "limit"),
    [(_validate, NODE_BYTES), (_requests, NODE_BYTES), (_surface_rows, SURFACE_NODE_BYTES)],
    ids=["validate", "requests", "surface"],
)
def test_memory_is_flat_while_the_surface_grows(growing: dict[str, _Log], run: Callable, limit: int) -> None:
    """Checking a log that never compacts, listing its requests or its surface holds a few bytes per node, not messages.

    Every node must be remembered (a later replacement may cite it), so the state
    grows with the surface; what may grow is that: a type code, a seq and digests
    in arrays (``surface`` adds its printed row), where holding the messages cost
    3.5-4.8 KB a node on these logs and the folds' node objects 150-250 bytes.
    """
    small, large = growing[SMALL], growing[LARGE]
    assert len(large.rows) > 3 * len(small.rows)
    held_small, held_large = _held(run, small), _held(run, large)
    nodes_small, nodes_large = (len(_validate(log, lambda: None)._fold.nodes) for log in (small, large))
    assert nodes_large > 3 * nodes_small
    per_node = (held_large - held_small) / (nodes_large - nodes_small)
    assert per_node < limit, f"{nodes_small} nodes hold {held_small} B, {nodes_large} nodes hold {held_large} B"


def test_retry_facts_are_a_few_digests_per_retry(logs: dict[str, _Log]) -> None:
    log = logs[LARGE]
    rules = _validate(log, lambda: None)
    retries = sum(1 for row in log.rows if b'"type":"llm/retry' in row)
    assert retries > 20
    assert _retry_facts(rules) < 600 * retries


def test_replacement_records_are_kept_on_request(logs: dict[str, _Log]) -> None:
    """Without ``keep_replacements`` only the count and the last few records remain, and they match."""
    every, recent = _surface_all(logs[LARGE], lambda: None), _surface(logs[LARGE], lambda: None)
    assert every.replacement_count == len(every.replacements) > RECENT_REPLACEMENTS
    assert recent.replacement_count == every.replacement_count
    assert recent.replacements == every.replacements[-RECENT_REPLACEMENTS:]
    assert recent.nodes == every.nodes and recent.messages() == every.messages()


def test_request_rows_are_compact_and_exact() -> None:
    """The packed rows ``dshlog requests`` keeps read back every value, odd ones included."""
    plain = RequestInfo(3, 41, "assistant/message", 2, 1, 7, True, None, [], 40, None, False, 1200, 80, 0, None)
    assert (plain.number, plain.seq, plain.kind, plain.turn, plain.step, plain.message_count) == (3, 41, "assistant/message", 2, 1, 7)
    assert (plain.extends, plain.reason, plain.changes, plain.header_seq, plain.header_reason) == (True, None, [], 40, None)
    assert (plain.interrupted, plain.input_tokens, plain.output_tokens, plain.cache_read_tokens, plain.reasoning_tokens) == (
        False, 1200, 80, 0, None,
    )
    assert sys.getsizeof(plain) + sys.getsizeof(plain._packed) < 160
    odd = RequestInfo(
        2**40, 5, "assistant/attempt", "x", 1.5, 0, 1, "weird", ["tool change", "compaction replace"],
        header_reason={"k": 1}, interrupted=True, input_tokens=2**70, output_tokens=-(2**31),
    )
    assert odd.number == 2**40 and odd.turn == "x" and odd.step == 1.5 and odd.extends == 1
    assert odd.extends is not True and odd.reason == "weird" and odd.changes == ["tool change", "compaction replace"]
    assert odd.header_reason == {"k": 1} and odd.interrupted is True
    assert odd.input_tokens == 2**70 and odd.output_tokens == -(2**31) and odd.cache_read_tokens is None
    odd.turn = 9
    assert odd.turn == 9 and odd.step == 1.5
    assert odd != plain and plain == RequestInfo(3, 41, "assistant/message", 2, 1, 7, True, None, [], 40, None, False, 1200, 80, 0)


# ----------------------------------------------------------------------------- rescue


@pytest.fixture(scope="module")
def refused_v0(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated v0 log dsh refuses (its header lacks delegationDepth), in a session directory."""
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("memory-rescue")
    plain = gen.generate(out, SMALL, 0, seed=11, zstd=False)["plain"]
    head, _, body = plain.read_bytes().partition(b"\n")
    d = out / "root" / "--home-ann-bench--" / orjson.loads(head)["id"]  # where dsh would have stored it
    d.mkdir(parents=True)
    (d / "session.jsonl").write_bytes(head.replace(b',"delegationDepth":0', b"") + b"\n" + body)
    return d / "session.jsonl"


def _peak_over(run: Callable[[], object]) -> int:
    """Traced bytes ``run`` needs at its peak beyond what was held when it started."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_rescue_judges_and_publishes_without_a_copy_of_the_candidate(refused_v0: Path, tmp_path: Path) -> None:
    """dsh's decision on a candidate reads it from a file, as every reader reads a log; the publication
    keeps the successor's message texts, not its events.  Holding the encoded candidate (and a
    copy of it) for the judge, and every successor event for the text check, made both need
    about a log's worth of memory more than the stored events."""
    import shutil

    from dshlog.ops.rescuable import judge, read_stored, serialize
    from dshlog.ops.rescue import rescue_session

    stored, _ = read_stored(refused_v0)
    encoded = len(serialize(stored))
    assert judge(stored) is not None
    judge(stored)  # lazy imports and caches first
    assert _peak_over(lambda: judge(stored)) < encoded // 4
    tracemalloc.start()
    try:
        read_stored(refused_v0)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    d = tmp_path / "--home-ann-bench--" / str(stored.header["id"])  # where dsh would have stored it
    d.mkdir(parents=True)
    shutil.copy(refused_v0, d / "session.jsonl")
    out: list[object] = []
    peak = _peak_over(lambda: out.append(rescue_session(d / "session.jsonl", all_=True, publish=True)))
    assert getattr(out[0], "status", None) == "rescued", out
    assert peak < 1.25 * held, f"the stored log needs {held} B, rescuing it {peak} B"


# Peak resident memory every command keeps, whatever the log (README, RELIABILITY).
RSS_BOUND = 64 << 20
# A log that never compacts, large enough that holding its last request (messages, then
# their JSON text) exceeds the bound: 104 MB of peak when the command held it.
RSS_LOG = "30M"


# Runs the command line it is given (``python -m dshlog ARGS``) and writes its exit code and peak
# resident memory (by wait4) to stderr.  A process keeps the peak of the one it was started from
# across exec, so the command is started from this small one, never from the test run (hundreds of MB by now).
_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024), file=sys.stderr)
"""


def _peak_rss(args: list[str], stdout: Path) -> tuple[int, int]:
    """Exit code and peak resident bytes of ``python -m dshlog ARGS``, its stdout written to ``stdout``."""
    with stdout.open("wb") as out:
        run = run_process(*args, prefix=(sys.executable, "-c", _MEASURE), stdout=out, check=True, timeout=None)
    code, peak = run.stderr.split()
    return int(code), int(peak)


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="os.wait4 measures one child's peak")
@pytest.mark.parametrize("options", [[], ["--compact", "--messages-only"]], ids=["pretty", "compact-messages"])
def test_rebuild_of_the_last_request_stays_within_the_bound(tmp_path_factory: pytest.TempPathFactory,
                                                            options: list[str]) -> None:
    """``rebuild`` writes the request without holding it: every message of the log is in the last one."""
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("memory-rebuild")
    log = gen.generate(out, RSS_LOG, 4, seed=7, zstd=False, shape=gen.Shape(compaction=False))["plain"]
    data = log.read_bytes()
    last = data.count(b'"type":"assistant/message"') + data.count(b'"type":"assistant/attempt"')
    written = out / "request.json"
    code, peak = _peak_rss(["rebuild", str(log), "--request", str(last), *options], written)
    assert code == 0
    assert written.stat().st_size > len(data) // 3  # the request holds the log's messages
    assert peak <= RSS_BOUND, f"rebuild --request {last} of a {RSS_LOG} log peaked at {peak >> 20} MB"


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="os.wait4 measures one child's peak")
def test_rescue_of_a_large_refused_log_stays_within_the_bound(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``rescue --publish`` keeps the stored events, its candidates and the successor's texts on disk.

    Holding the stored events as dicts (about eleven times the log's bytes) made a
    30 MB refused log peak at about 400 MB; the plan's logs live in temporary files
    now, read an event at a time, like every other reader.
    """
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("memory-rescue-rss")
    plain = gen.generate(out, RSS_LOG, 0, seed=11, zstd=False)["plain"]
    head, _, body = plain.read_bytes().partition(b"\n")
    d = out / "root" / "--home-ann-bench--" / orjson.loads(head)["id"]  # where dsh would have stored it
    d.mkdir(parents=True)
    (d / "session.jsonl").write_bytes(head.replace(b',"delegationDepth":0', b"") + b"\n" + body)
    plain.unlink()
    written = out / "rescue.json"
    code, peak = _peak_rss(["rescue", str(d / "session.jsonl"), "--all", "--publish", "--json"], written)
    assert code == 0
    assert orjson.loads(written.read_bytes())["status"] == "rescued"
    assert (d / "session.v4.jsonl").stat().st_size > len(body) // 2
    assert peak <= RSS_BOUND, f"rescue of a {RSS_LOG} refused log peaked at {peak >> 20} MB"
