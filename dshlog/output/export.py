"""Writers that turn a transcript into something to share: Markdown, HTML, JSON.

All three stream: they receive display items from :mod:`dshlog.model.transcript` one
at a time and write as they go, so exporting a long session never holds it in
memory (the JSON writer keeps one turn's items at a time).

* **Markdown** is meant to be read as plain text too: headings per turn, tool
  arguments and output in fenced blocks whose fence is longer than any backtick
  run inside, reasoning as a quoted block.
* **HTML** is one self-contained file: inline CSS, no scripts, no fonts or
  images from anywhere, and a Content-Security-Policy that forbids loading
  anything, so opening a shared transcript never reaches the network.  Tool
  output, reasoning and system prompts fold with ``<details>``.
* **JSON** has a versioned shape, ``{"shape":1,"session":{…},"turns":[…],
  "summary":{…}}``; items keep the field names of the transcript dataclasses
  (``kind`` first).  Bump :data:`SHAPE` on any incompatible change.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import UsageError
from ..model.transcript import (
    AssistantText,
    Failure,
    Item,
    Note,
    Reasoning,
    Replacement,
    Retry,
    SystemPrompt,
    ToolCall,
    ToolChange,
    ToolResult,
    TranscriptReader,
    TurnEnd,
    TurnStart,
    Usage,
    UserText,
    cut_note,
    failure_text,
    replacement_title,
    retry_text,
    tokens_text,
)

SHAPE = 1
FORMATS = ("md", "html", "json")

Write = Callable[[bytes], None]

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _iso(ms: Any) -> str | None:
    if type(ms) is not int or ms <= 0:
        return None
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return None


def _title(session: dict[str, Any]) -> str:
    sid = session.get("id")
    return f"dsh session {sid}" if isinstance(sid, str) and sid else "dsh session"


def _facts(session: dict[str, Any]) -> list[tuple[str, str]]:
    """Header facts as (label, text) pairs for people."""
    out: list[tuple[str, str]] = []
    for key, value in session.items():
        if key == "createdAt":
            text = _iso(value) or str(value)
        elif isinstance(value, str):
            text = value
        else:
            from ..protocol.jsjson import dumps

            text = dumps(value).decode("utf-8", "replace")
        out.append((key, text))
    return out


def _first_line(text: str, width: int = 80) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text else 0


class Writer:
    """Base writer: ``begin(session)``, ``item(item)`` for each item, ``end(summary)``."""

    def __init__(self, write: Write) -> None:
        self._write = write

    def out(self, text: str) -> None:
        self._write(text.encode("utf-8", "replace"))

    def begin(self, session: dict[str, Any]) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def item(self, item: Item) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def end(self, summary: dict[str, Any]) -> None:  # pragma: no cover - interface
        raise NotImplementedError


# --------------------------------------------------------------------------- Markdown


def _fence(text: str, info: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}\n\n"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.split("\n")) + "\n\n"


def _code(text: Any) -> str:
    s = str(text)
    fence = "``" if "`" in s else "`"
    return f"{fence}{s}{fence}"


class MarkdownWriter(Writer):
    def begin(self, session: dict[str, Any]) -> None:
        self.out(f"# {_title(session)}\n\n")
        for label, text in _facts(session):
            self.out(f"- **{label}**: {text}\n")
        self.out("\n")

    def item(self, item: Item) -> None:  # noqa: C901 - one branch per item kind
        o = self.out
        if isinstance(item, TurnStart):
            when = _iso(item.time)
            o(f"## Turn {item.turn}" + (f" ({when})" if when else "") + "\n\n")
        elif isinstance(item, TurnEnd):
            o(f"*Turn {item.turn} {item.label}.*\n\n---\n\n")
        elif isinstance(item, SystemPrompt):
            head = {"set": "System prompt", "replaced": "System prompt changed", "appended": "System prompt added", "cleared": "System prompt cleared"}[item.change]
            o(f"**{head}** (seq {item.seq})\n\n")
            if item.text:
                o(_quote(item.text))
            if item.cut_chars:
                o(f"*{cut_note(item.cut_lines, item.cut_chars)}*\n\n")
        elif isinstance(item, UserText):
            src = "" if item.source in (None, "user") else f" ({item.source})"
            o(f"**User**{src}:\n\n{item.text}\n\n")
        elif isinstance(item, AssistantText):
            o(f"**Assistant**:\n\n{item.text}\n\n")
            if item.interrupted:
                o("*[interrupted: the user cancelled while the model was answering]*\n\n")
        elif isinstance(item, Reasoning):
            o("*Reasoning*:\n\n" + _quote(item.text))
        elif isinstance(item, ToolCall):
            o(f"**Tool call** {_code(item.name)} ({_code(item.call_id)}):\n\n" + _fence(item.arguments, "json" if item.arguments.lstrip().startswith(("{", "[")) else ""))
            if item.cut_chars:
                o(f"*{cut_note(item.cut_lines, item.cut_chars)}*\n\n")
        elif isinstance(item, ToolResult):
            err = f" — **error** {_code(item.error_code) if item.error_code else ''}".rstrip() if item.is_error else ""
            o(f"**Result** of {_code(item.name or '?')} ({_code(item.call_id)}){err}:\n\n" + _fence(item.output))
            if item.cut_chars:
                o(f"*{cut_note(item.cut_lines, item.cut_chars)}*\n\n")
        elif isinstance(item, Failure):
            o(f"> ✗ {failure_text(item)}\n\n")
        elif isinstance(item, Retry):
            o(f"> ↻ {retry_text(item)}\n\n")
        elif isinstance(item, Replacement):
            o(f"**{replacement_title(item)[0].upper() + replacement_title(item)[1:]}**:\n\n" + _quote(item.text))
        elif isinstance(item, ToolChange):
            o("*Tools changed: " + ", ".join([f"+{n}" for n in item.added] + [f"-{n}" for n in item.removed]) + "*\n\n")
        elif isinstance(item, Usage):
            o(f"*Step {item.step} tokens: {tokens_text(item.tokens)}*\n\n")
        elif isinstance(item, Note):
            o(f"*{item.text}*\n\n")

    def end(self, summary: dict[str, Any]) -> None:
        bits = [f"{summary['turns']} turn{'s' if summary['turns'] != 1 else ''}"]
        if summary.get("tokens"):
            bits.append("tokens: " + tokens_text(summary["tokens"]))
        self.out("*" + "; ".join(bits) + ".*\n")


# --------------------------------------------------------------------------- HTML

_CSS = """
:root{color-scheme:light dark;--bg:#fbfbfa;--fg:#1d1f21;--dim:#6a6f75;--line:#d9dcdf;--user:#e8f3ea;--asst:#f0ecf7;
--tool:#f3f4f6;--err:#fdecec;--warn:#fff6e0;--sys:#eef3fb;--accent:#2f6fb3}
@media (prefers-color-scheme:dark){:root{--bg:#17191c;--fg:#e4e6e8;--dim:#9aa0a6;--line:#33373c;--user:#1f2d23;
--asst:#282335;--tool:#202327;--err:#3a1f1f;--warn:#3a3220;--sys:#1d2633;--accent:#79b0ee}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",
"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif}
main{max-width:920px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:1.35em;margin:0 0 8px;word-break:break-all}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0 0 20px;color:var(--dim);font-size:.9em}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;word-break:break-all}
section.turn{border-top:2px solid var(--line);padding-top:8px;margin-top:22px}
h2{font-size:1.05em;margin:4px 0 12px;color:var(--accent)}h2 .when{color:var(--dim);font-weight:normal;font-size:.85em}
.msg{border-radius:8px;padding:8px 12px;margin:8px 0;border:1px solid var(--line)}
.msg .who{font-size:.78em;font-weight:700;text-transform:uppercase;letter-spacing:.04em;color:var(--dim);margin-bottom:2px}
.msg .text{white-space:pre-wrap;overflow-wrap:anywhere}
.user{background:var(--user)}.assistant{background:var(--asst)}.system{background:var(--sys)}
.replacement{background:var(--warn)}
.tool{margin:8px 0 8px 22px;border-left:3px solid var(--line);padding-left:10px}
.tool .head{font-size:.9em}.tool .head code{font-weight:700}.id{color:var(--dim);font-size:.85em}
pre{background:var(--tool);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:4px 0;overflow-x:auto;
white-space:pre-wrap;overflow-wrap:anywhere;font:13px/1.45 ui-monospace,"SFMono-Regular",Menlo,Consolas,"Noto Sans Mono",monospace}
.is-error pre{background:var(--err)}
details{margin:4px 0}summary{cursor:pointer;color:var(--dim);font-size:.9em}
details.reasoning .text{white-space:pre-wrap;color:var(--dim);font-style:italic;padding:4px 0 4px 10px;border-left:2px solid var(--line)}
.mark{font-size:.9em;margin:6px 0;padding:3px 10px;border-radius:6px}
.failure{background:var(--err)}.retry,.interrupted{background:var(--warn)}
.note,.usage{color:var(--dim);font-size:.85em;margin:4px 0}
.end{font-size:.9em;font-weight:600;margin:10px 0 0}.end.completed{color:#2e8540}.end.aborted,.end.max-tokens{color:#b7791f}
.end.error,.end.open,.end.interrupted{color:#c53030}.end.forked{color:#805ad5}
.cut{color:var(--dim);font-style:italic;font-size:.85em}
footer{margin-top:28px;color:var(--dim);font-size:.85em;border-top:1px solid var(--line);padding-top:8px}
"""


def _e(text: Any) -> str:
    """Escape for element content and attribute values; drop control characters HTML cannot carry."""
    return html.escape(_CONTROL.sub("\ufffd", str(text)), quote=True)


class HtmlWriter(Writer):
    def __init__(self, write: Write) -> None:
        super().__init__(write)
        self._in_section = False

    def begin(self, session: dict[str, Any]) -> None:
        title = _title(session)
        self.out(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
            f"<header><h1>{_e(title)}</h1>\n<dl class=\"facts\">"
            + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in _facts(session))
            + "</dl></header>\n"
        )

    def _open_section(self) -> None:
        if not self._in_section:
            self.out("<section class=\"turn\">\n")
            self._in_section = True

    def _close_section(self) -> None:
        if self._in_section:
            self.out("</section>\n")
            self._in_section = False

    @staticmethod
    def _cut(item: Any) -> str:
        return f"<div class=\"cut\">{_e(cut_note(item.cut_lines, item.cut_chars))}</div>" if item.cut_chars else ""

    def item(self, item: Item) -> None:  # noqa: C901 - one branch per item kind
        o = self.out
        seq = f" data-seq=\"{item.seq}\"" if item.seq is not None else ""
        if isinstance(item, TurnStart):
            self._close_section()
            o(f"<section class=\"turn\" id=\"turn-{_e(item.turn)}\">\n")
            self._in_section = True
            when = _iso(item.time)
            o(f"<h2>Turn {_e(item.turn)}" + (f" <span class=\"when\">{_e(when)}</span>" if when else "") + "</h2>\n")
            return
        self._open_section()
        if isinstance(item, TurnEnd):
            o(f"<p class=\"end {_e(item.outcome)}\"{seq}>Turn {_e(item.turn)} {_e(item.label)}</p>\n")
            self._close_section()
        elif isinstance(item, SystemPrompt):
            head = {"set": "System prompt", "replaced": "System prompt changed", "appended": "System prompt added", "cleared": "System prompt cleared"}[item.change]
            o(
                f"<details class=\"msg system\"{seq}><summary>{head} · {_lines(item.text) + item.cut_lines} lines</summary>"
                f"<div class=\"text\">{_e(item.text)}</div>{self._cut(item)}</details>\n"
            )
        elif isinstance(item, UserText):
            src = "" if item.source in (None, "user") else f" · {item.source}"
            o(f"<div class=\"msg user\"{seq}><div class=\"who\">User{_e(src)}</div><div class=\"text\">{_e(item.text)}</div></div>\n")
        elif isinstance(item, AssistantText):
            model = f" · {item.model}" if item.model else ""
            o(f"<div class=\"msg assistant\"{seq}><div class=\"who\">Assistant{_e(model)}</div><div class=\"text\">{_e(item.text)}</div>")
            if item.interrupted:
                o("<div class=\"mark interrupted\">■ interrupted: the user cancelled while the model was answering</div>")
            o("</div>\n")
        elif isinstance(item, Reasoning):
            o(f"<details class=\"reasoning\"{seq}><summary>Reasoning · {_lines(item.text)} lines</summary><div class=\"text\">{_e(item.text)}</div></details>\n")
        elif isinstance(item, ToolCall):
            o(
                f"<div class=\"tool call\"{seq}><div class=\"head\">→ <code>{_e(item.name)}</code> <span class=\"id\">{_e(item.call_id)}</span></div>"
                f"<pre>{_e(item.arguments)}</pre>{self._cut(item)}</div>\n"
            )
        elif isinstance(item, ToolResult):
            err = " is-error" if item.is_error else ""
            status = f" · error {item.error_code or ''}".rstrip() if item.is_error else ""
            n = _lines(item.output) + item.cut_lines
            opened = " open" if n <= 6 else ""
            o(
                f"<div class=\"tool result{err}\"{seq}><details{opened}><summary>← <code>{_e(item.name or 'result')}</code> "
                f"<span class=\"id\">{_e(item.call_id)}</span>{_e(status)} · {n} line{'s' if n != 1 else ''}: {_e(_first_line(item.output))}</summary>"
                f"<pre>{_e(item.output)}</pre>{self._cut(item)}</details></div>\n"
            )
        elif isinstance(item, Failure):
            o(f"<div class=\"mark failure\"{seq}>✗ {_e(failure_text(item))}</div>\n")
        elif isinstance(item, Retry):
            o(f"<div class=\"mark retry\"{seq}>↻ {_e(retry_text(item))}</div>\n")
        elif isinstance(item, Replacement):
            o(f"<div class=\"msg replacement\"{seq}><div class=\"who\">{_e(replacement_title(item))}</div><div class=\"text\">{_e(item.text)}</div></div>\n")
        elif isinstance(item, ToolChange):
            o(f"<p class=\"note\"{seq}>Tools changed: {_e(', '.join([f'+{n}' for n in item.added] + [f'-{n}' for n in item.removed]))}</p>\n")
        elif isinstance(item, Usage):
            o(f"<p class=\"usage\"{seq}>Step {_e(item.step)} tokens: {_e(tokens_text(item.tokens))}</p>\n")
        elif isinstance(item, Note):
            o(f"<p class=\"note\"{seq}>{_e(item.text)}</p>\n")

    def end(self, summary: dict[str, Any]) -> None:
        self._close_section()
        bits = [f"{summary['turns']} turn{'s' if summary['turns'] != 1 else ''}"]
        if summary.get("title"):
            bits.insert(0, f"title: {summary['title']}")
        if summary.get("tokens"):
            bits.append("tokens: " + tokens_text(summary["tokens"]))
        self.out(f"<footer>{_e('; '.join(bits))}</footer>\n</main>\n</body>\n</html>\n")


# --------------------------------------------------------------------------- JSON


class JsonWriter(Writer):
    """``{"shape":1,"session":…,"turns":[…],"summary":…}``, one turn per line."""

    def __init__(self, write: Write) -> None:
        super().__init__(write)
        self._turn: dict[str, Any] | None = None
        self._count = 0

    def _dump(self, obj: Any) -> bytes:
        from ..protocol.jsjson import dumps

        return dumps(obj)

    def begin(self, session: dict[str, Any]) -> None:
        self._write(b'{"shape":' + str(SHAPE).encode() + b',"session":' + self._dump(session) + b',"turns":[')

    def _flush(self) -> None:
        if self._turn is not None:
            self._write((b"," if self._count else b"") + b"\n" + self._dump(self._turn))
            self._count += 1
            self._turn = None

    def item(self, item: Item) -> None:
        if isinstance(item, TurnStart):
            self._flush()
            self._turn = {"turn": item.turn, "seq": item.seq, "time": item.time, "end": None, "items": []}
            return
        if self._turn is None:  # events outside any turn (between turns, before the first)
            self._turn = {"turn": None, "seq": item.seq, "time": None, "end": None, "items": []}
        if isinstance(item, TurnEnd):
            self._turn["end"] = {"seq": item.seq, "outcome": item.outcome, "label": item.label}
            self._flush()
            return
        self._turn["items"].append(item.as_dict())

    def end(self, summary: dict[str, Any]) -> None:
        self._flush()
        self._write(b"\n],\"summary\":" + self._dump(summary) + b"}\n")


# --------------------------------------------------------------------------- driver

WRITERS: dict[str, type[Writer]] = {"md": MarkdownWriter, "html": HtmlWriter, "json": JsonWriter}


def export(
    events: Iterable[dict],
    session: dict[str, Any],
    fmt: str,
    write: Write,
    *,
    full: bool = False,
    redact: bool = False,
) -> dict[str, Any]:
    """Write the transcript of ``events`` in ``fmt`` through ``write``; returns the summary.

    ``session`` holds the header facts (:func:`dshlog.model.transcript.session_facts`).
    With ``redact`` every string, the header facts included, is masked
    (:func:`dshlog.output.redact.redact`) before it is trimmed or written.
    """
    if fmt not in WRITERS:
        raise UsageError(f"unknown export format {fmt!r} (choose {', '.join(FORMATS)})")
    fn: Callable[[str], str] | None = None
    if redact:
        from .redact import redact as fn

        session = {k: fn(v) if isinstance(v, str) else v for k, v in session.items()}
    from ..model.transcript import FULL, Limits

    reader = TranscriptReader(limits=FULL if full else Limits(), redact=fn)
    writer = WRITERS[fmt](write)
    writer.begin(session)
    for item in reader.read(events):
        writer.item(item)
    summary = {"title": reader.title, "turns": reader.turns, "tokens": dict(reader.tokens)}
    writer.end(summary)
    return summary
