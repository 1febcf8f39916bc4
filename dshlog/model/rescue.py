"""Rescue transformations: the smallest changes that make a refused historical log acceptable to dsh.

dsh refuses some real historical logs outright (its migration chain or its v4
restore throws), and the session is then gone from the product.  Each
:class:`Transformation` here answers one refusal class found in real logs with
the smallest change that keeps every byte of content the user saw: it edits the
*stored* log (header and events of the stored version, before migration) and
says, event by event, what it changed and why (:class:`Change`).

Everything here is pure: a :class:`Stored` log in, a new one out.  Only where
events are kept is not: a log's events live encoded in a temporary file
(:class:`SpooledEvents`) and are decoded as they are read, so a rescue holds a few
events at a time, not its logs.  Whether a
change actually resolves dsh's refusal is not decided here but by dsh's own view
of the result, which :func:`plan` receives as a ``judge`` (the operation passes
the strict reader of :mod:`dshlog.read.session`).  That keeps this module below
the reading layer: it needs only the format's facts, and the one owner of dsh's
decision stays the reader.

Transformations are opt-in by name (``--allow NAME``); :func:`plan` always works
out the whole plan, so a dry run can name the transformations a log needs.
Seqs in a :class:`Change` are the seqs of the *source* log (an inserted event is
placed before the source event it names).  No transformation drops an event.
"""

from __future__ import annotations

import bisect
import os
import pickle
import struct
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any, Final, overload

from ..errors import ExitCode
from ..protocol.vocabulary import SURFACE_TYPES

__all__ = [
    "BY_NAME",
    "TRANSFORMATIONS",
    "Change",
    "EventColumn",
    "Plan",
    "Refusal",
    "SpooledEvents",
    "Spooler",
    "Step",
    "Stored",
    "Transformation",
    "iter_message_texts",
    "message_texts",
    "plan",
    "spool_events",
]

#: How many transformations one plan may chain (each is used at most once).
MAX_STEPS: Final[int] = 16

# ----------------------------------------------------------------------------- where events are kept

#: How many encoded bytes one read of a spool takes while its events are walked in order.
_BLOCK: Final[int] = 1 << 16
#: The encoding of a spooled event: pickle round-trips every value the reader makes exactly
#: (integers past 64 bits, -0.0, lone surrogates, key order), which JSON through orjson does not.
_PROTOCOL: Final[int] = pickle.HIGHEST_PROTOCOL
#: Each encoded event is framed by its length, so a spool is walked without an offset per event.
_FRAME: Final[struct.Struct] = struct.Struct("<Q")
#: A spool remembers where every this-many-th event starts: finding an event reads at most this many frames.
_EVERY: Final[int] = 64
_INT64: Final[range] = range(-(1 << 63), 1 << 63)


class EventColumn(Sequence[Any]):
    """A column of per-event values (seqs, origins) kept as runs of consecutive integers.

    A tuple of a log's seqs costs a pointer and an int object per event, an array
    8 bytes; a log's seqs are one run (``0, 1, 2, ...``) and a rescued log's
    origins a few (one more at each inserted or moved event), so here a column
    costs a few bytes a run.  A value that is not an integer (``None`` for an
    inserted event, a malformed seq) is kept as it is, in a table of exceptions.
    """

    __slots__ = ("_starts", "_firsts", "_other", "_n", "_last")

    def __init__(self, values: Iterable[Any] = ()) -> None:
        self._starts = array("q")  # where each run begins
        self._firsts = array("q")  # the value it begins with
        self._other: dict[int, Any] = {}
        self._n = 0
        self._last: int | None = None  # the previous value, when it is in a run
        for value in values:
            self.append(value)

    def append(self, value: Any) -> None:
        if type(value) is int and value in _INT64:
            if self._last is None or value != self._last + 1:
                self._starts.append(self._n)
                self._firsts.append(value)
            self._last = value
        else:
            self._other[self._n] = value
            self._last = None
        self._n += 1

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Any, ...]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(self._n)))
        k = i + self._n if i < 0 else i
        if not 0 <= k < self._n:
            raise IndexError("column index out of range")
        if k in self._other:
            return self._other[k]
        r = bisect.bisect_right(self._starts, k) - 1
        return self._firsts[r] + (k - self._starts[r])

    def dense(self) -> bool:
        """Every value is its own position (``0, 1, 2, ...``), as the seqs of every stored log are."""
        return not self._other and (self._n == 0 or (len(self._starts) == 1 and self._firsts[0] == 0))


class SpooledEvents(Sequence[dict[str, Any]]):
    """A log's events encoded in an anonymous temporary file, decoded when they are read.

    A stored log held as dicts needs about eleven times its bytes; rescue keeps the
    source, the current result and a candidate at once, so it held several logs'
    worth.  Here a log costs a few bytes per :data:`_EVERY` events in memory
    (where those start in the file) and its ``seqs`` a few bytes a run: events
    are decoded one at a time, walked in order through reads of a block at a
    time.  The file is deleted when the last reference to the events goes.
    """

    __slots__ = ("_file", "_fd", "_index", "_n", "_size", "seqs", "__weakref__")

    def __init__(self, file: IO[bytes], index: array[int], n: int, size: int, seqs: EventColumn) -> None:
        self._file = file
        self._fd = file.fileno()
        self._index = index
        self._n = n
        self._size = size
        #: Each event's ``seq`` as it was spooled (what a rebuild remaps references by).
        self.seqs = seqs
        weakref.finalize(self, file.close)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[dict[str, Any], ...]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(self._n)))
        k = i + self._n if i < 0 else i
        if not 0 <= k < self._n:
            raise IndexError("event index out of range")
        for raw in self.encoded(k, k + 1):
            return pickle.loads(raw)
        raise IndexError("event index out of range")  # pragma: no cover - encoded yields it

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.range(0, self._n)

    def range(self, start: int, stop: int) -> Iterator[dict[str, Any]]:
        """The events ``start`` to ``stop`` (excluded), decoded one at a time."""
        for raw in self.encoded(start, stop):
            yield pickle.loads(raw)

    def encoded(self, start: int, stop: int) -> Iterator[bytes]:
        """The encoded events ``start`` to ``stop`` (excluded), read a block at a time."""
        stop = min(stop, self._n)
        if start >= stop:
            return
        at = self._index[start // _EVERY]  # where the file bytes in ``buf`` begin
        buf, p = b"", 0
        for k in range(start - start % _EVERY, stop):
            for size in (_FRAME.size, -1):
                if size < 0:
                    size = _FRAME.unpack_from(buf, p - _FRAME.size)[0]
                if p + size > len(buf):  # the next frame or event goes past the block: read on
                    rest = buf[p:]
                    at += p
                    want = min(max(size, _BLOCK), self._size - at) - len(rest)
                    buf, p = rest + self._read(at + len(rest), want), 0
                    if len(buf) < size:
                        raise OSError(f"the event spool ends {size - len(buf)} bytes early")
                p += size
            if k >= start:
                yield buf[p - size:p]

    def _read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        while len(data) < size:  # a short read: a regular file gives one only at its end
            more = os.pread(self._fd, size - len(data), offset + len(data))
            if not more:
                break
            data += more
        return data


class Spooler:
    """Builds :class:`SpooledEvents`: events appended one at a time, or copied encoded from another spool."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(buffering=_BLOCK)  # noqa: SIM115 - owned by the events
        self._close = weakref.finalize(self, self._file.close)
        self._index = array("q")
        self._n = 0
        self._size = 0
        self._seqs = EventColumn()

    def append(self, ev: dict[str, Any]) -> None:
        self._put(pickle.dumps(ev, protocol=_PROTOCOL), ev.get("seq"))

    def extend(self, events: Sequence[dict[str, Any]], start: int, stop: int) -> None:
        """Events ``start`` to ``stop`` of ``events`` unchanged (copied as they are encoded when they are spooled)."""
        if isinstance(events, SpooledEvents):
            for k, raw in enumerate(events.encoded(start, stop), start):
                self._put(raw, events.seqs[k])
        else:
            for ev in events[start:stop]:
                self.append(ev)

    def _put(self, raw: bytes, seq: Any) -> None:
        if self._n % _EVERY == 0:
            self._index.append(self._size)
        self._file.write(_FRAME.pack(len(raw)))
        self._file.write(raw)
        self._size += _FRAME.size + len(raw)
        self._n += 1
        self._seqs.append(seq)

    def finish(self) -> SpooledEvents:
        """The events appended so far, ready to read (the spooler is done)."""
        self._file.flush()
        self._close.detach()
        return SpooledEvents(self._file, self._index, self._n, self._size, self._seqs)


def spool_events(events: Iterable[dict[str, Any]]) -> SpooledEvents:
    """``events`` spooled to a temporary file (:class:`SpooledEvents`), read one at a time."""
    out = Spooler()
    for ev in events:
        out.append(ev)
    return out.finish()


def _range(events: Sequence[dict[str, Any]], start: int, stop: int) -> Iterator[dict[str, Any]]:
    """Events ``start`` to ``stop`` of ``events`` one at a time (a spool decodes them as they come)."""
    if isinstance(events, SpooledEvents):
        return events.range(start, stop)
    return iter(events[start:stop])


def _seqs(events: Sequence[dict[str, Any]]) -> Sequence[Any]:
    return events.seqs if isinstance(events, SpooledEvents) else [ev.get("seq") for ev in events]


@dataclass(frozen=True)
class Stored:
    """A stored log: its physical header and its logical events, in the stored version.

    ``origins[i]`` is the source seq of ``events[i]`` (``None`` for an event a
    transformation inserted); ``version`` is the version the body was read as and
    ``version_proof`` says why when the header does not say it.  ``events`` is any
    sequence of events; the transformations write theirs to a spool
    (:class:`SpooledEvents`), whose ``origins`` are a :class:`EventColumn`.
    """

    header: dict[str, Any]
    events: Sequence[dict[str, Any]]
    version: int
    projection: bool = False
    version_proof: str = ""
    origins: Sequence[int | None] = ()

    def __post_init__(self) -> None:
        if not self.origins:
            if isinstance(self.events, SpooledEvents):
                object.__setattr__(self, "origins", self.events.seqs)
            else:
                object.__setattr__(self, "origins", tuple(ev.get("seq") for ev in self.events))


@dataclass(frozen=True)
class Change:
    """One edit: where (source seq, ``None`` for the header), what it was, what it is, and why."""

    transformation: str
    seq: int | None
    before: Any
    after: Any
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"transformation": self.transformation, "seq": self.seq, "before": self.before,
                "after": self.after, "why": self.why}


@dataclass(frozen=True)
class Refusal:
    """dsh's refusal of a log: the error class, its text and where (as the judge reports them)."""

    kind: str
    message: str
    seq: int | None = None
    exit_code: int = ExitCode.CORRUPT

    def describe(self) -> str:
        return f"{self.kind}: seq {self.seq}: {self.message}" if self.seq is not None else f"{self.kind}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "seq": self.seq}


#: dsh's decision on a stored log: ``None`` when it accepts it.
Judge = Callable[[Stored], Refusal | None]


@dataclass(frozen=True)
class Transformation:
    """A named, documented rescue: ``apply`` returns the changed log and its changes, or ``None``."""

    name: str
    summary: str
    apply: Callable[[Stored], tuple[Stored, list[Change]] | None]


# ----------------------------------------------------------------------------- seqs


def _remap_range(op: Any, m: Callable[[Any], Any]) -> Any:
    if not isinstance(op, dict):
        return op
    out = dict(op)
    for key in ("start", "end", "startSeq", "endSeq"):
        if key in out:
            out[key] = m(out[key])
    return out


def _remap_data(t: Any, data: Any, m: Callable[[Any], Any]) -> Any:
    """The seq references inside ``data`` of a v0..v3 event (the fields the chain's edges remap)."""
    if not isinstance(data, dict):
        return data
    if t == "command/done" and "sourceEventSeq" in data:
        return {**data, "sourceEventSeq": m(data["sourceEventSeq"])}
    if isinstance(t, str) and t.endswith(("/prune", "/summary")) and t.startswith(("compaction/", "compact/")):
        new = dict(data)
        if "shadowedRange" in new:
            new["shadowedRange"] = _remap_range(new["shadowedRange"], m)
        if isinstance(new.get("shadowedSeqs"), list):
            new["shadowedSeqs"] = [m(v) for v in new["shadowedSeqs"]]
        return new
    if t in ("session/title", "session/title-llm-request") and isinstance(data.get("messageSeqs"), list):
        return {**data, "messageSeqs": [m(v) for v in data["messageSeqs"]]}
    if t == "developer/message" and "headerSeq" in data:
        return {**data, "headerSeq": m(data["headerSeq"])}
    return data


#: One piece of a rebuilt log: a run of the source's events (by index), one of them, or a new event.
Item = range | int | dict[str, Any]


def _rebuild(s: Stored, items: list[Item]) -> Stored:
    """A log from ``items``: runs and single events of ``s`` (by index) and new events, in order.

    Seqs become positions again (dense from 0, as every stored version requires)
    and every seq reference of a kept event follows the event it names.  Where
    the source's seqs are its positions (every log the reader gives), where an
    event went follows from the runs of ``items``; otherwise from a table by seq,
    a later event's entry replacing an earlier one's.
    """
    n = len(s.events)
    # where each run of source events went: source indices [start, stop) to positions from ``to``
    runs: list[tuple[int, int, int]] = []
    pos = 0
    for item in items:
        if isinstance(item, dict):
            pos += 1
            continue
        run = range(item, item + 1) if isinstance(item, int) else item
        if run:
            runs.append((run.start, run.stop, pos))
        pos += len(run)
    seqs = _seqs(s.events)
    if isinstance(seqs, EventColumn) and seqs.dense():
        runs.sort()
        starts = [start for start, _, _ in runs]

        def m(value: Any) -> Any:
            if type(value) is int and 0 <= value < n:
                r = bisect.bisect_right(starts, value) - 1
                if r >= 0 and value < runs[r][1]:
                    return runs[r][2] + value - runs[r][0]
            return value
    else:
        old_seq_to_new: dict[Any, int] = {}
        for start, stop, to in runs:
            for k in range(start, stop):
                old_seq_to_new[seqs[k]] = to + k - start

        def m(value: Any) -> Any:
            return old_seq_to_new.get(value, value) if type(value) is int else value

    out = Spooler()
    origins = EventColumn()
    pos = 0
    for item in items:
        if isinstance(item, dict):
            out.append({**item, "seq": pos})
            origins.append(None)
            pos += 1
            continue
        run = range(item, item + 1) if isinstance(item, int) else item
        for k, ev in zip(run, _range(s.events, run.start, run.stop)):
            new = {**ev, "seq": pos}
            if isinstance(new.get("sourceEventSeqs"), list):
                new["sourceEventSeqs"] = [m(v) for v in new["sourceEventSeqs"]]
            if isinstance(new.get("surfaceOp"), dict):
                new["surfaceOp"] = _remap_range(new["surfaceOp"], m)
            new["data"] = _remap_data(new.get("type"), new.get("data"), m)
            out.append(new)
            origins.append(s.origins[k])
            pos += 1
    return replace(s, events=out.finish(), origins=origins)


def _edit(s: Stored, edit: Callable[[int, dict[str, Any]], dict[str, Any] | None]) -> Stored | None:
    """``s`` with each event ``edit`` returns a new one for replaced by it (``None``: nothing to edit).

    The events in between are copied as they are encoded, and the spool is only
    started at the first edit.
    """
    out: Spooler | None = None
    done = 0  # the events before this one are in ``out``
    for i, ev in enumerate(s.events):
        new = edit(i, ev)
        if new is None:
            continue
        if out is None:
            out = Spooler()
        out.extend(s.events, done, i)
        out.append(new)
        done = i + 1
    if out is None:
        return None
    out.extend(s.events, done, len(s.events))
    return replace(s, events=out.finish())


def _synthetic(type_: str, data: dict[str, Any], anchor: dict[str, Any]) -> dict[str, Any]:
    """A new event in the envelope's key order, timed like the event it is placed beside."""
    ev: dict[str, Any] = {"type": type_, "seq": anchor.get("seq", 0)}
    if "time" in anchor:
        ev["time"] = anchor["time"]
    ev["data"] = data
    return ev


def _data(ev: dict[str, Any]) -> dict[str, Any]:
    d = ev.get("data")
    return d if isinstance(d, dict) else {}


# ----------------------------------------------------------------------------- header


def _header_version(s: Stored) -> tuple[Stored, list[Change]] | None:
    """The header's version from the version the body reads as, when the reader proves it."""
    stated = s.header.get("version", None)
    if "version" in s.header and (stated == s.version or not s.version_proof):
        return None
    header: dict[str, Any] = {}
    for key, value in s.header.items():
        if key != "version":
            header[key] = value
        if key == "type":
            header["version"] = s.version
    header.setdefault("version", s.version)
    if "version" in s.header:
        why = f"the header says version {stated}, but the body is format v{s.version}: {s.version_proof}"
        before: Any = {"version": stated}
    else:
        why = f"the header has no version; the body reads as format v{s.version}" + (f" ({s.version_proof})" if s.version_proof else "")
        before = None
    return replace(s, header=header), [Change("header-version", None, before, {"version": s.version}, why)]


def _header_delegation_depth(s: Stored) -> tuple[Stored, list[Change]] | None:
    if "delegationDepth" in s.header:
        return None
    child = "parentSession" in s.header or s.header.get("origin") == "subagent"
    depth = 1 if child else 0
    why = ("the header names a parent session, so the session is at least one level deep; 1 is a stated "
           "default (the parent's own depth is not in this log)" if child else
           "the header names no parent session: a top-level session, depth 0")
    return replace(s, header={**s.header, "delegationDepth": depth}), [
        Change("header-delegation-depth", None, None, {"delegationDepth": depth}, why)]


# ----------------------------------------------------------------------------- payloads

#: The label a version-3 continuable descriptor requires when a version-2 one had none.
DEFAULT_DESCRIPTOR_LABEL: Final[str] = "subagent"


def _descriptor_v3(s: Stored) -> tuple[Stored, list[Change]] | None:
    changes: list[Change] = []

    def edit(i: int, ev: dict[str, Any]) -> dict[str, Any] | None:
        data = _data(ev)
        if ev.get("type") != "subagent/descriptor" or data.get("version") != 2:
            return None
        new = {**data, "version": 3}
        why = "descriptor version 2 carries every field version 3 requires (mode, provider); only the version number changes"
        if new.get("mode") == "continuable" and not isinstance(new.get("label"), str):
            new["label"] = DEFAULT_DESCRIPTOR_LABEL
            why += f'; a continuable version-3 descriptor needs a label: "{DEFAULT_DESCRIPTOR_LABEL}" (a stated default)'
        changes.append(Change("descriptor-v3", s.origins[i], data, new, why))
        return {**ev, "data": new}

    out = _edit(s, edit)
    return (out, changes) if out is not None else None


def _tool_definitions(s: Stored) -> tuple[Stored, list[Change]] | None:
    changes: list[Change] = []

    def edit(i: int, ev: dict[str, Any]) -> dict[str, Any] | None:
        data = _data(ev)
        header = data.get("header")
        if ev.get("type") != "request/header" or not isinstance(header, dict) or not isinstance(header.get("tools"), list):
            return None
        tools = header["tools"]
        if not any(isinstance(t, str) for t in tools):
            return None
        new_tools = [{"name": t, "description": "", "parameters": {}} if isinstance(t, str) else t for t in tools]
        changes.append(Change("tool-definitions", s.origins[i], tools, new_tools,
                              "the writer kept only each tool's name; dsh needs a definition object: the name is kept, "
                              "with an empty description and an empty parameters object (stated defaults)"))
        return {**ev, "data": {**data, "header": {**header, "tools": new_tools}}}

    out = _edit(s, edit)
    return (out, changes) if out is not None else None


#: Hook dialects renamed after early writers recorded them: early name -> the name dsh reads.
HOOK_DIALECT_RENAMES: Final[dict[str, str]] = {"claude": "claude-code"}


def _hook_dialect(s: Stored) -> tuple[Stored, list[Change]] | None:
    changes: list[Change] = []

    def edit(i: int, ev: dict[str, Any]) -> dict[str, Any] | None:
        data = _data(ev)
        if not str(ev.get("type", "")).startswith("hook/") or data.get("dialect") not in HOOK_DIALECT_RENAMES:
            return None
        new = {**data, "dialect": HOOK_DIALECT_RENAMES[data["dialect"]]}
        changes.append(Change("hook-dialect", s.origins[i], {"dialect": data["dialect"]}, {"dialect": new["dialect"]},
                              "an early writer spelt the Claude Code hook dialect \"claude\"; dsh knows it as \"claude-code\" "
                              "(the handler id keeps the writer's spelling)"))
        return {**ev, "data": new}

    out = _edit(s, edit)
    return (out, changes) if out is not None else None


def _surface_marker(s: Stored) -> tuple[Stored, list[Change]] | None:
    surface = SURFACE_TYPES.get(s.version, frozenset())
    changes: list[Change] = []

    def edit(i: int, ev: dict[str, Any]) -> dict[str, Any] | None:
        if ev.get("type") not in surface or "surfaceOp" in ev:
            return None
        new = dict(ev)
        new["surfaceOp"] = "append"
        changes.append(Change("surface-marker", s.origins[i], None, {"surfaceOp": "append"},
                              "a pre-release writer left the surface marker out; it wrote no replacements, so the "
                              "message was appended"))
        return new

    out = _edit(s, edit)
    return (out, changes) if out is not None else None


# ----------------------------------------------------------------------------- steps


def _prompt(ev: dict[str, Any]) -> str:
    header = _data(ev).get("header")
    system = header.get("system") if isinstance(header, dict) else None
    return system if isinstance(system, str) else ""


def _first_stepless(s: Stored) -> tuple[int, str] | None:
    """The first event the v2->v3 edge cannot place: (index, why), or ``None``.

    A surface event before the log's first ``step/start`` (the system head is
    emitted at that step), or a ``request/header`` that changes the prompt while
    no step is open.
    """
    surface = SURFACE_TYPES.get(s.version, frozenset())
    step_open = False
    seen_step = False
    prompt = ""
    for i, ev in enumerate(s.events):
        t = ev.get("type")
        if t == "request/header":
            p = _prompt(ev)
            if p != prompt and not step_open:
                return i, "a request prompt is set while no step is open"
            prompt = p
        if t in surface and not seen_step:
            return i, "a message is on the surface before the first step opened"
        if t == "step/start":
            step_open = seen_step = True
        elif t in ("step/end", "turn/end"):
            step_open = False
    return None


def _open_step_early(s: Stored) -> tuple[Stored, list[Change]] | None:
    """Open the step of the turn at the event that needs it (see docs/rescue.md)."""
    if s.version > 2:
        return None
    changes: list[Change] = []
    current = s
    for _ in range(len(s.events) + 1):
        found = _first_stepless(current)
        if found is None:
            break
        i, reason = found
        nxt = _open_step_at(current, i, reason, changes)
        if nxt is None:
            return None  # outside any turn: no step can open there
        current = nxt
    return (current, changes) if changes else None


def _open_step_at(s: Stored, i: int, reason: str, changes: list[Change]) -> Stored | None:
    events = s.events
    n = len(events)
    turn: Any = None
    steps_in_turn = 0
    for ev in _range(events, 0, i):
        t = ev.get("type")
        if t == "turn/start":
            turn, steps_in_turn = _data(ev).get("turn"), 0
        elif t == "turn/end":
            turn = None
        elif t == "step/start":
            steps_in_turn += 1
    if turn is None:
        return None
    anchor = events[i]
    # the turn's next step/start, if it opens before the turn ends
    end_of_turn = n
    for k, ev in enumerate(_range(events, i, n), i):
        t = ev.get("type")
        if t == "step/start":
            moved = ev
            changes.append(Change(
                "open-step-early", s.origins[k], {"step/start": _data(moved), "placedBefore": s.origins[k + 1] if k + 1 < n else None},
                {"step/start": _data(moved), "placedBefore": s.origins[i]},
                f"{reason}: this turn's step/start is moved up to it (nothing else changes; the step opens earlier)"))
            return _rebuild(s, [range(0, i), k, range(i, k), range(k + 1, n)])
        if t == "turn/end":
            end_of_turn = k
            break
    step = {"turn": turn, "step": steps_in_turn + 1}
    end_anchor = events[end_of_turn] if end_of_turn < n else events[-1]
    items: list[Item] = [range(0, i), _synthetic("step/start", dict(step), anchor), range(i, end_of_turn),
                         _synthetic("step/end", dict(step), end_anchor), range(end_of_turn, n)]
    changes.append(Change("open-step-early", s.origins[i], None, step,
                          f"{reason} and the turn opens no step: a step/start is inserted before it"))
    changes.append(Change("open-step-early", s.origins[end_of_turn] if end_of_turn < n else None, None, step,
                          "the inserted step closes before its turn ends" if end_of_turn < n
                          else "the inserted step closes at the end of the log"))
    return _rebuild(s, items)


# ----------------------------------------------------------------------------- compaction


def _checkpoint_id(ev: dict[str, Any]) -> Any:
    """The compaction id of a checkpoint replacement (a user/message that replaces a span), else None."""
    if ev.get("type") != "user/message" or not isinstance(ev.get("surfaceOp"), dict):
        return None
    source = _data(ev).get("source")
    return source.get("compactionId") if isinstance(source, dict) else None


def _compaction_start(s: Stored) -> tuple[Stored, list[Change]] | None:
    items: list[Item] = []
    done = 0  # the events before this one are in ``items``
    changes: list[Change] = []
    open_ids: set[Any] = set()
    turn: Any = None
    for k, ev in enumerate(s.events):
        t = ev.get("type")
        data = _data(ev)
        if t == "turn/start":
            turn = data.get("turn")
        elif t == "turn/end":
            turn = None
        if t in ("compaction/start", "compact/start"):
            open_ids.add(data.get("compactionId"))
        elif t in ("compaction/end", "compact/end"):
            open_ids.discard(data.get("compactionId"))
        cid = _checkpoint_id(ev)
        if cid is None or cid in open_ids:
            continue
        owner = {"compactionId": cid, "turn": turn}
        source = data.get("source")
        if isinstance(source, dict) and "sourceCommandId" in source:
            owner["sourceCommandId"] = source["sourceCommandId"]
        end = {**owner, "error": "the log holds no record of this compaction; this pair was inserted by a rescue"}
        items += [range(done, k), _synthetic("compaction/start", owner, ev), k, _synthetic("compaction/end", end, ev)]
        done = k + 1
        changes.append(Change("compaction-start", s.origins[k], None, owner,
                              "a compaction checkpoint replaces messages but no compaction/start opened it: the start is "
                              "inserted before the checkpoint"))
        changes.append(Change("compaction-start", s.origins[k], None, end,
                              "and the compaction is closed right after it, with an error saying it was reconstructed "
                              "(a successful end would need a summary the log does not have)"))
    if not changes:
        return None
    items.append(range(done, len(s.events)))
    return _rebuild(s, items), changes


# ----------------------------------------------------------------------------- the catalogue

TRANSFORMATIONS: Final[tuple[Transformation, ...]] = (
    Transformation("header-version", "give the header the version its body is proven to be (absent, or a pre-release number)",
                   _header_version),
    Transformation("header-delegation-depth", "complete a header without delegationDepth (0, or 1 under a parent)",
                   _header_delegation_depth),
    Transformation("descriptor-v3", "upgrade subagent descriptors of version 2 to version 3", _descriptor_v3),
    Transformation("tool-definitions", "give request tools that are bare names a definition object", _tool_definitions),
    Transformation("hook-dialect", "rename the early hook dialect \"claude\" to \"claude-code\"", _hook_dialect),
    Transformation("surface-marker", "mark surface messages a pre-release writer left unmarked as appended", _surface_marker),
    Transformation("open-step-early", "open the turn's step before a message or prompt that needs one", _open_step_early),
    Transformation("compaction-start", "bracket a compaction checkpoint without compaction/start", _compaction_start),
)
BY_NAME: Final[dict[str, Transformation]] = {t.name: t for t in TRANSFORMATIONS}


# ----------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class Step:
    """One refusal and the transformation that resolved it (dsh's judge refused the log before, not after)."""

    refusal: Refusal
    transformation: str
    changes: tuple[Change, ...]
    allowed: bool


@dataclass
class Plan:
    """What rescue would do: the refusal of the source, the steps, and dsh's decision at the end."""

    source: Stored
    first: Refusal | None
    steps: list[Step] = field(default_factory=list)
    result: Stored | None = None
    remaining: Refusal | None = None

    @property
    def refused(self) -> bool:
        """dsh refuses the source as it is."""
        return self.first is not None

    @property
    def rescuable(self) -> bool:
        """The steps end in a log dsh accepts."""
        return self.first is not None and self.remaining is None

    @property
    def needs(self) -> list[str]:
        """Transformations the plan uses that were not allowed."""
        return [st.transformation for st in self.steps if not st.allowed]


def plan(source: Stored, judge: Judge, allowed: Iterable[str] = ()) -> Plan:
    """Work out the rescue of ``source``: refusal by refusal, the first transformation that resolves it.

    A transformation resolves a refusal when it applies and dsh's judgement of the
    changed log is no longer that refusal (it accepts the log, or refuses it
    later for another reason, which the next step takes up).  Each transformation
    is used at most once (it changes every place it applies to at once).  Every
    transformation is considered, allowed or not, so a dry run names what a log
    needs; ``allowed`` only marks the steps.
    """
    allow = set(allowed)
    refusal = judge(source)
    p = Plan(source=source, first=refusal, result=source, remaining=refusal)
    current, used = source, set()
    while refusal is not None and len(p.steps) < MAX_STEPS:
        for t in TRANSFORMATIONS:
            if t.name in used:
                continue
            applied = t.apply(current)
            if applied is None:
                continue
            candidate, changes = applied
            after = judge(candidate)
            if after == refusal:
                continue
            used.add(t.name)
            p.steps.append(Step(refusal, t.name, tuple(changes), t.name in allow))
            current, refusal = candidate, after
            break
        else:
            break
    p.result, p.remaining = current, refusal
    return p


# ----------------------------------------------------------------------------- content


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            yield value["text"]
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def message_texts(events: Iterable[dict[str, Any]]) -> list[str]:
    """Every text block of the messages in ``events`` (user, assistant, tool and spliced messages).

    What "content the user saw" means for the rescue's own check: each of these
    texts must still be in the successor.
    """
    return list(iter_message_texts(events))


def iter_message_texts(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    """:func:`message_texts` one at a time, for a check that reads a log's texts without holding them."""
    for ev in events:
        if ev.get("type") in ("user/message", "assistant/message", "tool/result", "system/message",
                              "developer/message", "agent/inbox/spliced"):
            yield from (t for t in _texts(ev.get("data")) if t)
