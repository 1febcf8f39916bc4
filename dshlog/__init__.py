"""dshlog: inspect, validate, repair, fork and migrate DeepSeek Harness (dsh) session logs.

The library gives a script the same truth the ``dshlog`` command prints::

    import dshlog

    report = dshlog.validate("session.v4.jsonl")
    print(report.exit_code, [p.message for p in report.files[0].errors])

    with dshlog.open_session("session.v4.jsonl") as log:   # dsh's view of the log
        messages = dshlog.derive_messages(log.v4())

Each operation returns a typed, frozen result whose ``as_dict()`` is the
versioned JSON document (``{"shape": 1, ...}``) the matching command prints
with ``--json``.  Events are plain dicts, typed as :class:`Event`.  Only the
errors of :mod:`dshlog.errors` leave the library (:class:`DshlogError` and its
subclasses, each with its :class:`ExitCode`; a bug is :class:`InternalError`).
The library never prints, never exits and reads no environment variable: roots
and paths are passed in.  docs/python-api.md has the guide and examples.

The names below are loaded on first use, so ``dshlog --version`` and the
command line pay only for what they use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

#: Public name -> the module that owns it (one owner each; nothing is defined here).
_OWNERS: dict[str, str] = {
    # opening a log, and its views
    "open_session": "dshlog.ops.sessions",
    "Source": "dshlog.read.source",
    "find_session": "dshlog.ops.sessions",
    "stored_events": "dshlog.ops.sessions",
    "v4_events": "dshlog.ops.sessions",
    "SessionLog": "dshlog.read.session",
    "V4View": "dshlog.read.view",
    "EventRecord": "dshlog.read.session",
    # the fold, derived messages, requests
    "fold": "dshlog.check.surface",
    "SurfaceFold": "dshlog.check.surface",
    "derive_messages": "dshlog.check.surface",
    "surface": "dshlog.ops.surface",
    "rebuild_request": "dshlog.ops.rebuild",
    "request_series": "dshlog.ops.requests",
    # checking, summaries
    "validate": "dshlog.ops.validate",
    "session_info": "dshlog.ops.info",
    "session_stats": "dshlog.ops.stats",
    "Problem": "dshlog.check.problems",
    "Severity": "dshlog.check.problems",
    "Summary": "dshlog.model.summary",
    # writers
    "plan_repair": "dshlog.ops.repair",
    "repair_copy": "dshlog.ops.repair",
    "repair_in_place": "dshlog.ops.repair",
    "fork_session": "dshlog.ops.fork",
    "migrate_session": "dshlog.ops.migrate",
    "migrate_sessions": "dshlog.ops.migrate",
    "export_transcript": "dshlog.ops.export",
    "export_bytes": "dshlog.ops.export",
    "RepairPlan": "dshlog.model.repair",
    # the store
    "list_sessions": "dshlog.read.store",
    "grep_session": "dshlog.ops.sessions",
    "SessionEntry": "dshlog.read.store",
    # many sessions: batches, usage, search, rescue
    "validate_many": "dshlog.ops.validate",
    "stats_many": "dshlog.ops.stats",
    "migrate_many": "dshlog.ops.migrate",
    "usage_report": "dshlog.ops.report",
    "UsageReport": "dshlog.model.usage",
    "PriceTable": "dshlog.model.usage",
    "search": "dshlog.ops.search",
    "Query": "dshlog.model.search",
    "Hit": "dshlog.model.search",
    "SessionHits": "dshlog.ops.search",
    "rescue": "dshlog.ops.rescue",
    "RescueOutcome": "dshlog.ops.rescue",
    # which body every fast path runs (the process's mode)
    "set_paths": "dshlog.fastpaths",
    "paths_mode": "dshlog.fastpaths",
    # how batch work runs (a policy the caller passes)
    "Executor": "dshlog.executor",
    "InProcess": "dshlog.executor",
    "ProcessPool": "dshlog.executor",
    "DaskExecutor": "dshlog.executor",
    # typed results
    "SHAPE": "dshlog.output.jsondoc",
    "ExportResult": "dshlog.ops.export",
    "ForkResult": "dshlog.ops.fork",
    "Migration": "dshlog.ops.migrate",
    "MigrationOutcome": "dshlog.ops.migrate",
    "RebuiltRequest": "dshlog.ops.rebuild",
    "RepairOutcome": "dshlog.ops.repair",
    "RequestRow": "dshlog.ops.requests",
    "RequestSeries": "dshlog.ops.requests",
    "SessionInfo": "dshlog.ops.info",
    "SessionStats": "dshlog.ops.stats",
    "Stats": "dshlog.ops.stats",
    "SurfaceView": "dshlog.ops.surface",
    "Validation": "dshlog.ops.validate",
    "ValidationReport": "dshlog.ops.validate",
    # the records of a log
    "Event": "dshlog.protocol.events",
    "StoredEvent": "dshlog.protocol.events",
    "SessionHeader": "dshlog.protocol.events",
    "SurfaceOp": "dshlog.protocol.events",
    # JSON exactly as dsh writes it
    "dumps": "dshlog.protocol.jsjson",
    "dumps_pretty": "dshlog.protocol.jsjson",
    "loads": "dshlog.protocol.jsjson",
    # errors and exit codes
    "ExitCode": "dshlog.errors",
    "exit_code_of": "dshlog.errors",
    "Location": "dshlog.errors",
    "DshlogError": "dshlog.errors",
    "InternalError": "dshlog.errors",
    "UsageError": "dshlog.errors",
    "InvalidArgument": "dshlog.errors",
    "NotASessionLog": "dshlog.errors",
    "CorruptLog": "dshlog.errors",
    "UnsupportedVersion": "dshlog.errors",
    "MigrationRefused": "dshlog.errors",
    "Refused": "dshlog.errors",
    "LockHeld": "dshlog.errors",
    "IOFailure": "dshlog.errors",
}

#: What the name is called in its owner, where the public name differs.
_RENAMED: dict[str, str] = {"rescue": "rescue_session", "set_paths": "set_mode", "paths_mode": "mode"}

__all__ = ["__version__", *_OWNERS]


def __getattr__(name: str) -> Any:
    """Load a public name from its owner on first use (PEP 562), then keep it here."""
    owner = _OWNERS.get(name)
    if owner is None:
        raise AttributeError(f"module 'dshlog' has no attribute {name!r}")
    value = getattr(import_module(owner), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_OWNERS))


if TYPE_CHECKING:  # what a type checker sees: the same names, imported eagerly
    from .check.problems import Problem as Problem
    from .check.problems import Severity as Severity
    from .check.surface import SurfaceFold as SurfaceFold
    from .check.surface import fold as fold
    from .executor import DaskExecutor as DaskExecutor
    from .fastpaths import mode as paths_mode  # noqa: F401 - public: listed in __all__ through _OWNERS
    from .fastpaths import set_mode as set_paths  # noqa: F401 - public: listed in __all__ through _OWNERS
    from .executor import Executor as Executor
    from .executor import InProcess as InProcess
    from .executor import ProcessPool as ProcessPool
    from .errors import CorruptLog as CorruptLog
    from .errors import DshlogError as DshlogError
    from .errors import ExitCode as ExitCode
    from .errors import InternalError as InternalError
    from .errors import InvalidArgument as InvalidArgument
    from .errors import IOFailure as IOFailure
    from .errors import Location as Location
    from .errors import LockHeld as LockHeld
    from .errors import MigrationRefused as MigrationRefused
    from .errors import NotASessionLog as NotASessionLog
    from .errors import Refused as Refused
    from .errors import UnsupportedVersion as UnsupportedVersion
    from .errors import UsageError as UsageError
    from .errors import exit_code_of as exit_code_of
    from .check.surface import derive_messages as derive_messages
    from .model.repair import RepairPlan as RepairPlan
    from .model.search import Hit as Hit
    from .model.search import Query as Query
    from .model.usage import PriceTable as PriceTable
    from .model.usage import UsageReport as UsageReport
    from .model.summary import Summary as Summary
    from .ops.export import export_bytes as export_bytes
    from .ops.export import export_transcript as export_transcript
    from .ops.sessions import find_session as find_session
    from .ops.fork import fork_session as fork_session
    from .ops.sessions import grep_session as grep_session
    from .read.store import list_sessions as list_sessions
    from .ops.migrate import migrate_many as migrate_many
    from .ops.migrate import migrate_session as migrate_session
    from .ops.migrate import migrate_sessions as migrate_sessions
    from .ops.sessions import open_session as open_session
    from .read.source import Source as Source
    from .ops.repair import plan_repair as plan_repair
    from .ops.rebuild import rebuild_request as rebuild_request
    from .ops.repair import repair_copy as repair_copy
    from .ops.repair import repair_in_place as repair_in_place
    from .ops.requests import request_series as request_series
    from .ops.rescue import rescue_session as rescue  # noqa: F401 - public: listed in __all__ through _OWNERS
    from .ops.search import search as search
    from .ops.info import session_info as session_info
    from .ops.stats import session_stats as session_stats
    from .ops.stats import stats_many as stats_many
    from .ops.sessions import stored_events as stored_events
    from .ops.surface import surface as surface
    from .ops.report import usage_report as usage_report
    from .ops.sessions import v4_events as v4_events
    from .ops.validate import validate as validate
    from .ops.validate import validate_many as validate_many
    from .output.jsondoc import SHAPE as SHAPE
    from .ops.export import ExportResult as ExportResult
    from .ops.fork import ForkResult as ForkResult
    from .ops.migrate import Migration as Migration
    from .ops.migrate import MigrationOutcome as MigrationOutcome
    from .ops.rebuild import RebuiltRequest as RebuiltRequest
    from .ops.repair import RepairOutcome as RepairOutcome
    from .ops.requests import RequestRow as RequestRow
    from .ops.requests import RequestSeries as RequestSeries
    from .ops.info import SessionInfo as SessionInfo
    from .ops.stats import SessionStats as SessionStats
    from .ops.stats import Stats as Stats
    from .ops.surface import SurfaceView as SurfaceView
    from .ops.validate import Validation as Validation
    from .ops.validate import ValidationReport as ValidationReport
    from .ops.rescue import RescueOutcome as RescueOutcome
    from .ops.search import SessionHits as SessionHits
    from .read.session import EventRecord as EventRecord
    from .read.session import SessionLog as SessionLog
    from .read.view import V4View as V4View
    from .read.store import SessionEntry as SessionEntry
    from .protocol.events import Event as Event
    from .protocol.events import SessionHeader as SessionHeader
    from .protocol.events import StoredEvent as StoredEvent
    from .protocol.events import SurfaceOp as SurfaceOp
    from .protocol.jsjson import dumps as dumps
    from .protocol.jsjson import dumps_pretty as dumps_pretty
    from .protocol.jsjson import loads as loads
