"""The library facade: ``import dshlog`` gives the CLI's truth, typed.

Each result's ``as_dict()`` is compared with what the matching command prints
with ``--json`` for the same input, so the two cannot drift apart.
"""

from __future__ import annotations

import ast
import inspect
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, get_type_hints

import pytest

import dshlog
from conftest import FIXTURES, ROOT, run_env
from dshlog.protocol.events import Event, RowHead, SessionHeader
from dshlog.protocol.layout import encode_segment, project_key
from dshlog.protocol.vocabulary import ENVELOPE_KEYS, header_key_order, header_optional_keys, header_required_keys

LOOP = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
CRASH = FIXTURES / "v4" / "crash" / "session.v4.jsonl"
V0 = FIXTURES / "v0" / "text-turn" / "session.jsonl"
INPUTS = [LOOP, CRASH, FIXTURES / "v4" / "loop-zstd" / "session.v4.jsonl.zstd", V0]


def cli_json(*args: str) -> Any:
    code, out, err = run_env(*args)
    assert code in (0, 10), err
    return json.loads(out)


# ----------------------------------------------------------------------------- the facade itself


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in dshlog.__all__:
        value = getattr(dshlog, name)
        assert value is not None, name
        if inspect.isfunction(value) or isinstance(value, type):
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_type_checkers_see_the_same_names() -> None:
    """The ``TYPE_CHECKING`` imports of ``dshlog/__init__.py`` are exactly the lazily loaded names."""
    tree = ast.parse((ROOT / "dshlog" / "__init__.py").read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                for alias in imp.names:
                    seen[alias.asname or alias.name] = "dshlog." + (imp.module or "")
    assert seen == dshlog._OWNERS


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        dshlog.no_such_name  # noqa: B018 - the access is the test


def test_help_shows_the_api() -> None:
    out = subprocess.run([sys.executable, "-c", "import dshlog; help(dshlog)"], capture_output=True, text=True,
                         check=True, env={"PAGER": "cat", "PATH": "/usr/bin:/bin"}).stdout
    for name in ("open_session", "validate", "migrate_sessions", "rebuild_request", "ValidationReport", "ExitCode"):
        assert name in out, name


def test_import_loads_nothing_until_used() -> None:
    """``import dshlog`` (and so ``dshlog --version``) does not load the core."""
    code = "import sys, dshlog; print(sorted(m for m in sys.modules if m.startswith('dshlog')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['dshlog', 'dshlog._version']"


def test_py_typed_is_package_data() -> None:
    assert (ROOT / "dshlog" / "py.typed").is_file()
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dshlog = ["py.typed"]' in text


#: Results an operation fills in as it reads (a report gathers problems, a migration its
#: outcomes): the one type the operation builds is the one the caller gets, so it is not frozen.
FILLED_AS_READ = {"ValidationReport", "MigrationOutcome", "Migration", "RescueOutcome"}


def test_results_are_frozen() -> None:
    """Every typed result of an operation has its ``--json`` shape; those not filled as read are frozen."""
    results = {"SessionInfo", "SessionStats", "Stats", "Validation", "SurfaceView", "RebuiltRequest", "RequestRow",
               "RequestSeries", "RepairOutcome", "ForkResult", "ExportResult", *FILLED_AS_READ}
    for name in sorted(results):
        value = getattr(dshlog, name)
        assert dataclasses.is_dataclass(value) and value.__module__.startswith("dshlog.ops."), name
        assert callable(getattr(value, "as_dict", None)), name
        if name not in FILLED_AS_READ:
            assert value.__dataclass_params__.frozen, name


def test_event_typeddicts_hold_the_vocabulary_keys() -> None:
    assert set(get_type_hints(Event)) == ENVELOPE_KEYS
    assert set(RowHead.__struct_fields__) == ENVELOPE_KEYS  # the lazy reader's envelope: any other key goes to the exact reader
    assert Event.__required_keys__ == {"type", "seq", "time", "data"}
    assert SessionHeader.__required_keys__ == header_required_keys(4)
    assert SessionHeader.__optional_keys__ == header_optional_keys(4)
    assert list(get_type_hints(SessionHeader)) == [k.rstrip("?") for k in header_key_order(4)]


# ----------------------------------------------------------------------------- as_dict is what the CLI prints


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.parent.name)
def test_info_stats_validate_shapes(path: Path) -> None:
    assert dshlog.session_info(path).as_dict() == cli_json("info", str(path), "--json")
    assert dshlog.session_stats(path, LOOP).as_dict() == cli_json("stats", str(path), str(LOOP), "--json")
    assert dshlog.validate(path).as_dict() == cli_json("validate", str(path), "--json")


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.parent.name)
def test_model_view_shapes(path: Path) -> None:
    view = dshlog.surface(path)
    assert view.as_dict() == cli_json("surface", str(path), "--json")
    assert view.as_dict(messages=True) == cli_json("surface", str(path), "--json", "--messages")
    assert list(view.messages) == dshlog.derive_messages(dshlog.v4_events(path))
    series = dshlog.request_series(path)
    assert series.as_dict() == cli_json("requests", str(path), "--json")
    if len(series):
        last = dshlog.rebuild_request(path, len(series))
        code, out, _ = run_env("rebuild", str(path), "--request", str(len(series)))
        assert last.to_json() + b"\n" == out
        assert last.as_dict() == json.loads(out)
        assert series[len(series)].number == len(series)


def test_surface_prefix() -> None:
    assert dshlog.surface(LOOP, at=5).as_dict() == cli_json("surface", str(LOOP), "--at", "5", "--json")
    with pytest.raises(dshlog.UsageError):
        dshlog.surface(LOOP, at=10_000)


def test_repair_shapes(tmp_path: Path) -> None:
    plan = dshlog.plan_repair(CRASH)
    assert not plan.healthy and plan.exit_code == dshlog.ExitCode.PENDING
    assert plan.as_dict() == cli_json("repair", str(CRASH), "--json")
    src = tmp_path / "a" / "session.v4.jsonl"
    src.parent.mkdir()
    shutil.copy(CRASH, src)
    copy = dshlog.repair_copy(src, tmp_path / "copy.v4.jsonl")
    assert copy.written == str(tmp_path / "copy.v4.jsonl") and dshlog.plan_repair(copy.written).healthy
    done = dshlog.repair_in_place(src)
    assert done.in_place and dshlog.plan_repair(src).healthy
    assert dshlog.plan_repair(src).exit_code == dshlog.ExitCode.OK


def test_fork_shape(tmp_path: Path) -> None:
    lib = dshlog.fork_session(LOOP, tmp_path / "lib.v4.jsonl", at=10, child_id="c", created_at=1)
    doc = cli_json("fork", str(LOOP), "--at", "10", "--id", "c", "-o", str(tmp_path / "cli.v4.jsonl"), "--json")
    mine = lib.as_dict()
    assert mine["path"] != doc["path"]
    doc["header"]["createdAt"] = 1  # the CLI takes the clock; the library was given the time
    assert {**mine, "path": None} == {**doc, "path": None}
    assert dshlog.validate(lib.path).exit_code == dshlog.ExitCode.OK
    with pytest.raises(dshlog.UsageError):
        dshlog.fork_session(LOOP, tmp_path / "x.v4.jsonl", at=1, turn=1)


def test_migrate_shapes(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / "lib" / name).mkdir(parents=True)
        shutil.copy(V0, tmp_path / "lib" / name / "session.jsonl")
    shutil.copytree(tmp_path / "lib", tmp_path / "cli")
    check = dshlog.migrate_sessions(tmp_path / "lib", recursive=True, check=True, children="none")
    assert check.exit_code == dshlog.ExitCode.PENDING and check.summary["needed"] == 2
    result = dshlog.migrate_sessions(tmp_path / "lib", recursive=True, children="none")
    doc = cli_json("migrate", "--recursive", "--no-children", str(tmp_path / "cli"), "--json")
    assert json.loads(json.dumps(result.as_dict()).replace(str(tmp_path / "lib"), "R")) == \
        json.loads(json.dumps(doc).replace(str(tmp_path / "cli"), "R"))
    assert result.exit_code == dshlog.ExitCode.OK and [o.status for o in result.sessions] == ["migrated", "migrated"]
    again = dshlog.migrate_session(tmp_path / "lib" / "a" / "session.jsonl", children="none")
    assert again.status == "current"


def test_migrate_failure_is_an_outcome(tmp_path: Path) -> None:
    bad = tmp_path / "s" / "session.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(b'{"type":"session","version":0\n')
    outcome = dshlog.migrate_session(bad, children="none")
    assert outcome.status == "failed" and outcome.exit_code == dshlog.ExitCode.CORRUPT and outcome.error


def test_listing_and_lookup(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    sdir = root / project_key("/home/ann/demo") / encode_segment("loop-0001")
    sdir.mkdir(parents=True)
    shutil.copy(LOOP, sdir / "session.v4.jsonl")
    entries = dshlog.list_sessions(root)
    code, out, _ = run_env("ls", str(root), "--json")
    assert [e.as_dict() for e in entries] == [json.loads(line) for line in out.splitlines()]
    sid = entries[0].id
    assert sid is not None
    assert dshlog.find_session(sid[:3], root=root) == sdir / "session.v4.jsonl"
    assert dshlog.grep_session(sdir / "session.v4.jsonl", "zzz-not-there") is False


def test_export(tmp_path: Path) -> None:
    for fmt in ("md", "html", "json"):
        code, out, _ = run_env("export", str(LOOP), "--format", fmt)
        assert dshlog.export_bytes(LOOP, format=fmt) == out  # type: ignore[arg-type]  # fmt is one of the three
    result = dshlog.export_transcript(LOOP, tmp_path / "t.md")
    assert Path(result.path).read_bytes() == dshlog.export_bytes(LOOP)
    with pytest.raises(dshlog.UsageError):
        dshlog.export_bytes(LOOP, format="pdf")  # type: ignore[arg-type]  # the wrong value is the test


# ----------------------------------------------------------------------------- views and errors


def test_views() -> None:
    stored = list(dshlog.stored_events(V0))
    assert stored and all(isinstance(r.event, dict) for r in stored)
    events = list(dshlog.v4_events(V0))
    assert [e["seq"] for e in events] == list(range(len(events)))
    with dshlog.open_session(LOOP) as log:
        assert [e["seq"] for e in log.v4()] == [e["seq"] for e in dshlog.v4_events(LOOP)]
    with open(LOOP, "rb") as fh, dshlog.open_session(dshlog.Source("piped", stream=fh)) as log:
        assert log.version == 4


def test_only_the_hierarchy_leaves(tmp_path: Path) -> None:
    with pytest.raises(dshlog.IOFailure):
        dshlog.session_info(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    # a damaged row a later turn/end proves committed (dsh holds a damaged row after the last turn/end as a torn tail)
    bad.write_bytes(b'{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}\nnot json\n'
                    b'{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    with pytest.raises(dshlog.CorruptLog):
        list(dshlog.v4_events(bad))
    with dshlog.open_session(LOOP) as log:
        list(log.stored())
        with pytest.raises(dshlog.InternalError):  # a body is read once: a misuse, reported as the hierarchy's bug
            list(log.stored())


def test_iterating_a_returned_log_stays_behind_the_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug met while a caller iterates a log the library returned is an InternalError, not a KeyError."""
    from collections.abc import Iterator

    from dshlog.read import session

    def broken(self: object, *, runs: bool, gate: object = None) -> Iterator[Any]:  # _rows' signature
        raise KeyError("a bug inside the reader")
        yield  # a generator, as the reader's rows are

    monkeypatch.setattr(session.SessionLog, "_rows", broken)
    for path in (LOOP, V0):
        for view in ("stored", "stored_runs", "v4", "records"):
            with dshlog.open_session(path, strict=False) as log:
                it = log.v4().records() if view == "records" else (log.v4() if view == "v4" else getattr(log, view)())
                with pytest.raises(dshlog.InternalError) as caught:
                    list(it)
            assert isinstance(caught.value.__cause__, KeyError), view
    with dshlog.open_session(LOOP) as log:  # not one wrapper per layer: the view's own stream is guarded once
        assert log.v4()._stream().__name__ == "guarded"  # type: ignore[attr-defined]  # a generator's name
    with session.open_log(LOOP) as log:  # the core's own logs are not wrapped (their callers are the boundary)
        with pytest.raises(KeyError):
            list(log.stored())


def test_every_entry_point_is_a_boundary() -> None:
    """Each operation the library offers (a public function of ``dshlog.ops``, and the store's
    listing) is wrapped by ``errors.boundary``."""
    entry_points = [n for n in dshlog.__all__ if inspect.isfunction(getattr(dshlog, n))
                    and (getattr(dshlog, n).__module__.startswith("dshlog.ops.") or n == "list_sessions")]
    assert len(entry_points) >= 26
    for name in entry_points:
        assert getattr(getattr(dshlog, name), "__wrapped__", None) is not None, f"{name} is not behind errors.boundary"


def test_the_batches_are_behind_the_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a task of a batch leaves as InternalError when the caller's loop reaches it."""
    from dshlog.ops import validate as ops_validate

    def broken(*_args: object, **_kw: object) -> None:
        raise KeyError("a bug in a task")

    monkeypatch.setattr(ops_validate, "validate_log", broken)
    monkeypatch.setattr(ops_validate, "_validate_log", broken)  # what a batch's task runs for a file (it may resume)
    with pytest.raises(dshlog.InternalError):
        list(dshlog.validate_many([LOOP]))
    with pytest.raises(dshlog.UsageError):  # a bad pattern, before any session is read
        list(dshlog.search([LOOP], dshlog.Query("(", regex=True)))
    assert [o.status for o in dshlog.migrate_many([LOOP], check=True)] == ["current"]
    assert [s.path for s in dshlog.stats_many([LOOP, V0])] == [str(LOOP), str(V0)]
    assert dshlog.rescue(LOOP).status == "accepted"
    assert dshlog.usage_report(LOOP.parent, by=["model"]).rows
