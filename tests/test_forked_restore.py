"""dsh's restore in a forked child decides exactly as the restore in process.

A dsh view of a large plain log hands the restore (every v4 rule over every event)
to a child that reads the same bytes through a pipe.  Here the size threshold is
lowered so every log takes that path, and each log of the corpus, and the fuzzer's
mutations of it, is read both ways: the same events, the same refusal (type, text,
seq), the same notes and framing facts, for a consumer that reads everything and
for one that stops early and asks for dsh's decision.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from conftest import corpus_files, load_bench_script, requires_corpus
from dshlog import forked
from dshlog.errors import DshlogError
from dshlog.read import session as session_module
from dshlog.read.session import open_session

pytestmark = pytest.mark.skipif(not forked.PARALLEL, reason="needs fork and a second core")


def _read(path: Path, *, fork: bool, stop: int | None) -> tuple[Any, ...]:
    """Everything a command can observe of a dsh view of ``path``."""
    events: list[Any] = []
    outcome: Any = None
    forked_seen = False
    try:
        with open_session(str(path)) as log:
            try:
                with log.v4() as view:
                    view._forkable = fork
                    for n, event in enumerate(view):
                        forked_seen = forked_seen or view._restore is not None
                        events.append(event)
                        if stop is not None and n + 1 >= stop:
                            break
            except DshlogError as exc:
                outcome = (type(exc).__name__, exc.message, exc.seq)
            notes = [(p.code, p.message, p.severity) for p in log.notes]
            info = (log.info.decoded_bytes, log.info.torn and log.info.torn.length)
            cut = view.inherited_cut
    except DshlogError as exc:
        return ("open", type(exc).__name__, exc.message)
    assert not fork or forked_seen or not events or log._plain is None
    return events, outcome, notes, info, cut


@pytest.fixture()
def fork_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "RESTORE_FORK_MIN_BYTES", 0)


def _same(path: Path) -> None:
    for stop in (None, 3):
        serial, child = _read(path, fork=False, stop=stop), _read(path, fork=True, stop=stop)
        assert child == serial, f"{path.name} (stop={stop})"


@requires_corpus
def test_corpus_restores_alike(fork_everything: None) -> None:
    for path in corpus_files():
        if not path.name.endswith(".zstd"):
            _same(path)


@requires_corpus
def test_mutated_corpus_restores_alike(fork_everything: None, tmp_path: Path) -> None:
    fuzz = load_bench_script("fuzz")
    seeds = [p for p in fuzz.seed_files() if not p.name.endswith(".zstd")]
    plain = [fuzz.decoded(p)[0] for p in seeds]
    rng = random.Random(23)
    for n in range(120):
        index = rng.randrange(len(seeds))
        ops = [(rng.choice(sorted(fuzz.MUTATORS)), rng.randrange(2**32)) for _ in range(rng.randint(1, 4))]
        target = tmp_path / seeds[index].name
        target.write_bytes(fuzz.mutate(plain[index], False, ops, plain))
        _same(target)


def test_a_generated_log_forks_and_restores_alike(tmp_path: Path) -> None:
    """At the real threshold: a log large enough forks, and both ways agree."""
    gen = load_bench_script("generate")
    path = gen.generate(tmp_path, "5M", 4, seed=3, zstd=False)["plain"]
    assert path.stat().st_size >= session_module.RESTORE_FORK_MIN_BYTES
    _same(path)
