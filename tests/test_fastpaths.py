"""The one switch of the fast paths (``dshlog/fastpaths.py``): each decision point asks it, and only it.

Whether each fast body gives its exact body's answers is what the whole suite says,
run under both modes (``make test``, ``tests/both_modes.py``); these tests say that
the switch reaches every one of the ten decision points, in both directions, and
how a program and the command line choose it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, corpus_files, run_env
import dshlog
from dshlog.read.source import Reread, Source
from dshlog import fastpaths, forked
from dshlog.check.keys import message_digest
from dshlog.check.surface import SurfaceFold
from dshlog.check.validate import Validator
from dshlog.executor import ProcessPool
from dshlog.migrate import payload, v2_v3
from dshlog.protocol.vocabulary import V1_V2_MADE_TYPES, VERSION_BLIND_PAYLOAD_TYPES
from dshlog.ops import validate as validate_op
from dshlog.protocol import jsjson
from dshlog.protocol.packed import PackedRun
from dshlog.read.session import SessionLog, open_log

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
TEXT_TURN_V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"


def _decisions() -> dict[str, Any]:
    """What each decision point chose, in the current mode."""
    with SessionLog(Source(str(LOOP)), strict=False) as log:
        gate, fused = log._gate(), log._plain is not None
    with open_log(str(TEXT_TURN_V0)) as log:
        runs = any(isinstance(e, PackedRun) for e in log.stored_runs())
    with open_log(str(TEXT_TURN_V0), strict=False) as log:
        one_restore = validate_op._one_restore(log, validate_op.ValidationReport(str(TEXT_TURN_V0)))
    switched: list[str] = []
    real_switch = payload._Checker.check
    try:
        payload._Checker.check = lambda self, event: switched.append(event["type"]) or real_switch(self, event)
        payload.assert_payload_semantics({"type": "step/start", "seq": 1, "data": {"turn": 1, "step": 1}}, 0)
    finally:
        payload._Checker.check = real_switch
    checked: list[str] = []
    real_check = v2_v3.assert_payload_semantics
    try:
        v2_v3.assert_payload_semantics = lambda event, version, **kw: checked.append(event["type"]) or real_check(event, version, **kw)
        with open_log(str(TEXT_TURN_V0)) as log:
            for _ in log.v4():
                pass
    finally:
        v2_v3.assert_payload_semantics = real_check
    assert checked, "the v0 fixture reaches v2->v3's payload check"
    calls: list[bytes] = []
    real = jsjson._c_scan
    assert real is not None, "the C pass is built wherever the package is installed from a checkout"
    try:
        jsjson._c_scan = lambda data, depth: calls.append(bytes(data)) or real(data, depth)
        jsjson.loads(b'{"a":1}')
    finally:
        jsjson._c_scan = real
    return {
        "c scan": bool(calls),
        "lazy gate": gate is not None,
        "typed shapes": Validator({}, json_values=True).typed,
        "lean fold": not SurfaceFold(keep_messages=False).keep_messages,
        "fused reader": fused,
        "packed runs": runs,
        "forked helpers": forked.can_fork(True),
        "one restore": one_restore,
        "payload once": not (VERSION_BLIND_PAYLOAD_TYPES - V1_V2_MADE_TYPES) & set(checked),
        "lean payload pass": not switched,
    }


def test_exact_mode_runs_no_fast_body() -> None:
    with fastpaths.using("exact"):
        assert fastpaths.mode() == "exact"
        assert _decisions() == dict.fromkeys(_decisions(), False)


@pytest.mark.fast_paths
def test_fast_mode_runs_every_fast_body_where_it_applies() -> None:
    with fastpaths.using("fast"):
        decided = _decisions()
    helpers = forked.usable_cpus() > 1  # a machine of one core forks no helper in either mode
    assert decided == {**dict.fromkeys(decided, True), "forked helpers": helpers}, decided


def test_the_mode_is_restored_and_a_bad_name_refused() -> None:
    before = fastpaths.mode()
    with fastpaths.using("exact"):
        with fastpaths.using("fast"):
            assert fastpaths.fast()
        assert not fastpaths.fast()
    assert fastpaths.mode() == before
    with pytest.raises(dshlog.InvalidArgument, match="unknown paths mode 'quick'"):
        dshlog.set_paths("quick")
    assert dshlog.paths_mode() == before


def test_an_exact_fold_digests_its_messages_as_the_lean_one_does() -> None:
    with open_log(str(LOOP)) as log:
        events = list(log.v4())
    folds = {}
    for mode in fastpaths.MODES:
        with fastpaths.using(mode):
            fold = SurfaceFold(keep_messages=False, digests=True)
            taken = []
            for event in events:
                fold.apply(event)
                taken.append((fold.message_digests(), len(fold.message_digests())))
            folds[mode] = [bytes(d[:n]) for d, n in taken]  # each prefix stays what it was when taken
    assert folds["fast"] == folds["exact"]
    with fastpaths.using("exact"):
        full = SurfaceFold()
        for event in events:
            full.apply(event)
    assert list(fold.message_digests()) == [message_digest(m) for m in full.messages()]


def test_the_command_line_takes_the_mode_from_its_environment() -> None:
    before = fastpaths.mode()
    for mode in fastpaths.MODES:
        code, out, _err = run_env("info", str(LOOP), paths=mode)
        assert code == 0 and b"events      41" in out
        assert fastpaths.mode() == before  # the run's mode, not the caller's afterwards
    code, out, err = run_env("info", str(LOOP), paths="quick")
    assert code == 2 and out == b"" and b"unknown paths mode 'quick': expected fast or exact" in err


def _mode_of(_item: int) -> str:
    return fastpaths.mode()


def test_a_pools_workers_run_in_their_callers_mode() -> None:
    for mode in fastpaths.MODES:
        with fastpaths.using(mode), ProcessPool(2) as pool:
            assert set(pool.map(_mode_of, list(range(4)))) == {mode}


def test_the_table_of_decision_points_names_modules_that_ask() -> None:
    """The module's table is where to look: each module it names reads the switch."""
    root = Path(fastpaths.__file__).parent
    named = {"protocol/jsjson.py", "read/input.py", "read/session.py", "check/validate.py", "check/surface.py", "forked.py",
             "migrate/chain.py", "migrate/payload.py", "ops/validate.py"}
    assert all(f"``{name}``" in (fastpaths.__doc__ or "") for name in named)
    for name in named:
        assert "fast()" in (root / name).read_text(encoding="utf-8"), name


def _old_logs() -> list[Path]:
    """Every session log before v4 of the fixtures and the shared corpus (when present)."""
    fixtures = [p for p in FIXTURES.rglob("*.jsonl") if p.parent.parent.name != "v4" and "golden" not in p.parts]
    return fixtures + [p for p in corpus_files() if p.suffix == ".jsonl"]


def test_one_restore_lists_an_old_log_as_the_full_read_does() -> None:
    """validate's one restore (dsh's read listing an old log, or its restore listing the migrated form)
    against the exact body: the lenient listing, dsh's decision, the migrated form read through the rules again."""
    logs = _old_logs()
    assert logs
    listed = restored = 0
    for path in logs:
        reports = {}
        for mode in fastpaths.MODES:
            with fastpaths.using(mode):
                reports[mode] = validate_op.validate_log(str(path)).as_dict()
        assert reports["fast"] == reports["exact"], path
        with fastpaths.using("fast"), open_log(str(path), strict=False) as log:
            if log.version is not None and log.version < 4:
                if validate_op._dsh_lists(log, None):
                    listed += validate_op._listed_by_dsh(Reread(Source(str(path))), None) is not None
                for _ in log.stored_runs():
                    pass
                restored += validate_op._one_restore(log, validate_op.ValidationReport(str(path)))
    assert listed and restored, "no old log took the one restore"
