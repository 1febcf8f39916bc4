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
from typing import Any

__all__ = ["code_css", "highlight", "markdown_html"]

_REL = "noopener noreferrer nofollow"


def highlight(code: str, lang: str) -> str:
    """``code`` as highlighted HTML spans (no ``<pre>``), or ``""`` when ``lang`` is unknown."""
    from pygments import highlight as pyg_highlight  # type: ignore[import-untyped]  # lazy: heavy, only the HTML export uses it
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]  # pygments ships no type hints
    from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]  # pygments ships no type hints
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]  # pygments ships no type hints

    name = lang.strip().split(maxsplit=1)[0] if lang.strip() else ""
    if not name:
        return ""
    try:
        lexer = get_lexer_by_name(name.lower())
    except ClassNotFound:
        return ""
    return str(pyg_highlight(code, lexer, HtmlFormatter(nowrap=True)))


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt  # lazy: only the HTML export renders Markdown

    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "highlight": lambda code, lang, _attrs: highlight(code, lang)})
    md.enable(["table", "strikethrough"])
    md.disable("image")

    def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", _REL)
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def markdown_html(text: str) -> str:
    """``text`` (Markdown) as HTML; raw HTML in it is escaped, links are inert to the page."""
    if not text.strip():
        return ""
    return str(_parser().render(text))


@lru_cache(maxsize=1)
def code_css() -> str:
    """The highlighter's classes, light and dark, scoped to ``pre``."""
    from pygments.formatters import HtmlFormatter  # lazy, as above

    def rules(style: str) -> str:
        lines = HtmlFormatter(style=style).get_style_defs("pre").splitlines()
        # drop the formatter's own background and line-number rules: the page styles <pre>
        return "\n".join(ln for ln in lines if ln.startswith("pre .") and not ln.startswith(("pre .hll", "pre .linenos")) and "td.linenos" not in ln)

    return rules("default") + "\n@media (prefers-color-scheme:dark){\n" + rules("monokai") + "\n}"

