"""One line per event, as ``events`` and ``tail`` print it: seq, type, surface op, a short description.

The description follows the seed's style (SEMANTICS.md 11): message text is
quoted as JS would (``JSON.stringify``) and cut to a width, so one line stays one
line whatever the message holds; the tool calls of a message follow the quote.
The whole line passes the terminal sanitiser before it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model.content import EVENT_LINE, message_text
from ..model.summary import model_name
from ..protocol.jsjson import stringify as js_quote
from ..protocol.vocabulary import ROLE_OF_TYPE, message_of
from . import labels as L
from .text import display_width, local_clock, quoted_preview, sanitize

__all__ = ["describe", "event_line", "surface_marker"]


def surface_marker(ev: dict[str, Any]) -> str:
    """``append``, ``replace 5..13`` or ``""``: how the event entered the model view."""
    op = ev.get("surfaceOp")
    if op == "append":
        return "append"
    if isinstance(op, dict):
        s = op.get("startSeq", op.get("start"))
        e = op.get("endSeq", op.get("end"))
        return f"replace {s}..{e}"
    return ""


def _message(ev: dict[str, Any], t: str, d: dict[str, Any]) -> dict[str, Any] | None:
    msg = message_of(t, ev.get("data"))
    if not isinstance(msg, dict) and t == "assistant/message" and "content" in d:
        return d  # legacy wrapper: the message fields sit in data itself
    return msg if isinstance(msg, dict) else None


def _message_line(ev: dict[str, Any], t: str, d: dict[str, Any], width: int) -> str:
    msg = _message(ev, t, d)
    out = quoted_preview(message_text(msg, EVENT_LINE), width)
    if t == "user/message" and msg is not None:
        src = msg.get("source")
        kind = src.get("kind") if isinstance(src, dict) else None
        out = f"{kind}: {out}" if kind else out
    content = msg.get("content") if msg is not None else None
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool-call":
                out += f" + {L.TOOL_CALL_BLOCK} {b.get('name')}"
    if d.get("interrupted"):
        out += f" {L.INTERRUPTED}"
    if t == "tool/result" and isinstance(d.get("error"), dict):
        out += f" {L.ERROR}={d['error'].get('code')}"
    return out


def _turn(d: dict[str, Any], width: int) -> str:
    return f"turn {d.get('turn')}"


def _step(d: dict[str, Any], width: int) -> str:
    return f"turn {d.get('turn')} step {d.get('step')}"


def _turn_end(d: dict[str, Any], width: int) -> str:
    r = d.get("reason")
    if isinstance(r, dict) and isinstance(r.get("kind"), str):
        return f"reason={r['kind']}"
    return "reason=(none)" if r is None else f"reason={js_quote(r)}"  # what is there, never Python's None


def _request_header(d: dict[str, Any], width: int) -> str:
    cfg = (d.get("header") or {}).get("config") if isinstance(d.get("header"), dict) else None
    model = f" {model_name(cfg.get('provider'), cfg.get('model'))}" if isinstance(cfg, dict) else ""
    return f"reason={d.get('reason')}{model}"


def _request_context(d: dict[str, Any], width: int) -> str:
    return model_name(d.get("provider"), d.get("model"))


def _tool_call(d: dict[str, Any], width: int) -> str:
    return f"{d.get('name')} {d.get('callId')}"


def _attempt(d: dict[str, Any], width: int) -> str:
    stream = d.get("stream")
    return f"stream {len(stream) if isinstance(stream, list) else '?'} records, no surface message"


def _chunk(d: dict[str, Any], width: int) -> str:
    ch: Any = d.get("chunk") if isinstance(d.get("chunk"), dict) else {}
    extra = ch.get("text") or ch.get("argumentsDelta") or ch.get("blockType") or ""
    return f"{ch.get('type')} {quoted_preview(str(extra), width)}" if extra else str(ch.get("type"))


def _title(d: dict[str, Any], width: int) -> str:
    return quoted_preview(str(d.get("title")), width)


def _end_seed(d: dict[str, Any], width: int) -> str:
    return "inherited" if d.get("inherited") is True else ""


def _spliced(d: dict[str, Any], width: int) -> str:
    ins = d.get("inserted")
    return f"{d.get('target')} +{len(ins) if isinstance(ins, list) else 0} -{d.get('removedCount', 0)}"


_DESCRIBE: dict[str, Callable[[dict[str, Any], int], str]] = {
    "turn/start": _turn,
    "step/start": _step,
    "step/end": _step,
    "turn/end": _turn_end,
    "request/header": _request_header,
    "request/context": _request_context,
    "tool/call": _tool_call,
    "assistant/attempt": _attempt,
    "assistant/chunk": _chunk,
    "session/title": _title,
    "session/end-seed": _end_seed,
    "agent/inbox/spliced": _spliced,
}


def describe(ev: dict[str, Any], width: int = 40) -> str:
    """Short content description of one event (``""`` when there is nothing to say)."""
    t = ev.get("type")
    data = ev.get("data")
    d = data if isinstance(data, dict) else {}
    if not isinstance(t, str):
        return ""
    if t in ROLE_OF_TYPE:
        return _message_line(ev, t, d, width)
    fn = _DESCRIBE.get(t)
    return fn(d, width) if fn is not None else ""


#: Columns from which a terminal's event lines start with the time of day (below, the preview needs them more).
TIME_FROM = 100
#: Columns a preview takes when the width is unknown (piped) or the screen leaves less.
PREVIEW_WIDTH = 40


def event_line(ev: dict[str, Any], width: int | None = None) -> bytes:
    """One event for people: ``seq type [surface op] [description]``, sanitised, newline-terminated.

    ``width``: the terminal's columns (``None`` when piped, where the line is the same whatever the
    screen).  On a terminal the preview takes what the screen leaves after seq and type, and a
    screen of ``TIME_FROM`` columns or more shows the event's local time of day first.
    """
    line = f"{ev.get('seq')} {ev.get('type')}"
    marker = surface_marker(ev)
    if marker:
        line += f" {marker}"
    limit = PREVIEW_WIDTH
    if width is not None:
        if width >= TIME_FROM:
            line = f"{local_clock(ev.get('time'))} {line}"
        limit = max(PREVIEW_WIDTH, width - display_width(line) - 1)
    desc = describe(ev, limit)
    over = display_width(line) + 1 + display_width(desc) - width if width is not None else 0
    if over > 0 and limit > PREVIEW_WIDTH:  # a source kind or a call list around the quote: the quote gives way
        desc = describe(ev, max(PREVIEW_WIDTH, limit - over))
    if desc:
        line += f" {desc}"
    return sanitize(line).encode("utf-8") + b"\n"
