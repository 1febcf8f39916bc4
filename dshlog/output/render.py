"""Rendering: one-line event descriptions, previews and tables for people.

Pure formatting; nothing here reads files or decides anything.  Rich is imported
lazily so that commands which only print plain lines start fast.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Sequence

from ..protocol.jsjson import stringify as js_quote
from ..protocol.vocabulary import ROLE_OF_TYPE
from ..protocol.vocabulary import message_of as vocab_message_of

def message_of(ev: dict) -> dict | None:
    """The message object an event carries (see :func:`dshlog.protocol.vocabulary.message_of`)."""
    msg = vocab_message_of(str(ev.get("type")), ev.get("data"))
    return msg if isinstance(msg, dict) else None


def message_text(msg: Any, *, tool_calls: bool = True) -> str:
    """Concatenated text of a message; tool calls rendered as ``[tool-call name]``."""
    if not isinstance(msg, dict):
        return ""
    parts: list[str] = []
    content = msg.get("content")
    if isinstance(content, str):
        return content
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        bt = block.get("type")
        if bt in ("text", "reasoning") and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif bt == "tool-call" and tool_calls:
            parts.append(f"[tool-call {block.get('name')}]")
        elif bt == "tool-result":
            parts.append(message_text({"content": block.get("content")}))
        elif bt == "image":
            parts.append("[image]")
    return "".join(parts)


def surface_marker(ev: dict) -> str:
    op = ev.get("surfaceOp")
    if op == "append":
        return "append"
    if isinstance(op, dict):
        s = op.get("startSeq", op.get("start"))
        e = op.get("endSeq", op.get("end"))
        return f"replace {s}..{e}"
    return ""


def describe(ev: dict, width: int = 40) -> str:
    """Short content description in the seed's style (SEMANTICS.md 11)."""
    t = ev.get("type")
    data = ev.get("data")
    d = data if isinstance(data, dict) else {}
    if t == "turn/start":
        return f"turn {d.get('turn')}"
    if t in ("step/start", "step/end"):
        return f"turn {d.get('turn')} step {d.get('step')}"
    if t == "turn/end":
        r = d.get("reason")
        return f"reason={r.get('kind') if isinstance(r, dict) else r}"
    if t == "request/header":
        cfg = (d.get("header") or {}).get("config") if isinstance(d.get("header"), dict) else None
        model = f" {cfg.get('provider')}/{cfg.get('model')}" if isinstance(cfg, dict) else ""
        return f"reason={d.get('reason')}{model}"
    if t == "request/context":
        return f"{d.get('provider')}/{d.get('model')}"
    if t == "tool/call":
        return f"{d.get('name')} {d.get('callId')}"
    if t == "assistant/attempt":
        stream = d.get("stream")
        return f"stream {len(stream) if isinstance(stream, list) else '?'} records, no surface message"
    if t == "assistant/chunk":
        ch = d.get("chunk") if isinstance(d.get("chunk"), dict) else {}
        extra = ch.get("text") or ch.get("argumentsDelta") or ch.get("blockType") or ""
        return f"{ch.get('type')} {js_quote(str(extra))[:width]}" if extra else str(ch.get("type"))
    if t == "session/title":
        return js_quote(str(d.get("title")))[:width]
    if t in ROLE_OF_TYPE:
        msg = message_of(ev)
        if msg is None and t == "assistant/message" and "content" in d:
            msg = d  # legacy wrapper
        text = message_text(msg, tool_calls=False)
        out = js_quote(text)[:width]
        if t == "user/message" and isinstance(msg, dict):
            src = msg.get("source")
            kind = src.get("kind") if isinstance(src, dict) else None
            out = f"{kind}: {out}" if kind else out
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            calls = [b.get("name") for b in content if isinstance(b, dict) and b.get("type") == "tool-call"]
            for name in calls:
                out += f" + tool-call {name}"
        if d.get("interrupted"):
            out += " interrupted"
        if t == "tool/result" and isinstance(d.get("error"), dict):
            out += f" error={d['error'].get('code')}"
        return out
    if t == "session/end-seed":
        return "inherited" if d.get("inherited") is True else ""
    if t == "agent/inbox/spliced":
        ins = d.get("inserted")
        return f"{d.get('target')} +{len(ins) if isinstance(ins, list) else 0} -{d.get('removedCount', 0)}"
    return ""


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal, honouring NO_COLOR and FORCE_COLOR."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    color = use_color(stream)
    return Console(
        file=stream,
        no_color=not color,
        force_terminal=True if os.environ.get("FORCE_COLOR") else None,
        highlight=False,
        soft_wrap=not stream.isatty() if hasattr(stream, "isatty") else True,
    )


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, justify: dict[int, str] | None = None) -> None:
    """Print a table: Rich on a terminal, tab-separated plain text when piped (streamed, row by row)."""
    if not sys.stdout.isatty() and not os.environ.get("FORCE_COLOR"):
        if title:
            print(f"# {title}")
        print("\t".join(columns))
        for r in rows:
            print("\t".join("" if v is None else str(v) for v in r))
        return
    rows = list(rows)
    from rich.table import Table

    t = Table(title=title, show_edge=False, header_style="bold")
    for i, c in enumerate(columns):
        t.add_column(c, justify=(justify or {}).get(i, "left"), overflow="fold")
    for r in rows:
        t.add_row(*("" if v is None else str(v) for v in r))
    console().print(t)


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
