"""The renderers: one text extractor, tool arguments in JS's JSON, and session text as data.

Session text is data.  A title, a cwd or a message that looks like Rich markup
(``[red]``, ``[/x]``) must print as written on a terminal, and a control
character in a log (an ESC from coloured tool output, a terminal title
sequence in a cwd) must never reach the terminal raw.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ev, jsonl, run_env, v4_header
from dshlog.model import transcript as tr
from dshlog.model.content import EVENT_LINE, PREVIEW, SEARCH, TRANSCRIPT, TextRule, content_text, message_text
from dshlog.output.text import sanitize
from dshlog.read.store import session_dir

# --------------------------------------------------------------------------- the one extractor


def test_one_rule_per_block_kind() -> None:
    content = [
        {"type": "reasoning", "text": "think"},
        {"type": "text", "text": "a"},
        {"type": "tool-call", "id": "c", "name": "bash", "arguments": "{}"},
        {"type": "image", "offloaded": True},
        {"type": "image"},
        {"type": "file", "attachment": {"name": "f.txt"}},
        {"type": "file"},
        {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": "out"}]},
        {"type": "tool-addition", "toolName": "grep"},
        "not a block",
        {"type": "text", "text": "b"},
    ]
    assert content_text(content, PREVIEW) == "a[tool-call bash][image offloaded][image][file f.txt][file]out[tool-addition grep]b"
    assert content_text(content, EVENT_LINE) == "thinka[image offloaded][image][file f.txt][file]outb"
    assert content_text(content, SEARCH) == "think\na\n[image offloaded]\n[image]\n[file f.txt]\n[file]\nout\nb"
    assert content_text(content, TRANSCRIPT) == "a\n[image offloaded]\n[image]\n[file f.txt]\n[file]\nout\nb"


def test_the_disagreements_of_the_old_extractors() -> None:
    """The inputs on which three extractors gave three answers now get one rule, varied only by TextRule."""
    two = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert content_text(two, PREVIEW) == "ab"  # dsh's demo preview runs pieces together
    assert content_text(two, TRANSCRIPT) == "a\nb"
    assert content_text(two, TextRule(separator=" | ")) == "a | b"
    assert message_text({"content": "plain string"}) == "plain string"
    assert message_text({"content": [{"type": "tool-result", "content": "out"}]}) == "out"
    assert message_text("not a message") == ""


def test_deep_nesting_does_not_exhaust_the_stack() -> None:
    content: list = [{"type": "text", "text": "deep"}]
    for _ in range(50_000):
        content = [{"type": "tool-result", "content": content}]
    assert content_text(content) == "deep"


# --------------------------------------------------------------------------- tool arguments (X34)


def call_arguments(arguments: str) -> str:
    events = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "tool-call", "id": "k", "name": "f", "arguments": arguments}], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a"}, "stream": []}, surfaceOp="append"),
    ]
    return next(i for i in tr.transcript(events) if isinstance(i, tr.ToolCall)).arguments


def test_tool_arguments_are_written_as_js_writes_them() -> None:
    assert call_arguments('{"x":1e-7,"y":1.0,"z":[1,{"a":null}],"e":{}}') == '{"x": 1e-7, "y": 1, "z": [1, {"a": null}], "e": {}}'
    assert call_arguments('{"x": NaN}') == '{"x": NaN}'  # not JSON: shown as the model wrote it
    assert call_arguments('{"x":1e400}') == '{"x":1e400}'
    assert call_arguments('{"cmd":"ls') == '{"cmd":"ls'  # half-written
    long = call_arguments(json.dumps({"command": "x" * 120}))
    assert long == '{\n  "command": "' + "x" * 120 + '"\n}'  # JSON.stringify(v, null, 2)


# --------------------------------------------------------------------------- the sanitiser


def test_sanitize_makes_controls_visible() -> None:
    assert sanitize("a\x1b[31mb\x1b[0m") == "a\\x1b[31mb\\x1b[0m"
    assert sanitize("keep\ttabs\nand newlines") == "keep\ttabs\nand newlines"
    assert sanitize("\r\x00\x07\x7f\x85\x9b") == "\\x0d\\x00\\x07\\x7f\\x85\\x9b"
    assert sanitize("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert sanitize("é 中 😀 \u2028") == "é 中 😀 \u2028"
    # bidi overrides and isolates would reorder what follows them on the screen; the marks RTL text needs stay
    assert sanitize("ls \u202egnp.exe\u202c \u2066x\u2069") == "ls \\u202egnp.exe\\u202c \\u2066x\\u2069"
    assert sanitize("שלום \u200f, \u200e\u061c") == "שלום \u200f, \u200e\u061c"
    once = sanitize("x\x1by")
    assert sanitize(once) == once


# --------------------------------------------------------------------------- session text through the commands

ANSI = re.compile(r"\x1b\[[0-9;]*m")
MARKUP = ["[red]a[/red]", "[/x]", "[bold]", ":smile:", "[link=x]y[/link]"]
ESC_TEXTS = ["\x1b[2J", "\x1b]0;pwned\x07"]


def write_session(root: Path, sid: str, cwd: str, title: str, text: str) -> Path:
    """One complete v4 session, laid out under ``root`` as dsh keeps it."""
    d = session_dir(root, cwd, sid)
    d.mkdir(parents=True)
    p = d / "session.v4.jsonl"
    msg = lambda role, seq: {"role": role, "content": [{"type": "text", "text": text}], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": f"{role[0]}{seq}"}  # noqa: E731
    p.write_bytes(jsonl(
        v4_header(id=sid, cwd=cwd),
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        ev(2, "session/title", {"title": title, "messageSeqs": [], "source": {"kind": "user"}}),
        ev(3, "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": "u3"}, surfaceOp="append"),
        ev(4, "assistant/message", {"turn": 1, "step": 1, "message": msg("assistant", 4), "stream": [], "usage": {"inputTokens": 1, "outputTokens": 1}}, surfaceOp="append"),
        ev(5, "step/end", {"turn": 1, "step": 1}),
        ev(6, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ))
    return p


#: A styled terminal 400 columns wide (the test environment's streams, colour forced).
TERMINAL = {"colour": "always", "width": 400}


def visible(out: bytes) -> str:
    """What a terminal shows: the styling sequences dropped."""
    return ANSI.sub("", out.decode("utf-8"))


@pytest.mark.parametrize("command", ["show", "surface", "ls", "stats"])
def test_markup_looking_text_prints_as_written_on_a_terminal(tmp_path, command) -> None:
    root = tmp_path / "sessions"
    joined = " ".join(MARKUP)
    p = write_session(root, "s-[red]1[/red]", "/tmp/[bold]p", title=joined, text=joined)
    args = {"show": ["show", "--no-pager", str(p)], "surface": ["surface", str(p)], "ls": ["ls", str(root)], "stats": ["stats", str(p)]}[command]
    code, out, err = run_env(*args, **TERMINAL)
    assert code == 0, err
    shown = visible(out)
    assert "\x1b" not in shown  # nothing but styling was escape codes
    wanted = {"show": MARKUP + ["s-[red]1[/red]"], "surface": MARKUP, "ls": MARKUP + ["s-[red]1[/red]", "/tmp/[bold]p"], "stats": ["s-[red]1[/red]"]}[command]
    for needle in wanted:
        assert needle in shown, (needle, shown)


def test_markup_looking_text_in_the_transcript_items(tmp_path) -> None:
    """Every item kind renders through Text on the terminal: a tool name or output like markup survives too."""
    events = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        ev(2, "system/message", {"turn": 1, "step": 1, "message": {"role": "system", "content": [{"type": "text", "text": "[/system]"}], "source": {"kind": "system-prompt"}, "id": "s1"}}, surfaceOp="append"),
        ev(3, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "reasoning", "text": "[/reason]"}, {"type": "text", "text": "[/text]"}, {"type": "tool-call", "id": "[/id]", "name": "[/name]", "arguments": "[/args]"}], "source": {"kind": "model", "provider": "[/p]", "model": "m"}, "id": "a2"}, "stream": []}, surfaceOp="append"),
        ev(4, "tool/call", {"turn": 1, "step": 1, "callId": "[/id]", "name": "[/name]", "arguments": "[/args]"}),
        ev(5, "tool/result", {"turn": 1, "step": 1, "message": {"role": "tool", "source": {"kind": "tool", "callId": "[/id]"}, "toolCallId": "[/id]", "content": [{"type": "text", "text": "[/out]"}], "isError": True, "id": "r3"}, "error": {"code": "[/code]"}}, surfaceOp="append"),
        ev(6, "step/end", {"turn": 1, "step": 1}),
        ev(7, "todo/write", {"todos": [{"status": "[/st]", "content": "[/todo]"}]}),
        ev(8, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "[/err]", "code": "X"}}}),
    ]
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(jsonl(v4_header(id="[/sid]"), *events))
    code, out, err = run_env("show", "--no-pager", "--reasoning", str(f), **TERMINAL)
    assert code == 0, err
    shown = visible(out)
    for needle in ("[/sid]", "[/system]", "[/reason]", "[/name]", "[/id]", "[/args]", "[/out]", "[/code]", "[/st]", "[/todo]", "[/err]", "[/p]/m", "[/text]"):
        assert needle in shown, needle


@pytest.mark.parametrize("mode", ["piped", "terminal"])
@pytest.mark.parametrize("command", ["info", "ls", "show", "events", "surface", "fork"])
def test_control_characters_never_reach_the_terminal_raw(tmp_path, command, mode) -> None:
    root = tmp_path / "sessions"
    sid = "id\x1b[2J"
    p = write_session(root, sid, "/tmp/\x1b]0;pwned\x07", title="t\x1b[2J", text="hi\x1b[2J\x1b]0;pwned\x07 \x9b1m")
    args = {
        "info": ["info", str(p)],
        "ls": ["ls", str(root)],
        "show": ["show", "--no-pager", str(p)],
        "events": ["events", str(p)],
        "surface": ["surface", str(p)],
        "fork": ["fork", str(p), "-o", str(tmp_path / "child"), "--id", "child\x1b[2J"],
    }[command]
    code, out, err = run_env(*args, **(TERMINAL if mode == "terminal" else {}))
    assert code == 0, err
    text = out.decode("utf-8")
    for seq in ESC_TEXTS + ["\x9b"]:
        assert seq not in text and seq not in err.decode("utf-8", "replace")
    if mode == "piped":
        assert "\x1b" not in text
    assert "\\x1b[2J" in text or "\\u001b[2J" in text  # shown, as a visible escape (JSON-quoted in the events line)


def test_json_output_stays_exact(tmp_path) -> None:
    p = write_session(tmp_path / "sessions", "s-1", "/tmp/p", title="t\x7f", text="hi\x1b[2J\x9b")
    code, out, _ = run_env("events", "--json", str(p))
    assert code == 0 and out == b"".join(p.read_bytes().splitlines(keepends=True)[1:])
    code, out, _ = run_env("export", "-f", "json", str(p))
    doc = json.loads(out)
    assert doc["summary"]["title"] == "t\x7f" and "\\u001b[2J\x9b" in out.decode()


def _printed(parts: list, width: int = 30) -> str:
    import io

    from rich.console import Console

    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=True, color_system="truecolor", markup=False, emoji=False, highlight=False)
    for part in parts:
        con.print(part)
    return buf.getvalue()


def test_long_texts_print_in_pieces_exactly_as_whole() -> None:
    """show streams a long answer into the pager a piece at a time; the bytes are the whole's."""
    from rich.padding import Padding
    from rich.text import Text

    from dshlog.output.terminal import pieces

    body = "\n".join(f"line {k} " + "wide 中文 " * (k % 7) for k in range(50)) + "\n\nend"
    t = Text()
    t.append("assistant\n", style="bold magenta")
    t.append(body)
    t.stylize("italic", 20, 400)  # a style that crosses piece boundaries
    split = list(pieces(t, lines=4))
    assert len(split) == 14 and all(p.plain.count("\n") <= 3 for p in split)  # 53 lines
    assert _printed(split) == _printed([t])
    padded = Padding(t, (1, 0, 1, 2))
    assert _printed(list(pieces(padded, lines=4))) == _printed([padded])
    assert list(pieces(Text("short\ntext"), lines=4))[0].plain == "short\ntext"
    assert _printed(list(pieces(Text("a\n\n\n\nb\n"), lines=2))) == _printed([Text("a\n\n\n\nb\n")])


def test_the_terminal_renderer_prints_a_long_answer_in_pieces() -> None:
    from dshlog.output import terminal

    printed: list = []

    class Con:
        def print(self, r: object) -> None:
            printed.append(r)

    item = tr.AssistantText(seq=3, text="x\n" * (terminal.PIECE_LINES * 2 + 10), model=None, interrupted=False)
    terminal.TerminalRenderer(Con()).item(item)  # type: ignore[arg-type]  # a stand-in console that records what is printed
    assert len(printed) == 3


# ----------------------------------------------------------------- terminal widths: the fast paths are exact


def _exact_width(text: str) -> int:
    from dshlog.output.text import char_width

    return sum(char_width(c) for c in text)


def _exact_cut(text: str, limit: int) -> str:
    """``cut`` as it was written before the fast path for text that is not ASCII: a character at a time."""
    from dshlog.output.text import char_width

    if text.isascii():
        return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
    used = keep = 0
    for i, c in enumerate(text):
        w = char_width(c)
        if used + w <= limit - 1:
            keep = i + 1
        used += w
        if used > limit:
            return text[:keep] + "…"
    return text


def test_every_character_the_fast_paths_count_as_one_column_takes_one() -> None:
    """Every code point outside ``_NOT_NARROW`` (all of them, surrogates too) takes exactly one column."""
    from dshlog.output.text import _NOT_NARROW, char_width

    narrow = [chr(cp) for cp in range(0x110000) if not _NOT_NARROW.match(chr(cp))]
    assert len(narrow) == 0x300 + 0x65
    assert all(char_width(c) == 1 for c in narrow)


_widths_text = st.text(alphabet=st.one_of(
    st.characters(max_codepoint=0x7F),
    st.sampled_from(["é", "…", "—", "’", "中", "日", "\u0301", "\u20dd", "\u2065", "\uff21", "\ud800", "\x9b", "\u200b"]),
    st.characters(),
), max_size=40)


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(text=_widths_text, limit=st.integers(min_value=-2, max_value=45))
def test_cut_and_width_fast_paths_equal_the_exact_count(text: str, limit: int) -> None:
    from dshlog.output.text import cut, display_width

    assert cut(text, limit) == _exact_cut(text, limit)
    assert display_width(text) == _exact_width(text)
