"""Tables never cut a number or a key: on a real terminal (a pty) at 80 and 200 columns, and piped.

On a terminal a figure is shown exactly, or abbreviated (``34.6M``) only when the exact one cannot
fit; ids are unique prefixes, paths are cut on the left; piped, every value is whole and
tab-separated.  The exact figures are taken from ``--json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, ev, jsonl, run_env, v4_header
from dshlog.output.labels import count, short_count
from dshlog.protocol.layout import encode_segment, project_key
from test_ux_terminal import on_pty

IDS = ["3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b", "3f2a9c1e-0000-4e8f-9a0b-1c2d3e4f5a6c", "a81d2e44-7c3b-4f1e-8d2a-9b0c1d2e3f40"]
PROVIDERS = ["deepseek-official", "openrouter", None]  # None: a request header without a provider
CUT_FIGURE = re.compile(r"\d…|…\d")


def big_session(root: Path, i: int) -> Path:
    """A session of project ``/home/ann/<long name>-i/api-server-i`` with token counts in the tens of millions."""
    sid, cwd = IDS[i], f"/home/ann/work/clients/a-long-directory-name-{i}/api-server-{i}"
    d = root / project_key(cwd) / encode_segment(sid)
    d.mkdir(parents=True)
    cfg = {"model": "deepseek-v4-flash"} | ({"provider": PROVIDERS[i]} if PROVIDERS[i] else {})
    msg = {"role": "assistant", "content": [{"type": "text", "text": "done " * 60}], "id": f"a{i}"}
    text = "please look at the failing build and tell me why it fails " * 4
    p = d / "session.v4.jsonl"
    p.write_bytes(jsonl(
        v4_header(id=sid, cwd=cwd),
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        ev(2, "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": f"u{i}"}, surfaceOp="append"),
        ev(3, "request/header", {"reason": "turn", "header": {"config": cfg}}),
        ev(4, "assistant/message", {"turn": 1, "step": 1, "message": msg, "stream": [],
                                    "usage": {"inputTokens": 34_574_299 + i, "outputTokens": 26_631_117 + i, "cacheReadTokens": 912_345_678}},
           surfaceOp="append"),
        ev(5, "step/end", {"turn": 1, "step": 1}),
        ev(6, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ))
    return p


@pytest.fixture()
def store(tmp_path) -> Path:
    root = tmp_path / "sessions"
    for i in range(len(IDS)):
        big_session(root, i)
    return root


def lines_of(shown: bytes) -> list[str]:
    return [line for line in shown.decode().splitlines() if line.strip()]


def figures_shown(lines: list[str], exact: list[int]) -> None:
    """No figure is cut, and each exact figure appears whole or in the one abbreviated form."""
    text = "\n".join(lines)
    assert not CUT_FIGURE.search(text), text
    for n in exact:
        assert count(n) in text or short_count(n) in text, (n, text)


@pytest.mark.parametrize("columns", [80, 200])
def test_stats_never_cuts_a_figure(store, columns) -> None:
    paths = sorted(str(p) for p in store.rglob("session.v4.jsonl"))
    doc = json.loads(run_env("stats", *paths, "--json")[1])
    code, shown, _ = on_pty(["stats", *paths], columns=columns)
    assert code == 0, shown.decode(errors="replace")
    lines = lines_of(shown)
    assert lines[0].split()[:3] == ["session", "turns", "steps"]  # no header is cut
    exact = [s["tokens"][k] for s in doc["sessions"] + [doc["total"]] for k in ("inputTokens", "outputTokens")]
    figures_shown(lines, exact)
    if columns == 200:  # room enough: every figure exactly
        assert all(count(n) in "\n".join(lines) for n in exact)


@pytest.mark.parametrize("columns", [80, 200])
def test_report_keys_are_whole_on_a_terminal(store, columns) -> None:
    code, shown, _ = on_pty(["report", str(store), "--by", "model"], columns=columns)
    assert code == 0, shown.decode(errors="replace")
    text = shown.decode()
    for model in ("deepseek-official/deepseek-v4-flash", "openrouter/deepseek-v4-flash", "unknown/deepseek-v4-flash"):
        assert model in text, text  # the provider is part of the key
    doc = json.loads(run_env("report", str(store), "--by", "model", "--json")[1])
    figures_shown(lines_of(shown), [doc["total"]["tokens"]["inputTokens"]])


def test_report_piped_is_tab_separated_and_whole(store) -> None:
    code, stdout, stderr = run_env("report", str(store), "--by", "day,project")
    assert code == 0, stderr
    rows = [line.split("\t") for line in stdout.decode().splitlines() if not line.startswith("  ")]
    assert rows[0][:3] == ["day", "project", "sess"]
    projects = {row[1] for row in rows[1:-1]}
    assert projects == {f"/home/ann/work/clients/a-long-directory-name-{i}/api-server-{i}" for i in range(3)}
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", row[0]) for row in rows[1:-1])
    assert rows[-1][0] == "total" and count(34_574_299 * 3 + 3) in rows[-1]
    assert "…" not in stdout.decode()


def test_report_json_has_no_python_none_in_a_key(store) -> None:
    stdout = run_env("report", str(store), "--by", "model", "--json")[1]
    assert b"None" not in stdout
    assert b'"unknown/deepseek-v4-flash"' in stdout


def test_surface_keeps_seq_type_and_role_at_80_columns() -> None:
    p = FIXTURES / "v4" / "loop" / "session.v4.jsonl"
    doc = json.loads(run_env("surface", str(p), "--json")[1])
    code, shown, _ = on_pty(["surface", str(p)], columns=80)
    assert code == 0, shown.decode(errors="replace")
    lines = lines_of(shown)
    assert lines[0].split()[:4] == ["seq", "type", "role", "preview"]
    nodes = doc["nodes"]
    for node, line in zip(nodes, lines[1:]):  # seq, type and role whole on every row
        assert line.split()[:3] == [str(node["seq"]), node["type"], node["role"]], line
    assert all(len(line) <= 80 for line in lines[: 1 + len(nodes)])


def test_ls_cuts_paths_on_the_left(store) -> None:
    code, shown, _ = on_pty(["ls", str(store)], columns=100)
    assert code == 0, shown.decode(errors="replace")
    lines = lines_of(shown)
    assert "cwd" in lines[0].split()
    for i in range(3):  # what tells the projects apart is shown
        assert any(f"api-server-{i}" in line for line in lines[1:]), lines
    assert all(len(line) <= 100 for line in lines)


def test_events_previews_use_the_width_and_show_the_time(store) -> None:
    p = next(store.rglob("session.v4.jsonl"))
    narrow, wide = on_pty(["events", str(p)], columns=80)[1], on_pty(["events", str(p)], columns=200)[1]
    row = next(line for line in lines_of(wide) if "user/message" in line)
    assert re.match(r"\d\d:\d\d:\d\d 2 user/message", row), row  # a time column when there is room
    assert 150 < len(row) <= 200, row
    row80 = next(line for line in lines_of(narrow) if "user/message" in line)
    assert row80.startswith("2 user/message") and len(row80) <= 80
    piped = run_env("events", str(p))[1].decode()
    assert any(line.startswith("2 user/message append") for line in piped.splitlines())  # piped: as before, no time


def test_search_hits_fit_the_terminal_with_short_ids(store) -> None:
    code, shown, _ = on_pty(["search", "failing", str(store)], columns=100)
    assert code == 0, shown.decode(errors="replace")
    lines = lines_of(shown)
    assert len(lines) >= 3 and all(len(line) <= 100 for line in lines), lines
    assert not any(sid in shown.decode() for sid in IDS)
    for line in lines:
        assert sum(sid.startswith(line.split()[0]) for sid in IDS) == 1
    piped = run_env("search", "failing", str(store))[1].decode()
    assert all(any(line.startswith(sid) for sid in IDS) for line in piped.splitlines())
