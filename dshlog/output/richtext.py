"""Markdown and code as HTML, for the HTML export: safe by construction, highlighted, no network.

Assistant answers and user prompts are Markdown; showing them literally (``**bold**``,
fenced code as plain text) makes a shared transcript hard to read.  markdown-it-py
renders CommonMark with the raw-HTML rule off, so a ``<script>`` in a message is
text, never markup; its link validator already refuses ``javascript:``, ``vbscript:``,
``file:`` and ``data:`` targets.  On top of that:

* images are not rendered (the page's CSP forbids loading them; a blocked image is
  a console error and a request attempt), their alt text stays;
* every link gets ``rel="noopener noreferrer nofollow"``;
* fenced code with a language Pygments knows is highlighted with CSS classes (the
  style sheet is :func:`code_css`, inline in the page); unknown languages stay plain.

Both libraries are imported on first use: only the HTML export needs them, and
every other command keeps its start-up time.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape
from typing import Any

__all__ = ["code_css", "highlight", "markdown_html"]

_REL = "noopener noreferrer nofollow"


def highlight(code: str, lang: str) -> str:
    """``code`` as highlighted HTML spans (no ``<pre>``), or ``""`` when ``lang`` is unknown.

    Only tokens that one of the page's two styles colours get a span, and a run of
    tokens of one class gets one span: Pygments' own formatter wraps every token
    (names, punctuation, whitespace), which for code-heavy sessions was most of the
    page's elements and so most of its parse time, for no visible difference.
    """
    from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]  # lazy: heavy, only the HTML export uses it
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]  # pygments ships no type hints

    name = lang.strip().split(maxsplit=1)[0] if lang.strip() else ""
    if not name:
        return ""
    try:
        lexer = get_lexer_by_name(name.lower())
    except ClassNotFound:
        return ""
    styled = _styled_classes()
    out: list[str] = []
    run: list[str] = []
    current = ""

    def flush() -> None:
        text = escape("".join(run), quote=False)
        out.append(f'<span class="{current}">{text}</span>' if current else text)

    for ttype, value in lexer.get_tokens(code):
        cls = _token_class(ttype)
        cls = cls if cls in styled else ""
        if cls != current and run:
            flush()
            run.clear()
        current = cls
        run.append(value)
    if run:
        flush()
    return "".join(out)


#: The two styles of the page: light, and dark under ``prefers-color-scheme``.
STYLES = ("default", "monokai")


@lru_cache(maxsize=512)
def _token_class(ttype: Any) -> str:
    """The CSS class Pygments gives a token type (``nf``, ``s2``...), as its HTML formatter names it."""
    from pygments.formatters.html import _get_ttype_class  # type: ignore[import-untyped]  # the formatter's own naming

    return str(_get_ttype_class(ttype))


def _base_colour(style: str) -> str | None:
    """The colour a style gives plain text (``None``: the page's own)."""
    from pygments.styles import get_style_by_name  # type: ignore[import-untyped]  # pygments ships no type hints
    from pygments.token import Token  # type: ignore[import-untyped]  # pygments ships no type hints

    colour = get_style_by_name(style).style_for_token(Token.Text)["color"]
    return f"#{colour}".lower() if colour else None


@lru_cache(maxsize=1)
def _styled_classes() -> frozenset[str]:
    """The classes whose span shows: a rule of either style that differs from its plain text.

    A class whose rule is only the style's plain-text colour (monokai's names and
    punctuation) looks like the text around it once :func:`code_css` gives code that
    colour, and whitespace shows no colour at all.
    """
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]  # pygments ships no type hints

    shown: set[str] = set()
    for style in STYLES:
        base = _base_colour(style)
        for cls, (rule, _ttype, _level) in HtmlFormatter(style=style).class2style.items():
            plain = rule.lower() == f"color: {base}" if base else False
            if cls and not plain and not (cls == "w" and rule.startswith("color:") and ";" not in rule):
                shown.add(cls)
    return frozenset(shown)


@lru_cache(maxsize=2)
def _parser(code: bool) -> Any:
    from markdown_it import MarkdownIt  # lazy: only the HTML export renders Markdown

    options: dict[str, Any] = {"html": False, "breaks": True}
    if code:
        options["highlight"] = lambda text, lang, _attrs: highlight(text, lang)
    md = MarkdownIt("commonmark", options)
    md.enable(["table", "strikethrough"])
    md.disable("image")

    def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", _REL)
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def markdown_html(text: str, *, code: bool = True) -> str:
    """``text`` (Markdown) as HTML; raw HTML in it is escaped, links are inert to the page.

    ``code=False`` leaves fenced code plain (still ``<pre><code>``): for text that is
    folded away and drawn dim, where highlighting would be most of a page's elements
    and so most of its parse time, for what shows only once unfolded.
    """
    if not text.strip():
        return ""
    return str(_parser(code).render(text))


@lru_cache(maxsize=1)
def code_css() -> str:
    """The highlighter's classes, light and dark, scoped to ``pre``."""
    from pygments.formatters import HtmlFormatter  # lazy, as above

    def rules(style: str) -> str:
        lines = HtmlFormatter(style=style).get_style_defs("pre").splitlines()
        # drop the formatter's own background and line-number rules: the page styles <pre>
        kept = [ln for ln in lines if ln.startswith("pre .") and not ln.startswith(("pre .hll", "pre .linenos")) and "td.linenos" not in ln]
        base = _base_colour(style)
        # code is the style's plain colour, so a span of that colour alone is left out (see highlight)
        return "\n".join(([f"pre {{ color: {base} }}"] if base else []) + kept)

    light, dark = STYLES
    return rules(light) + "\n@media (prefers-color-scheme:dark){\n" + rules(dark) + "\n}"
