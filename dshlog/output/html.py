"""HTML export: one self-contained page to share.

Inline CSS, one small inline script, no fonts or images from anywhere, and a
Content-Security-Policy that forbids loading anything and runs only that
script (allowed by its SHA-256), so opening a shared transcript never reaches
the network.  The page reads completely with scripts off: the script only adds
the filters (reasoning, tool calls, tool results, system, retries) and the
in-page search, whose controls stay hidden without it.  The search counts and
visits only the matches the filters show, and recounts when a filter changes.

Messages are Markdown and are rendered (:mod:`dshlog.output.richtext`: raw HTML
off, links ``rel=noopener``, code highlighted; in folded reasoning code stays plain,
as it was half of a code-heavy page's elements); tool arguments and output stay
preformatted.  Every text is sanitised (control characters become visible
escapes, as on a terminal) and HTML-escaped.

Each turn is laid out only when it scrolls into view (``content-visibility:
auto``): without it a 10,000-message page took tens of seconds to open, as every
step of parsing laid out everything parsed before; the browser's own find and the
page's search still see every turn.

The header says what a person asks first (title or first prompt, project,
models, dates, duration, tokens) and the table of contents lists every turn
with its problems; both are known only once the whole log has been read, so the
body is written to a spool (memory, then disk past a few MB) and the page is
assembled at :meth:`HtmlRenderer.end`.  The log is still read once and never
held.
"""

from __future__ import annotations

import base64
import hashlib
import html
import shutil
import tempfile
from dataclasses import dataclass, field
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
    StepUsage,
    UserText,
)
from ..protocol.jsjson import format_number
from . import labels as L
from .renderer import Document, Write, problem_text
from .richtext import code_css, highlight, markdown_html
from .text import human_bytes, human_duration, sanitize, utc_seconds

__all__ = ["CSP", "SCRIPT", "HtmlRenderer", "IndexRow", "PageLinks", "page_head", "page_title", "store_index"]

_CSS = """
:root{color-scheme:light dark;--bg:#fbfbfa;--fg:#1d1f21;--dim:#6a6f75;--line:#d9dcdf;--user:#e8f3ea;--asst:#f0ecf7;
--tool:#f3f4f6;--err:#fdecec;--warn:#fff6e0;--sys:#eef3fb;--accent:#2f6fb3;--hit:#ffe066}
@media (prefers-color-scheme:dark){:root{--bg:#17191c;--fg:#e4e6e8;--dim:#9aa0a6;--line:#33373c;--user:#1f2d23;
--asst:#282335;--tool:#202327;--err:#3a1f1f;--warn:#3a3220;--sys:#1d2633;--accent:#79b0ee;--hit:#7a5d00}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",
"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif}
.page{max-width:1240px;margin:0 auto;padding:24px 20px 48px;display:grid;grid-template-columns:minmax(0,1fr);gap:0 28px}
@media (min-width:1100px){.page{grid-template-columns:250px minmax(0,1fr)}nav.toc{position:sticky;top:12px;max-height:calc(100vh - 24px);overflow:auto}
header,footer{grid-column:1/-1}}
main{min-width:0}.page.index{display:block}
h1{font-size:1.4em;margin:0 0 10px;overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0 0 14px;color:var(--dim);font-size:.9em}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;overflow-wrap:anywhere}
nav.toc{font-size:.85em;margin:0 0 16px}nav.toc summary{font-weight:700;color:var(--fg)}
nav.toc ol{list-style:none;margin:4px 0;padding:0}nav.toc li{margin:1px 0;display:flex;align-items:baseline;gap:.4em}
nav.toc li a{min-width:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
nav.toc a{color:var(--accent);text-decoration:none}nav.toc a:hover{text-decoration:underline}
nav.toc .flag{flex:none;white-space:nowrap;color:#c53030;font-weight:700}
#tools{position:sticky;top:0;z-index:2;background:var(--bg);border-bottom:1px solid var(--line);padding:6px 0;margin:0 0 8px;
display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;font-size:.88em}
#tools[hidden]{display:none}#tools label{cursor:pointer;white-space:nowrap}
#tools input[type=search]{font:inherit;padding:2px 6px;min-width:14em;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg)}
#tools button{font:inherit;padding:1px 8px}#hits{color:var(--dim)}
mark{background:var(--hit);color:inherit}mark.current{outline:2px solid var(--accent)}
section.turn{border-top:2px solid var(--line);padding-top:8px;margin-top:22px;scroll-margin-top:48px;
content-visibility:auto;contain-intrinsic-size:auto 800px}
h2{font-size:1.05em;margin:4px 0 12px;color:var(--accent)}h2 .when{color:var(--dim);font-weight:normal;font-size:.85em}
.msg{border-radius:8px;padding:8px 12px;margin:8px 0;border:1px solid var(--line)}
.msg .who{font-size:.78em;font-weight:700;text-transform:uppercase;letter-spacing:.04em;color:var(--dim);margin-bottom:2px}
.msg .text{white-space:pre-wrap;overflow-wrap:anywhere}
.md{overflow-wrap:anywhere}.md>:first-child{margin-top:0}.md>:last-child{margin-bottom:0}.md p{margin:.4em 0}
.md code{font:13px ui-monospace,"SFMono-Regular",Menlo,Consolas,"Noto Sans Mono",monospace;background:var(--tool);padding:0 3px;border-radius:3px}
.md pre code{background:none;padding:0}.md table{border-collapse:collapse}.md td,.md th{border:1px solid var(--line);padding:2px 8px}
.md blockquote{margin:.4em 0;padding-left:10px;border-left:3px solid var(--line);color:var(--dim)}
.user{background:var(--user)}.assistant{background:var(--asst)}.system{background:var(--sys)}
.replacement{background:var(--warn)}
.tool{margin:8px 0 8px 22px;border-left:3px solid var(--line);padding-left:10px}
.tool .head{font-size:.9em}.tool .head code{font-weight:700}.id{color:var(--dim);font-size:.85em}
pre{background:var(--tool);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:4px 0;overflow-x:auto;
white-space:pre-wrap;overflow-wrap:anywhere;font:13px/1.45 ui-monospace,"SFMono-Regular",Menlo,Consolas,"Noto Sans Mono",monospace}
.is-error{border-left-color:#c53030}.is-error pre{background:var(--err)}.is-error summary{color:#c53030}
details{margin:4px 0}summary{cursor:pointer;color:var(--dim);font-size:.9em}
details.reasoning .md{color:var(--dim);font-style:italic;padding:4px 0 4px 10px;border-left:2px solid var(--line)}
.mark{font-size:.9em;margin:6px 0;padding:3px 10px;border-radius:6px}
.failure{background:var(--err)}.retry,.interrupted{background:var(--warn)}
.note,.usage{color:var(--dim);font-size:.85em;margin:4px 0}
.end{font-size:.9em;font-weight:600;margin:10px 0 0}.end.completed{color:#2e8540}.end.aborted,.end.max-tokens{color:#b7791f}
.end.error,.end.open,.end.interrupted{color:#c53030}.end.forked{color:#805ad5}
.cut{color:var(--dim);font-style:italic;font-size:.85em}
.refusal{background:var(--err);border:2px solid #c53030;border-radius:8px;padding:8px 12px;margin:0 0 14px;overflow-wrap:anywhere}
.refusal strong{color:#c53030}.refusal code{font:13px ui-monospace,"SFMono-Regular",Menlo,Consolas,"Noto Sans Mono",monospace}
body.hide-reasoning [data-f=reasoning],body.hide-call [data-f=call],body.hide-result [data-f=result],
body.hide-system [data-f=system],body.hide-retry [data-f=retry]{display:none}
footer{margin-top:28px;color:var(--dim);font-size:.85em;border-top:1px solid var(--line);padding-top:8px}
table.sessions{border-collapse:collapse;width:100%;font-size:.9em}table.sessions td,table.sessions th{text-align:left;padding:4px 8px;
border-bottom:1px solid var(--line);vertical-align:top}table.sessions td.n{text-align:right;white-space:nowrap}
table.sessions tr.child td:first-child{padding-left:28px}table.sessions a{color:var(--accent)}
"""

# The page's one script: filters and search.  Its hash is in the CSP, so nothing else can run.
SCRIPT = """(function(){
var d=document,b=d.body,bar=d.getElementById('tools');if(!bar)return;bar.hidden=false;
var boxes=bar.querySelectorAll('input[data-filter]'),q=d.getElementById('q'),hits=d.getElementById('hits'),marks=[],cur=-1,last=null;
function apply(){boxes.forEach(function(x){b.classList.toggle('hide-'+x.dataset.filter,!x.checked)});count();}
function shown(m){for(var e=m.parentElement&&m.parentElement.closest('[data-f]');e;e=e.parentElement&&e.parentElement.closest('[data-f]')){
if(b.classList.contains('hide-'+e.dataset.f))return false;}return true;}
function count(){if(last===null||!q.value){hits.textContent='';return;}var n=0,k=0;
marks.forEach(function(m,i){if(shown(m)){n++;if(i<=cur)k++;}});
hits.textContent=cur>=0&&shown(marks[cur])?k+' of '+n:n+(n===1?' match':' matches');}
function clear(){marks.forEach(function(m){var p=m.parentNode;p.replaceChild(d.createTextNode(m.textContent),m);p.normalize()});marks=[];cur=-1;}
function find(){var s=q.value.toLowerCase();clear();last=s;if(!s)return;
var w=d.createTreeWalker(d.querySelector('main'),NodeFilter.SHOW_TEXT),n,found=[];
while((n=w.nextNode())){if(n.nodeValue.toLowerCase().indexOf(s)>=0&&!bar.contains(n))found.push(n);}
found.forEach(function(t){var v=t.nodeValue,l=v.toLowerCase(),i=0,j,f=d.createDocumentFragment();
while((j=l.indexOf(s,i))>=0){f.appendChild(d.createTextNode(v.slice(i,j)));var m=d.createElement('mark');m.textContent=v.slice(j,j+s.length);f.appendChild(m);marks.push(m);i=j+s.length;}
f.appendChild(d.createTextNode(v.slice(i)));t.parentNode.replaceChild(f,t);});}
function go(step){if(last!==q.value.toLowerCase())find();var len=marks.length,i=cur<0?(step>0?-1:len):cur,t;
for(t=0;t<len;t++){i=(i+step+len)%len;if(shown(marks[i]))break;}
if(t<len){if(cur>=0)marks[cur].classList.remove('current');cur=i;var m=marks[i];
for(var e=m.parentElement;e;e=e.parentElement){if(e.tagName==='DETAILS')e.open=true;}
m.classList.add('current');m.scrollIntoView({block:'center'});}
count();}
boxes.forEach(function(x){x.addEventListener('change',apply)});apply();
q.addEventListener('keydown',function(e){if(e.key==='Enter'){e.preventDefault();go(e.shiftKey?-1:1);}});
d.getElementById('next').addEventListener('click',function(){go(1)});
d.getElementById('prev').addEventListener('click',function(){go(-1)});
})();"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"


def _e(text: Any) -> str:
    """Escape for element content and attribute values (the sink sanitises control characters)."""
    return html.escape(str(text), quote=True)


def _first_line(text: str, width: int = 80) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text else 0


def _number(n: int) -> str:
    """``12,345``: large counts grouped for reading (JS's own digits, then thousands separators)."""
    digits = format_number(n)
    sign, digits = ("-", digits[1:]) if digits.startswith("-") else ("", digits)
    groups = [digits[max(0, i - 3) : i] for i in range(len(digits), 0, -3)]
    return sign + ",".join(reversed(groups))


def tokens_html(tokens: dict[str, int]) -> str:
    """``in 12,345 · out 678 · cache read 9,000``."""
    return L.SOURCE_JOIN.join(f"{L.token_name(k)} {_number(v)}" for k, v in tokens.items())


def page_title(title: str | None, first_prompt: str | None, session_id: Any) -> str:
    """What a page is called: the session's title, else its first prompt, else its id."""
    if title:
        return title
    if first_prompt and first_prompt.strip():
        return _first_line(first_prompt, 100)
    return f"dsh session {session_id}" if isinstance(session_id, str) and session_id else "dsh session"


def page_head(name: str) -> str:
    """The page up to ``<body>``: charset, the CSP, no referrer, the styles."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{_e(name)}</title>\n<style>{_CSS}\n{code_css()}</style>\n</head>\n"
    )


@dataclass(frozen=True, slots=True)
class PageLinks:
    """Where a page sits in an exported store: its parent's page and its subagents' pages (hrefs)."""

    index: str | None = None
    parent: tuple[str, str] | None = None  # (session id, href)
    children: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Turn:
    turn: Any
    anchor: str
    time: int | None
    prompt: str | None = None
    problems: list[str] = field(default_factory=list)


class HtmlRenderer(Document):
    """Streams the body into a spool; writes the whole page once the totals are known."""

    def __init__(self, write: Write, *, links: PageLinks | None = None) -> None:
        super().__init__(write)
        self._links = links or PageLinks()
        self._spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - closed in end()
        self._in_section = False
        self._head: SessionHead | None = None
        self._turns: list[_Turn] = []
        self._models: list[str] = []
        self._first_prompt: str | None = None
        self._anchors = 0
        self.name: str | None = None  # the page's title, once written (a store's index lists it)

    def body(self, text: str) -> None:
        self._spool.write(sanitize(text).encode("utf-8"))

    def begin(self, head: SessionHead) -> None:
        self._head = head

    # -- the body
    def _open_section(self) -> None:
        if not self._in_section:
            self.body("<section class=\"turn\">\n")
            self._in_section = True

    def _close_section(self) -> None:
        if self._in_section:
            self.body("</section>\n")
            self._in_section = False

    @staticmethod
    def _cut(item: Any) -> str:
        return f"<div class=\"cut\">{_e(L.cut_note(item.cut_lines, item.cut_chars))}</div>" if item.cut_chars else ""

    def _problem(self, text: str) -> None:
        if self._turns:
            self._turns[-1].problems.append(text)

    def item(self, item: Item) -> None:
        o = self.body
        seq = f" data-seq=\"{item.seq}\"" if item.seq is not None else ""
        problem = problem_text(item)
        if problem is not None:
            self._problem(problem)
        if isinstance(item, TurnStart):
            self._close_section()
            self._anchors += 1
            anchor = f"turn-{self._anchors}"  # unique even when a log repeats a turn number
            self._turns.append(_Turn(item.turn, anchor, item.time))
            o(f"<section class=\"turn\" id=\"{anchor}\">\n")
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
            size = L.plural(_lines(item.text) + item.cut_lines, "line") if item.text else L.EMPTY
            o(
                f"<details class=\"msg system\" data-f=\"system\"{seq}><summary>{head}{L.SOURCE_JOIN}{size}</summary>"
                f"<div class=\"text\">{_e(item.text)}</div>{self._cut(item)}</details>\n"
            )
        elif isinstance(item, UserText):
            source = L.user_source(item.source)
            who = L.capital(L.USER) + (f"{L.SOURCE_JOIN}{source}" if source else "")
            if source is None:
                if self._first_prompt is None and item.text.strip():
                    self._first_prompt = item.text
                if self._turns and self._turns[-1].prompt is None:
                    self._turns[-1].prompt = item.text
            f = "" if source is None else " data-f=\"system\""  # runtime context, goals: what the harness added
            o(f"<div class=\"msg user\"{f}{seq}><div class=\"who\">{_e(who)}</div><div class=\"md\">{markdown_html(item.text)}</div></div>\n")
        elif isinstance(item, AssistantText):
            if item.model and item.model not in self._models:
                self._models.append(item.model)
            who = L.capital(L.ASSISTANT) + (f"{L.SOURCE_JOIN}{item.model}" if item.model else "")
            o(f"<div class=\"msg assistant\"{seq}><div class=\"who\">{_e(who)}</div><div class=\"md\">{markdown_html(item.text)}</div>")
            if item.interrupted:
                o(f"<div class=\"mark interrupted\">{L.STOPPED} {_e(L.INTERRUPTED_TEXT)}</div>")
            o("</div>\n")
        elif isinstance(item, Reasoning):
            o(
                f"<details class=\"reasoning\" data-f=\"reasoning\"{seq}><summary>{L.capital(L.REASONING)}{L.SOURCE_JOIN}{L.plural(_lines(item.text), 'line')}</summary>"
                f"<div class=\"md\">{markdown_html(item.text, code=False)}</div></details>\n"
            )
        elif isinstance(item, ToolCall):
            code = highlight(item.arguments, "json") if item.arguments.lstrip().startswith(("{", "[")) else ""
            o(
                f"<div class=\"tool call\" data-f=\"call\"{seq}><div class=\"head\">{L.CALL.symbol} <code>{_e(item.name)}</code> <span class=\"id\">{_e(item.call_id)}</span></div>"
                f"<pre>{code or _e(item.arguments)}</pre>{self._cut(item)}</div>\n"
            )
        elif isinstance(item, ToolResult):
            err = " is-error" if item.is_error else ""
            status = f"{L.SOURCE_JOIN}{L.ERROR} {item.error_code or ''}".rstrip() if item.is_error else ""
            n = _lines(item.output) + item.cut_lines
            opened = " open" if n <= 6 or item.is_error else ""
            o(
                f"<div class=\"tool result{err}\" data-f=\"result\"{seq}><details{opened}><summary>{L.RESULT.symbol} <code>{_e(item.name or L.RESULT_WORD)}</code> "
                f"<span class=\"id\">{_e(item.call_id)}</span>{_e(status)}{L.SOURCE_JOIN}{L.plural(n, 'line')}: {_e(_first_line(item.output))}</summary>"
                f"<pre>{_e(item.output)}</pre>{self._cut(item)}</details></div>\n"
            )
        elif isinstance(item, Failure):
            o(f"<div class=\"mark failure\" data-f=\"retry\"{seq}>{L.FAILURE.symbol} {_e(L.failure_text(item))}</div>\n")
        elif isinstance(item, Retry):
            o(f"<div class=\"mark retry\" data-f=\"retry\"{seq}>{L.RETRY.symbol} {_e(L.retry_text(item))}</div>\n")
        elif isinstance(item, Replacement):
            o(f"<div class=\"msg replacement\"{seq}><div class=\"who\">{_e(L.replacement_title(item))}</div><div class=\"md\">{markdown_html(item.text)}</div></div>\n")
        elif isinstance(item, ToolChange):
            o(f"<p class=\"note\" data-f=\"system\"{seq}>{L.capital(L.TOOLS_CHANGED)}: {_e(', '.join(L.tool_changes(item)))}</p>\n")
        elif isinstance(item, StepUsage):
            o(f"<p class=\"usage\" data-f=\"system\"{seq}>{_e(L.capital(L.usage_text(item.step, item.tokens)))}</p>\n")
        elif isinstance(item, Note):
            o(f"<p class=\"note\" data-f=\"system\"{seq}>{_e(item.text)}</p>\n")

    # -- the page
    def _facts(self, head: SessionHead, totals: Totals) -> list[tuple[str, str]]:
        """(label, HTML) pairs in human words."""
        f = head.facts
        out: list[tuple[str, str]] = []

        def add(label: str, value: Any) -> None:
            if value is not None and value != "":
                out.append((L.capital(label), _e(value)))

        add(L.FACT_LABELS["cwd"], f.get("cwd"))
        if self._models:
            add(L.FACT_MODELS, ", ".join(self._models))
        first = totals.first_time or (f.get("createdAt") if type(f.get("createdAt")) is int else None)
        start, last = utc_seconds(first), utc_seconds(totals.last_time)
        if start:
            add(L.FACT_ACTIVE, f"{start} – {last}" if last and last != start else start)
        if first and totals.last_time and totals.last_time > first:
            add(L.FACT_DURATION, human_duration(totals.last_time - first))
        add(L.FACT_TURNS, _number(totals.turns))
        if totals.tokens:
            out.append((L.capital(L.FACT_TOKENS), _e(tokens_html(totals.tokens))))
        add(L.FACT_LABELS["id"], f.get("id"))
        parent = f.get("parentSession")
        if isinstance(parent, str) and parent:
            link = self._links.parent
            out.append((L.capital(L.FACT_LABELS["parentSession"]), f"<a href=\"{_e(link[1])}\">{_e(parent)}</a>" if link else _e(parent)))
            if f.get("isSeeded") is True:
                out[-1] = (out[-1][0], out[-1][1] + f" ({_e(L.SEEDED)})")
        if self._links.children:
            out.append((L.capital(L.FACT_CHILDREN), ", ".join(f"<a href=\"{_e(href)}\">{_e(cid)}</a>" for cid, href in self._links.children)))
        add(L.FACT_LABELS["origin"], f.get("origin"))
        add(L.FACT_LABELS["agentPreset"], f.get("agentPreset"))
        depth = f.get("delegationDepth")
        if type(depth) is int and depth > 0:
            add(L.FACT_LABELS["delegationDepth"], depth)
        created = utc_seconds(f.get("createdAt"))
        if created and created != start:
            add(L.FACT_LABELS["createdAt"], created)
        add(L.FACT_FORMAT, L.stored_format(f.get("storedVersion", head.version)))
        add(L.FACT_LABELS["file"], f.get("file"))
        return out

    def _toc(self) -> str:
        """One row per turn: its prompt, cut with an ellipsis to the column, then its ✗ flag, which the CSS keeps whole."""
        if not self._turns:
            return ""
        rows = []
        for t in self._turns:
            prompt = _first_line(t.prompt, 60) if t.prompt else L.NO_PROMPT
            flag = f" <span class=\"flag\" title=\"{_e('; '.join(t.problems))}\">{L.FAILURE.symbol} {len(t.problems)}</span>" if t.problems else ""
            rows.append(f"<li><a href=\"#{t.anchor}\">{_e(t.turn)} · {_e(prompt)}</a>{flag}</li>")
        return f"<nav class=\"toc\"><details open><summary>{L.capital(L.CONTENTS)} ({len(self._turns)})</summary><ol>" + "".join(rows) + "</ol></details></nav>\n"

    @staticmethod
    def _toolbar() -> str:
        boxes = "".join(f"<label><input type=\"checkbox\" data-filter=\"{k}\" checked> {_e(v)}</label>" for k, v in L.FILTERS.items())
        return (
            f"<div id=\"tools\" hidden>{boxes}<span><input type=\"search\" id=\"q\" placeholder=\"{L.capital(L.SEARCH)}\" aria-label=\"{L.SEARCH}\">"
            "<button type=\"button\" id=\"prev\" aria-label=\"previous match\">↑</button><button type=\"button\" id=\"next\" aria-label=\"next match\">↓</button> "
            "<span id=\"hits\"></span></span></div>\n"
        )

    def end(self, totals: Totals) -> None:
        self._close_section()
        head = self._head or SessionHead(None, None, "")
        name = page_title(totals.title, self._first_prompt, head.facts.get("id", head.session_id))
        self.name = name
        facts = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in self._facts(head, totals))
        back = f"<p class=\"note\"><a href=\"{_e(self._links.index)}\">← {_e(L.STORE_TITLE)}</a></p>" if self._links.index else ""
        self.out(
            page_head(name)
            + f"<body>\n<div class=\"page\">\n<header>{refusal_html(head)}{back}<h1>{_e(name)}</h1>\n<dl class=\"facts\">{facts}</dl></header>\n"
            + self._toc()
            + "<main>\n"
            + self._toolbar()
        )
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, _Sink(self._write))
        self._spool.close()
        self.out(
            f"</main>\n<footer>{_e(L.totals_text(totals.turns, totals.tokens, totals.title))}</footer>\n</div>\n"
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
        )


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One session on a store's index page; ``depth`` > 0 for a subagent under its parent."""

    name: str
    session_id: str | None
    href: str | None  # None when the page could not be written
    project: str | None
    last_activity: int | None
    size: int | None
    turns: int
    depth: int = 0
    error: str | None = None
    refusal: str | None = None  # dsh refuses to open the session: its page opens with the refusal


def store_index(rows: list[IndexRow], *, root: str) -> str:
    """A store's ``index.html``: every session, most recent first, subagents under their parent."""
    body = []
    for r in rows:
        name = f"<a href=\"{_e(r.href)}\">{_e(r.name)}</a>" if r.href else _e(r.name)
        if r.error:
            name += f"<div class=\"cut\">{_e(r.error)}</div>"
        if r.refusal:
            name += f"<div class=\"cut refused\">{_e(r.refusal)}</div>"
        cls = " class=\"child\"" if r.depth else ""
        body.append(
            f"<tr{cls}><td>{'↳ ' * min(r.depth, 1)}{name}<div class=\"id\">{_e(r.session_id or '')}</div></td><td>{_e(r.project or '')}</td>"
            f"<td class=\"n\">{_e(utc_seconds(r.last_activity) or '-')}</td><td class=\"n\">{_number(r.turns)}</td><td class=\"n\">{_e(human_bytes(r.size))}</td></tr>"
        )
    head = "".join(f"<th>{_e(L.capital(h))}</th>" for h in L.INDEX_COLUMNS)
    return sanitize(
        page_head(L.STORE_TITLE)
        + f"<body>\n<div class=\"page index\">\n<header><h1>{_e(L.capital(L.STORE_TITLE))}</h1>"
        + f"<dl class=\"facts\"><dt>{_e(L.capital(L.STORE_ROOT))}</dt><dd>{_e(root)}</dd><dt>{_e(L.capital(L.FACT_SESSIONS))}</dt><dd>{_number(len(rows))}</dd></dl></header>\n"
        + f"<main><table class=\"sessions\"><thead><tr>{head}</tr></thead><tbody>\n"
        + "\n".join(body)
        + "\n</tbody></table></main>\n</div>\n</body>\n</html>\n"
    )


def refusal_html(head: SessionHead) -> str:
    """The banner a refused log's page opens with (empty for a session dsh opens); visible with scripts off."""
    r = head.refusal
    if r is None:
        return ""
    return (
        f"<div class=\"refusal\" id=\"refusal\" role=\"alert\"><strong>{_e(L.DSH_REFUSES)}:</strong> {_e(r.reason)}"
        + (f"<br>{_e(L.capital(L.SHOWN_AS_STORED))}; {_e(L.TO_BRING_BACK)}: <code>{_e(L.rescue_command(r.rescue))}</code></div>\n"
           if r.rescue is not None else f"<br>{_e(L.capital(L.SHOWN_AS_STORED))}; {_e(L.bring_back(None))}</div>\n")
    )


class _Sink:
    """A file-like front for a :data:`Write`, for ``shutil.copyfileobj`` (the spool is already sanitised)."""

    def __init__(self, write: Write) -> None:
        self.write = write
