"""Rescue transformations: the smallest changes that make a refused historical log acceptable to dsh.

dsh refuses some real historical logs outright (its migration chain or its v4
restore throws), and the session is then gone from the product.  Each
:class:`Transformation` here answers one refusal class found in real logs with
the smallest change that keeps every byte of content the user saw: it edits the
*stored* log (header and events of the stored version, before migration) and
says, event by event, what it changed and why (:class:`Change`).

Everything here is pure: a :class:`Stored` log in, a new one out.  Whether a
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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..protocol.vocabulary import SURFACE_TYPES

__all__ = [
    "BY_NAME",
    "TRANSFORMATIONS",
    "Change",
    "Plan",
    "Refusal",
    "Step",
    "Stored",
    "Transformation",
    "message_texts",
    "plan",
]

#: How many transformations one plan may chain (each is used at most once).
MAX_STEPS: Final[int] = 16


@dataclass(frozen=True)
class Stored:
    """A stored log: its physical header and its logical events, in the stored version.

    ``origins[i]`` is the source seq of ``events[i]`` (``None`` for an event a
    transformation inserted); ``version`` is the version the body was read as and
    ``version_proof`` says why when the header does not say it.
    """

    header: dict[str, Any]
    events: tuple[dict[str, Any], ...]
    version: int
    projection: bool = False
    version_proof: str = ""
    origins: tuple[int | None, ...] = ()

    def __post_init__(self) -> None:
        if not self.origins:
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
    exit_code: int = 4

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


def _rebuild(s: Stored, items: list[tuple[int | None, dict[str, Any]]]) -> Stored:
    """A log from ``items``: (index of an event of ``s`` or ``None`` for a new one, event).

    Seqs become positions again (dense from 0, as every stored version requires)
    and every seq reference of a kept event follows the event it names.
    """
    old_seq_to_new: dict[Any, int] = {}
    for pos, (index, _ev) in enumerate(items):
        if index is not None:
            old_seq_to_new[s.events[index].get("seq")] = pos

    def m(value: Any) -> Any:
        return old_seq_to_new.get(value, value) if type(value) is int else value

    events: list[dict[str, Any]] = []
    origins: list[int | None] = []
    for pos, (index, ev) in enumerate(items):
        new = {**ev, "seq": pos}
        if index is not None:
            if isinstance(new.get("sourceEventSeqs"), list):
                new["sourceEventSeqs"] = [m(v) for v in new["sourceEventSeqs"]]
            if isinstance(new.get("surfaceOp"), dict):
                new["surfaceOp"] = _remap_range(new["surfaceOp"], m)
            new["data"] = _remap_data(new.get("type"), new.get("data"), m)
        events.append(new)
        origins.append(s.origins[index] if index is not None else None)
    return replace(s, events=tuple(events), origins=tuple(origins))


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
    events = list(s.events)
    changes: list[Change] = []
    for i, ev in enumerate(events):
        data = _data(ev)
        if ev.get("type") != "subagent/descriptor" or data.get("version") != 2:
            continue
        new = {**data, "version": 3}
        why = "descriptor version 2 carries every field version 3 requires (mode, provider); only the version number changes"
        if new.get("mode") == "continuable" and not isinstance(new.get("label"), str):
            new["label"] = DEFAULT_DESCRIPTOR_LABEL
            why += f'; a continuable version-3 descriptor needs a label: "{DEFAULT_DESCRIPTOR_LABEL}" (a stated default)'
        events[i] = {**ev, "data": new}
        changes.append(Change("descriptor-v3", s.origins[i], data, new, why))
    return (replace(s, events=tuple(events)), changes) if changes else None


def _tool_definitions(s: Stored) -> tuple[Stored, list[Change]] | None:
    events = list(s.events)
    changes: list[Change] = []
    for i, ev in enumerate(events):
        data = _data(ev)
        header = data.get("header")
        if ev.get("type") != "request/header" or not isinstance(header, dict) or not isinstance(header.get("tools"), list):
            continue
        tools = header["tools"]
        if not any(isinstance(t, str) for t in tools):
            continue
        new_tools = [{"name": t, "description": "", "parameters": {}} if isinstance(t, str) else t for t in tools]
        events[i] = {**ev, "data": {**data, "header": {**header, "tools": new_tools}}}
        changes.append(Change("tool-definitions", s.origins[i], tools, new_tools,
                              "the writer kept only each tool's name; dsh needs a definition object: the name is kept, "
                              "with an empty description and an empty parameters object (stated defaults)"))
    return (replace(s, events=tuple(events)), changes) if changes else None


#: Hook dialects renamed after early writers recorded them: early name -> the name dsh reads.
HOOK_DIALECT_RENAMES: Final[dict[str, str]] = {"claude": "claude-code"}


def _hook_dialect(s: Stored) -> tuple[Stored, list[Change]] | None:
    events = list(s.events)
    changes: list[Change] = []
    for i, ev in enumerate(events):
        data = _data(ev)
        if not str(ev.get("type", "")).startswith("hook/") or data.get("dialect") not in HOOK_DIALECT_RENAMES:
            continue
        new = {**data, "dialect": HOOK_DIALECT_RENAMES[data["dialect"]]}
        events[i] = {**ev, "data": new}
        changes.append(Change("hook-dialect", s.origins[i], {"dialect": data["dialect"]}, {"dialect": new["dialect"]},
                              "an early writer spelt the Claude Code hook dialect \"claude\"; dsh knows it as \"claude-code\" "
                              "(the handler id keeps the writer's spelling)"))
    return (replace(s, events=tuple(events)), changes) if changes else None


def _surface_marker(s: Stored) -> tuple[Stored, list[Change]] | None:
    surface = SURFACE_TYPES.get(s.version, frozenset())
    events = list(s.events)
    changes: list[Change] = []
    for i, ev in enumerate(events):
        if ev.get("type") not in surface or "surfaceOp" in ev:
            continue
        new = dict(ev)
        new["surfaceOp"] = "append"
        events[i] = new
        changes.append(Change("surface-marker", s.origins[i], None, {"surfaceOp": "append"},
                              "a pre-release writer left the surface marker out; it wrote no replacements, so the "
                              "message was appended"))
    return (replace(s, events=tuple(events)), changes) if changes else None


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
    turn: Any = None
    steps_in_turn = 0
    for ev in events[:i]:
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
    items: list[tuple[int | None, dict[str, Any]]] = [(k, ev) for k, ev in enumerate(events)]
    # the turn's next step/start, if it opens before the turn ends
    k = i
    end_of_turn = len(events)
    while k < len(events):
        t = events[k].get("type")
        if t == "step/start":
            moved = events[k]
            del items[k]
            items.insert(i, (k, moved))
            changes.append(Change(
                "open-step-early", s.origins[k], {"step/start": _data(moved), "placedBefore": s.origins[k + 1] if k + 1 < len(events) else None},
                {"step/start": _data(moved), "placedBefore": s.origins[i]},
                f"{reason}: this turn's step/start is moved up to it (nothing else changes; the step opens earlier)"))
            return _rebuild(s, items)
        if t == "turn/end":
            end_of_turn = k
            break
        k += 1
    step = {"turn": turn, "step": steps_in_turn + 1}
    end_anchor = events[end_of_turn] if end_of_turn < len(events) else events[-1]
    items.insert(end_of_turn, (None, _synthetic("step/end", dict(step), end_anchor)))
    items.insert(i, (None, _synthetic("step/start", dict(step), anchor)))
    changes.append(Change("open-step-early", s.origins[i], None, step,
                          f"{reason} and the turn opens no step: a step/start is inserted before it"))
    changes.append(Change("open-step-early", s.origins[end_of_turn] if end_of_turn < len(events) else None, None, step,
                          "the inserted step closes before its turn ends" if end_of_turn < len(events)
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
    items: list[tuple[int | None, dict[str, Any]]] = []
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
            items.append((k, ev))
            continue
        owner = {"compactionId": cid, "turn": turn}
        source = data.get("source")
        if isinstance(source, dict) and "sourceCommandId" in source:
            owner["sourceCommandId"] = source["sourceCommandId"]
        end = {**owner, "error": "the log holds no record of this compaction; this pair was inserted by a rescue"}
        items.append((None, _synthetic("compaction/start", owner, ev)))
        items.append((k, ev))
        items.append((None, _synthetic("compaction/end", end, ev)))
        changes.append(Change("compaction-start", s.origins[k], None, owner,
                              "a compaction checkpoint replaces messages but no compaction/start opened it: the start is "
                              "inserted before the checkpoint"))
        changes.append(Change("compaction-start", s.origins[k], None, end,
                              "and the compaction is closed right after it, with an error saying it was reconstructed "
                              "(a successful end would need a summary the log does not have)"))
    return (_rebuild(s, items), changes) if changes else None


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
    out: list[str] = []
    for ev in events:
        if ev.get("type") in ("user/message", "assistant/message", "tool/result", "system/message",
                              "developer/message", "agent/inbox/spliced"):
            out.extend(t for t in _texts(ev.get("data")) if t)
    return out
