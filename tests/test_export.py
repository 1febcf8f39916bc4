"""``dshlog export``: Markdown, HTML and JSON transcripts, redaction, atomic output."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import FIXTURES, GOLDEN, corpus_files, corpus_ids, ev, jsonl, requires_corpus, run_env, v4_header

LOOP_V4 = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
SECRET_KEY = "sk-Zx8Kq2Lw9Pv4Rt7Ys1Mn6Bc3Df5Gh0Jk"
SECRET_PW = "hunter2hunter2"
EMAIL = "ann.lee@example.com"


def export(*args: str) -> tuple[int, bytes, bytes]:
    return run_env("export", *args)


def tricky_log(tmp_path: Path) -> Path:
    """A log whose texts carry markup, backtick fences and planted secrets in every place."""
    args = json.dumps({"command": f"curl -H 'Authorization: Bearer {SECRET_KEY}' --data password={SECRET_PW}"})
    out = f"```\n<script>alert(1)</script>\nmail {EMAIL}\nkey {SECRET_KEY}\n```"
    events = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        ev(2, "user/message", {"content": [{"type": "text", "text": f"<b>hi</b> & use {SECRET_KEY}"}], "source": {"kind": "user"}, "role": "user", "id": "u2"}, surfaceOp="append"),
        ev(3, "assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [{"type": "reasoning", "text": f"the user's key is {SECRET_KEY}"}, {"type": "text", "text": "running"}, {"type": "tool-call", "id": "k1", "name": "bash", "arguments": args}], "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a3"}, "stream": []}, surfaceOp="append"),
        ev(4, "tool/call", {"turn": 1, "step": 1, "callId": "k1", "name": "bash", "arguments": args}),
        ev(5, "tool/result", {"turn": 1, "step": 1, "message": {"role": "tool", "source": {"kind": "tool", "callId": "k1"}, "toolCallId": "k1", "content": [{"type": "text", "text": out}], "isError": False, "id": "r5"}}, surfaceOp="append", sourceEventSeqs=[4]),
        ev(6, "step/end", {"turn": 1, "step": 1}),
        ev(7, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    f = tmp_path / "session.v4.jsonl"
    f.write_bytes(jsonl(v4_header(cwd=f"/home/{EMAIL}"), *events))
    return f


# --------------------------------------------------------------------------- Markdown


def test_markdown_reads_as_text() -> None:
    code, out, err = export(str(LOOP_V4), "--format", "md")
    assert code == 0, err
    md = out.decode()
    assert md.startswith("# dsh session loop-0001\n")
    assert [h for h in md.splitlines() if h.startswith("## ")] == [f"## Turn {n} (2026-10-20 12:24:02 UTC)" for n in (1, 2, 3, 4)]
    assert "**Tool call** `echo` (`c1`):\n\n```json\n{\"text\": \"one\"}\n```" in md
    assert "```\necho: one\n```" in md
    assert "第一点是" in md and "*Turn 3 aborted by user.*" in md
    assert "model call failed: busy (RATE_LIMIT)" in md and "retry 1" in md
    assert "<details" not in md  # plain-text readable, no HTML needed


def test_markdown_fence_outgrows_backticks(tmp_path) -> None:
    code, out, _ = export(str(tricky_log(tmp_path)))
    assert code == 0
    md = out.decode()
    assert "````\n```\n<script>" in md  # a four-backtick fence around output holding a three-backtick one


# --------------------------------------------------------------------------- HTML


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.stack: list[str] = []
        self.details_text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if "details" in self.stack:
            self.details_text.append(data)


def test_html_is_self_contained_and_folds_tool_output() -> None:
    code, out, err = export(str(LOOP_V4), "--format", "html")
    assert code == 0, err
    page = out.decode()
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(link|img|iframe|object|embed)\b", page, re.I)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page
    # one inline script, no source, and the CSP runs it by its hash alone
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, re.S | re.I)
    assert len(scripts) == 1 and scripts[0][0] == ""
    digest = base64.b64encode(hashlib.sha256(scripts[0][1].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert f"script-src 'sha256-{digest}'" in csp and "unsafe-eval" not in csp and "script-src 'unsafe-inline'" not in csp
    p = _Collect()
    p.feed(page)
    assert not [a for _, a in p.tags if "src" in a or not a.get("href", "#").startswith("#")]  # only in-page links
    details = "".join(p.details_text)
    assert "echo: one" in details  # the tool output sits inside <details>
    assert "You are a test agent." in details  # so does the system prompt
    assert "第一点是" in page and "aborted by user" in page


def test_html_escapes_everything(tmp_path) -> None:
    code, out, _ = export(str(tricky_log(tmp_path)), "-f", "html")
    assert code == 0
    page = out.decode()
    assert "<script>alert(1)" not in page and "<b>hi</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;hi&lt;/b&gt; &amp; use" in page
    assert 'class="reasoning"' in page and "<details" in page


# --------------------------------------------------------------------------- JSON


def test_json_shape() -> None:
    code, out, err = export(str(GOLDEN / "loop-events.json"), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc) == ["shape", "session", "turns", "summary"]
    assert doc["shape"] == 1
    assert doc["session"]["storedVersion"] == 4
    assert [t["turn"] for t in doc["turns"]] == [1, 2, 3, 4]
    assert [t["end"]["outcome"] for t in doc["turns"]] == ["completed", "completed", "aborted", "completed"]
    turn1 = [i["kind"] for i in doc["turns"][0]["items"]]
    assert turn1[:5] == ["system-prompt", "user", "assistant", "tool-call", "tool-result"]
    result = doc["turns"][0]["items"][4]
    assert result == {"kind": "tool-result", "seq": 10, "call_id": "c1", "name": "echo", "output": "echo: one", "is_error": False, "error_code": None, "cut_lines": 0, "cut_chars": 0}
    turn3 = doc["turns"][2]["items"]
    assert {"kind": "assistant", "seq": 30, "text": "第一点是", "interrupted": True, "model": "mock/mock"} in turn3
    assert [i["kind"] for i in doc["turns"][1]["items"]] == ["user", "failure", "retry", "assistant", "usage"]
    assert doc["summary"] == {"title": None, "turns": 4, "tokens": {"inputTokens": 40, "outputTokens": 17}}


def test_json_session_facts_from_header() -> None:
    code, out, _ = export(str(LOOP_V4), "-f", "json")
    session = json.loads(out)["session"]
    assert session["id"] == "loop-0001" and session["cwd"] == "/home/ann/demo" and session["file"] == "session.v4.jsonl"


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_redact_masks_secrets_everywhere(tmp_path, fmt) -> None:
    f = tricky_log(tmp_path)
    code, plain, _ = export(str(f), "-f", fmt, "--full")
    assert code == 0
    assert SECRET_KEY.encode() in plain and SECRET_PW.encode() in plain  # the log really carries them
    code, out, err = export(str(f), "-f", fmt, "--full", "--redact")
    assert code == 0, err
    for secret in (SECRET_KEY, SECRET_PW, EMAIL):
        assert secret.encode() not in out
    assert b"REDACTED" in out
    assert b"running" in out  # ordinary text survives


# --------------------------------------------------------------------------- output file


def test_output_file_is_atomic_and_never_overwritten(tmp_path) -> None:
    target = tmp_path / "out.html"
    code, out, err = export(str(LOOP_V4), "-f", "html", "-o", str(target))
    assert code == 0, err
    assert out == b"" and b"written:" in err
    first = target.read_bytes()
    assert first.startswith(b"<!DOCTYPE html>") and first.endswith(b"</html>\n")
    assert os.stat(target).st_mode & 0o044  # shareable, not the 0600 of the staging file
    code, _, err = export(str(LOOP_V4), "-f", "md", "-o", str(target))
    assert code == 5 and b"refusing to overwrite" in err
    assert target.read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html"]  # no staging leftovers


def test_failed_export_leaves_nothing(tmp_path) -> None:
    bad = tmp_path / "session.v4.jsonl"  # a line beyond the reader's limit: nothing can be shown of it
    bad.write_bytes(jsonl(v4_header(), ev(0, "user/message", {"turn": 1, "content": "x" * (2 << 20)})))
    target = tmp_path / "out.md"
    code, _, err = run_env("--max-line-size", "1", "export", str(bad), "-o", str(target))
    assert code == 3 and b"dshlog: limit: " in err, err
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.v4.jsonl"]


def test_a_newer_format_is_exported_with_dsh_refusal_first(tmp_path) -> None:
    """dsh refuses a newer format before it reads a row; the export shows the rows, opening with that refusal."""
    newer = tmp_path / "session.v4.jsonl"
    newer.write_bytes(jsonl({**v4_header(), "version": 9}, ev(0, "turn/start", {"turn": 1})))
    target = tmp_path / "out.md"
    code, _, err = export(str(newer), "-o", str(target))
    assert code == 3, err
    assert target.read_text().split("\n")[2].startswith("> **dsh refuses to open this session:** session ")
    assert b"uses log format v9, but this harness reads only v4" in err


def test_unknown_format_is_a_usage_error() -> None:
    code, out, err = export(str(LOOP_V4), "-f", "pdf")
    assert code == 2 and out == b"" and b"md, html, json" in err


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=corpus_ids())
def test_export_on_corpus(path) -> None:
    """All three formats work on every corpus file that opens; refusals are clean one-line errors."""
    for fmt in ("md", "html", "json"):
        code, out, err = export(str(path), "-f", fmt)
        assert code in (0, 2, 3, 4, 5, 6), err.decode(errors="replace")
        assert b"internal error" not in err and b"Traceback" not in err
        if code != 0:
            return  # refused: the same for every format
        if fmt == "json":
            doc = json.loads(out)
            assert doc["shape"] == 1 and isinstance(doc["turns"], list)
        elif fmt == "html":
            assert out.rstrip().endswith(b"</html>") and b"https://" not in out.split(b"</style>")[0]
