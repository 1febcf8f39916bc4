"""dsh's own words: closer texts, error identities and refusal wordings.

Texts the model sees (the synthetic tool results of a closed turn) must be dsh's
byte for byte, and refusals must read as dsh's so a message found by dshlog can be
searched for in dsh's own diagnostics.  Every such text is spelt here once; the
code that writes or checks a closer, and the code that raises a refusal, imports it.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "CLOSER_CAUSES",
    "CLOSER_ERROR",
    "CLOSER_TEXT",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "CloserCause",
    "already_owned",
    "closer_message_id",
    "closer_message_prefix",
    "FORMAT_VERSION_REFUSAL",
    "HEADER_NOT_AN_OBJECT",
    "codec_row_label",
    "edge_refusal",
    "EMPTY_FORK",
    "EMPTY_LOG",
    "EMPTY_ZSTD_LOG",
    "frame_failed_validation",
    "invalid_committed_event",
    "invalid_frame_magic",
    "reserved_block_type",
    "reserved_frame_header_bit",
    "session_not_found",
    "encoding_mismatch",
    "flat_file_layout",
    "identity_mismatch",
    "requested_id_mismatch",
    "ZSTD_CORRUPT",
    "newer_version",
    "older_version",
    "TORN_RECORD_IN_FRAME",
    "unparsable_row",
    "row_not_an_object",
    "row_seq_gap",
    "transformed_artifact_refusal",
]

CloserCause = Literal["interrupted", "forked"]

#: Why a turn is closed by synthetic events: a crash found on resume, or a fork cut.
CLOSER_CAUSES: Final[tuple[CloserCause, ...]] = ("interrupted", "forked")

#: Model-visible texts of the synthetic tool results, per cause and per recorded
#: lifecycle of the call (``started``: a ``tool/call`` was recorded).
CLOSER_TEXT: Final[dict[str, dict[str, str]]] = {
    "interrupted": {
        "started": (
            "The tool call was interrupted after it was recorded, but no result was durably recorded. "
            "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
            "operation is read-only or idempotent; if it may have side effects, first verify external "
            "state or ask the user. Do not retry blindly."
        ),
        "notStarted": (
            "The tool call was interrupted before the Harness recorded it as started. "
            "Retry it if it is still needed."
        ),
    },
    "forked": {
        "started": (
            "The history inherited by this branch records this tool call starting but does not include "
            "its result. The parent session may have completed it after the fork point. Decide whether "
            "to retry from the tool semantics: retry only if the operation is read-only or idempotent; "
            "if it may have side effects, first verify external state or ask the user. Do not retry "
            "blindly."
        ),
        "notStarted": (
            "The history inherited by this branch has no record of this tool call starting. The parent "
            "session may have executed it after the fork point. Decide whether to retry from the tool "
            "semantics: retry only if the operation is read-only or idempotent; if it may have side "
            "effects, first verify external state or ask the user. Do not retry blindly."
        ),
    },
}

#: Error codes of the synthetic tool results: they describe the recorded lifecycle of
#: the call, so both causes share them.
TOOL_OUTCOME_UNKNOWN: Final[str] = "TOOL_OUTCOME_UNKNOWN"
TOOL_NOT_STARTED: Final[str] = "TOOL_NOT_STARTED"
#: ``data.error`` of a synthetic tool result, by whether the call had started.
CLOSER_ERROR: Final[dict[bool, dict[str, str]]] = {
    True: {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN},
    False: {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED},
}


def closer_message_prefix(cause: str, call_id: str) -> str:
    """The message id of a synthetic tool result, up to its seq: ``<cause>-tool-result-<callId>-``."""
    return f"{cause}-tool-result-{call_id}-"


def closer_message_id(cause: str, call_id: str, seq: int) -> str:
    """The message id dsh gives the synthetic tool result of ``call_id`` written at ``seq``."""
    return f"{closer_message_prefix(cause, call_id)}{seq}"


#: ``inspectSessionFormatVersion``: the header's ``version`` is read before anything
#: else, and must be a count (``null``, ``-1``, ``1.5``, ``"0"``, one past
#: :data:`~dshlog.protocol.values.MAX_SAFE_INTEGER` all fail).
FORMAT_VERSION_REFUSAL: Final[str] = "Session format version must be a non-negative safe integer"
#: ``inspectSessionFormatVersion`` of a header line that is not an object.
HEADER_NOT_AN_OBJECT: Final[str] = "Session header must be a JSON object"


def newer_version(session_id: object, version: int, current: int) -> str:
    """dsh's refusal of a log written by a newer harness (``SessionFormatNewerError``).

    This is the persistence layer's wording, what opening such a session says; the
    format catalog's own header status words it ``stored Session uses newer format
    vN; this build writes v4``.  dshlog opens files, so it speaks for the former
    (README "How dshlog relates to dsh").
    """
    return (
        f'session "{session_id}" uses log format v{version}, but this harness reads only v{current}: '
        "the log was written by a newer harness — upgrade the harness to open it"
    )


def older_version(session_id: object, version: int, current: int) -> str:
    """dsh's refusal of an older header in the current generation's slot (``session.v4.jsonl``).

    The current-slot scanner refuses a foreign version before anything else
    (``refuseForeignFormatVersion``), as unsupported: only a historical slot
    is migrated.
    """
    return (
        f'session "{session_id}" uses log format v{version}, older than the supported v{current}, '
        "and this build ships no upgrade path for it"
    )


def unparsable_row(version: int, current: int, row: int) -> str:
    """dsh's issue for body row ``row`` (1-based, counted after the header) that is not JSON.

    The current generation's scanner says ``unparsable committed event``; a
    historical generation's reader (``MigratingJsonlRows``) says ``row N is not
    valid JSON``.  Both count event rows, not physical lines.
    """
    if version >= current:
        return f"corrupt session log: unparsable committed event at line {row}"
    return f"corrupt session log: row {row} is not valid JSON"


def invalid_committed_event(row: int, detail: str) -> str:
    """dsh's current-generation scanner around a row its codec refuses (``row``: 1-based, after the header).

    Only the current slot's scanner wraps the codec's text so; a historical
    generation's reader raises the codec's text as it is.
    """
    return f"corrupt session log: invalid committed event at line {row}: {detail}"


#: dsh's refusal of a plain file without a complete first line.
EMPTY_LOG: Final[str] = "empty or header-less session log"
#: dsh's refusal of a zstd generation without one complete frame.
EMPTY_ZSTD_LOG: Final[str] = "empty or header-less Zstandard session log"
#: What dsh's frame scanner and decoder put before each of their refusals.
ZSTD_CORRUPT: Final[str] = "corrupt Zstandard session log: "


def invalid_frame_magic(byte: int) -> str:
    """dsh's frame scanner where a frame should start and none does (a skippable frame too)."""
    return f"{ZSTD_CORRUPT}invalid frame magic at byte {byte}"


def reserved_frame_header_bit(byte: int) -> str:
    """dsh's frame scanner on a descriptor (at ``byte``) with a reserved bit set."""
    return f"{ZSTD_CORRUPT}reserved frame-header bit at byte {byte}"


def reserved_block_type(byte: int) -> str:
    """dsh's frame scanner on a block header (at ``byte``) of the reserved type 3."""
    return f"{ZSTD_CORRUPT}reserved block type at byte {byte}"


def frame_failed_validation(byte: int) -> str:
    """dsh's frame decoder on a complete frame (starting at ``byte``) that does not decode or verify."""
    return f"{ZSTD_CORRUPT}frame at byte {byte} failed validation"


def session_not_found(session_id: str) -> str:
    """dsh's ``SessionPersistenceNotFoundError``: no generation of that id in the root."""
    return f'session "{session_id}" not found'


def requested_id_mismatch(path: object, requested: str, header_id: str) -> str:
    """dsh's bound storage identity: the session directory (the id it was opened by) names another id."""
    return f'corrupt session log "{path}": requested id "{requested}" does not match header id "{header_id}"'


def identity_mismatch(path: object, header_id: str, expected: object) -> str:
    """dsh's bound storage identity: the header's id and cwd derive another path than the file's."""
    return f'corrupt session log "{path}": header id "{header_id}" and cwd identify "{expected}"'


def flat_file_layout(path: object) -> str:
    """dsh's refusal of a root holding a flat ``<project>/<name>.jsonl[.zstd]`` file (an older layout)."""
    return (
        f'session artifact "{path}" uses the unsupported flat-file layout; '
        "use a separate root or move it into a project/session directory before loading"
    )


def encoding_mismatch(path: object, compressed: bool) -> str:
    """dsh's refusal of a root where ``path`` uses the other encoding than the one it is configured for.

    ``compressed``: the encoding of ``path`` (dsh is configured for the other one).
    """
    suffix, configured = (".jsonl.zstd", "none") if compressed else (".jsonl", "zstd")
    return (
        f'session artifact "{path}" uses {suffix}, but this backend is configured for compression "{configured}"; '
        "use a separate root or select the matching compression mode"
    )


#: dsh's refusal of a current zstd generation whose complete frames do not end on
#: a committed record: a record split across frames, or any damaged row (its
#: scanner stops counting committed bytes at the first issue) inside them.
TORN_RECORD_IN_FRAME: Final[str] = "corrupt Zstandard session log: complete frame contains a torn JSONL record"


def already_owned(session_id: str) -> str:
    """dsh's ``SessionAlreadyOwnedError`` text: another process holds ``session.lock``."""
    return f'session "{session_id}" is already owned by an active write handle'


def unknown_event_type(version: int, quoted_type: str, seq: object) -> str:
    """dsh's refusal of an event type its format ``version`` does not know (``quoted_type``: the type as quoted there)."""
    return f"format v{version} contains unknown event type {quoted_type} at seq {seq}"


def edge_refusal(edge: str, version: int, subject: str, detail: str) -> str:
    """How dsh's chain words a plain format error raised inside one edge."""
    return f"{edge} refuses this format v{version} {subject}: {detail}"


def transformed_artifact_refusal(source: int, current: int, detail: str) -> str:
    """dsh's refusal of a migrated artifact its v4 restore rejects (``MigratingSessionFormatRestore``)."""
    return f"Session migration from v{source} to v{current} refuses the transformed artifact: {detail}"


def codec_row_label(version: int, index: int) -> str:
    """How dsh's codec names body row ``index`` (0-based, after the header).

    The v0/v1 codec says ``released Session row N``; v2 decodes v2..v4 rows (the
    v3 and v4 codecs delegate to it), so its label says ``v2`` for all three.
    """
    return f"released Session row {index}" if version <= 1 else f"released v2 row {index}"


def row_not_an_object(version: int, index: int) -> str:
    """dsh's codec refusal of a body row that is not a JSON object."""
    label = codec_row_label(version, index)
    return f"{label} must be a JSON object" if version <= 1 else f"{label} must be an object"


def row_seq_gap(version: int, index: int, expected: int, got: str) -> str:
    """dsh's codec refusal of a row whose seq is not the next one (``got`` as JavaScript prints it)."""
    return f"{codec_row_label(version, index)} has seq gap (expected {expected}, got {got})"


#: A fork needs an existing seq to cut at (dsh's ``buildForkSeed`` reads the time of
#: the boundary event); a log without events has none.
EMPTY_FORK: Final[str] = "the log has no events: there is no seq to fork at"
