"""``search``: every planted needle is found with its seq, role, field and snippet; none inside JSON keys or images."""

from __future__ import annotations

import shutil

import orjson
import pytest
import zstandard
from conftest import load_bench_script

from dshlog.executor import InProcess, ProcessPool
from dshlog.model.search import Query
from dshlog.ops.report import store_sessions
from dshlog.ops.search import search, search_session
from dshlog.protocol.vocabulary import message_of

CTX = 12


def _plant_text(text: str, needle: str) -> tuple[str, str, str]:
    k = min(7, len(text))
    return text[:k] + needle + text[k:], text[:k][-CTX:], text[k:][:CTX]


def _first_string(value, path=()):
    if isinstance(value, str):
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        got = _first_string(v, (*path, k))
        if got is not None:
            return got
    return None


def _plant(events: list[dict], tag: str) -> tuple[list[dict], list[dict]]:
    """Needles in the first message of each role and kind; decoys in a key and in image data."""
    planted: list[dict] = []
    seen: set[tuple[str, str]] = set()
    turn = None
    for ev in events:
        t, data = ev.get("type"), ev.get("data")
        if t == "turn/start":
            turn = data["turn"]
        msg = message_of(t, data) if isinstance(t, str) else None
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            continue
        role = "tool" if t == "tool/result" else msg.get("role")
        for block in msg["content"]:
            blocks = [block]
            if block.get("type") == "tool-result" and isinstance(block.get("content"), list):
                blocks = block["content"]  # v0..v3 wrapper: the tool's output inside
            for b in blocks:
                kind = b.get("type")
                field = {"text": "output" if t == "tool/result" else "text", "reasoning": "reasoning", "tool-call": "arguments"}.get(kind)
                if field is None or (role, field) in seen:
                    continue
                needle = f"zqx{tag}{len(planted)}needle"
                if kind == "tool-call":
                    args = orjson.loads(b["arguments"])
                    path = _first_string(args)
                    if path is None or not path:
                        continue
                    holder = args
                    for k in path[:-1]:
                        holder = holder[k]
                    holder[path[-1]], before, after = _plant_text(holder[path[-1]], needle)
                    b["arguments"] = orjson.dumps(args).decode()
                else:
                    b["text"], before, after = _plant_text(b["text"], needle)
                seen.add((role, field))
                planted.append({"needle": needle, "seq": ev["seq"], "turn": turn, "type": t, "role": role, "field": field,
                                "before": before, "after": after})
        if t == "user/message" and "decoy" not in seen:
            seen.add(("decoy", "decoy"))
            data[f"zqx{tag}keyneedle"] = 1  # a JSON key, never text
            msg["content"].append({"type": "image", "data": f"iVBORw0KGgozqx{tag}imgneedle", "mediaType": "image/png"})
    return events, planted


def _write(path, head: bytes, events: list[dict]) -> None:
    lines = [head] + [orjson.dumps(e) for e in events]
    if path.name.endswith(".zstd"):
        cctx = zstandard.ZstdCompressor(level=3, write_checksum=True)
        path.write_bytes(b"".join(cctx.compress(line + b"\n") for line in lines))
    else:
        path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    gen = load_bench_script("generate")
    out = tmp_path_factory.mktemp("gen")
    manifest = gen.generate_many(out, count=30, seed=5)
    src = gen.many_paths(out, 30, 5)
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(src["plain"], root / "plain")
    shutil.copytree(src["zstd"], root / "zstd")
    picks = [next(s for s in manifest["sessions"] if s["version"] == v and not s["parent"]) for v in (0, 4)]
    needles: dict[str, list[dict]] = {}
    for i, s in enumerate(picks):
        plain = root / "plain" / s["path"]
        lines = plain.read_bytes().splitlines()
        events, planted = _plant([orjson.loads(x) for x in lines[1:]], f"v{s['version']}s{i}")
        _write(plain, lines[0], events)
        _write(root / "zstd" / (s["path"] + ".zstd"), lines[0], events)
        needles[s["id"]] = planted
    return root, needles


@pytest.mark.parametrize("encoding", ["plain", "zstd"])
def test_every_planted_needle_is_found_where_it_was_planted(planted, encoding):
    root, needles = planted
    files = store_sessions([str(root / encoding)])
    roles = {p["role"] for ps in needles.values() for p in ps}
    assert {"user", "assistant", "tool", "system"} <= roles
    assert {"text", "reasoning", "arguments", "output"} <= {p["field"] for ps in needles.values() for p in ps}
    for sid, ps in needles.items():
        for p in ps:
            q = Query(p["needle"], context=CTX, reasoning=True)
            hits = [(r.id, h) for r in search(files, q) for h in r.hits]
            assert len(hits) == 1, p
            got_id, h = hits[0]
            assert got_id == sid
            assert (h.seq, h.turn, h.type, h.role, h.field, h.match, h.before, h.after) == \
                (p["seq"], p["turn"], p["type"], p["role"], p["field"], p["needle"], p["before"], p["after"])


def test_no_hit_inside_json_keys_or_image_data(planted):
    root, needles = planted
    files = store_sessions([str(root / "plain")])
    for tag in ("keyneedle", "imgneedle", "zqxv0s0key", "iVBORw0KGgo"):
        assert not [h for r in search(files, Query(tag, reasoning=True)) for h in r.hits], tag
    # and the raw bytes do hold them: the search looked past them, not for lack of them
    assert any(b"keyneedle" in (root / "plain" / f).read_bytes() for f in [p for p in files])


def test_reasoning_only_with_the_flag_and_filters(planted):
    root, needles = planted
    files = store_sessions([str(root / "zstd")])
    for ps in needles.values():
        for p in ps:
            q = Query(p["needle"])
            n = sum(len(r.hits) for r in search(files, q))
            assert n == (0 if p["field"] == "reasoning" else 1)
            other = "user" if p["role"] != "user" else "assistant"
            assert sum(len(r.hits) for r in search(files, Query(p["needle"], reasoning=True, roles=frozenset({other})))) == 0
            assert sum(len(r.hits) for r in search(files, Query(p["needle"], reasoning=True, types=("nothing/*",)))) == 0
            assert sum(len(r.hits) for r in search(files, Query(p["needle"].upper(), reasoning=True, ignore_case=True))) == 1
            assert sum(len(r.hits) for r in search(files, Query(p["needle"].upper(), reasoning=True))) == 0


def test_regex_since_project_and_first_only(planted):
    root, needles = planted
    files = store_sessions([str(root / "plain")])
    total = sum(len(ps) for ps in needles.values())
    assert sum(len(r.hits) for r in search(files, Query(r"zqx\w+?\d+needle", regex=True, reasoning=True))) == total
    assert sum(len(r.hits) for r in search(files, Query("zqx", reasoning=True, since=1 << 60))) == 0
    assert sum(len(r.hits) for r in search(files, Query("zqx", reasoning=True, project="no-such-project"))) == 0
    listed = [r.id for r in search(files, Query("zqx", reasoning=True, first_only=True)) if r.hits]
    assert sorted(listed) == sorted(needles) and all(
        len(r.hits) == 1 for r in search(files, Query("zqx", reasoning=True, first_only=True)) if r.hits)


def test_a_bad_regex_is_a_usage_error_before_any_work():
    from dshlog.errors import UsageError

    with pytest.raises(UsageError, match="bad regular expression"):
        list(search(["/nonexistent"], Query("(", regex=True)))


def test_a_pool_gives_the_in_process_hits(planted):
    root, _ = planted
    files = store_sessions([str(root / "zstd"), str(root / "plain")])
    q = Query("the", ignore_case=True, reasoning=True)
    with ProcessPool(2) as pool:
        assert [(r.path, [h.as_dict() for h in r.hits]) for r in search(files, q, executor=pool)] == \
            [(r.path, [h.as_dict() for h in r.hits]) for r in search(files, q, executor=InProcess())]


def test_an_unreadable_session_is_an_error_of_its_own(tmp_path):
    p = tmp_path / "session.v4.jsonl.zstd"
    p.write_bytes(b"not zstd")
    r = search_session(str(p), Query("x"))
    assert r.error and r.exit_code == 4 and r.hits == []
