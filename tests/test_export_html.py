"""The HTML page as a person reads it: rendered Markdown, a header in words, turns to jump to."""

from __future__ import annotations

import json
import re

from conftest import FIXTURES, ev, run_env, v4_header

from dshlog.model.transcript import SessionHead, session_facts
from dshlog.output.html import HtmlRenderer, PageLinks
from dshlog.output.renderer import render

V0_TEXT_TURN = FIXTURES / "v0" / "text-turn" / "session.jsonl"

ANSWER = """Here is the **plan**:

1. read `main.py`
2. fix it

```python
def f(x):
    return x + 1
```

See [the docs](https://example.com/docs) and [bad](javascript:alert(1)).
<img src=x onerror=alert(1)> ![pic](https://example.com/p.png)
"""


def _call(seq: int, turn: int, cid: str, name: str, args: dict) -> dict:
    msg = {"role": "assistant", "content": [{"type": "tool-call", "id": cid, "name": name, "arguments": json.dumps(args)}], "source": {"kind": "model", "provider": "deepseek", "model": "chat"}, "id": f"a{seq}"}
    return ev(seq, "assistant/message", {"turn": turn, "step": 1, "message": msg, "stream": [], "usage": {"inputTokens": 1200, "outputTokens": 30, "cacheReadTokens": 1000}}, time=2000 + seq, surfaceOp="append")


def _result(seq: int, turn: int, cid: str, text: str, *, error: bool = False) -> dict:
    msg = {"role": "tool", "source": {"kind": "tool", "callId": cid}, "toolCallId": cid, "content": [{"type": "text", "text": text}], "isError": error, "id": f"r{seq}"}
    return ev(seq, "tool/result", {"turn": turn, "step": 1, "message": msg}, time=2000 + seq, surfaceOp="append")


def rich_events() -> list[dict]:
    """Two turns: Markdown in both directions, an empty system prompt, a failing tool in turn 2, a title.

    Rendered through the library: the transcript reader is lenient, and these tests are about the page.
    """
    return [
        ev(0, "system/message", {"message": {"role": "system", "content": []}}, time=1_760_000_000_000, surfaceOp="append"),
        ev(1, "turn/start", {"turn": 1}, time=1_760_000_000_000),
        ev(2, "user/message", {"content": [{"type": "text", "text": "Please *fix* `main.py`"}], "source": {"kind": "user"}, "role": "user", "id": "u2"}, time=1_760_000_000_100, surfaceOp="append"),
        ev(3, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "reasoning", "text": "think hard"}, {"type": "text", "text": ANSWER}], "source": {"kind": "model", "provider": "deepseek", "model": "chat"}, "id": "a3"}, "stream": [], "usage": {"inputTokens": 100, "outputTokens": 20}}, time=1_760_000_001_000, surfaceOp="append"),
        ev(4, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}, time=1_760_000_001_000),
        ev(5, "session/title", {"title": "Fix main.py"}, time=1_760_000_001_000),
        ev(6, "turn/start", {"turn": 2}, time=1_760_003_600_000),
        ev(7, "user/message", {"content": [{"type": "text", "text": "run the tests"}], "source": {"kind": "user"}, "role": "user", "id": "u7"}, time=1_760_003_600_000, surfaceOp="append"),
        _call(8, 2, "c1", "bash", {"command": "pytest"}),
        _result(9, 2, "c1", "E   AssertionError: boom", error=True),
        ev(10, "turn/end", {"turn": 2, "reason": {"kind": "completed"}}, time=1_760_003_725_000),
    ]


def page_of(header: dict | None = None, links: PageLinks | None = None) -> str:
    chunks: list[bytes] = []
    facts = session_facts(header or v4_header(id="rich-1", cwd="/home/ann/project"), path="session.v4.jsonl", version=4)
    render(rich_events(), SessionHead(facts.get("id"), 4, "session.v4.jsonl", False, facts), HtmlRenderer(chunks.append, links=links))
    return b"".join(chunks).decode("utf-8")


def test_markdown_is_rendered_safely() -> None:
    page = page_of()
    assert "<strong>plan</strong>" in page and "<ol>" in page and "<code>main.py</code>" in page
    assert "<em>fix</em>" in page  # the user's Markdown too
    # code highlighted by Pygments classes, styled inline
    assert re.search(r'<pre><code class="language-python"><span class="k">def</span>', page)
    assert "pre .k {" in page or "pre .k{" in page
    # links: rel=noopener, javascript: refused, raw HTML and images inert
    assert '<a href="https://example.com/docs" rel="noopener noreferrer nofollow">the docs</a>' in page
    assert 'href="javascript:' not in page and "[bad](javascript:alert(1))" in page
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    # reasoning stays folded, tool arguments are highlighted JSON
    assert re.search(r'<details class="reasoning" data-f="reasoning"[^>]*><summary>Reasoning', page)
    assert '<span class="nt">"command"</span>' in page


def test_folded_reasoning_is_markdown_with_plain_code() -> None:
    """Reasoning is rendered, but its code is not highlighted: folded and dim, it was half a code-heavy page's elements."""
    events = rich_events()
    events[3]["data"]["message"]["content"][0]["text"] = "think **hard**\n\n```python\ndef g(x):\n    return x\n```\n"
    chunks: list[bytes] = []
    facts = session_facts(v4_header(id="rich-1"), path="session.v4.jsonl", version=4)
    render(events, SessionHead(facts.get("id"), 4, "session.v4.jsonl", False, facts), HtmlRenderer(chunks.append))
    page = b"".join(chunks).decode("utf-8")
    reasoning = re.search(r'<details class="reasoning".*?</details>', page, re.S)
    assert reasoning is not None
    assert "<strong>hard</strong>" in reasoning.group(0)
    assert '<pre><code class="language-python">def g(x):\n    return x\n</code></pre>' in reasoning.group(0)
    # the answer's code, outside the fold, is still highlighted
    assert re.search(r'<pre><code class="language-python"><span class="k">def</span>', page.split("</details>", 2)[-1])


def test_header_speaks_in_words() -> None:
    page = page_of()
    header = page.split("</header>")[0]
    assert "<title>Fix main.py</title>" in page and "<h1>Fix main.py</h1>" in header
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", header))
    assert facts["Project"] == "/home/ann/project"
    assert facts["Models"] == "deepseek/chat"
    assert facts["Active"] == "2025-10-09 08:53:20 UTC – 2025-10-09 09:55:25 UTC"
    assert facts["Duration"] == "1h 02m"
    assert facts["Tokens"] == "in 1,300 · out 50 · cache read 1,000"
    assert facts["Stored as"] == "format v4"
    for raw in ("isSeeded", "storedVersion", "delegationDepth", "createdAt"):
        assert raw not in header
    assert "System prompt · (empty)" in page and "0 lines" not in page


def test_untitled_page_is_named_by_its_first_prompt_and_says_its_format() -> None:
    code, out, err = run_env("export", str(V0_TEXT_TURN), "--format", "html")
    assert code == 0, err
    page = out.decode("utf-8")
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page.split("</header>")[0]))
    assert facts["Stored as"] == "format v0, shown as v4"
    h1 = re.search(r"<h1>(.*?)</h1>", page).group(1)
    assert h1 and not h1.startswith("dsh session")


def test_contents_by_turn_flag_problems() -> None:
    page = page_of()
    toc = re.search(r'<nav class="toc">(.*?)</nav>', page, re.DOTALL).group(1)
    items = re.findall(r'<li><a href="#(turn-\d+)">(.*?)</a>(.*?)</li>', toc)
    assert [(a, t) for a, t, _ in items] == [("turn-1", "1 · Please *fix* `main.py`"), ("turn-2", "2 · run the tests")]
    assert items[0][2] == "" and "error: bash" in items[1][2]
    for anchor, _, _ in items:
        assert f'<section class="turn" id="{anchor}">' in page
    # the failing result is open and marked, so it is found without unfolding anything
    assert re.search(r'<div class="tool result is-error" data-f="result"[^>]*><details open>', page)


def test_controls_hidden_until_the_script_runs() -> None:
    page = page_of()
    assert '<div id="tools" hidden>' in page
    for f in ("reasoning", "call", "result", "system", "retry"):
        assert f'data-filter="{f}"' in page and f"body.hide-{f} [data-f={f}]" in page
    assert page.index("<script>") > page.index("</main>")  # the content comes first


def test_links_of_a_store_page() -> None:
    links = PageLinks(index="index.html", parent=("mum", "mum.html"), children=(("grandkid", "grandkid.html"),))
    page = page_of(v4_header(id="kid", parentSession="mum", isSeeded=True), links)
    assert '<a href="index.html">' in page
    assert '<a href="mum.html">mum</a> (seeded from its parent session' in page
    assert '<a href="grandkid.html">grandkid</a>' in page


CODE_SAMPLES = [
    ("python", 'def f(x: int) -> str:\n    """Doc."""\n    return f"{x!r}" + \'<a>\' & x  # note\n\nclass C(Base):\n    @property\n    def v(self): return self._v\n'),
    ("json", '{"command": ["ls", "-la"], "n": 1.5e3, "ok": true, "none": null}'),
    ("bash", 'for f in *.txt; do echo "$f" | sed -e \'s/a/b/\' > "${f%.txt}.out"; done\n'),
    ("javascript", "const x = /re+/g.test(`t ${a}`) ? 0x1f : null; // c\n"),
]


def _colours(html_text: str, classes: dict[str, str], base: str) -> list[tuple[str, str]]:
    """Each character of highlighted HTML with the colour it is drawn in (``classes``: class -> colour)."""
    import html as html_mod

    out: list[tuple[str, str]] = []
    for m in re.finditer(r'<span class="([^"]*)">(.*?)</span>|([^<]+)', html_text, re.S):
        cls, inner, bare = m.groups()
        text = html_mod.unescape(inner if inner is not None else bare)
        colour = classes.get(cls, base) if cls is not None else base
        out.extend((c, colour) for c in text)
    return out


def test_highlighted_code_looks_as_pygments_draws_it_with_fewer_spans() -> None:
    """A span only where it shows: same characters, same colour in the light and the dark scheme, fewer elements."""
    from pygments import highlight as pyg_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name

    from dshlog.output.richtext import STYLES, _base_colour, code_css, highlight

    # plain code is drawn in each style's plain-text colour, as the spans left out assume
    for style in STYLES:
        base = _base_colour(style)
        assert base is None or f"pre {{ color: {base} }}" in code_css()

    for lang, code in CODE_SAMPLES:
        ours = highlight(code, lang)
        theirs = pyg_highlight(code, get_lexer_by_name(lang), HtmlFormatter(nowrap=True))
        assert ours.count("<span") < theirs.count("<span"), lang
        for style in STYLES:
            f = HtmlFormatter(style=style)
            colours = {c: rule.split("color: ", 1)[1].split(";")[0].lower() for c, (rule, _t, _l) in f.class2style.items() if "color: " in rule}
            base = _base_colour(style) or "page"
            mine, pyg = _colours(ours, colours, base), _colours(theirs, colours, base)
            assert [c for c, _ in mine] == [c for c, _ in pyg], (lang, style)
            assert "".join(c for c, _ in mine) == code.rstrip("\n") + "\n"  # a lexer ends the text with a newline
            for (ch, a), (_, b) in zip(mine, pyg):
                assert a == b or ch.isspace(), (lang, style, ch, a, b)
