"""Stream-record rules of a settlement's embedded ``stream`` (SEMANTICS §1.5, FORMAT §5.1).

A settlement embeds tens of stream records and the runs hold most of a v4 log's
integers, so checking them one call per record was a fifth of ``validate``.
Two proofs decide the common, well-formed case before any record is worded:

* :func:`stream_clean`, the typed decoder: the records converted by msgspec into
  tagged ``Struct``s built from this module's key sets and field rules (exact keys,
  ``int``/``str`` types and safe-integer bounds checked in C), then the one
  cross-field rule (``dt`` one shorter than its members) in Python.  It proves
  both :func:`check_stream` and :func:`check_stream_blocks` silent, and only for
  JSON values (it takes a tuple for an array);
* :func:`_stream_passes`, the same proof for any Python value, one loop with the
  integer checks done once over the whole stream in C.

A stream neither proves goes through :func:`check_stream_record`, which words the
problems.  ``tests/test_typed.py`` mutates every field both ways.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Union

import msgspec

from ..protocol.values import MAX_SAFE_INTEGER, TypedCount, TypedSafeInt, is_count, is_safe_integer
from ..protocol.vocabulary import TOOL_CHANGE_BLOCKS
from .common import NOT_PROVEN, NonEmptyStr, nonempty_str, typed_converter, typed_none_of
from .problems import Problem, Reporter

__all__ = ["STREAM_SHAPE", "check_stream", "check_stream_blocks", "check_stream_record", "runs_aligned", "stream_clean"]

_STR_ONLY = frozenset((str,))
_INT_ONLY = frozenset((int,))

_CHUNK_KEYS = frozenset({"type", "time", "chunk"})
_TEXT_RUN_KEYS = frozenset({"type", "time0", "index", "dt", "texts"})
_TOOL_RUN_KEYS = frozenset({"type", "time0", "index", "dt", "id", "args"})
_TOOL_RUN_NAMED_KEYS = _TOOL_RUN_KEYS | {"name"}
_RUN_MEMBERS = {"text-chunks": "texts", "reasoning-chunks": "texts", "tool-call-chunks": "args"}
#: Block types a raw stream chunk may not carry (:func:`check_stream_blocks` reports them).
_REPORTED_BLOCKS = ("tool-result", *sorted(TOOL_CHANGE_BLOCKS))


# --------------------------------------------------------------------------- the typed decoder

NonEmptyStrings = Annotated[list[str], msgspec.Meta(min_length=1)]
#: A block type :func:`check_stream_blocks` lets pass (any other string).
_QuietBlock = typed_none_of(_REPORTED_BLOCKS)


_BLOCK = msgspec.defstruct("stream-block", [("type", _QuietBlock)], gc=False)
#: A raw chunk: a string type (the record rule); any block it names is one the block rule lets
#: pass.  Stricter than the block rule (which reads ``block`` only of a ``block-end``,
#: ``blockType`` only of a ``block-start``): a stricter proof only sends more streams to the
#: exact checks.
_CHUNK = msgspec.defstruct(
    "stream-chunk",
    [("type", str), ("block", _BLOCK | msgspec.UnsetType, msgspec.UNSET), ("blockType", _QuietBlock | msgspec.UnsetType, msgspec.UNSET)],
    gc=False,
)


#: Each record field's rule, as :func:`check_stream_record` words it.
_FIELD_SHAPES: dict[str, Any] = {
    "time": TypedSafeInt,  # time must be a safe integer
    "time0": TypedSafeInt,  # time0 must be a safe integer
    "index": TypedCount,  # index must be a non-negative safe integer
    "dt": list[TypedSafeInt],  # dt must be an array of safe integers
    "texts": NonEmptyStrings,  # texts must be a nonempty array of strings
    "args": NonEmptyStrings,  # args must be a nonempty array of strings
    "id": NonEmptyStr,  # id must be a nonempty string
    "name": NonEmptyStr,  # name must be a nonempty string when present
    "chunk": _CHUNK,  # chunk must be an object with a string type
}


def _record_shape(kind: str, keys: frozenset[str], optional: frozenset[str] = frozenset()) -> type[msgspec.Struct]:
    """The tagged ``Struct`` of one record kind: exactly ``keys`` (``optional`` may be absent)."""
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [(k, _FIELD_SHAPES[k]) for k in sorted(keys - {"type"} - optional)]
    fields += [(k, _FIELD_SHAPES[k] | msgspec.UnsetType, msgspec.UNSET) for k in sorted(optional)]
    return msgspec.defstruct(f"{kind}-record", fields, tag_field="type", tag=kind, forbid_unknown_fields=True, gc=False)


_CHUNK_RECORD = _record_shape("chunk", _CHUNK_KEYS)
_TOOL_RUN = _record_shape("tool-call-chunks", _TOOL_RUN_NAMED_KEYS, frozenset({"name"}))
_RECORDS = (_CHUNK_RECORD, _record_shape("text-chunks", _TEXT_RUN_KEYS), _record_shape("reasoning-chunks", _TEXT_RUN_KEYS), _TOOL_RUN)
#: The stream as a msgspec shape (a settlement's data shape embeds it; see :func:`runs_aligned`).
STREAM_SHAPE: Any = list[Union[_RECORDS]]  # type: ignore[valid-type]  # noqa: UP007 - a union built from a tuple, at run time
_STREAM = typed_converter(STREAM_SHAPE)


def runs_aligned(records: list[Any]) -> bool:
    """The one rule the shape cannot say, over records :data:`STREAM_SHAPE` accepted: ``dt`` one shorter than its members."""
    tool_run = _TOOL_RUN
    chunk = _CHUNK_RECORD
    for record in records:
        kind = type(record)
        if kind is not chunk and len(record.dt) != len(record.args if kind is tool_run else record.texts) - 1:
            return False
    return True


def stream_clean(stream: Any) -> bool:
    """Whether :func:`check_stream` and :func:`check_stream_blocks` certainly report nothing.

    For a JSON value only (what ``jsjson.loads`` makes): msgspec takes a tuple for
    an array, which the exact rules refuse.  ``False`` means "not proven".
    """
    try:
        records = _STREAM(stream)
    except NOT_PROVEN:
        return False
    return runs_aligned(records)


def _stream_passes(stream: list[Any]) -> bool:
    """Whether every record of ``stream`` certainly passes :func:`check_stream_record`.

    ``False`` means only "not proven": the caller then runs the exact per-record
    checks, which word the problems.
    """
    ints: list[Any] = []  # every time/time0/index scalar
    dts: list[list[Any]] = []
    strings: list[list[Any]] = []
    for record in stream:
        if type(record) is not dict:
            return False
        kind = record.get("type")
        keys = record.keys()
        if kind == "chunk":
            chunk = record.get("chunk")
            if keys != _CHUNK_KEYS or type(chunk) is not dict or type(chunk.get("type")) is not str:
                return False
            ints.append(record["time"])
            continue
        if kind == "text-chunks" or kind == "reasoning-chunks":
            if keys != _TEXT_RUN_KEYS:
                return False
            members = record["texts"]
        elif kind == "tool-call-chunks":
            if keys != _TOOL_RUN_KEYS:
                name = record.get("name")
                if keys != _TOOL_RUN_NAMED_KEYS or type(name) is not str or not name:
                    return False
            cid = record["id"]
            if type(cid) is not str or not cid:
                return False
            members = record["args"]
        else:
            return False
        dt = record["dt"]
        index = record["index"]
        if (
            type(members) is not list
            or type(dt) is not list
            or not members
            or len(dt) != len(members) - 1
            or type(index) is not int
            or index < 0
        ):
            return False
        ints.append(record["time0"])
        ints.append(index)
        dts.append(dt)
        strings.append(members)
    if not set(map(type, itertools.chain.from_iterable(strings))) <= _STR_ONLY:
        return False
    ints.extend(itertools.chain.from_iterable(dts))
    if not ints:
        return True
    return (
        set(map(type, ints)) <= _INT_ONLY
        and -MAX_SAFE_INTEGER <= min(ints)
        and max(ints) <= MAX_SAFE_INTEGER
    )


def _safe_int_list(values: list[Any]) -> bool:
    """Every member a safe integer; C-level type and bound checks first (streams hold many)."""
    if not values:
        return True
    if set(map(type, values)) <= _INT_ONLY:
        low: int = min(values)
        high: int = max(values)
        return -MAX_SAFE_INTEGER <= low and high <= MAX_SAFE_INTEGER
    return all(is_safe_integer(d) for d in values)  # floats such as 1.0 are judged one by one


def check_stream(stream: list[Any], index: int, report: Reporter) -> None:
    """Every record of the stream of the settlement at ``index`` (the one-pass proof first)."""
    if not _stream_passes(stream):
        for pos, record in enumerate(stream):
            check_stream_record(record, index, pos, report)


def check_stream_record(record: Any, index: int, pos: int, report: Reporter) -> None:
    """Exact key sets and run lengths of one stream record (SEMANTICS §1.5)."""
    where = f"stream record {pos} of seq {index}"

    def problem(text: str) -> None:
        report.report(Problem("stream", f"{where} {text}", seq=index))

    if not isinstance(record, dict):
        problem("must be an object")
        return
    kind = record.get("type")
    keys = set(record)
    if kind == "chunk":
        if keys != _CHUNK_KEYS:
            problem("(chunk) must have exactly type, time, chunk")
        if not is_safe_integer(record.get("time")):
            problem("time must be a safe integer")
        chunk = record.get("chunk")
        if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
            problem("chunk must be an object with a string type")
        return
    if isinstance(kind, str) and kind in _RUN_MEMBERS:
        members_key = _RUN_MEMBERS[kind]
        expected = set(_TEXT_RUN_KEYS if members_key == "texts" else _TOOL_RUN_KEYS)
        if kind == "tool-call-chunks":
            if "name" in record:
                expected.add("name")
                if not nonempty_str(record["name"]):
                    problem("name must be a nonempty string when present")
            if not nonempty_str(record.get("id")):
                problem("id must be a nonempty string")
    else:
        problem(f"has unknown record type {kind!r}")
        return
    if keys != expected:
        problem(f"({kind}) must have exactly {', '.join(sorted(expected))}")
    if not is_safe_integer(record.get("time0")):
        problem("time0 must be a safe integer")
    if not is_count(record.get("index")):
        problem("index must be a non-negative safe integer")
    members = record.get(members_key)
    dt = record.get("dt")
    if not isinstance(members, list) or not members or not set(map(type, members)) <= _STR_ONLY:
        problem(f"{members_key} must be a nonempty array of strings")
    if not isinstance(dt, list) or not _safe_int_list(dt):
        problem("dt must be an array of safe integers")
    elif isinstance(members, list) and members and len(dt) != len(members) - 1:
        problem(f"dt must have one entry fewer than {members_key} ({len(dt)} vs {len(members)})")


def check_stream_blocks(data: dict[str, Any], index: int, retired: str, report: Reporter) -> None:
    """Raw stream chunks may not carry retired wrappers or developer-only blocks."""
    stream = data.get("stream")
    for record in stream if isinstance(stream, list) else []:
        if not isinstance(record, dict) or record.get("type") != "chunk" or not isinstance(record.get("chunk"), dict):
            continue
        chunk = record["chunk"]
        block_type = None
        if chunk.get("type") == "block-end" and isinstance(chunk.get("block"), dict):
            block_type = chunk["block"].get("type")
        elif chunk.get("type") == "block-start":
            block_type = chunk.get("blockType")
        if not isinstance(block_type, str):
            continue  # the stream record checks report malformed chunks
        if block_type == "tool-result":
            report.report(Problem("retired", retired, seq=index))
        elif block_type in TOOL_CHANGE_BLOCKS:
            report.report(Problem("message", "format v4 tool-change blocks require developer role", seq=index))
