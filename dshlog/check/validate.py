"""Whole-log validation of a v4 artifact: every problem, in one streaming pass.

dsh stops at the first broken rule; a repair tool needs to see all of them, so
this module re-states the rules of a released reader (FORMAT §5.1/§5.2,
SEMANTICS §1) as independent checks that report and carry on.  State is bounded:
the open turn/step with its advertised tool calls, retry chains, command ids,
PTC dispatch digests, the tool names of request headers, the seqs a title may
cite — never the events themselves.  The surface fold is delegated to
:class:`dshlog.check.surface.SurfaceFold`, which holds only the current model view.

Some rules reach back over the whole log (a title may cite any earlier human
message, a retry id or PTC call id is unique for the whole session), so that
history cannot be dropped at a step or turn boundary without changing verdicts.
It is kept compactly instead: seqs in ascending ``array('q')`` (8 bytes each,
found by bisection), composite retry and PTC facts as 16-byte digests.

Problem texts reuse dsh's wording wherever dsh has one, so a message found here
can be searched for in dsh's own diagnostics.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from dshlog.check.header import CwdPlatform, validate_header
from dshlog.protocol import vocabulary as vocab
from dshlog.protocol.jsjson import js_string, key_bytes
from dshlog.protocol.texts import CLOSER_ERROR, CLOSER_TEXT, TOOL_NOT_STARTED, closer_message_prefix
from dshlog.protocol.values import MAX_SAFE_INTEGER, has_placeholder, is_count, is_safe_integer
from dshlog.protocol.vocabulary import ENVELOPE_KEYS, IMAGE_MEDIA_TYPES, REQUEST_REASONS, TOOL_CHANGE_BLOCKS, TURN_END_KINDS

Severity = Literal["error", "warning", "info"]

NOT_STARTED_TEXT = CLOSER_TEXT["interrupted"]["notStarted"]
_NOT_STARTED_ERROR = CLOSER_ERROR[False]
_FORKED_PREFIX = closer_message_prefix("forked", "")[:-1]  # "forked-tool-result-"
_DIGITS = re.compile(r"^(0|[1-9][0-9]*)$")
_STEP_TYPES = frozenset({"system/message", "developer/message", "assistant/attempt"})
_TOOL_CHANGE = TOOL_CHANGE_BLOCKS


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding.  ``seq`` is the event's position (``None`` for header/log-wide).

    ``severity`` is ``error`` for anything dsh refuses, ``warning`` for deviations
    dsh accepts or that are explained (snapshot projections), ``info`` for notes
    such as an open tail, which is a normal state of a live or crashed log.
    """

    code: str
    message: str
    seq: int | None
    severity: Severity = "error"


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and len(value) > 0


def _digest(*values: Any) -> bytes:
    """Order-insensitive digest of JSON values: keeps PTC starts comparable without keeping them."""
    raw = key_bytes(list(values), sort_keys=True)
    return hashlib.blake2b(raw, digest_size=16).digest()


def _key(value: Any) -> Any:
    """Hashable stand-in for a JSON value (for chain keys of arbitrary payload values)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return (type(value).__name__, value)
    return ("json", key_bytes(value, sort_keys=True))


_UNIQUE = itertools.count()


def _fact_key(*values: Any) -> bytes:
    """16-byte digest standing for ``tuple(_key(v) for v in values)``, with the same equality.

    Retry facts must be remembered for the whole log; a digest costs one small
    bytes object where the tuples cost several objects per value.  ``-0.0`` is
    folded into ``0.0`` and a NaN never equals anything, as with the tuples.
    """
    parts = []
    for value in values:
        if type(value) is float:
            if value != value:
                return b"nan" + next(_UNIQUE).to_bytes(13, "big")  # unequal to every other key
            if value == 0:
                value = 0.0
        parts.append(_key(value))
    return hashlib.blake2b(repr(tuple(parts)).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _attempt_key(rid: str, attempt: Any) -> bytes:
    """Digest of a scheduled ``(retryId, retry)`` pair, equal exactly when the pair is (``1.0 == 1``)."""
    raw = rid.encode("utf-8", "surrogatepass") + b"\x00" + str(int(attempt)).encode()
    return hashlib.blake2b(raw, digest_size=16).digest()


def _seq_in(seqs: array, seq: Any) -> bool:
    """Membership in an ascending ``array('q')`` of seqs (``seq`` may be an integral float)."""
    i = bisect_left(seqs, seq)
    return i < len(seqs) and seqs[i] == seq


_SHARED_RULES: Any = False


def _shared_data_rules() -> Any:
    """dsh's append/load data rules live with the surface fold; load them once, lazily."""
    global _SHARED_RULES
    if _SHARED_RULES is False:
        try:
            from dshlog.check.surface import check_event_data
        except ImportError:  # pragma: no cover - the fold ships with the package
            _SHARED_RULES = None
        else:
            _SHARED_RULES = check_event_data
    return _SHARED_RULES


class _Compaction:
    __slots__ = ("id", "command", "turn", "seq", "summarized", "crossings")

    def __init__(self, cid: Any, command: Any, turn: int | None, seq: int) -> None:
        self.id = cid
        self.command = command
        self.turn = turn
        self.seq = seq
        self.summarized = False
        # Turn boundaries that crossed this compaction; forgiven if an end-seed
        # later proves it an inherited orphan (dsh's look-ahead, done lazily here).
        self.crossings: list[tuple[str, int]] = []


class _Call:
    __slots__ = ("name", "arguments", "started")

    def __init__(self, name: Any, arguments: Any) -> None:
        self.name = name
        self.arguments = arguments
        self.started = False



_STR_ONLY = frozenset((str,))
_INT_ONLY = frozenset((int,))


_CHUNK_KEYS = frozenset({"type", "time", "chunk"})
_TEXT_RUN_KEYS = frozenset({"type", "time0", "index", "dt", "texts"})
_TOOL_RUN_KEYS = frozenset({"type", "time0", "index", "dt", "id", "args"})
_TOOL_RUN_NAMED_KEYS = _TOOL_RUN_KEYS | {"name"}


def _stream_passes(stream: list) -> bool:
    """Whether every record of ``stream`` certainly passes ``Validator._check_stream_record``.

    A settlement embeds tens of stream records, and the runs hold most of a v4
    log's integers, so checking them one call per record was a fifth of
    ``validate``.  This loop decides the common, well-formed case with the
    per-record work inlined and the integer checks done once over the whole
    stream in C.  ``False`` means only "not proven": the caller then runs the
    exact per-record checks, which word the problems.
    """
    ints: list = []  # every time/time0/index scalar
    dts: list[list] = []
    strings: list[list] = []
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


def _safe_int_list(values: list) -> bool:
    """Every member a safe integer; C-level type and bound checks first (streams hold many)."""
    if not values:
        return True
    if set(map(type, values)) <= _INT_ONLY:
        return -MAX_SAFE_INTEGER <= min(values) and max(values) <= MAX_SAFE_INTEGER
    return all(is_safe_integer(d) for d in values)  # floats such as 1.0 are judged one by one

class Validator:
    """Incremental validator of one v4 log.

    Feed events in order with :meth:`feed`; call :meth:`finish` once at the end.
    Each call returns the problems it found (header problems come with the first
    call).  ``inherited_cut`` is the inherited event count when the caller knows
    it; otherwise it is derived from the last ``{inherited:true}`` end-seed.
    ``projection=True`` downgrades deviations explained by dsh's snapshot
    projections (placeholder strings where real values were) to ``warning``
    problems with code ``projection``.
    """

    def __init__(
        self,
        header: dict | None = None,
        *,
        inherited_cut: int | None = None,
        projection: bool = False,
        known_types: Iterable[str] | None = None,
        cwd_platform: CwdPlatform = "any",
        surface: bool = True,
    ) -> None:
        self.header = header
        self.projection = projection
        self.known: frozenset[str] = frozenset(known_types) if known_types is not None else vocab.V4_TYPES
        self.inherited_cut = inherited_cut
        self.count = 0
        self._pending: list[Problem] = []
        self._out: list[Problem] = []
        self._seen: set[str] = set()
        self._finished = False

        hdr = header if isinstance(header, dict) else {}
        self._header_id = hdr.get("id")
        self._has_parent = "parentSession" in hdr
        seeded = hdr.get("isSeeded")
        self._seeded: bool | None = seeded if isinstance(seeded, bool) else None
        if header is not None:
            for text in validate_header(header, 4, cwd_platform=cwd_platform):
                value = hdr.get("cwd") if "cwd" in text else hdr.get("id") if " id " in text else None
                self._emit("header", text, None, value=value)
        if inherited_cut is not None:
            if not is_count(inherited_cut):
                self._emit("cut", "format v4 inherited event count must be a non-negative safe integer", None)
            elif self._seeded is False and inherited_cut != 0:
                self._emit("cut", "unseeded format v4 Session has inherited events", None)

        # Lifecycle state (FORMAT §5.2 item 7).
        self.turn: int | None = None
        self.step: int | None = None
        self.next_turn = 1
        self.next_step = 1
        self.provider: Any = None
        self.calls: dict[str, _Call] = {}
        self.compaction: _Compaction | None = None
        self.head: int | None = None  # protected system head (always surface node 0)
        # Whole-log facts, kept compactly (see the module docstring).
        # subCallId -> digest(rootCallId) + digest(root, parent, name, arguments) + settled byte
        self._dispatches: dict[str, bytes] = {}
        self._chains: dict[bytes, tuple[int, Any]] = {}  # _fact_key(chain) -> (last retry, retryId)
        self._retry_ids: set[Any] = set()
        self._scheduled: dict[bytes, bytes] = {}  # _attempt_key(retryId, retry) -> _fact_key(turn, step)
        self._retry_started: set[bytes] = set()  # _attempt_key of each started attempt
        self._commands: set[str] = set()
        self._command_seqs = array("q")  # seqs of command events, ascending
        self._human_user_seqs = array("q")  # seqs of human user/message events, ascending
        self._last_marker: int | None = None
        # Facts whose verdict depends on a cut not yet known (seeded log, no explicit cut).
        self._catalog_ids: set[str] = set()
        self._catalog_after_marker: list[tuple[int, Any]] = []
        self._foreign_deliveries = array("q")

        self._fold: Any = None
        self._data_passed = False  # this event passed check_event_data (see _apply_surface)
        self._surface_errors: tuple[type[BaseException], ...] = ()
        if surface:
            try:
                from dshlog.errors import DshlogError
                from dshlog.check.surface import SurfaceFold
            except ImportError:  # pragma: no cover - the fold ships with the package
                self._fold = None
            else:
                # Validation needs only the count of replacements, not their records.
                self._fold = SurfaceFold(strict_unknown=False, check_messages=False, keep_replacements=False)
                self._surface_errors = (DshlogError,)

    # ------------------------------------------------------------------ reporting

    def _emit(
        self, code: str, message: str, seq: int | None, severity: Severity = "error", *, value: Any = None
    ) -> None:
        """Record one problem once per event; placeholders make it a projection warning."""
        if message in self._seen:
            return
        self._seen.add(message)
        if self.projection and severity == "error" and has_placeholder(value):
            code, severity = "projection", "warning"
            message = f"{message} (snapshot placeholder {value!r})"
        self._pending.append(Problem(code, message, seq, severity))

    def _flush(self) -> list[Problem]:
        out, self._pending = self._pending, []
        self._seen = set()
        return out

    # ------------------------------------------------------------------ public API

    def feed(self, event: Any) -> list[Problem]:
        """Check the next event; returns the problems found so far that were not yet returned."""
        if self._finished:
            raise RuntimeError("Validator.feed after finish")
        idx = self.count
        self.count += 1
        pre = self._flush() if self._pending else []
        self._check_event(event, idx)
        return pre + self._flush()

    def finish(self) -> list[Problem]:
        """End-of-log checks: cut consistency, deferred ownership facts, the open tail."""
        if self._finished:
            return []
        self._finished = True
        self._seen = set()
        self._finish_cut()
        comp = self.compaction
        if comp is not None:
            for etype, seq in comp.crossings:
                self._pending.append(Problem("lifecycle", f"{etype} crosses an open compaction", seq))
        tail: list[str] = []
        if self.turn is not None:
            tail.append(f"turn {self.turn}")
        if self.step is not None:
            tail.append(f"step {self.step}")
        unresolved = list(self.calls)
        if unresolved:
            tail.append("tool calls " + ", ".join(unresolved))
        if comp is not None:
            tail.append(f"compaction {comp.id} (seq {comp.seq})")
        if tail:
            self._pending.append(Problem("open-tail", "open tail: " + "; ".join(tail), None, "info"))
        return self._flush()

    # ------------------------------------------------------------------ per event

    def _check_event(self, event: Any, idx: int) -> None:  # noqa: C901
        if not isinstance(event, dict):
            self._emit("envelope", f"seed event at index {idx} has an invalid event envelope", idx)
            self._advance_fold(idx)
            return
        etype = event.get("type")
        envelope_ok = self._check_envelope(event, idx)
        if not isinstance(etype, str) or "data" not in event:
            self._advance_fold(idx)
            return
        ignorable = event.get("ignorable") is True
        known = etype in self.known
        if not known:
            if etype in vocab.CODE_DISPATCH_TYPES and not ignorable:
                self._emit("retired", f"format v4 rejects retired event type {etype}", idx)
            elif not ignorable:
                self._emit("unsupported", f'format v4 contains unknown event type "{etype}" at seq {idx}', idx)
            self._apply_surface(event, idx, envelope_ok)
            return

        data = event["data"]
        self._check_data(etype, event, data, idx)
        before = self._surface_state()
        surfaced = self._apply_surface(event, idx, envelope_ok)
        self._lifecycle(etype, event, data, idx, before, surfaced)

    def _check_envelope(self, event: dict, idx: int) -> bool:
        """Envelope keys and scalar types (FORMAT §3.1); returns whether the fold may see it."""
        ok = True
        for key in event:
            if key not in ENVELOPE_KEYS:
                self._emit("envelope", f"seed event at index {idx} has an invalid event envelope: unexpected key {key!r}", idx)
        if not isinstance(event.get("type"), str):
            self._emit("envelope", f"seed event at index {idx} has an invalid event envelope: type must be a string", idx)
            ok = False
        seq = event.get("seq")
        if "seq" not in event or not is_count(seq):
            self._emit("envelope", f"seed event at index {idx} has an invalid event envelope: seq must be a non-negative safe integer", idx)
        elif seq != idx:
            self._emit("seq-gap", f"format v4 event {idx} is not dense (seq {seq}, expected {idx})", idx)
        if "time" not in event or not is_safe_integer(event.get("time")):
            self._emit("envelope", f"seed event at index {idx} has an invalid event envelope: time must be a safe integer", idx)
        if "data" not in event:
            self._emit("envelope", f"seed event at index {idx} has an invalid event envelope: data is missing", idx)
            ok = False
        if "ignorable" in event and event["ignorable"] is not True:
            self._emit("envelope", f"seed event at index {idx} has an invalid event envelope: ignorable must be true when present", idx)
        return ok

    # ------------------------------------------------------------------ surface

    def _surface_state(self) -> tuple[int, int | None]:
        fold = self._fold
        if fold is None:
            return (0, None)
        nodes = fold.nodes
        return (len(nodes), nodes[0] if nodes else None)

    def _advance_fold(self, idx: int) -> None:
        if self._fold is not None:
            self._fold.next_seq = idx + 1

    def _apply_surface(self, event: dict, idx: int, envelope_ok: bool) -> bool:
        """Fold the event; a refusal is reported and the event's surface effect skipped."""
        fold = self._fold
        if fold is None:
            return False
        if not envelope_ok:
            self._advance_fold(idx)
            return False
        candidate = event
        if event.get("seq") != idx or not is_count(event.get("seq")):
            candidate = {**event, "seq": idx}  # seq problems are already reported; keep folding
        fold.check_data = not self._data_passed
        self._data_passed = False
        try:
            fold.apply(candidate)
        except self._surface_errors as exc:
            text = getattr(exc, "message", str(exc))
            self._emit("surface", text, idx)
            self._advance_fold(idx)
            return False
        return True

    # ------------------------------------------------------------------ data rules (§5.1, SEMANTICS §1.4)

    def _check_data(self, etype: str, event: dict, data: Any, idx: int) -> None:  # noqa: C901
        subject = f"{etype} at seq {idx}"
        shared = _shared_data_rules()
        self._data_passed = False
        if shared is not None:
            try:
                shared(event, f'session event "{etype}" at seq {idx}')
            except Exception as exc:  # the fold's SurfaceError: one dsh data-rule text
                self._emit("message", getattr(exc, "message", str(exc)), idx)
            else:
                self._data_passed = True  # the fold need not run the same rules again
        if etype == "request/header":
            self._check_request_header(data, idx)
            return
        if not isinstance(data, dict):
            if etype in vocab.SURFACE_TYPES_V4 or etype in _STEP_TYPES or etype in ("turn/start", "turn/end", "step/start", "step/end", "tool/call"):
                self._emit("message", f"{etype} requires an object", idx)
            return
        retired = f"format v4 {etype} at seq {idx} content must not contain a released tool-result wrapper"
        if etype == "user/message":
            self._check_message(etype, data, idx, role="user")
        elif etype == "system/message":
            self._check_system(data, idx)
        elif etype == "developer/message":
            self._check_developer(data, idx)
        elif etype == "assistant/message":
            self._check_settlement(etype, data, idx)
            message = data.get("message")
            if not isinstance(message, dict):
                self._emit("message", f"seed {etype} at index {idx} lacks an identified message", idx)
            else:
                self._check_message(etype, message, idx, role="assistant")
                source = message.get("source")
                if isinstance(source, dict) and (
                    source.get("kind") != "model"
                    or not _nonempty_str(source.get("provider"))
                    or not _nonempty_str(source.get("model"))
                ):
                    self._emit("message", f"seed {etype} at index {idx} message must have model source", idx)
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool-call":
                        if not _nonempty_str(block.get("id")):
                            self._emit("message", f"{subject}: tool call id requires a nonempty string", idx)
                        if not isinstance(block.get("name"), str) or not isinstance(block.get("arguments"), str):
                            self._emit("message", f"{subject}: tool-call blocks need a string name and arguments", idx)
            if "interrupted" in data and data["interrupted"] is not True:
                self._emit("message", f"{subject}: interrupted must be true when present", idx)
            self._check_stream_blocks(etype, data, idx, retired)
        elif etype == "assistant/attempt":
            self._check_settlement(etype, data, idx)
            self._check_stream_blocks(etype, data, idx, retired)
        elif etype == "tool/result":
            self._check_tool_result(event, data, idx)
        elif etype in ("agent/inbox/spliced", "session/title-llm-request"):
            key = "inserted" if etype == "agent/inbox/spliced" else "messages"
            messages = data.get(key)
            for message in messages if isinstance(messages, list) else []:
                if isinstance(message, dict):
                    self._check_slot_message(etype, message, idx, retired)
        elif etype == "team/message/queued":
            message = data.get("message")
            if isinstance(message, dict):
                self._check_blocks(message.get("content"), idx, retired)
        elif etype == "compaction/summary":
            self._check_blocks(data.get("summary"), idx, retired)
            self._check_blocks(data.get("rawOutput"), idx, retired)
        elif etype == "tool/ptc-dispatch":
            self._check_blocks(data.get("content"), idx, retired)
        elif etype in ("turn/start", "step/start", "step/end", "turn/end"):
            if not is_count(data.get("turn")) or data.get("turn") == 0:
                self._emit("message", f"{subject}: turn must be a positive safe integer", idx)
            if etype.startswith("step/") and (not is_count(data.get("step")) or data.get("step") == 0):
                self._emit("message", f"{subject}: step must be a positive safe integer", idx)
            if etype == "turn/end":
                reason = data.get("reason")
                if not isinstance(reason, dict) or not _nonempty_str(reason.get("kind")):
                    self._emit("message", f"{subject}: reason must be an object with a kind", idx)
                elif reason["kind"] not in TURN_END_KINDS:
                    self._emit("message", f"{subject}: unknown turn/end reason kind {reason['kind']!r}", idx, "warning")
        elif etype == "tool/call":
            if not _nonempty_str(data.get("callId")):
                self._emit("message", f"{subject}: tool call id requires a nonempty string", idx)
            if not isinstance(data.get("name"), str) or not isinstance(data.get("arguments"), str):
                self._emit("message", f"{subject}: tool/call needs a string name and arguments", idx)
        elif etype == "session-log-deepseek/delivery-accepted":
            self._check_delivery(data, idx)
        elif etype == "subagent/catalog":
            self._catalog(data, idx)
        elif etype == "session/end-seed":
            if data.get("inherited") is True:
                self._last_marker = idx
                self._catalog_after_marker.clear()
                if self._seeded is False:
                    self._emit("cut", "format v4 unseeded Session contains an inherited end-seed marker", idx)

    def _check_message(self, etype: str, message: dict, idx: int, *, role: str) -> None:
        """Identity, role, source and content of one message slot of a surface event."""
        subject = f"seed {etype} at index {idx}"
        if not _nonempty_str(message.get("id")):
            self._emit("message", f"{subject} lacks an identified message", idx, value=message.get("id"))
        if message.get("role") != role:
            if message.get("role") == "developer":
                self._emit("message", "format v4 developer/message and developer role must occur together", idx)
            else:
                self._emit("message", f'{subject} message must have role "{role}"', idx)
        self._check_source(message, idx)
        content = message.get("content")
        if not isinstance(content, list):
            self._emit("message", f"{subject} message has invalid content", idx, value=content)
        else:
            self._check_blocks(content, idx, f"format v4 {etype} at seq {idx} content must not contain a released tool-result wrapper")

    def _check_source(self, message: dict, idx: int) -> None:
        source = message.get("source")
        if not isinstance(source, dict) or not _nonempty_str(source.get("kind")) or source.get("kind") == "plugin":
            self._emit("message", "format v4 message requires a producer-owned source kind", idx)

    def _check_slot_message(self, etype: str, message: dict, idx: int, retired: str) -> None:
        """Messages embedded in log-only events (inbox insertions, title requests)."""
        self._check_source(message, idx)
        if message.get("role") == "developer":
            self._emit("message", "format v4 developer/message and developer role must occur together", idx)
        self._check_blocks(message.get("content"), idx, retired)

    def _check_blocks(self, content: Any, idx: int, retired: str, *, developer: bool = False) -> None:
        """Content blocks: objects with a type; no retired wrappers; tool changes only for developers."""
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                self._emit("message", f"format v4 content block at seq {idx} requires an object with a string type", idx)
                continue
            kind = block["type"]
            if kind == "tool-result":
                self._emit("retired", retired, idx)
            elif kind in _TOOL_CHANGE and not developer:
                self._emit("message", f"format v4 {kind} requires developer role", idx)

    def _check_system(self, data: dict, idx: int) -> None:
        for field in ("turn", "step"):
            if not is_count(data.get(field)):
                self._emit("message", f"format v4 system/message {field} must be a non-negative safe integer", idx)
            elif data[field] == 0:
                self._emit("message", f"format v4 system/message {field} must be positive", idx)
        message = data.get("message")
        if not isinstance(message, dict):
            self._emit("message", "format v4 system message requires an object", idx)
            return
        if not _nonempty_str(message.get("id")):
            self._emit("message", "format v4 system message id requires a string with content", idx, value=message.get("id"))
        if message.get("role") != "system":
            self._emit("message", "format v4 system message requires system role", idx)
        self._check_source(message, idx)
        source = message.get("source")
        if isinstance(source, dict) and _nonempty_str(source.get("kind")) and source["kind"] != "system-prompt":
            self._emit("message", f"seed system/message at index {idx} message must have system-prompt source", idx)
        content = message.get("content")
        if not isinstance(content, list):
            self._emit("message", "format v4 system message requires content array", idx)
            return
        for block in content:
            if not isinstance(block, dict):
                self._emit("message", "format v4 system content block requires an object", idx)
                continue
            kind = block.get("type")
            if not _nonempty_str(kind):
                self._emit("message", "format v4 system content type requires a string with content", idx)
            elif kind in ("text", "reasoning"):
                if not isinstance(block.get("text"), str):
                    self._emit("message", "format v4 system content text requires a string", idx)
            elif kind == "tool-call":
                if not _nonempty_str(block.get("id")):
                    self._emit("message", "format v4 system tool-call id requires a string with content", idx)
                if not _nonempty_str(block.get("name")):
                    self._emit("message", "format v4 system tool-call name requires a string with content", idx)
                if not isinstance(block.get("arguments"), str):
                    self._emit("message", "format v4 system tool-call arguments requires a string", idx)
            elif kind == "image":
                self._check_image(block.get("attachment"), idx)
            elif kind == "tool-result":
                self._emit("retired", "format v4 system content rejects retired tool-result wrappers", idx)
            elif kind in _TOOL_CHANGE:
                self._emit("message", f"format v4 {kind} requires developer role", idx)

    def _check_image(self, attachment: Any, idx: int) -> None:
        if not isinstance(attachment, dict):
            self._emit("message", "format v4 system image attachment requires an object", idx)
            return
        if not _nonempty_str(attachment.get("attachmentId")):
            self._emit("message", "format v4 system image attachmentId requires a string with content", idx)
        if attachment.get("mediaType") not in IMAGE_MEDIA_TYPES:
            self._emit("message", "format v4 system image requires a supported mediaType", idx)
        if not is_count(attachment.get("bytes")):
            self._emit("message", "system image bytes must be a non-negative safe integer", idx)
        for field in ("width", "height"):
            if not is_count(attachment.get(field)) or attachment.get(field) == 0:
                self._emit("message", f"format v4 system image {field} must be positive", idx)
        if "name" in attachment and not isinstance(attachment["name"], str):
            self._emit("message", "format v4 system image name requires a string", idx)
        original = attachment.get("originalDimensions")
        if "originalDimensions" in attachment:
            if not isinstance(original, dict):
                self._emit("message", "format v4 system image originalDimensions requires an object", idx)
            else:
                for field in ("width", "height"):
                    if not is_count(original.get(field)) or original.get(field) == 0:
                        self._emit("message", f"format v4 system image original {field} must be positive", idx)

    def _check_developer(self, data: dict, idx: int) -> None:
        """Developer data beyond the shared rules that :func:`check_event_data` already covers."""
        message = data.get("message")
        for field in ("turn", "step"):
            if not is_count(data.get(field)):
                self._emit("message", f"developer/message {field} must be a non-negative safe integer", idx)
            elif data[field] == 0:
                self._emit("message", f"developer/message {field} must be positive", idx)
        if not isinstance(message, dict):
            self._emit("message", "format v4 developer/message requires turn, step, and a developer message", idx)
            return
        source = message.get("source")
        if (
            not _nonempty_str(message.get("id"))
            or not isinstance(message.get("content"), list)
            or not isinstance(source, dict)
            or not _nonempty_str(source.get("kind"))
            or source.get("kind") == "plugin"
        ):
            self._emit("message", "format v4 developer message requires id, role, content, and a producer-owned source", idx)
        self._check_blocks(
            message.get("content"),
            idx,
            f"format v4 developer/message at seq {idx} content must not contain a released tool-result wrapper",
            developer=True,
        )

    def _check_settlement(self, etype: str, data: dict, idx: int) -> None:
        if not is_count(data.get("turn")) or not is_count(data.get("step")) or not isinstance(data.get("stream"), list):
            self._emit("message", f"seed {etype} at index {idx} has invalid settlement fields", idx)
        elif data["turn"] == 0 or data["step"] == 0:
            self._emit("message", f"{etype} at seq {idx}: turn and step must be positive", idx)
        stream = data.get("stream")
        if isinstance(stream, list) and not _stream_passes(stream):
            for pos, record in enumerate(stream):
                self._check_stream_record(record, idx, pos)

    def _check_stream_record(self, record: Any, idx: int, pos: int) -> None:
        """Exact key sets and run lengths of one stream record (SEMANTICS §1.5)."""
        where = f"stream record {pos} of seq {idx}"
        if not isinstance(record, dict):
            self._emit("stream", f"{where} must be an object", idx)
            return
        kind = record.get("type")
        keys = set(record)
        if kind == "chunk":
            if keys != {"type", "time", "chunk"}:
                self._emit("stream", f"{where} (chunk) must have exactly type, time, chunk", idx)
            if not is_safe_integer(record.get("time")):
                self._emit("stream", f"{where} time must be a safe integer", idx)
            chunk = record.get("chunk")
            if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
                self._emit("stream", f"{where} chunk must be an object with a string type", idx)
            return
        if kind in ("text-chunks", "reasoning-chunks"):
            expected = {"type", "time0", "index", "dt", "texts"}
            members_key = "texts"
        elif kind == "tool-call-chunks":
            expected = {"type", "time0", "index", "dt", "id", "args"}
            members_key = "args"
            if "name" in record:
                expected.add("name")
                if not _nonempty_str(record["name"]):
                    self._emit("stream", f"{where} name must be a nonempty string when present", idx)
            if not _nonempty_str(record.get("id")):
                self._emit("stream", f"{where} id must be a nonempty string", idx)
        else:
            self._emit("stream", f"{where} has unknown record type {kind!r}", idx)
            return
        if keys != expected:
            self._emit("stream", f"{where} ({kind}) must have exactly {', '.join(sorted(expected))}", idx)
        if not is_safe_integer(record.get("time0")):
            self._emit("stream", f"{where} time0 must be a safe integer", idx)
        if not is_count(record.get("index")):
            self._emit("stream", f"{where} index must be a non-negative safe integer", idx)
        members = record.get(members_key)
        dt = record.get("dt")
        if not isinstance(members, list) or not members or not set(map(type, members)) <= _STR_ONLY:
            self._emit("stream", f"{where} {members_key} must be a nonempty array of strings", idx)
        if not isinstance(dt, list) or not _safe_int_list(dt):
            self._emit("stream", f"{where} dt must be an array of safe integers", idx)
        elif isinstance(members, list) and members and len(dt) != len(members) - 1:
            self._emit("stream", f"{where} dt must have one entry fewer than {members_key} ({len(dt)} vs {len(members)})", idx)

    def _check_stream_blocks(self, etype: str, data: dict, idx: int, retired: str) -> None:
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
                self._emit("retired", retired, idx)
            elif block_type in _TOOL_CHANGE:
                self._emit("message", "format v4 tool-change blocks require developer role", idx)

    def _check_tool_result(self, event: dict, data: dict, idx: int) -> None:
        subject = f"format v4 tool/result at seq {idx}"
        message = data.get("message")
        if not isinstance(message, dict):
            self._emit("message", f"{subject} message must be an object", idx)
            return
        source = message.get("source")
        tcid = message.get("toolCallId")
        if not _nonempty_str(message.get("id")):
            self._emit("message", f"{subject} requires a first-class message with a string id", idx)
        if message.get("role") != "tool":
            self._emit("message", f"{subject} requires a tool-role message", idx)
        if not _nonempty_str(tcid) or not isinstance(source, dict) or source.get("callId") != tcid:
            self._emit("message", f"{subject} requires toolCallId matching its tool source", idx)
        if not isinstance(source, dict) or source.get("kind") != "tool":
            self._emit("message", f"{subject} requires a tool source", idx)
        self._check_source(message, idx)
        content = message.get("content")
        if not isinstance(content, list):
            self._emit("message", f"{subject} requires array content", idx)
        else:
            self._check_blocks(content, idx, f"{subject} content must not contain a released tool-result wrapper")
        if "isError" in message and not isinstance(message["isError"], bool):
            self._emit("message", f"{subject} isError must be boolean when present", idx)
        if "error" in data and message.get("isError") is not True:
            self._emit("message", f"{subject} carries error metadata for a non-error tool result", idx)
        for field in ("turn", "step"):
            if not is_count(data.get(field)):
                self._emit("message", f"{subject} {field} must be a non-negative safe integer", idx)
        self._check_fork_result(event, data, message, idx)

    def _check_fork_result(self, event: dict, data: dict, message: dict, idx: int) -> None:
        """A fork's not-started closer has one exact identity (FORMAT §5.1)."""
        error = data.get("error")
        mid = message.get("id")
        if not (isinstance(error, dict) and error.get("code") == TOOL_NOT_STARTED):
            return
        if not (isinstance(mid, str) and mid.startswith(_FORKED_PREFIX)):
            return
        source = message.get("source")
        call_id = source.get("callId") if isinstance(source, dict) else None
        prefix = closer_message_prefix("forked", js_string(call_id))
        suffix = mid[len(prefix):] if mid.startswith(prefix) else ""
        op = event.get("surfaceOp")
        replacement = isinstance(op, dict) and op.get("op") == "replace"
        number = int(suffix) if _DIGITS.match(suffix) else None
        sources = event.get("sourceEventSeqs")
        content = message.get("content")
        text = content[0] if isinstance(content, list) and len(content) == 1 else None
        ok = (
            isinstance(call_id, str)
            and mid.startswith(prefix)
            and number is not None
            and is_safe_integer(number)
            and (number < idx if replacement else number == idx)
            and error.get("name") == _NOT_STARTED_ERROR["name"]
            and (replacement or ("sourceEventSeqs" not in event and op == "append"))
            and (not replacement or (isinstance(sources, list) and sources == [number]))
            and message.get("role") == "tool"
            and message.get("isError") is True
            and message.get("toolCallId") == call_id
            and isinstance(source, dict)
            and source.get("kind") == "tool"
            and isinstance(text, dict)
            and text.get("type") == "text"
            and isinstance(text.get("text"), str)
        )
        if not ok:
            self._emit("message", "invalid V4 not-started fork result", idx)

    def _check_request_header(self, data: Any, idx: int) -> None:
        """``request/header`` rules: shape, retired ``system``, route, reason, defaults, tools."""
        if not isinstance(data, dict) or not isinstance(data.get("header"), dict):
            self._emit("retired", "format v4 request/header requires data and header objects", idx)
            return
        header = data["header"]
        if "system" in header:
            self._emit("retired", "format v4 request/header rejects retired header.system", idx)
        config = header.get("config")
        cfg = config if isinstance(config, dict) else {}
        if not _nonempty_str(cfg.get("provider")) or not _nonempty_str(cfg.get("model")):
            self._emit("message", f"seed request/header at index {idx} lacks provider/model", idx)
        if data.get("reason") not in REQUEST_REASONS:
            self._emit("message", f"request/header at seq {idx} has an invalid reason {data.get('reason')!r}", idx)
        if "startsSeries" in data and data["startsSeries"] is not True:
            self._emit("message", f"request/header at seq {idx} startsSeries must be true when present", idx)
        if "reasoningEffort" in cfg and not _nonempty_str(cfg["reasoningEffort"]):
            self._emit("message", f"request/header at seq {idx} reasoningEffort must be a nonempty string", idx)
        if "adapterDefaults" in header:
            defaults = header["adapterDefaults"]
            if not isinstance(defaults, dict) or any(
                key not in ("reasoningEffort", "maxTokens") or value is not True or key not in cfg
                for key, value in defaults.items()
            ):
                self._emit("message", f"request/header at seq {idx} has invalid adapterDefaults", idx)
        if "tools" in header:
            tools = header["tools"]
            if not isinstance(tools, list):
                self._emit("message", f"request/header at seq {idx} tools must be an array", idx, value=tools)
            else:
                for tool in tools:
                    if isinstance(tool, dict) and "deferLoading" in tool and tool["deferLoading"] is not True:
                        self._emit("message", "format v4 tool deferLoading must be true when present", idx)

    # ------------------------------------------------------------------ ownership facts (§5.2 items 1, 5, 6)

    def _cut_unknown(self) -> bool:
        return self.inherited_cut is None and self._seeded is not False

    def _own(self, seq: int) -> bool | None:
        """Whether ``seq`` is child-owned (at or after the cut); ``None`` until the cut is known."""
        if self.inherited_cut is not None:
            return seq >= self.inherited_cut
        if self._seeded is False:
            return True
        return None

    def _check_delivery(self, data: dict, idx: int) -> None:
        version = data.get("sessionFormatVersion", 0)
        if not is_count(version):
            self._emit("delivery", "delivery sessionFormatVersion must be a non-negative safe integer", idx)
            return
        if version != 4:
            return  # historical generations are not interpreted in v4
        through = data.get("throughSeq")
        if not is_count(through):
            self._emit("delivery", "delivery throughSeq must be a non-negative safe integer", idx)
        elif through >= idx:
            self._emit("delivery", "delivery throughSeq must precede its marker", idx)
        sid = data.get("sessionId")
        if not _nonempty_str(sid):
            self._emit("delivery", "delivery requires a nonempty Session id", idx)
            return
        if self.header is None or sid == self._header_id:
            return
        if not self._has_parent:
            self._emit("delivery", "current-generation delivery marker names the wrong Session", idx, value=sid)
            return
        own = self._own(idx)
        if own is None:
            self._foreign_deliveries.append(idx)
        elif own:
            self._emit("delivery", "current-generation delivery marker names the wrong Session", idx, value=sid)

    def _catalog(self, data: Any, idx: int) -> None:
        own = self._own(idx)
        if own is False:
            return
        if own is None:
            self._catalog_after_marker.append((idx, data))
            return
        self._check_catalog_fact(data, idx)

    def _check_catalog_fact(self, data: Any, idx: int) -> None:
        """A supported versioned catalog fact with a unique child id (version 2 = ``external``)."""
        ok = (
            isinstance(data, dict)
            and data.get("version") in (0, 1, 2)
            and not isinstance(data.get("version"), bool)
            and isinstance(data.get("childId"), str)
            and (
                data.get("mode") in ("continuable", "one-shot", "unknown")
                if data.get("version") in (0, 1)
                else data.get("mode") == "external"
            )
            and not (data.get("version") == 0 and data.get("mode") == "unknown")
            and not (data.get("mode") == "continuable" and not isinstance(data.get("label"), str))
            and ("label" not in data or isinstance(data.get("label"), str))
        )
        if not ok:
            self._emit("catalog", "subagent/catalog requires a supported versioned catalog fact", idx)
            return
        if not is_count(data.get("childCreatedAt")):
            self._emit("catalog", "catalog child creation time must be a non-negative safe integer", idx)
        child = data["childId"]
        if child in self._catalog_ids:
            self._emit("catalog", f"duplicate catalog child {child}", idx)
        else:
            self._catalog_ids.add(child)

    def _finish_cut(self) -> None:
        """Cut consistency and the facts that waited for it."""
        marker = self._last_marker
        cut = self.inherited_cut
        if cut is not None and is_count(cut) and cut > self.count:
            self._emit("cut", "format v4 inherited event count exceeds its events", None)
        if self._seeded is True and (marker is None or (cut is not None and marker != cut)):
            self._emit("cut", "format v4 seeded header disagrees with its last inherited end-seed marker", marker)
        if cut is None:
            cut = marker if marker is not None else 0
        for seq, data in self._catalog_after_marker:
            if seq >= cut:
                self._check_catalog_fact(data, seq)
        for seq in self._foreign_deliveries:
            if seq >= cut:
                self._emit("delivery", "current-generation delivery marker names the wrong Session", seq)

    # ------------------------------------------------------------------ lifecycle (§5.2 item 7)

    def _life(self, message: str, seq: int) -> None:
        self._emit("lifecycle", message, seq)

    def _require_turn(self, etype: str, seq: int) -> None:
        if self.turn is None:
            self._life(f"{etype} is outside an open turn", seq)

    def _require_step(self, etype: str, data: dict, seq: int) -> bool:
        if self.turn is None or self.step is None or data.get("turn") != self.turn or data.get("step") != self.step:
            self._life(f"{etype} does not match an open turn and step", seq)
            return False
        return True

    def _close_calls(self, etype: str, seq: int) -> None:
        if self.calls:
            self._life(f"{etype} leaves unresolved tool call {next(iter(self.calls))}", seq)
        self.calls.clear()

    def _lifecycle(  # noqa: C901
        self, etype: str, event: dict, data: Any, seq: int, before: tuple[int, int | None], surfaced: bool
    ) -> None:
        if not isinstance(data, dict):
            return  # reported by the data rules; nothing to relate
        if etype in _STEP_TYPES:
            self._require_step(etype, data, seq)
        if etype.startswith("turn/") and self.compaction is not None and not self.compaction.crossings:
            self.compaction.crossings.append((etype, seq))  # dsh reports the first crossing only
        if etype == "system/message":
            length, first = before
            if length > 0 and (self.head is None or first != self.head):
                self._life("system/message requires a protected first surface head", seq)
            if surfaced and self._fold is not None and self._fold.nodes and self._fold.nodes[0] == seq:
                self.head = seq
        if etype == "user/message":
            source = data.get("source")
            if isinstance(source, dict) and source.get("kind") == "user":
                self._human_user_seqs.append(seq)  # seqs arrive ascending
            if event.get("surfaceOp") != "append" and isinstance(source, dict) and source.get("kind") == "compact-checkpoint":
                self._compaction_owner(source, "compaction checkpoint", seq)
            return
        if etype == "turn/start":
            turn = data.get("turn")
            if self.turn is not None or turn != self.next_turn:
                self._life("turn/start does not open the expected turn", seq)
            self.turn = turn if is_count(turn) else self.next_turn
            self.step = None
            self.next_step = 1
            self.calls.clear()
        elif etype == "turn/end":
            if self.turn is None or data.get("turn") != self.turn or self.step is not None:
                self._life("turn/end does not match the open turn with no open step", seq)
            self._close_calls(etype, seq)
            closed = self.turn if self.turn is not None else data.get("turn")
            self.turn = None
            self.step = None
            self.next_turn = (closed + 1) if is_count(closed) else self.next_turn + 1
        elif etype == "step/start":
            step = data.get("step")
            if self.turn is None or data.get("turn") != self.turn or self.step is not None or step != self.next_step:
                self._life("step/start does not match the open turn and next step", seq)
            self.step = step if is_count(step) else self.next_step
            if self.turn is None and is_count(data.get("turn")):
                self.turn = data["turn"]
        elif etype == "step/end":
            self._require_step(etype, data, seq)
            self._close_calls(etype, seq)
            closed = self.step if self.step is not None else data.get("step")
            self.step = None
            self.next_step = (closed + 1) if is_count(closed) else self.next_step + 1
        elif etype in ("assistant/message", "tool/call", "tool/result"):
            self._tool(etype, event, data, seq)
        elif etype == "request/header":
            self._require_turn(etype, seq)
            header = data.get("header")
            config = header.get("config") if isinstance(header, dict) else None
            self.provider = config.get("provider") if isinstance(config, dict) else None
        elif etype == "request/context":
            self._require_turn(etype, seq)
        elif etype in vocab.PTC_DISPATCH_TYPES:
            self._dispatch(etype, data, seq)
        elif etype in ("llm/retry", "llm/retry-started"):
            self._retry(etype, data, seq)
        elif etype in ("session/title", "session/title-llm-request"):
            self._title(etype, data, seq)
        elif etype == "command/run":
            cid = data.get("commandId")
            if not _nonempty_str(cid):
                self._life("commandId requires a nonempty string", seq)
            elif cid in self._commands:
                self._life(f"command/run repeats commandId {cid}", seq)
            else:
                self._commands.add(cid)
            self._command_seqs.append(seq)
        elif etype == "command/done":
            self._command_seqs.append(seq)
            cid = data.get("commandId")
            if not _nonempty_str(cid):
                self._life("commandId requires a nonempty string", seq)
            elif cid not in self._commands:
                self._life("command/done has no prior command/run", seq)
            if "sourceEventSeq" in data:
                source = data["sourceEventSeq"]
                if not is_count(source):
                    self._life("command sourceEventSeq must be a non-negative safe integer", seq)
                elif source >= seq:
                    self._life("command sourceEventSeq must name an earlier event", seq)
                elif data.get("kind") != "success" or _seq_in(self._command_seqs, source):
                    self._life("command/done has invalid sourceEventSeq", seq)
        elif etype in ("compaction/start", "compaction/summary", "compaction/end", "compaction/prune"):
            self._compact(etype, data, seq)
        elif etype == "session/end-seed":
            self.compaction = None  # an end-seed closes (and forgives) any inherited compaction

    def _tool(self, etype: str, event: dict, data: dict, seq: int) -> None:
        """Advertise (assistant tool-call blocks), start (tool/call), settle (tool/result)."""
        if etype == "tool/result" and event.get("surfaceOp") != "append":
            self._require_turn(etype, seq)
            return
        matched = self._require_step(etype, data, seq)
        if etype == "assistant/message":
            message = data.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool-call":
                    continue
                cid = block.get("id")
                if not _nonempty_str(cid):
                    continue  # reported by the data rules
                if cid in self.calls:
                    self._life(f"assistant/message repeats advertised tool call {cid}", seq)
                    continue
                self.calls[cid] = _Call(block.get("name"), block.get("arguments"))
            return
        message = data.get("message") if etype == "tool/result" else None
        cid = data.get("callId") if etype == "tool/call" else (message.get("toolCallId") if isinstance(message, dict) else None)
        if not _nonempty_str(cid):
            return
        pending = self.calls.get(cid)
        if pending is None:
            if matched or self.turn is not None:
                self._life(f"{etype} {cid} has no advertised tool lifecycle", seq)
            return
        if etype == "tool/call":
            if pending.started or pending.name != data.get("name") or pending.arguments != data.get("arguments"):
                self._life(f"tool/call {cid} does not match one advertised tool call", seq)
            pending.started = True
            return
        if not pending.started and not self._not_started_repair(event, data, message, cid):
            self._life(f"tool/result {cid} is not the exact TOOL_NOT_STARTED repair", seq)
        del self.calls[cid]

    @staticmethod
    def _not_started_repair(event: dict, data: dict, message: Any, cid: str) -> bool:
        error = data.get("error")
        if not isinstance(error, dict) or not isinstance(message, dict):
            return False
        if (
            error.get("name") != _NOT_STARTED_ERROR["name"]
            or error.get("code") != TOOL_NOT_STARTED
            or message.get("isError") is not True
            or "sourceEventSeqs" in event
        ):
            return False
        mid = message.get("id")
        if not _nonempty_str(mid):
            return False
        if mid.startswith(closer_message_prefix("forked", cid)):
            return True  # its exact identity is checked by the fork-result rule
        prefix = closer_message_prefix("interrupted", cid)
        suffix = mid[len(prefix):]
        content = message.get("content")
        block = content[0] if isinstance(content, list) and content else None
        return (
            mid.startswith(prefix)
            and bool(_DIGITS.match(suffix))
            and int(suffix) <= MAX_SAFE_INTEGER
            and isinstance(content, list)
            and len(content) == 1
            and isinstance(block, dict)
            and block.get("type") == "text"
            and block.get("text") == NOT_STARTED_TEXT
        )

    def _dispatch(self, etype: str, data: dict, seq: int) -> None:
        """Nested PTC calls: unique starts, each settled once with identical coordinates."""
        self._require_turn(etype, seq)
        sub, root, parent = data.get("subCallId"), data.get("rootCallId"), data.get("parentCallId")
        for value, name in ((sub, "PTC subCallId"), (root, "PTC rootCallId"), (parent, "PTC parentCallId")):
            if not _nonempty_str(value):
                self._life(f"{name} requires a nonempty string", seq)
                return
        # One bytes value per start: digest of its root (16), of its coordinates (16), settled flag (1).
        root_digest = _digest(root)
        existing = self._dispatches.get(sub)
        if existing is not None and existing[:16] != root_digest:
            self._life("PTC dispatch changes its rootCallId", seq)
        if parent != root and (self._dispatches.get(parent) or b"")[:16] != root_digest:
            self._life("PTC parentCallId does not belong to rootCallId", seq)
        digest = _digest(root, parent, data.get("name"), data.get("arguments"))
        if etype == "tool/ptc-dispatch-start":
            if existing is not None:
                self._life("PTC dispatch repeats subCallId", seq)
                return
            self._dispatches[sub] = root_digest + digest + b"\x00"
            return
        if existing is None or existing[32]:
            self._life("PTC dispatch has no unique start", seq)
            return
        if existing[16:32] != digest:
            self._life("PTC dispatch does not match its start", seq)
        self._dispatches[sub] = existing[:32] + b"\x01"

    def _retry(self, etype: str, data: dict, seq: int) -> None:
        """Retry chains: numbered 1, 2, … per (turn, step, provider, policyKey), one id each."""
        rid, attempt = data.get("retryId"), data.get("retry")
        if not _nonempty_str(rid):
            self._life("retryId requires a nonempty string", seq)
            return
        if not is_count(attempt):
            self._life("retry must be a non-negative safe integer", seq)
            return
        pair = _attempt_key(rid, attempt)
        if etype == "llm/retry-started":
            scheduled = self._scheduled.get(pair)
            if scheduled is None:
                self._life("llm/retry-started pairs no prior scheduled attempt", seq)
                return
            if scheduled != _fact_key(data.get("turn"), data.get("step")):
                self._life("llm/retry-started changes scheduled coordinates", seq)
            if pair in self._retry_started:
                self._life("llm/retry-started repeats one scheduled attempt", seq)
            self._retry_started.add(pair)
            return
        current_step = self.step if self.step is not None else self.next_step - 1
        if self.turn is None or data.get("turn") != self.turn or data.get("step") != current_step:
            self._life("llm/retry does not match the current turn and step", seq)
        if data.get("provider") != self.provider:
            self._life("llm/retry provider does not match the open request/header", seq)
        chain = _fact_key(data.get("turn"), data.get("step"), data.get("provider"), data.get("policyKey"))
        prior = self._chains.get(chain)
        if attempt != (1 if prior is None else prior[0] + 1):
            self._life("llm/retry skips its policy attempt sequence", seq)
        if (rid in self._retry_ids) if prior is None else (prior[1] != rid):
            self._life("llm/retry must keep one retryId per policy chain", seq)
        self._chains[chain] = (attempt, rid)
        self._retry_ids.add(rid)
        if pair not in self._scheduled:
            self._scheduled[pair] = _fact_key(data.get("turn"), data.get("step"))

    def _title(self, etype: str, data: dict, seq: int) -> None:
        """Titles cite distinct earlier human user messages; LLM requests mirror them."""
        refs = data.get("messageSeqs")
        if not isinstance(refs, list):
            self._life("title messageSeqs requires an array", seq)
            return
        if etype == "session/title":
            source = data.get("source")
            if not isinstance(source, dict):
                self._life("title source requires an object", seq)
            elif (len(refs) == 0) != (source.get("kind") == "user"):
                self._life("session/title messageSeqs must be empty exactly for a user title", seq)
        seen: set[Any] = set()
        for ref in refs:
            if not is_count(ref):
                self._life("title messageSeqs must be a non-negative safe integer", seq)
                return
            if ref >= seq:
                self._life("title messageSeqs must name an earlier event", seq)
                return
            if ref in seen or not _seq_in(self._human_user_seqs, ref):
                self._life(f"{etype} messageSeqs must cite distinct earlier human user/message events", seq)
                return
            seen.add(ref)
        if etype != "session/title-llm-request":
            return
        messages = data.get("messages")
        message = messages[0] if isinstance(messages, list) and messages else None
        content = message.get("content") if isinstance(message, dict) else None
        source = message.get("source") if isinstance(message, dict) else None
        if not (
            refs
            and isinstance(messages, list)
            and len(messages) == 1
            and message.get("role") == "user"
            and isinstance(source, dict)
            and source.get("kind") == "dsh-session-title-llm"
            and isinstance(content, list)
            and len(content) == 1
            and isinstance(content[0], dict)
            and content[0].get("type") == "text"
        ):
            self._life("session/title-llm-request messages do not represent messageSeqs", seq)

    def _compaction_owner(self, data: dict, subject: str, seq: int) -> _Compaction | None:
        comp = self.compaction
        if comp is None or comp.id != data.get("compactionId") or comp.command != data.get("sourceCommandId"):
            self._life(f"{subject} has no matching compaction/start", seq)
            return None
        return comp

    def _compact(self, etype: str, data: dict, seq: int) -> None:
        """Compaction transactions and the surface spans they account for."""
        if etype in ("compaction/prune", "compaction/summary"):
            self._span(etype, data, seq)
        if etype == "compaction/prune":
            return
        if etype == "compaction/start":
            if self.compaction is not None:
                self._life("compaction/start overlaps an open compaction", seq)
            turn = data.get("turn")
            if turn is not None and not is_count(turn):
                self._life("compaction turn must be a non-negative safe integer", seq)
            elif turn != self.turn:
                self._life("compaction/start does not match the open turn", seq)
            cid = data.get("compactionId")
            if not _nonempty_str(cid):
                self._life("compactionId requires a nonempty string", seq)
            self.compaction = _Compaction(cid, data.get("sourceCommandId"), turn if is_count(turn) else None, seq)
            return
        comp = self._compaction_owner(data, etype, seq)
        if comp is None:
            return
        if comp.turn != self.turn:
            self._life(f"{etype} does not match the open turn", seq)
        if etype == "compaction/summary":
            if comp.summarized:
                self._life("compaction/summary repeats", seq)
            comp.summarized = True
            return
        if data.get("turn") != comp.turn:
            self._life("compaction/end changes its owner turn", seq)
        if "error" not in data and not comp.summarized:
            self._life("successful compaction/end requires one summary", seq)
        for crossing, at in comp.crossings:
            self._pending.append(Problem("lifecycle", f"{crossing} crosses an open compaction", at))
        self.compaction = None

    def _span(self, etype: str, data: dict, seq: int) -> None:
        fold = self._fold
        if fold is None:
            return
        rng = data.get("shadowedRange")
        seqs = data.get("shadowedSeqs")
        if not isinstance(rng, dict):
            self._life("compaction shadowedRange requires an object", seq)
            return
        if not isinstance(seqs, list):
            self._life("compaction shadowedSeqs requires an array", seq)
            return
        start, end = rng.get("start"), rng.get("end")
        for value, name in ((start, "compaction range start"), (end, "compaction range end")):
            if not is_count(value):
                self._life(f"{name} must be a non-negative safe integer", seq)
                return
            if value >= seq:
                self._life(f"{name} must name an earlier event", seq)
                return
        nodes = fold.nodes
        try:
            a = nodes.index(start)
            b = nodes.index(end)
        except ValueError:
            a = b = -1
        if a < 0 or b < a or nodes[a : b + 1] != seqs:
            self._life(f"{etype} shadowedSeqs do not name an exact current surface span", seq)
            return
        if self.head is not None and self.head in seqs:
            self._life("compaction cannot shadow the protected system head", seq)


def validate_events(
    header: dict | None,
    events: Iterable[dict],
    *,
    inherited_cut: int | None = None,
    projection: bool = False,
) -> Iterator[Problem]:
    """Every problem of a v4 log, streamed in log order (end-of-log findings last)."""
    validator = Validator(header, inherited_cut=inherited_cut, projection=projection)
    for event in events:
        yield from validator.feed(event)
    yield from validator.finish()
