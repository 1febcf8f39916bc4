"""Every word and mark a renderer prints, defined once.

A renderer (plain text, terminal, Markdown, HTML) decides how a label *looks*
(bold, a colour, a heading, capitalised); which label it is and how it is
spelt is decided here, so "system prompt", "interrupted", the call and result
arrows or the token names cannot drift apart between ``show`` and ``export``.

Marks come in two spellings: ``plain`` is ASCII for piped text (it survives any
terminal, encoding and ``grep``), ``symbol`` is for the terminal and for
documents.  The placeholders of non-text blocks inside a message
(``[tool-call NAME]``, ``[image]``...) belong to the text extractor,
:mod:`dshlog.model.content`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from ..protocol.layout import persistence_root
from ..protocol.vocabulary import CURRENT_VERSION

if TYPE_CHECKING:  # the item types are only named here: `events` and `tail` print labels without loading the transcript model
    from ..model.transcript import Failure, Replacement, Retry, ToolChange

# --------------------------------------------------------------------------- marks


class Mark(msgspec.Struct, frozen=True):
    """A sign in front of a line: ``plain`` (ASCII) when piped, ``symbol`` on a terminal and in documents."""

    plain: str
    symbol: str


CALL = Mark("->", "→")  # a tool call
RESULT = Mark("<-", "←")  # its result
FAILURE = Mark("!", "✗")  # a model call that produced nothing
RETRY = Mark("~", "↻")  # a model call made again
NOTE = Mark("*", "•")  # a log-only event worth a line
STOPPED = "■"  # where the user cancelled a streaming answer
TURN_END = "└"  # the terminal's turn closer
FOLDED = "▸"  # folded reasoning on the terminal

# --------------------------------------------------------------------------- headings and words

TURN = "turn"
USER = "user"
ASSISTANT = "assistant"
REASONING = "reasoning"
TOOL_CALL = "tool call"
TOOL_CALL_BLOCK = "tool-call"  # the block type, as the events line lists a message's calls
RESULT_WORD = "result"  # a result whose call name is unknown
ERROR = "error"
TOOLS = "tools"
TOOLS_CHANGED = "tools changed"
SOURCE_JOIN = " · "  # "user · goal", "assistant · deepseek/chat" on a terminal and in HTML

SYSTEM_PROMPT: Mapping[str, str] = {
    "set": "system prompt",
    "replaced": "system prompt changed",
    "appended": "system prompt added",
    "cleared": "system prompt cleared",
}
EMPTY = "(empty)"

INTERRUPTED = "interrupted"
INTERRUPTED_TEXT = f"{INTERRUPTED}: the user cancelled while the model was answering"

#: What a person reads for each token counter of the log (``--json`` keeps the log's own names).
TOKEN_LABELS: Mapping[str, str] = {
    "inputTokens": "in",
    "outputTokens": "out",
    "cacheReadTokens": "cache read",
    "cacheWriteTokens": "cache write",
    "reasoningTokens": "reasoning",
}

FULL_HINT = " (--full)"  # how to see what a trimmed text left out
REASONING_HINT = "--reasoning to show"
IN_PART = "counted in part"  # a session a report read past a damaged row: its figures are those of the rows it could read


class Hints(msgspec.Struct, frozen=True):
    """How a reader is told to see what a transcript folded or trimmed: the command's flags, or the browser's keys."""

    reasoning: str
    full: str


#: ``show``: the command line's flags
SHOW_HINTS = Hints(REASONING_HINT, FULL_HINT)
#: ``browse``: its keys (``r`` unfolds reasoning; the events tab shows an event's JSON whole)
BROWSE_HINTS = Hints("r to show", " (whole: the events tab, Enter on its row)")

_FAILURE = {"error": "model call failed", "aborted": "model call cancelled", "no-output": "model call produced nothing"}
_REPLACEMENT = {"compaction": "compaction summary", "revision": "revised message", "tool-result-rewrite": "tool result rewritten"}


# --------------------------------------------------------------------------- texts built from items


def capital(text: str) -> str:
    """``System prompt``: a label as a heading (only the first letter changes)."""
    return text[:1].upper() + text[1:]


def plural(n: int, word: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{n} {word}{'s' if n != 1 else ''}"


def user_source(source: str | None) -> str | None:
    """The source tag of a user message worth showing (``None`` for the user's own words)."""
    return None if source in (None, "user") else source


def token_name(key: str) -> str:
    return TOKEN_LABELS.get(key, key)


def count(n: object) -> str:
    """A count for people: ``12,345`` (thousands separated); anything not an integer as it is."""
    return f"{n:,}" if type(n) is int else ("" if n is None else str(n))


def short_count(n: int) -> str:
    """``999``, ``12.3k``, ``450k``, ``12.3M``, ``1.2G``: at most 5 characters.

    The one abbreviated number form: a table uses it only where the exact figure (:func:`count`)
    cannot fit the screen; piped output and ``--json`` keep the exact figure.
    """
    if n < 1000:
        return str(n)
    for div, unit in ((1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")):
        x = n / div
        if x < 99.95:
            return f"{x:.1f}{unit}"
        if x < 999.5:
            return f"{x:.0f}{unit}"
    return f"{n / 1e12:.0f}T"


def tokens_text(tokens: Mapping[str, int]) -> str:
    """``in 10, out 2``, ``in 12,345``."""
    return ", ".join(f"{token_name(k)} {count(v)}" for k, v in tokens.items())


def cut_note(cut_lines: int, cut_chars: int, hint: str = "") -> str:
    """``… 12 more lines (3456 characters) not shown``."""
    what = f"{plural(cut_lines, 'more line')} ({cut_chars} characters)" if cut_lines else f"{cut_chars} more characters"
    return f"… {what} not shown{hint}"


def reasoning_fold(text: str, hint: str = REASONING_HINT) -> str:
    """``3 lines; --reasoning to show``: what stands for folded reasoning (each target frames it)."""
    return f"{plural(text.count(chr(10)) + 1, 'line')}; {hint}"


def failure_text(item: Failure) -> str:
    what = _FAILURE[item.outcome]
    detail = item.message + (f" ({item.code})" if item.code else "")
    return f"{what}: {detail}" if detail.strip() else what


def retry_text(item: Retry) -> str:
    if not item.logged:
        return f"retry {item.number}: the call was made again"
    of = f"/{item.max_retries}" if item.max_retries is not None else ""
    why = f" after {item.code}" if item.code else ""
    delay = f", waited {item.delay_ms} ms" if item.delay_ms is not None else ""
    return f"retry {item.number}{of}{why}{delay}" + (f": {item.message}" if item.message else "")


def replacement_title(item: Replacement) -> str:
    seqs = ", ".join(map(str, item.replaced)) if item.replaced else f"{item.start}..{item.end}"
    label = _REPLACEMENT.get(item.reason, item.reason)
    return f"{label} (seq {item.seq}) replaces seqs {seqs}"


def tool_changes(item: ToolChange) -> list[str]:
    """``["+grep", "-bash"]``."""
    return [f"+{n}" for n in item.added] + [f"-{n}" for n in item.removed]


def usage_text(step: object, tokens: Mapping[str, int]) -> str:
    """``step 1 tokens: in 10, out 2``."""
    return f"step {step} tokens: {tokens_text(tokens)}"


def totals_text(turns: int, tokens: Mapping[str, int], title: str | None = None) -> str:
    """``title: …; 4 turns; tokens: in 40, out 17`` (the title only when given)."""
    bits = [plural(turns, "turn")]
    if title:
        bits.insert(0, f"title: {title}")
    if tokens:
        bits.append("tokens: " + tokens_text(tokens))
    return "; ".join(bits)


# --------------------------------------------------------------------------- a session's facts for people

#: The header keys an export shows, in human words (``isSeeded`` and the stored version are said in a sentence).
FACT_LABELS: Mapping[str, str] = {
    "id": "session",
    "cwd": "project",
    "createdAt": "created",
    "parentSession": "parent session",
    "origin": "started by",
    "agentPreset": "agent preset",
    "delegationDepth": "subagent depth",
    "file": "file",
}
FACT_MODELS = "models"
FACT_ACTIVE = "active"
FACT_DURATION = "duration"
FACT_TURNS = "turns"
FACT_TOKENS = "tokens"
FACT_FORMAT = "stored as"
FACT_CHILDREN = "subagents"
SEEDED = "seeded from its parent session (the parent's history is inherited)"

#: The HTML page's filters: the class an item carries, and what the switch says.
FILTERS: Mapping[str, str] = {
    "reasoning": "reasoning",
    "call": "tool calls",
    "result": "tool results",
    "system": "system",
    "retry": "retries and failures",
}
SEARCH = "search"
CONTENTS = "turns"
STORE_TITLE = "dsh sessions"
STORE_ROOT = "root"
FACT_SESSIONS = "sessions"
INDEX_COLUMNS = ("session", "project", "last activity", "turns", "size")
NO_PROMPT = "(no prompt)"


def stored_format(stored: object) -> str:
    """``format v0, shown as v4``: how the file is stored, and that it is read in the current format."""
    if type(stored) is not int:
        return f"format v{CURRENT_VERSION}"
    return f"format v{stored}" + (f", shown as v{CURRENT_VERSION}" if stored != CURRENT_VERSION else "")


#: What a transcript of a log dsh refuses opens with (dsh's reason follows), and what ``show`` prints where
#: dsh's decision stopped a transcript (a log that changed while it was read).
DSH_REFUSES = "dsh refuses to open this session"
#: What the transcript below such a banner is.
SHOWN_AS_STORED = "shown as far as its stored rows can be read"
#: The command that brings such a session back (``dshlog rescue``: a dry run first, saying what it changes).
RESCUE_COMMAND = "dshlog rescue"
TO_BRING_BACK = "to bring it back"


def refusal_mark(reason: str) -> str:
    """``dsh refuses to open this session: <reason>``: the first line of the banner, and the mark after a partial transcript."""
    return f"{DSH_REFUSES}: {reason}"


def rescue_target(session_id: str | None, path: str) -> str:
    """What ``dshlog rescue`` takes to bring the log at ``path`` back: its session id where ids are
    looked up (the log sits in a persistence root), else its path, which works wherever it is typed."""
    return session_id if session_id and path != "-" and persistence_root(path) is not None else path


def rescue_command(target: str) -> str:
    """``dshlog rescue <id>``: the command line, ``target`` quoted for a shell when it needs it."""
    return f"{RESCUE_COMMAND} {shlex.quote(target)}"


#: The note ``validate`` and ``migrate`` add when dsh refuses a session that rescue can bring back.
RESCUE_CAN = "rescue can bring this session back"
#: why rescue leaves a session dsh refuses for where it sits (its id, its project, its root): a successor sits there too
PLACE_NOT_RESCUED = "dsh refuses this session for where it sits, which a rescued successor beside it does not change"


def shared_reason(count: int, first: object) -> str:
    """Where ``count`` sessions could not be read for one reason (dsh refuses every session of a
    root that mixes encodings): the reason is said once, with how many and the first of them."""
    return f"{plural(count, 'session')}, the first {first}"


def rescue_note(target: str) -> str:
    """``rescue can bring this session back: dshlog rescue <id>``."""
    return f"{RESCUE_CAN}: {rescue_command(target)}"


#: what a note says of a refused log too large for the note to judge (rescue itself can: ``--check`` answers)
RESCUE_MAY = "rescue may bring this session back (too large to judge here; --check answers)"


def rescue_may_note(target: str) -> str:
    """``rescue may bring this session back (...): dshlog rescue <id> --check``."""
    return f"{RESCUE_MAY}: {rescue_command(target)} --check"


def bring_back(target: str | None) -> str:
    """How to bring a refused session back: ``to bring it back: dshlog rescue <id>``, or, for a
    session dsh refuses for where it sits (``target`` ``None``), why rescue does not."""
    return f"{TO_BRING_BACK}: {rescue_command(target)}" if target is not None else PLACE_NOT_RESCUED


def refusal_lines(reason: str, target: str | None) -> tuple[str, str]:
    """The banner of a refused log's transcript: dsh's refusal, then what is shown and how to bring it back."""
    return refusal_mark(reason), f"{SHOWN_AS_STORED}; {bring_back(target)}"
