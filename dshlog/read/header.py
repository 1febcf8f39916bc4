"""Header admission: dsh's decision on a header line, before any row is read.

dsh's catalog (``readHeader``, ``createRestore``) does three things with line 1 of a
generation, in this order, and stops at the first refusal:

1. read ``version`` (it must be a count) and refuse a newer format as unsupported;
2. decode the *physical* header with the codec of that version, with the codec's
   own labels and check order: the v0/v1 codec (``released v0 physical header lacks
   required member "id"``: unexpected members before missing ones, names
   JSON-quoted) or the v2 codec that v3 and v4 reuse (``released v2 physical header
   lacks id``: missing before unexpected, and labelled v2 for v3/v4 too); each codec
   then checks the logical header it decoded (``format v2 header cwd must be
   absolute``);
3. migrate the header through the chain to v4 (:func:`dshlog.migrate.chain.header_only`).

This module is the codec's header half, beside :mod:`dshlog.read.rows` (its row
half): every strict reader admits the header here, and the header-level rules of
``check/header.py`` (which ``validate`` reports in full) stay the logical checks
that follow.  A lenient reader still shows a header dsh refuses (with a note).

It also decides which format version a log's rows are read as (:func:`decide_version`):
dsh's decision for a strict reader, with the persistence layer's checks of the file's
name and place; for a lenient one, the header's word, with what a log without one (or
with a damaged one) is taken to be.

A whole ``{{...}}`` placeholder cwd stands for an absolute path in dsh's test
snapshots (the oracle swaps it for one); a cwd holding a placeholder anywhere
(``{{cwd}}/workspace``, only ever written by snapshots) is taken as that stand-in
too, which dsh's code does not do (README "How dshlog relates to dsh").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from ..check.header import is_absolute_cwd
from ..check.problems import Problem, Problems, Severity
from ..errors import CorruptLog, DshlogError, Location, UnsupportedVersion
from ..protocol.jsjson import js_string, stringify
from ..protocol.layout import parse_generation
from ..protocol.texts import FORMAT_VERSION_REFUSAL, HEADER_NOT_AN_OBJECT, newer_version, older_version
from ..protocol.values import has_placeholder, is_count, is_safe_integer, safe_int
from .container import Container
from .place import place_refusal
from ..protocol.vocabulary import (
    CURRENT_VERSION,
    header_optional_keys,
    header_required_order,
    logical_header_keys,
)

__all__ = ["HeaderDecision", "decide_version", "decode_physical_header", "detect_headerless_version", "is_damaged_header",
           "read_header", "refused_header_note", "stored_version"]

Status = Literal["current", "migration-required", "unsupported", "malformed"]


class _Refusal(Exception):
    """One codec refusal (a ``SessionFormatError``): the text is dsh's."""


def _count(value: Any, label: str) -> int:
    if not is_count(value):
        raise _Refusal(f"{label} must be a non-negative safe integer")
    return safe_int(value)


def _cwd_ok(cwd: str) -> bool:
    return is_absolute_cwd(cwd) or has_placeholder(cwd)


def _v0_keys(record: dict[str, Any], required: tuple[str, ...], optional: frozenset[str], label: str) -> None:
    """``assertReleasedV0Keys``: the first unexpected member, then the first missing one."""
    allowed = set(required) | optional
    for key in record:
        if key not in allowed:
            raise _Refusal(f"{label} has unexpected member {stringify(key)}")
    for key in required:
        if key not in record:
            raise _Refusal(f"{label} lacks required member {stringify(key)}")


def _v2_keys(record: dict[str, Any], required: tuple[str, ...], optional: frozenset[str], label: str, *, field: str) -> None:
    """``exactKeys``: the first missing key, then the first unexpected one."""
    for key in required:
        if key not in record:
            raise _Refusal(f"{label} lacks {field}{key}")
    allowed = set(required) | optional
    for key in record:
        if key not in allowed:
            raise _Refusal(f"{label} has unexpected field {key}")


def _logical(record: dict[str, Any], version: int, *, v0_style: bool) -> None:
    """The codec's check of the logical header it decoded (``format vN header ...``)."""
    tag = f"format v{version} header"
    required, optional = logical_header_keys()
    if v0_style:
        _v0_keys(record, required, optional, tag)
    else:
        _v2_keys(record, required, optional, tag, field="required field ")
    if record["version"] != version:
        raise _Refusal(f"expected {tag}")
    if not isinstance(record["id"], str):
        raise _Refusal(f"{tag} id must be a string")
    _count(record["createdAt"], f"{tag} createdAt")
    if v0_style:
        if not isinstance(record["isSeeded"], bool):
            raise _Refusal(f"{tag} isSeeded must be a boolean")
        _count(record["delegationDepth"], f"{tag} delegationDepth")
        for key in ("cwd", "parentSession", "agentPreset"):
            if key in record and not isinstance(record[key], str):
                raise _Refusal(f"{tag} {key} must be a string")
        if isinstance(record.get("cwd"), str) and not _cwd_ok(record["cwd"]):
            raise _Refusal(f"{tag} cwd must be absolute")
    else:
        _count(record["delegationDepth"], f"{tag} delegationDepth")
        if not isinstance(record["isSeeded"], bool):
            raise _Refusal(f"{tag} isSeeded must be boolean")
        if "cwd" in record and not (isinstance(record["cwd"], str) and _cwd_ok(record["cwd"])):
            raise _Refusal(f"{tag} cwd must be absolute")
        for key in ("parentSession", "agentPreset"):
            if key in record and not isinstance(record[key], str):
                raise _Refusal(f"{tag} {key} must be a string")
    if "origin" in record and record["origin"] != "subagent":
        raise _Refusal(f'{tag} origin must be "subagent"')


def _decode_v0(value: Any, version: int) -> tuple[dict[str, Any], int]:
    """The v0/v1 codec's ``decodePhysicalHeader``: (logical header, inherited event count)."""
    label = f"released v{version} physical header"
    if not isinstance(value, dict):
        raise _Refusal(f"{label} must be a JSON object")
    _v0_keys(value, header_required_order(version), header_optional_keys(version), label)
    if value["type"] != "session" or value["version"] != version or isinstance(value["version"], bool):
        raise _Refusal(f"expected released v{version} physical Session header")
    tag = f"released v{version} header"
    if not isinstance(value["id"], str):
        raise _Refusal(f"{tag} id must be a string")
    created = _count(value["createdAt"], f"{tag} createdAt")
    depth = _count(value["delegationDepth"], f"{tag} delegationDepth")
    seed = 0 if "seedLength" not in value else _count(value["seedLength"], f"{tag} seedLength")
    for key in ("cwd", "parentSession", "agentPreset"):
        if key in value and not isinstance(value[key], str):
            raise _Refusal(f"{tag} {key} must be a string")
    if "origin" in value and value["origin"] != "subagent":
        raise _Refusal(f'{tag} origin must be "subagent"')
    logical = _logical_from(value, version, created, depth, "seedLength" in value)
    _logical(logical, version, v0_style=True)
    return logical, seed


def _decode_v2(value: Any, version: int) -> dict[str, Any]:
    """The v2 codec's ``decodePhysicalHeader`` (v3 and v4 hand it their header as v2)."""
    label = "released v2 physical header"
    if not isinstance(value, dict):
        raise _Refusal(f"{label} must be an object")
    _v2_keys(value, header_required_order(2), header_optional_keys(2), label, field="")
    if value["type"] != "session" or (version == 2 and (value["version"] != 2 or isinstance(value["version"], bool))):
        raise _Refusal("expected released v2 physical Session header")
    tag = "released v2 header"
    if not isinstance(value["id"], str):
        raise _Refusal(f"{tag} id must be a string")
    created = _count(value["createdAt"], f"{tag} createdAt")
    depth = _count(value["delegationDepth"], f"{tag} delegationDepth")
    if not isinstance(value["isSeeded"], bool):
        raise _Refusal(f"{tag} isSeeded must be boolean")
    for key in ("cwd", "parentSession", "agentPreset"):
        if key in value and not isinstance(value[key], str):
            raise _Refusal(f"{tag} {key} must be a string")
    if "origin" in value and value["origin"] != "subagent":
        raise _Refusal(f'{tag} origin must be "subagent"')
    logical = _logical_from(value, 2, created, depth, value["isSeeded"])
    _logical(logical, 2, v0_style=False)
    return {**logical, "version": version}


def _logical_from(value: dict[str, Any], version: int, created: int, depth: int, seeded: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"version": version, "id": value["id"], "createdAt": created}
    for key in ("cwd", "parentSession"):
        if key in value:
            out[key] = value[key]
    out["isSeeded"] = seeded
    if "origin" in value:
        out["origin"] = value["origin"]
    out["delegationDepth"] = depth
    if "agentPreset" in value:
        out["agentPreset"] = value["agentPreset"]
    return out


def decode_physical_header(value: Any, version: int) -> tuple[dict[str, Any], int]:
    """dsh's codec decode of a physical header of ``version``: (logical header, inherited count).

    Raises :class:`~dshlog.errors.CorruptLog` with dsh's text (a ``SessionFormatError``).
    The inherited count is v0/v1's ``seedLength`` (v2+ learn it from the body).
    """
    try:
        if version <= 1:
            return _decode_v0(value, version)
        if version == 2:
            return _decode_v2(value, 2), 0
        if not isinstance(value, dict) or value.get("version") != version:
            raise _Refusal(f"expected format v{version} physical Session header" if version == 3 else "expected format v4 physical header")
        return _decode_v2({**value, "version": 2}, version), 0
    except _Refusal as exc:
        raise CorruptLog(str(exc)) from None


def stored_version(header: Any) -> int:
    """``inspectSessionFormatVersion``: the version, read before any other check."""
    if not isinstance(header, dict):
        raise CorruptLog(HEADER_NOT_AN_OBJECT)
    version = header.get("version")
    if not is_count(version):
        raise CorruptLog(FORMAT_VERSION_REFUSAL)
    return safe_int(version)


class HeaderDecision(msgspec.Struct, frozen=True):
    """dsh's decision on a header line (the catalog's ``readHeader``).

    ``header`` is the v4 physical header the log has after migration (for
    ``current`` and ``migration-required``); ``reason`` is dsh's text otherwise.
    """

    status: Status
    stored_version: int | None
    header: dict[str, Any] | None = None
    reason: str | None = None

    @property
    def admitted(self) -> bool:
        return self.status in ("current", "migration-required")

    def refusal(self, *, path: str | None = None, loc: Location | None = None) -> DshlogError:
        """The error a strict reader raises for a refused header (exit 3 unsupported, 4 malformed)."""
        cls = UnsupportedVersion if self.status == "unsupported" else CorruptLog
        return cls(self.reason or "", path=path, loc=loc)


def read_header(header: Any) -> HeaderDecision:
    """dsh's header decision: version, the codec's physical decode, then the chain to v4.

    A newer version is refused with the persistence layer's words (see
    :func:`~dshlog.protocol.texts.newer_version`).
    """
    try:
        version = stored_version(header)
    except DshlogError as exc:
        return HeaderDecision("malformed", None, reason=exc.message)
    if version > CURRENT_VERSION:
        return HeaderDecision("unsupported", version, reason=newer_version(header.get("id"), version, CURRENT_VERSION))
    try:
        decode_physical_header(header, version)
        placeholder = has_placeholder(header.get("cwd"))
        if version == CURRENT_VERSION:
            migrated = header
        else:
            from ..migrate.chain import header_only  # an older header only: a v4 one loads no migration

            migrated = header_only(header, projection=placeholder)
    except UnsupportedVersion as exc:
        return HeaderDecision("unsupported", version, reason=exc.message)
    except DshlogError as exc:
        return HeaderDecision("malformed", version, reason=exc.message)
    status: Status = "current" if version == CURRENT_VERSION else "migration-required"
    return HeaderDecision(status, version, header=migrated)


def detect_headerless_version(sample: bytes) -> int:
    """Stored version of a header-less event stream, judged from distinctive content."""
    if b'"assistant/chunk"' in sample or b'-chunks","seq0"' in sample:
        return 0
    if b'"role":"tool"' in sample or b'"role": "tool"' in sample:
        return 4
    if b'"system/message"' in sample:
        return 3 if b'"kind":"plugin"' in sample or b'"kind": "plugin"' in sample else 4
    if b'"tool-result"' in sample or b'"start":' in sample and b'"op":"replace"' in sample:
        return 0 if b'"stream"' not in sample else 2
    return CURRENT_VERSION


def is_damaged_header(obj: dict[str, Any]) -> bool:
    """A first line that lacks ``type`` but has header members is a damaged header, not an event.

    dsh reads line 1 as the header whatever it holds; only an input whose first row
    is an event (it has ``seq``/``data``) is a header-less stream.
    """
    return "type" not in obj and "seq" not in obj and "data" not in obj and any(k in obj for k in ("version", "id", "createdAt"))


def refused_header_note(reason: str | None) -> str:
    """A lenient reader's note on a header dsh refuses (``validate`` turns it into dsh's refusal itself)."""
    return f"dsh refuses this header: {reason}"


def _june_prerelease(sample: bytes) -> bool:
    """Header ``version:1`` written by the June 2026 pre-release writer (NOTES.md 2)."""
    if b'"sourceEventSeqs":[[' in sample or b'-chunks"' in sample:
        return False
    return b'"trigger"' in sample or b'"type":"usage"' in sample or b'"type":"error"' in sample or b'"assistant/chunk"' in sample


def _named_version(path: str, container: str) -> int | None:
    """The format version a generation's file name names (``None``: not a generation name, or not a JSONL container)."""
    named = parse_generation(os.path.basename(path)) if container in (Container.JSONL, Container.ZSTD) else None
    return named.version if named is not None else None


def decide_version(header: dict[str, Any] | None, *, path: str, loc: Location | None, container: str, strict: bool,
                   notes: Problems, sample: Callable[[int], bytes], head: bytes = b"",
                   format_version: int | None = None) -> tuple[int, HeaderDecision | None]:
    """The version a log's rows are read as, and dsh's decision on its header (``None``: no header was decided).

    ``format_version``: the caller's word (``--format-version``), taken as it is.
    ``head``: the leading bytes already at hand, ``sample(n)``: up to ``n`` leading
    bytes of the body, for a judgement from content.  Strict: dsh's decision, raised
    with dsh's words where it refuses (the header, a version foreign to the file's
    name or place).  Lenient: the header's version, with a note where dsh would refuse.
    """
    if format_version is not None:
        return format_version, None
    if header is None:
        return detect_headerless_version(head if head else sample(8 << 20)), None
    decision = read_header(header)
    if strict:
        _refuse_foreign_version(header, path, loc, container)
        if not decision.admitted:
            raise decision.refusal(path=path, loc=loc)
        v = decision.stored_version
        assert v is not None
        _check_name(v, path, loc, container, strict, notes)
        refusal = place_refusal(path, header.get("id"), header.get("cwd"), compressed=container == Container.ZSTD)
        if refusal is not None:
            raise CorruptLog(refusal, path=path, loc=loc)
        return v, decision
    if not decision.admitted and decision.stored_version is not None and decision.stored_version <= CURRENT_VERSION:
        notes.add(Problem("header", refused_header_note(decision.reason), Severity.WARNING, loc=loc))
    version = header.get("version")
    if version is None:
        # v0/v1 headers never carry isSeeded (v2+ require it): use that before sniffing content
        name_v = _named_version(path, container)
        guess = name_v if name_v is not None else (detect_headerless_version(sample(8 << 20)) if "isSeeded" in header else 0)
        notes.add(Problem("header", f"header lacks version; reading as v{guess} (a test-support fixture: dsh itself refuses such a header)", Severity.WARNING, loc=loc))
        return guess, decision
    if not is_count(version):
        raise CorruptLog(FORMAT_VERSION_REFUSAL, path=path, loc=loc)
    v = safe_int(version)
    if v > CURRENT_VERSION:
        # lenient readers (events, info, validate) still show the rows, read with the v4 row codec
        notes.add(Problem("unsupported-version", decision.reason or "", Severity.ERROR, loc=loc))
        return v, decision
    if v == 1 and _june_prerelease(sample(1 << 20)):
        notes.add(Problem("prerelease", "header version 1 written by the June 2026 pre-release writer; read as v0 (its counter was reset)", Severity.WARNING, loc=loc))
        return 0, decision
    _check_name(v, path, loc, container, strict, notes)
    return v, decision


def _refuse_foreign_version(header: dict[str, Any], path: str, loc: Location | None, container: str) -> None:
    """dsh's current-slot scanner: a header in ``session.v4.jsonl[.zstd]`` whose version is not
    the current one is refused as unsupported before anything else of the header is judged
    (only a historical slot is migrated, and only its reader compares name and header)."""
    v = header.get("version")
    if _named_version(path, container) != CURRENT_VERSION or not is_safe_integer(v) or v == CURRENT_VERSION:
        return
    sid = header.get("id") if isinstance(header.get("id"), str) else js_string(header.get("id"))
    v = safe_int(v)
    text = newer_version(sid, v, CURRENT_VERSION) if v > CURRENT_VERSION else older_version(sid, v, CURRENT_VERSION)
    raise UnsupportedVersion(text, path=path, loc=loc)


def _check_name(v: int, path: str, loc: Location | None, container: str, strict: bool, notes: Problems) -> None:
    """The persistence layer's rule: a canonical file name names its header's version."""
    name_v = _named_version(path, container)
    if name_v is not None and name_v != v and not (name_v == 0 and path.endswith((".expected.jsonl", ".golden.jsonl"))):
        msg = f"resolved JSONL source filename identifies v{name_v}, but its header identifies v{v}"
        if strict:
            raise CorruptLog(msg, path=path, loc=loc)
        notes.add(Problem("header", msg, Severity.WARNING, loc=loc))
