"""The typed decoders decide nothing of their own: the fast validator finds exactly what the rules find.

``Validator(json_values=True)`` lets msgspec shapes (``check/streams.py``
``stream_clean``, ``check/admission.py`` ``typed_clean`` and ``typed_event``, the
latter with ``check/envelope.py``'s envelope) prove a clean event in C and skips
the Python rules that would report nothing.  A shape is a second
description of its rules, so these tests hold the two together:

* every field of real events, mutated (removed, retyped, out of bounds, emptied,
  renamed to a retired or developer-only value) and an unknown key added: whatever
  a shape accepts, the rules pass silently; for the stream records' own fields the
  two decide alike both ways;
* the shared corpus, the fuzzer's mutations of it and a generated log, validated
  both ways: the same problems (codes, texts, severities, seqs) in the same order;
  and the fast path is taken on most events, so the comparison means something.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_files, load_bench_script, requires_corpus

from dshlog.check.admission import _TYPED_DATA, check_data, typed_clean, typed_event
from dshlog.check.data import check_event_data
from dshlog.check.envelope import check_envelope, well_formed
from dshlog.check.problems import Problem
from dshlog.check.streams import check_stream, check_stream_blocks, stream_clean
from dshlog.check.validate import Validator
from dshlog.errors import DshlogError
from dshlog.protocol.jsjson import dumps, loads
from dshlog.protocol.values import MAX_SAFE_INTEGER
from dshlog.read.session import open_log

#: What a field is replaced by: every JSON kind, the integer and string edges the rules judge,
#: the values with a meaning of their own (retired, developer-only, tool changes)
_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 0.5, -0.0, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER - 1, 2**70, "", "x", "tool-result", "tool-addition", "tool-removal", "developer", "plugin",
    "model", "tool", "user", "assistant", "chunk", "text-chunks", "tool-call-chunks", "completed", "step/start",
    "tool/call", "assistant/attempt", "turn/end", [], [1], ["x"],
    [{}], {}, {"type": "text"}, {"type": "tool-result"}, {"kind": "tool", "callId": "c"},
]

#: the typed shapes beside the rules they mirror, compared in one process: the fast run's (conftest)
pytestmark = pytest.mark.fast_paths


def _paths(value: Any, path: tuple[Any, ...] = (), depth: int = 6) -> Iterator[tuple[Any, ...]]:
    """Every path into ``value`` (dict keys, list indexes), the first three members of a list."""
    if depth == 0:
        return
    if isinstance(value, dict):
        for key in value:
            yield (*path, key)
            yield from _paths(value[key], (*path, key), depth - 1)
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            yield (*path, i)
            yield from _paths(item, (*path, i), depth - 1)


def _mutations(data: Any) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """(path, the value put there, the mutated copy): every path removed, replaced, given an unknown key."""
    for path in _paths(data):
        parent_path, last = path[:-1], path[-1]
        for value in [_REMOVED, *_VALUES]:
            mutated = copy.deepcopy(data)
            parent = mutated
            for step in parent_path:
                parent = parent[step]
            if value is _REMOVED:
                del parent[last]
            else:
                parent[last] = copy.deepcopy(value)
            yield path, value, mutated
        target = copy.deepcopy(data)
        inner = target
        for step in path:
            inner = inner[step]
        if isinstance(inner, dict):
            inner["unknownKey"] = 1
            yield path, _ADDED, target


_REMOVED, _ADDED = "<removed>", "<unknown key added>"


def _data_problems(etype: str, data: Any) -> list[Problem]:
    """What the rules a proof stands for find: the shared data rules, then the admission's."""
    found: list[Problem] = []
    event = {"type": etype, "seq": 5, "time": 0, "data": data}
    check_event_data(event, f'session event "{etype}" at seq 5', _List(found))
    check_data(etype, event, data, 5, _List(found))
    return found


def _stream_problems(stream: Any) -> list[Problem]:
    found: list[Problem] = []
    check_stream(stream, 5, _List(found))
    check_stream_blocks({"stream": stream}, 5, "retired", _List(found))
    return found


class _List:
    def __init__(self, items: list[Problem]) -> None:
        self.report = items.append


def _validate(header: Any, events: list[Any], typed: bool) -> list[Problem]:
    rules = Validator(header, json_values=typed)
    out: list[Problem] = []
    for event in events:
        out += rules.feed(event)
    return out + rules.finish()


def _json(value: Any) -> Any:
    """``value`` as a JSON value (what the reader hands the validator): built in Python, it may not be one."""
    return loads(dumps(value))


def _both_ways(header: Any, events: list[Any]) -> list[Problem]:
    fast = _validate(header, events, True)
    exact = _validate(header, events, False)
    assert fast == exact
    assert [(p.code, p.message, p.severity, p.seq) for p in fast] == [(p.code, p.message, p.severity, p.seq) for p in exact]
    return fast


def _v4(path: Path) -> tuple[Any, list[Any]] | None:
    try:
        with open_log(str(path), strict=False) as log:
            view = log.v4()
            events = list(view)
            return _json(view.header), [_json(e) for e in events]
    except DshlogError:
        return None


# --------------------------------------------------------------------------- shapes against rules


def _samples(logs: list[list[Any]], per_type: int = 3) -> dict[str, list[Any]]:
    """Clean data of every typed event type, the first few of each in ``logs``."""
    found: dict[str, list[Any]] = {etype: [] for etype in _TYPED_DATA}
    for events in logs:
        for event in events:
            etype = event.get("type") if isinstance(event, dict) else None
            if etype in found and len(found[etype]) < per_type and typed_clean(etype, event["data"]):
                found[etype].append(event["data"])
    return found


@pytest.fixture(scope="module")
def samples(long_session: Any) -> dict[str, list[Any]]:
    """From the corpus's v4 views, then a generated log for what the corpus lacks."""
    corpus = [o[1] for o in (_v4(p) for p in [p for p in corpus_files() if p.suffix == ".jsonl"][:80]) if o]
    with open_log(str(long_session[0]), strict=False) as log:
        generated = [r.event for r in log.stored()]
    return _samples([*corpus, generated])


@requires_corpus
@pytest.mark.parametrize("etype", sorted(_TYPED_DATA))
def test_a_shape_accepts_only_what_its_rules_pass(etype: str, samples: dict[str, list[Any]]) -> None:
    assert samples[etype], f"no clean {etype} in the corpus to mutate"
    tried = accepted = 0
    for data in samples[etype]:
        assert not _data_problems(etype, data)
        for path, value, mutated in _mutations(data):
            tried += 1
            if typed_clean(etype, mutated):
                accepted += 1
                assert not _data_problems(etype, mutated), f"{etype}: {path!r} = {value!r} accepted by the shape, refused by the rules"
    assert tried > 50 and accepted > 0


@requires_corpus
def test_the_event_shape_is_the_envelope_rule_and_the_data_rules(samples: dict[str, list[Any]]) -> None:
    """``typed_event``: the envelope (every key, each value) and the data, mutated together."""
    tried = accepted = 0
    for etype, datas in samples.items():
        event = {"type": etype, "seq": 7, "time": 1790000000000, "data": datas[0]}
        for base in (event, {**event, "ignorable": True, "surfaceOp": "append", "sourceEventSeqs": [1]}):
            for path, value, mutated in _mutations(base):
                if path[:1] == ("data",) and len(path) > 2:
                    continue  # the data's own fields: test_a_shape_accepts_only_what_its_rules_pass
                for seq in (7, 8):
                    tried += 1
                    if typed_event(mutated, seq):
                        accepted += 1
                        found: list[Problem] = []
                        check_envelope(mutated, seq, _List(found))
                        assert well_formed(mutated, seq) and not found, f"{etype}: {path!r} = {value!r} at {seq}"
                        assert not _data_problems(mutated["type"], mutated["data"]), f"{etype}: {path!r} = {value!r}"
    assert tried > 1000 and accepted > 20


def _streams(limit: int = 40) -> list[list[Any]]:
    out: list[list[Any]] = []
    for path in [p for p in corpus_files() if p.suffix == ".jsonl"]:
        opened = _v4(path)
        for event in opened[1] if opened else []:
            stream = event["data"].get("stream") if isinstance(event.get("data"), dict) else None
            if isinstance(stream, list) and stream and len(out) < limit:
                out.append(stream)
        if len(out) >= limit:
            break
    return out


@requires_corpus
def test_the_stream_shape_is_the_stream_rules() -> None:
    """Record fields decide alike both ways; inside a chunk the shape may only be stricter."""
    streams = _streams()
    assert len(streams) >= 10
    kinds: set[Any] = set()
    compared = 0
    for stream in streams:
        assert stream_clean(stream) and not _stream_problems(stream)
        for path, value, mutated in _mutations(stream):
            clean = stream_clean(mutated)
            quiet = not _stream_problems(mutated)
            if clean:
                assert quiet, f"{path!r} = {value!r} accepted by the shape, refused by the rules"
            if path[1:2] != ("chunk",) and type(value) is not float:
                # a record's own fields, JSON integers: the shape is no stricter than the rules
                # (an integral float such as 1.0 is JavaScript's integer: the rules decide it)
                assert clean == quiet, f"{path!r} = {value!r}: shape {clean}, rules {quiet}"
                compared += 1
                kinds.add(stream[path[0]].get("type"))
    assert compared > 1000 and {"chunk", "text-chunks"} <= kinds, kinds


def test_lone_surrogates_are_left_to_the_rules() -> None:
    """jsjson keeps a lone surrogate (as JSON.parse does); msgspec cannot encode one in a key."""
    run = {"type": "text-chunks", "time0": 1, "index": 0, "dt": [], "texts": ["\udcff"]}
    assert stream_clean([run]) and not _stream_problems([run])  # in a value: a string like any other
    keyed = {**run, "\udcff": 1}
    assert not stream_clean([keyed]) and _stream_problems([keyed])
    step = {"turn": 1, "step": 1, "\udcff": True}
    assert not typed_clean("step/start", step) and not _data_problems("step/start", step)  # unproven, and clean
    event = {"type": "step/start", "seq": 0, "time": 0, "data": step, "\udcff": 1}
    assert typed_event(event, 0) is False
    assert _both_ways(None, [event])


def test_run_lengths_and_named_runs() -> None:
    run = {"type": "tool-call-chunks", "time0": 1, "index": 0, "dt": [1], "id": "c", "args": ["a", "b"]}
    assert stream_clean([run]) and not _stream_problems([run])
    for change in ({"dt": []}, {"dt": [1, 2]}, {"name": ""}, {"name": None}, {"name": 1}, {"args": []}):
        mutated = {**run, **change}
        assert not stream_clean([mutated]) and _stream_problems([mutated])
    assert stream_clean([{**run, "name": "bash"}])
    # msgspec takes a tuple for an array; the validator only promises JSON values to it
    assert _stream_problems([{**run, "args": ("a", "b")}])


# --------------------------------------------------------------------------- whole logs


@requires_corpus
def test_corpus_validates_alike() -> None:
    checked = proven = events_seen = 0
    for path in corpus_files():
        opened = _v4(path)
        if not opened:
            continue
        header, events = opened
        _both_ways(header, events)
        checked += 1
        events_seen += len(events)
        proven += sum(1 for e in events if isinstance(e, dict) and typed_clean(e.get("type"), e.get("data")))
    assert checked > 100
    assert proven > events_seen // 3, f"the typed path proved {proven} of {events_seen} events"


@requires_corpus
def test_mutated_corpus_validates_alike(tmp_path: Path) -> None:
    """The fuzzer's mutations of corpus logs: damaged rows, spliced and retyped events..."""
    fuzz = load_bench_script("fuzz")
    seeds = [p for p in fuzz.seed_files() if not p.name.endswith(".zstd")]
    others = [fuzz.decoded(p)[0] for p in seeds]
    rng = random.Random(23)
    checked = problems = 0
    for n in range(500):
        index = rng.randrange(len(seeds))
        ops = [(rng.choice(sorted(fuzz.MUTATORS)), rng.randrange(2**32)) for _ in range(rng.randint(1, 4))]
        target = tmp_path / f"m{n}.jsonl"
        target.write_bytes(fuzz.mutate(others[index], False, ops, others))
        opened = _v4(target)
        if opened:
            problems += len(_both_ways(*opened))
            checked += 1
    assert checked > 50 and problems > 0


@requires_corpus
def test_mutated_events_validate_alike() -> None:
    """Field mutations of whole events inside their logs: the order of problems across rules holds."""
    rng = random.Random(5)
    logs = [o for o in (_v4(p) for p in [p for p in corpus_files() if p.suffix == ".jsonl"][:40]) if o and o[1]]
    assert logs
    for _ in range(300):
        header, events = rng.choice(logs)
        i = rng.randrange(len(events))
        event = events[i]
        if not isinstance(event, dict) or event.get("type") not in _TYPED_DATA:
            continue
        variants = list(_mutations(event["data"]))
        if not variants:
            continue
        _path, _value, data = rng.choice(variants)
        _both_ways(header, [*events[:i], {**event, "data": data}, *events[i + 1:]])


def test_generated_log_validates_alike(long_session: Any) -> None:
    path = long_session[0]
    with open_log(str(path), strict=False) as log:
        header = log.header
        events = [r.event for r in log.stored()]
    assert not _both_ways(header, events)
    assert sum(1 for e in events if typed_clean(e["type"], e["data"])) > len(events) * 0.8
