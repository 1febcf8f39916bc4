"""HTML export: one self-contained file.

Inline CSS, no scripts, no fonts or images from anywhere, and a
Content-Security-Policy that forbids loading anything, so opening a shared
transcript never reaches the network.  Tool output, reasoning and system
prompts fold with ``<details>``.  Every text is sanitised (control characters
become visible escapes, as on a terminal) and then HTML-escaped.
"""

from __future__ import annotations

import html
from typing import Any

from ..model.transcript import (
    AssistantText,
    Failure,
    Item,
    Note,
    Reasoning,
    Replacement,
    Retry,
    SessionHead,
    SystemPrompt,
    ToolCall,
    ToolChange,
    ToolResult,
    Totals,
    TurnEnd,
    TurnStart,
    Usage,
    UserText,
)
from . import labels as L
from .markdown import facts, title
from .renderer import Document, Write
from .text import utc_seconds

__all__ = ["HtmlRenderer"]

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
    """Escape for element content and attribute values (the sink sanitises control characters)."""
    return html.escape(str(text), quote=True)


def _first_line(text: str, width: int = 80) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text else 0


class HtmlRenderer(Document):
    def __init__(self, write: Write) -> None:
        super().__init__(write)
        self._in_section = False

    def begin(self, head: SessionHead) -> None:
        name = title(head.facts)
        self.out(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(name)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
            f"<header><h1>{_e(name)}</h1>\n<dl class=\"facts\">"
            + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts(head.facts))
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
        return f"<div class=\"cut\">{_e(L.cut_note(item.cut_lines, item.cut_chars))}</div>" if item.cut_chars else ""

    def item(self, item: Item) -> None:  # noqa: C901 - one branch per item kind
        o = self.out
        seq = f" data-seq=\"{item.seq}\"" if item.seq is not None else ""
        if isinstance(item, TurnStart):
            self._close_section()
            o(f"<section class=\"turn\" id=\"turn-{_e(item.turn)}\">\n")
            self._in_section = True
            when = utc_seconds(item.time)
            o(f"<h2>{L.capital(L.TURN)} {_e(item.turn)}" + (f" <span class=\"when\">{_e(when)}</span>" if when else "") + "</h2>\n")
            return
        self._open_section()
        if isinstance(item, TurnEnd):
            o(f"<p class=\"end {_e(item.outcome)}\"{seq}>{L.capital(L.TURN)} {_e(item.turn)} {_e(item.label)}</p>\n")
            self._close_section()
        elif isinstance(item, SystemPrompt):
            head = L.capital(L.SYSTEM_PROMPT[item.change])
            o(
                f"<details class=\"msg system\"{seq}><summary>{head}{L.SOURCE_JOIN}{_lines(item.text) + item.cut_lines} lines</summary>"
                f"<div class=\"text\">{_e(item.text)}</div>{self._cut(item)}</details>\n"
            )
        elif isinstance(item, UserText):
            source = L.user_source(item.source)
            who = L.capital(L.USER) + (f"{L.SOURCE_JOIN}{source}" if source else "")
            o(f"<div class=\"msg user\"{seq}><div class=\"who\">{_e(who)}</div><div class=\"text\">{_e(item.text)}</div></div>\n")
        elif isinstance(item, AssistantText):
            who = L.capital(L.ASSISTANT) + (f"{L.SOURCE_JOIN}{item.model}" if item.model else "")
            o(f"<div class=\"msg assistant\"{seq}><div class=\"who\">{_e(who)}</div><div class=\"text\">{_e(item.text)}</div>")
            if item.interrupted:
                o(f"<div class=\"mark interrupted\">{L.STOPPED} {_e(L.INTERRUPTED_TEXT)}</div>")
            o("</div>\n")
        elif isinstance(item, Reasoning):
            o(
                f"<details class=\"reasoning\"{seq}><summary>{L.capital(L.REASONING)}{L.SOURCE_JOIN}{_lines(item.text)} lines</summary>"
                f"<div class=\"text\">{_e(item.text)}</div></details>\n"
            )
        elif isinstance(item, ToolCall):
            o(
                f"<div class=\"tool call\"{seq}><div class=\"head\">{L.CALL.symbol} <code>{_e(item.name)}</code> <span class=\"id\">{_e(item.call_id)}</span></div>"
                f"<pre>{_e(item.arguments)}</pre>{self._cut(item)}</div>\n"
            )
        elif isinstance(item, ToolResult):
            err = " is-error" if item.is_error else ""
            status = f"{L.SOURCE_JOIN}{L.ERROR} {item.error_code or ''}".rstrip() if item.is_error else ""
            n = _lines(item.output) + item.cut_lines
            opened = " open" if n <= 6 else ""
            o(
                f"<div class=\"tool result{err}\"{seq}><details{opened}><summary>{L.RESULT.symbol} <code>{_e(item.name or L.RESULT_WORD)}</code> "
                f"<span class=\"id\">{_e(item.call_id)}</span>{_e(status)}{L.SOURCE_JOIN}{L.plural(n, 'line')}: {_e(_first_line(item.output))}</summary>"
                f"<pre>{_e(item.output)}</pre>{self._cut(item)}</details></div>\n"
            )
        elif isinstance(item, Failure):
            o(f"<div class=\"mark failure\"{seq}>{L.FAILURE.symbol} {_e(L.failure_text(item))}</div>\n")
        elif isinstance(item, Retry):
            o(f"<div class=\"mark retry\"{seq}>{L.RETRY.symbol} {_e(L.retry_text(item))}</div>\n")
        elif isinstance(item, Replacement):
            o(f"<div class=\"msg replacement\"{seq}><div class=\"who\">{_e(L.replacement_title(item))}</div><div class=\"text\">{_e(item.text)}</div></div>\n")
        elif isinstance(item, ToolChange):
            o(f"<p class=\"note\"{seq}>{L.capital(L.TOOLS_CHANGED)}: {_e(', '.join(L.tool_changes(item)))}</p>\n")
        elif isinstance(item, Usage):
            o(f"<p class=\"usage\"{seq}>{_e(L.capital(L.usage_text(item.step, item.tokens)))}</p>\n")
        elif isinstance(item, Note):
            o(f"<p class=\"note\"{seq}>{_e(item.text)}</p>\n")

    def end(self, totals: Totals) -> None:
        self._close_section()
        self.out(f"<footer>{_e(L.totals_text(totals.turns, totals.tokens, totals.title))}</footer>\n</main>\n</body>\n</html>\n")
