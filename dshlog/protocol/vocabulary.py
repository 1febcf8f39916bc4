"""The names of the format: event types per version, envelope keys, kinds and roles.

The format's closed inventories (v0/v1, v2, v3) decide what a migration may
accept; the v4 set is the vocabulary a current reader interprets.  Keeping them
in one place means the reader, the fold, the migrator and the validator can never
drift apart about which names exist where (a fold with its own list once refused
``working-directory/change``, which the v4 reader installs).  Names are protocol
facts (FORMAT §7, SEMANTICS §1.2); header key orders live here too, the rules
over them in :mod:`dshlog.check.header`.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------
# Event types

#: Types shared unchanged by every released inventory from v0 through v4.
_COMMON: Final[frozenset[str]] = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "model/selection",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session-log-deepseek/delivery-accepted",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "subagent/model-selection-policy",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)

#: Released-v0 payload members per event type: (required, optional).  Protocol facts.
RELEASED_V0_PAYLOADS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "agent-preset/selected": (("agentPreset",), ()),
    "agent/inbox/spliced": (("target", "start", "inserted"), ("removedCount", "outcome")),
    "approval/asked": (("id", "toolName"), ("callId", "reason")),
    "approval/decided": (("id", "outcome"), ()),
    "approval/policy": (("policy",), ("source",)),
    "assistant/chunk": (("turn", "step", "chunk"), ()),
    "assistant/message": (("turn", "step", "message"), ("usage", "interrupted")),
    "command/done": (("commandId", "kind"), ("text", "sourceEventSeq")),
    "command/run": (("commandId", "name", "source"), ("args",)),
    "compaction/end": (("compactionId", "turn"), ("sourceCommandId", "error")),
    "compaction/prune": (("shadowedRange", "shadowedSeqs", "shadowedTokenCount"), ()),
    "compaction/start": (("compactionId", "turn"), ("sourceCommandId",)),
    "compaction/summary": (
        ("compactionId", "summary", "shadowedRange", "shadowedSeqs", "shadowedTokenCount", "provider", "model"),
        ("sourceCommandId", "maxTokens", "usage", "rawOutput", "llmStreamCall"),
    ),
    "feedback/record": (("text",), ()),
    "goal/change": (
        ("kind", "version", "operation"),
        ("goal", "roundsStarted", "createdAt", "updatedAt", "cleared", "clearedAt"),
    ),
    "hook/invoked": (("turn", "point", "dialect", "handlerId"), ("matcher",)),
    "hook/result": (("turn", "point", "handlerId", "decision", "durationMs"), ("exitCode", "stderrSummary")),
    "llm/retry": (
        ("retryId", "turn", "step", "provider", "mode", "policyKey", "retry", "delayMs", "failure"),
        ("maxRetries",),
    ),
    "llm/retry-started": (("retryId", "turn", "step", "retry"), ()),
    "model/selection": (("provider", "model"), ("reasoningEffort",)),
    "permission/preset": (("preset",), ()),
    "plan/mode": (("active",), ()),
    "request/context": (("provider", "model"), ("contextWindow",)),
    "request/header": (("header", "reason"), ("startsSeries",)),
    "sandbox/mode": (("mode",), ("source",)),
    "schedule/change": (("version", "operation"), ("schedule", "id", "acceptedAt")),
    "session-log-deepseek/delivery-accepted": (("sessionId", "throughSeq"), ()),
    "session/end-seed": ((), ()),
    "session/title": (("title", "messageSeqs", "source"), ()),
    "session/title-llm-request": (
        ("titleProvider", "messageSeqs", "route", "system", "messages", "maxTokens"),
        (),
    ),
    "step/end": (("turn", "step"), ()),
    "step/start": (("turn", "step"), ()),
    "subagent/descriptor": (
        ("mode", "version", "provider"),
        ("label", "agentProvider", "agentModel", "agentReasoningEffort", "persona", "toolFilter"),
    ),
    "subagent/model-selection-policy": (("allowedModels",), ()),
    "team/member": (("version", "teamId", "member"), ()),
    "team/message/delivered": (("version", "teamId", "messageId", "targetId"), ()),
    "team/message/queued": (("version", "teamId", "message"), ()),
    "team/task": (("version", "teamId", "task"), ()),
    "todo/write": (("todos",), ()),
    "tool-workflow/agent-end": (("runId", "seq", "outcome"), ()),
    "tool-workflow/agent-start": (("runId", "seq", "label", "childId"), ("phase",)),
    "tool-workflow/run-end": (("runId", "stopReason"), ()),
    "tool-workflow/run-start": (("runId", "name"), ()),
    "tool/call": (("turn", "step", "callId", "name", "arguments"), ()),
    "tool/code-dispatch": (("rootCallId", "parentCallId", "subCallId", "name", "arguments", "isError", "content"), ()),
    "tool/code-dispatch-start": (("rootCallId", "parentCallId", "subCallId", "name", "arguments"), ()),
    "tool/result": (("turn", "step", "message"), ("error", "meta")),
    "turn/end": (("turn", "reason"), ()),
    "turn/start": (("turn",), ()),
    "user/message": (("role", "id", "content", "source"), ()),
    "web/deepseek-search-llm-request": (("endpoint", "apiVersion", "body"), ()),
}

#: The nested code-mode dispatch events, renamed by v2→v3 (old name -> v3+ name).
CODE_DISPATCH_RENAMES: Final[dict[str, str]] = {
    "tool/code-dispatch-start": "tool/ptc-dispatch-start",
    "tool/code-dispatch": "tool/ptc-dispatch",
}
#: Their old names, and their v3+ names.
CODE_DISPATCH_TYPES: Final[frozenset[str]] = frozenset(CODE_DISPATCH_RENAMES)
PTC_DISPATCH_TYPES: Final[frozenset[str]] = frozenset(CODE_DISPATCH_RENAMES.values())

#: The released types whose payload check (dsh's ``assertReleasedPayloadSemantics``) decides
#: the same at every format version and reads no event seq, so the same ``data`` passes it
#: at v2 when it passed at v0.  Read from dsh's switch: the other types call
#: ``messageValue`` for a message that may be a user's (``user/message``,
#: ``agent/inbox/spliced``, ``session/title-llm-request``: a legacy goal source below v2, a
#: session reference's ``capturedFormatVersion``), compare with the version
#: (``session-log-deepseek/delivery-accepted``) or with the event's seq (``command/done``,
#: ``compaction/prune``, ``compaction/summary``, ``session/title``).  ``assistant/message``
#: and ``tool/result`` pass the version to ``messageValue`` too, but their source must be a
#: model's or a tool's, and no check of those or of content blocks reads it.
VERSION_BLIND_PAYLOAD_TYPES: Final[frozenset[str]] = frozenset({
    "agent-preset/selected", "approval/asked", "approval/decided", "approval/policy",
    "assistant/chunk", "assistant/message", "command/run", "compaction/end", "compaction/start",
    "feedback/record", "goal/change", "hook/invoked", "hook/result", "llm/retry",
    "llm/retry-started", "model/selection", "permission/preset", "plan/mode", "request/context",
    "request/header", "sandbox/mode", "schedule/change", "session/end-seed", "step/end",
    "step/start", "subagent/descriptor", "subagent/model-selection-policy", "team/member",
    "team/message/delivered", "team/message/queued", "team/task", "todo/write",
    "tool-workflow/agent-end", "tool-workflow/agent-start", "tool-workflow/run-end",
    "tool-workflow/run-start", "tool/call", "tool/code-dispatch", "tool/code-dispatch-start",
    "tool/result", "turn/end", "turn/start", "web/deepseek-search-llm-request",
})

#: Frozen v0/v1 inventory (streaming deltas are top-level ``assistant/chunk`` events):
#: the types whose payload members the released v0 codec knows.
V0_TYPES: Final[frozenset[str]] = frozenset(RELEASED_V0_PAYLOADS)
V1_TYPES: Final[frozenset[str]] = V0_TYPES

#: Released v2 inventory: chunks folded into settlements, plus the two rating events
#: that v2→v3 admits specially.
V2_TYPES: Final[frozenset[str]] = (
    _COMMON | CODE_DISPATCH_TYPES | {"assistant/attempt", "feedback/message-put", "feedback/message-delete"}
)

#: ``RELEASED_V3_EVENT_TYPES``: the fixed set v3→v4 interprets (everything else is
#: namespaced when ignorable, refused otherwise).
V3_TYPES: Final[frozenset[str]] = (
    (V2_TYPES - CODE_DISPATCH_TYPES)
    | PTC_DISPATCH_TYPES
    | {
        "deliverables/presented",
        "image/offload",
        "subagent/catalog",
        "system/message",
        "workspace/changes",
    }
)

#: The v4 reader's installed vocabulary (October build) plus the late-October additions.
V4_TYPES: Final[frozenset[str]] = V3_TYPES | {
    "developer/message",
    "job/registered",
    "job/settled",
    "working-directory/change",
}

#: The event types whose ``data`` the counters of ``info`` and ``stats`` read
#: (``model/summary.py``); the lazy reader leaves every other payload unread.
SUMMARY_DATA_TYPES: Final[frozenset[str]] = frozenset({
    "turn/start", "turn/end", "step/start", "request/header", "assistant/message",
    "assistant/attempt", "llm/retry", "tool/call", "tool/result", "session/title",
})

TYPES_BY_VERSION: Final[dict[int, frozenset[str]]] = {
    0: V0_TYPES,
    1: V1_TYPES,
    2: V2_TYPES,
    3: V3_TYPES,
    4: V4_TYPES,
}

#: The message event types that may carry ``surfaceOp``/``sourceEventSeqs``.
SURFACE_TYPES_V0: Final[frozenset[str]] = frozenset({"user/message", "assistant/message", "tool/result"})
SURFACE_TYPES_V3: Final[frozenset[str]] = SURFACE_TYPES_V0 | {"system/message"}
SURFACE_TYPES_V4: Final[frozenset[str]] = SURFACE_TYPES_V3 | {"developer/message"}

SURFACE_TYPES: Final[dict[int, frozenset[str]]] = {
    0: SURFACE_TYPES_V0,
    1: SURFACE_TYPES_V0,
    2: SURFACE_TYPES_V0,
    3: SURFACE_TYPES_V3,
    4: SURFACE_TYPES_V4,
}

#: The pre-rename compaction events the v0→v1 normaliser renames.
COMPACT_RENAMES: Final[dict[str, str]] = {
    "compact/start": "compaction/start",
    "compact/summary": "compaction/summary",
    "compact/end": "compaction/end",
    "compact/prune": "compaction/prune",
}
#: Pre-rename names that only the v0→v1 normaliser accepts, mapped to their new names.
LEGACY_RENAMES: Final[dict[str, str]] = {**COMPACT_RENAMES, "steering/message": "user/message"}

# Sets the migration edges dispatch on (each edge's own reading of dsh's code).
#: v0→v1: the types its first five normalisation steps act on, and the types its
#: compaction-id step looks at.
V0_V1_EARLY_STEP_TYPES: Final[frozenset[str]] = frozenset(
    {"turn/start", "turn/end", "request/header", "steering/message", "llm/retry"}
)
V0_V1_COMPACTION_STEP_TYPES: Final[frozenset[str]] = frozenset(
    {"session/end-seed", "compaction/start", "compaction/summary", "compaction/end", "user/message"}
)
#: v1→v2: the events that settle (close) a streaming attempt.
V1_V2_SETTLING_TYPES: Final[frozenset[str]] = frozenset({"turn/end", "step/end", "llm/retry", "llm/retry-started"})

#: v1→v2: the types of the events it writes itself (no earlier edge checked them): an
#: attempt's settlement, the closer of an interrupted turn, a legacy goal message's change
#: and the inherited-cut marker.
V1_V2_MADE_TYPES: Final[frozenset[str]] = frozenset({"assistant/attempt", "turn/end", "goal/change", "session/end-seed"})

#: Pre-release names that every edge refuses outright.
REFUSED_LEGACY_TYPES: Final[frozenset[str]] = frozenset({"mode/set", "request/header-delta"})

#: Prefix the v3→v4 edge puts in front of unknown ignorable historical types.
PLUGIN_PREFIX: Final[str] = "plugin:"
#: The package name of dsh's system-prompt producer in v0..v3 logs.  Upstream's v2->v3
#: edge stamps it on the system messages it generates, and upstream's v3->v4 edge turns
#: it (and only it) into ``system-prompt`` / ``runtime-context``; a fork build's own
#: edges do the same with its own spelling (``@x1a0f3n9/dsh-system-prompt``...), which
#: upstream turns into ``plugin:<name>`` (README: migrate, ``--system-prompt-plugin``).
SYSTEM_PROMPT_PLUGIN: Final[str] = "@deepseek-ai/dsh-system-prompt"

CURRENT_VERSION: Final[int] = 4


def types_for(version: int) -> frozenset[str]:
    """The known set of ``version``; later versions than the reader's use the current set."""
    if version in TYPES_BY_VERSION:
        return TYPES_BY_VERSION[version]
    return V4_TYPES if version > CURRENT_VERSION else V0_TYPES


def is_known(type_: str, version: int = CURRENT_VERSION) -> bool:
    """Whether a reader of ``version`` interprets events of ``type_``.

    Legacy names (``compact/*``, ``steering/message``) count as known in v0/v1
    because the v0→v1 normaliser accepts and renames them.
    """
    if type_ in types_for(version):
        return True
    return version <= 1 and type_ in LEGACY_RENAMES


#: The message types whose data wraps the message as ``data.message`` (all but ``user/message``).
WRAPPED_MESSAGE_TYPES: Final[frozenset[str]] = frozenset(
    {"system/message", "developer/message", "assistant/message", "tool/result"}
)

#: The five message event types, and the role each one's message must have (SEMANTICS §1.4).
ROLE_OF_TYPE: Final[dict[str, str]] = {
    "system/message": "system",
    "developer/message": "developer",
    "user/message": "user",
    "assistant/message": "assistant",
    "tool/result": "tool",
}

def message_of(event_type: str, data: object) -> object:
    """The message object a surface event stores: ``user/message`` stores it as ``data``
    itself, the other four wrap it as ``data.message`` (``None`` when absent)."""
    if event_type == "user/message":
        return data
    if isinstance(data, dict):
        return data.get("message")
    return None


#: Types whose ``data`` must be an object ("<type> requires an object"); a tool/result's data
#: has its own shared rule.
OBJECT_DATA_TYPES: Final[frozenset[str]] = (SURFACE_TYPES_V4 - {"tool/result"}) | {
    "assistant/attempt",
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "tool/call",
}

#: Types that must name the open turn and step in their data (besides the settlement and
#: tool events, which have rules of their own).
OPEN_STEP_TYPES: Final[frozenset[str]] = frozenset({"system/message", "developer/message", "assistant/attempt"})

#: Message types whose message with empty content stays a surface node but derives nothing.
EMPTY_DERIVES_NOTHING_TYPES: Final[frozenset[str]] = frozenset(
    {"system/message", "developer/message", "assistant/message"}
)


#: The events that settle a model call (exactly one per call, SEMANTICS §4).
SETTLEMENT_TYPES: Final[frozenset[str]] = frozenset({"assistant/message", "assistant/attempt"})

#: Events that rewrite existing messages in place (SEMANTICS §2.3 "project").
MESSAGE_PROJECTION_TYPES: Final[frozenset[str]] = frozenset({"image/offload"})

#: Keys an event envelope may carry (FORMAT §3.1); anything else is refused.
ENVELOPE_KEYS: Final[frozenset[str]] = frozenset(
    {"type", "seq", "time", "data", "ignorable", "sourceEventSeqs", "surfaceOp"}
)

#: v0/v1 packed delta rows (bare tags, no slash) and the delta chunk type each one packs.
PACKED_TYPES: Final[dict[str, str]] = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
#: Keys of a packed row on disk, and in a snapshot projection (seq0/time0 stripped).
PACKED_KEYS: Final[frozenset[str]] = frozenset({"type", "seq0", "time0", "data"})
PROJECTED_PACKED_KEYS: Final[frozenset[str]] = frozenset({"type", "data"})

#: ``request/header`` reasons and ``turn/end`` reason kinds of format v4.
REQUEST_REASONS: Final[frozenset[str]] = frozenset({"initial", "resume", "change", "series"})
TURN_END_KINDS: Final[frozenset[str]] = frozenset(
    {"completed", "aborted", "blocked", "error", "max-tokens", "interrupted", "forked"}
)
#: Image media types a message attachment may declare.
IMAGE_MEDIA_TYPES: Final[frozenset[str]] = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
#: Content block types that change the model's tool list (developer messages only).
TOOL_CHANGE_BLOCKS: Final[frozenset[str]] = frozenset({"tool-addition", "tool-removal"})


# --------------------------------------------------------------------------------------
# Physical header (FORMAT §2.1)

#: Canonical key order of a physical header, per version (``?`` = optional).
_ORDER_V0: Final[tuple[str, ...]] = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd?",
    "parentSession?",
    "seedLength?",
    "origin?",
    "delegationDepth",
    "agentPreset?",
)
_ORDER_V2: Final[tuple[str, ...]] = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd?",
    "parentSession?",
    "isSeeded",
    "origin?",
    "delegationDepth",
    "agentPreset?",
)


def header_key_order(version: int) -> tuple[str, ...]:
    """Header keys in the order dsh writes them; optional ones end in ``?``."""
    return _ORDER_V0 if version <= 1 else _ORDER_V2


def header_required_keys(version: int) -> frozenset[str]:
    return frozenset(k for k in header_key_order(version) if not k.endswith("?"))


def header_optional_keys(version: int) -> frozenset[str]:
    return frozenset(k[:-1] for k in header_key_order(version) if k.endswith("?"))


def header_required_order(version: int) -> tuple[str, ...]:
    """Required physical header keys in writer order: dsh's codecs name the first one missing."""
    return tuple(k for k in header_key_order(version) if not k.endswith("?"))


def logical_header_keys() -> tuple[tuple[str, ...], frozenset[str]]:
    """(required in order, optional) keys of the logical header every codec decodes to.

    The v2 physical header without ``type``: v0/v1's ``seedLength`` becomes ``isSeeded``.
    """
    order = [k for k in _ORDER_V2 if k != "type"]
    return tuple(k for k in order if not k.endswith("?")), frozenset(k[:-1] for k in order if k.endswith("?"))


RETIRED_HEADER_KEYS: Final[frozenset[str]] = frozenset({"sandboxMode", "approvalPolicy"})
