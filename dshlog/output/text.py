"""Text for people: the terminal-safe form of session text, previews, sizes, times.

Session text is data, never control.  A log holds whatever the agent saw (tool
output with colour codes, a cursor-moving progress bar, a pasted binary), and
writing that to a terminal would let a session recolour, overwrite or hide
what ``dshlog`` prints, or talk to the terminal itself.  So every human
renderer (plain text on a terminal *and* when piped, the terminal renderer,
Markdown and HTML documents) passes the text it writes through
:func:`sanitize`:

* C0 controls except newline and tab (ESC, CR, BEL, backspace, NUL...), DEL and
  the C1 controls U+0080..U+009F become a visible escape, ``\\x1b``, ``\\x0d``,
  ``\\x7f``, ``\\x9b``: the text stays readable (``\\x1b[31merror\\x1b[0m`` is a
  recognisable colour code), nothing is dropped silently, and the length of a
  line stays bounded;
* a lone surrogate (a ``\\ud800`` escape JSON allows but UTF-8 cannot encode)
  becomes ``\\ud800`` in the same way, so the output is always valid UTF-8.
* the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
  U+2066..U+2069) become ``\\u202e`` and so on: invisible, they reorder what a
  terminal or browser shows after them (a file name, a command, a whole line:
  "Trojan Source"); the marks (LRM, RLM, ALM), which right-to-left text needs and
  which reorder nothing beyond a neighbour, stay.

A backslash already in the text is left alone, so a visible escape and a
literal ``\\x1b`` typed by someone read the same; the log (``events --json``)
tells them apart.  Machine output (``--json``, the JSON export) is never
sanitised: it is exact JSON, which escapes what it must itself.

Times are written two ways, on purpose: a listing (``ls``, ``info``) is read by
the person at this machine, so it is local time (:func:`local_minutes` to the
minute under a heading that names the zone, :func:`zone_text`; a single time as
an ISO date-time with its offset, :func:`local_iso`); an exported transcript is
shared with people elsewhere, so it is UTC to the second and says so
(:func:`utc_seconds`).  The zone is the caller's (``tzinfo``; ``None``: the
system's local time): this module reads no environment.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, tzinfo

from ..model.content import PREVIEW, TextRule, content_pieces, message_text
from ..protocol.jsjson import stringify as js_quote

__all__ = [
    "cut",
    "display_width",
    "human_bytes",
    "human_duration",
    "local_iso",
    "local_minutes",
    "message_text",
    "preview",
    "quoted_preview",
    "sanitize",
    "utc_seconds",
    "zone_text",
]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def sanitize(text: str) -> str:
    """``text`` with every control character (but newline and tab), bidi override and lone surrogate as a visible escape."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def char_width(ch: str) -> int:
    """Columns a character takes on a terminal: 2 for wide (CJK, fullwidth), 0 for combining marks, else 1."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


#: A character that may not take exactly one column: anything outside Latin, IPA and the
#: spacing modifiers (below the combining marks at U+0300) and outside the general
#: punctuation (dashes, quotes, ``…``; U+2065 is the first there that :func:`char_width`
#: does not give one column).  Text without one is as wide as it is long, which the
#: table renderer asks of every cell: one C search instead of two ``unicodedata``
#: look-ups a character.  ``tests/test_output.py`` checks every code point outside it.
_NOT_NARROW = re.compile("[^\x00-\u02ff\u2000-\u2064]")


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal."""
    if text.isascii():
        return len(text)
    others = _NOT_NARROW.findall(text)
    return len(text) + sum(char_width(c) for c in others) - len(others)


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` terminal columns, ending in ``…`` when cut.

    Looks at no more of ``text`` than it keeps (plus one character), so a
    preview of a message of many megabytes costs what a short one does.  Where
    those characters all take one column (:data:`_NOT_NARROW` finds none), the
    cut is by length; otherwise the columns are counted a character at a time
    from the first that may not take one.
    """
    if text.isascii():
        return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
    found = _NOT_NARROW.search(text, 0, max(limit + 1, 0))
    if found is None:
        return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
    start = found.start()  # the characters before it take a column each, and fit (start <= limit)
    used, keep = start, max(min(start, limit - 1), 0)
    for i in range(start, len(text)):
        w = char_width(text[i])
        if used + w <= limit - 1:
            keep = i + 1
        used += w
        if used > limit:
            return text[:keep] + "…"
    return text


def cut_left(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` terminal columns, its *end* kept after ``…`` when cut (``…/api-server``).

    For paths: what tells two projects apart is their last directories, not the home they share.
    """
    if display_width(text) <= limit:
        return text
    used = 1
    keep = len(text)
    while keep > 0 and used + char_width(text[keep - 1]) <= limit:
        keep -= 1
        used += char_width(text[keep])
    return "…" + text[keep:]


def quoted_preview(text: str, limit: int) -> str:
    """``text`` quoted as JavaScript's ``JSON.stringify`` quotes it, in at most ``limit`` columns, ``…`` when cut.

    Only the part that can be shown is quoted: the opening quote and ``limit + 1``
    characters always take more than ``limit`` columns, so the cut is the same as
    that of the whole quoted text.
    """
    if len(text) > limit:
        return cut(js_quote(text[: limit + 1])[:-1], limit)
    return cut(js_quote(text), limit)


#: Characters of a message's text a preview gathers before it tries the cut on them.
_PREVIEW_PREFIX = 1024


def preview(message: object, limit: int = 60, rule: TextRule = PREVIEW) -> str:
    """Short one-line preview of a message (newlines flattened), at most ``limit`` columns, ``…`` when cut.

    ``surface`` previews every surface event of a log as it is folded, so a preview
    must not cost the whole text of a long tool output.  The text is gathered piece by
    piece only until it is past ``_PREVIEW_PREFIX`` characters; :func:`cut` decides
    from the characters it keeps (plus one), so when it cuts that prefix it cuts the
    whole text at the same place.  Only when it keeps the whole prefix (a run of
    zero-width characters) is the whole text gathered.
    """
    content = message.get("content") if isinstance(message, dict) else None
    parts: list[str] = []
    size = 0
    for _, piece in content_pieces(content, rule):
        if not piece:
            continue
        if parts and rule.separator:
            parts.append(rule.separator)
            size += len(rule.separator)
        parts.append(piece)
        size += len(piece)
        if size > _PREVIEW_PREFIX:
            prefix = "".join(parts)[:_PREVIEW_PREFIX].replace("\n", " ")
            short = cut(prefix, limit)
            if short != prefix:
                return short
            return cut(message_text(message, rule).replace("\n", " "), limit)
    return cut("".join(parts).replace("\n", " "), limit)


def human_bytes(n: int | None) -> str:
    """``27347 B``, ``1.2 MiB``: sizes for people."""
    if n is None:
        return "-"
    if n < 1024:
        return f"{n} B"
    x = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        x /= 1024
        if x < 1024 or unit == "TiB":
            return f"{x:.1f} {unit}"
    return f"{n} B"  # pragma: no cover


def human_duration(ms: int) -> str:
    """``1h 02m``, ``3m 07s``, ``850 ms``: durations for people."""
    if ms < 1000:
        return f"{ms} ms"
    s = ms // 1000
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h {m:02d}m"
    if m:
        return f"{m}m {sec:02d}s"
    return f"{ms / 1000:.1f} s"


def _in_zone(ms: float, tz: tzinfo | None) -> datetime:
    """Epoch ms as an aware date-time in ``tz`` (``None``: the system's local time)."""
    at = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return at.astimezone(tz) if tz is not None else at.astimezone()


def local_minutes(ms: int | None, tz: tzinfo | None = None) -> str:
    """``YYYY-MM-DD HH:MM`` in ``tz`` for epoch ms (``-`` when unknown, or beyond what a calendar date holds).

    The zone is not in the text: a table says it once, in its heading (:func:`zone_text`).
    """
    if not ms:
        return "-"
    try:
        return _in_zone(ms, tz).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):  # a damaged time: year 287396 is no date
        return "-"


def local_clock(ms: object, tz: tzinfo | None = None) -> str:
    """``HH:MM:SS`` in ``tz`` (the system's zone when ``None``) of an event's epoch-ms time (``--:--:--`` when it
    has none), as a terminal's event lines show it."""
    if type(ms) is not int or ms <= 0:
        return "--:--:--"
    try:
        return _in_zone(ms, tz).strftime("%H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a damaged time is no time of day
        return "--:--:--"


def local_iso(ms: object, tz: tzinfo | None = None) -> str | None:
    """``2026-10-20T14:24:02.224+02:00``: a positive epoch-ms integer as an ISO date-time in ``tz``, its offset
    written; ``None`` when there is no real time (the caller shows the raw value)."""
    if type(ms) is not int or ms <= 0:
        return None
    try:
        return _in_zone(ms, tz).isoformat(timespec="milliseconds" if ms % 1000 else "seconds")
    except (OverflowError, OSError, ValueError):
        return None


def zone_text(tz: tzinfo | None, name: str, now_ms: float) -> str:
    """How a heading names the zone its times are in: the zone's name (``Europe/Berlin``, ``UTC``), or for
    the system's unnamed local time its offset now (``UTC+01:00``)."""
    if tz is not None:
        return name
    offset = _in_zone(now_ms, None).utcoffset()
    minutes = int(offset.total_seconds()) // 60 if offset is not None else 0
    sign = "-" if minutes < 0 else "+"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def utc_seconds(ms: object) -> str | None:
    """``2026-10-20 12:24:02 UTC`` for a positive epoch-ms integer; ``None`` when there is no real time."""
    if type(ms) is not int or ms <= 0:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return None
