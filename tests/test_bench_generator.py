"""The benchmark generator writes valid logs, and its zstd copies hold the same events.

Benchmarks are only meaningful on logs dsh itself would accept: a generator that
drifted into invalid shapes would time error paths instead of the real work.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import load_bench_script, run_env
from dshlog.ops.validate import validate_log
from dshlog.read.container import SourceInfo, iter_zstd_lines
from dshlog.read.session import open_log


@pytest.fixture(scope="module")
def gen():
    return load_bench_script("generate")


def _events(path: Path) -> list[dict]:
    with open_log(str(path), strict=True) as log:
        return list(r.event for r in log.stored())


def _check(paths: dict, version: int) -> None:
    report = validate_log(str(paths["plain"]))
    errors = [p for p in report.problems if p.severity == "error"]
    assert report.version == version
    assert not errors, errors[:5]
    assert report.events > 100
    plain, packed = _events(paths["plain"]), _events(paths["zstd"])
    assert plain == packed
    # the body is decoded by a forked worker where a second core exists; both paths agree
    with open(paths["zstd"], "rb") as fh:
        info = SourceInfo(str(paths["zstd"]), "jsonl.zstd")
        serial = [(r.raw, r.line, r.offset, r.frame) for r in iter_zstd_lines(fh, info, parallel=False)]
    with open(paths["zstd"], "rb") as fh:
        info2 = SourceInfo(str(paths["zstd"]), "jsonl.zstd")
        forked = [(r.raw, r.line, r.offset, r.frame) for r in iter_zstd_lines(fh, info2, parallel=True, min_bytes=0)]
    assert serial == forked and info.frames == info2.frames and info.decoded_bytes == info2.decoded_bytes
    with open_log(str(paths["zstd"])) as log:
        list(log.stored())
        assert log.info.frames > 10  # a header frame plus one frame per append batch


def test_v4_small_file_is_valid_and_zstd_matches(gen, tmp_path):
    paths = gen.generate(tmp_path, "600K", 4, seed=3, rare=5.0)
    _check(paths, 4)
    types = {e["type"] for e in _events(paths["plain"])}
    # the shapes the benchmarks are meant to exercise
    assert {"assistant/attempt", "llm/retry", "compaction/summary", "tool/result", "system/message"} <= types


def test_v0_small_file_is_valid_and_zstd_matches(gen, tmp_path):
    pytest.importorskip("dshlog.migrate.chain")
    paths = gen.generate(tmp_path, "600K", 0, seed=3, rare=5.0)
    _check(paths, 0)
    raw = paths["plain"].read_bytes()
    assert b'"type":"text-chunks"' in raw and b'"type":"assistant/chunk"' in raw and b'"plugin":"compact"' in raw


def test_generation_is_deterministic(gen, tmp_path):
    a = gen.generate(tmp_path / "a", "200K", 4, seed=5)
    b = gen.generate(tmp_path / "b", "200K", 4, seed=5)
    assert a["plain"].read_bytes() == b["plain"].read_bytes()


# ------------------------------------------------------------------------------ the new shapes


def _cli_valid(*paths: Path) -> list[str]:
    """``dshlog validate`` on the paths: exit 0 and every input clean (no error, no warning).

    The verdicts go to stdout, one per input, then a total line when there is more than one.
    """
    code, out, err = run_env("validate", *map(str, paths))
    lines = out.decode().splitlines()
    assert code == 0, (lines[-5:], err.decode()[-500:])
    verdicts = lines[:-1] if len(paths) > 1 else lines
    assert len(verdicts) == len(paths), lines[-5:]
    bad = [line for line in verdicts if ": ok (" not in line or " 0 errors, 0 warnings)" not in line]
    assert not bad, bad[:5]
    if len(paths) > 1:
        assert lines[-1].endswith(f"{len(paths)} ok"), lines[-1]
    return verdicts


def _cli_migrates(*dirs: Path) -> None:
    """``dshlog migrate --dry-run --no-children`` would publish every v0 session directory given."""
    code, out, err = run_env("migrate", "--dry-run", "--no-children", *map(str, dirs))
    assert code == 0, err.decode()[-500:]
    assert f"0 failed, {len(dirs)} would migrate" in err.decode(), err.decode()[-300:]
    assert sum(line.startswith("would publish ") and line.endswith(" from v0)") for line in out.decode().splitlines()) == len(dirs)


def _rows(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return [orjson.loads(line) for line in fh]


def _surface_nodes(path: Path, at: int | None = None) -> int:
    args = ["surface", "--json", str(path)] + (["--at", str(at)] if at is not None else [])
    code, out, err = run_env(*args)
    assert code == 0, err.decode()[-300:]
    return len(orjson.loads(out)["nodes"])


@pytest.mark.parametrize("version", [4, 0])
def test_no_compaction_shape_is_valid_and_its_surface_only_grows(gen, tmp_path, version):
    shape = gen.Shape(compaction=False)
    paths = gen.generate(tmp_path, "700K", version, seed=3, rare=5.0, shape=shape)
    assert f"-nocompact-v{version}-" in paths["plain"].parent.name
    _cli_valid(paths["plain"], paths["zstd"])
    if version == 0:
        _cli_migrates(paths["plain"].parent)
    types = {r.get("type") for r in _rows(paths["plain"])}
    assert not {t for t in types if t and t.startswith("compaction/")}, types
    # the same seed and rare-event rate in the default shape does compact: the flag is what removed them
    default = gen.generate(tmp_path, "700K", version, seed=3, rare=5.0)
    assert "compaction/summary" in {r.get("type") for r in _rows(default["plain"])}
    # every surface operation is an append, and the model's view grows from the first message to the last
    ops = [r["surfaceOp"] for r in _rows(paths["plain"]) if "surfaceOp" in r]
    assert ops and all(op == "append" for op in ops)
    if version == 4:
        rows = _rows(paths["plain"])[1:]
        last = rows[-1]["seq"]
        counts = [_surface_nodes(paths["plain"], at) for at in (last // 4, last // 2, 3 * last // 4)]
        counts.append(_surface_nodes(paths["plain"]))
        assert counts == sorted(set(counts)), counts
        assert counts[-1] == len(ops)  # nothing ever left the view
        assert _surface_nodes(default["plain"]) < counts[-1] / 2


def _tool_texts(path: Path, version: int) -> list[int]:
    """Sizes in bytes of every tool result's text, in log order."""
    sizes = []
    for r in _rows(path):
        if r.get("type") != "tool/result":
            continue
        content = r["data"]["message"]["content"]
        if version == 0:  # a user-role wrapper around the tool-result block
            content = content[0]["content"]
        sizes.append(len(content[0]["text"].encode()))
    return sizes


@pytest.mark.parametrize("version", [4, 0])
def test_huge_tool_results_are_as_large_as_asked(gen, tmp_path, version):
    huge = (gen.parse_size("300K"), gen.parse_size("1M"), gen.parse_size("700K"))
    shape = gen.Shape(huge=huge)
    paths = gen.generate(tmp_path, "3M", version, seed=4, shape=shape)
    assert shape.label == "huge300K-1M-700K" and shape.label.lower() in paths["plain"].parent.name
    _cli_valid(paths["plain"], paths["zstd"])
    if version == 0:
        _cli_migrates(paths["plain"].parent)
    sizes = _tool_texts(paths["plain"], version)
    assert [s for s in sizes if s >= 200_000] == list(huge)  # each exactly as asked, in order
    assert max(s for s in sizes if s not in huge) < 50_000  # the rest are ordinary outputs
    # placed at even shares of the conversation, and the file ends near the asked size
    assert abs(paths["plain"].stat().st_size - gen.parse_size("3M")) < gen.parse_size("600K")
    assert _events(paths["plain"]) == _events(paths["zstd"])


def test_new_shapes_are_deterministic(gen, tmp_path):
    for shape in (gen.Shape(compaction=False), gen.Shape(huge=(150_000,))):
        a = gen.generate(tmp_path / "a", "400K", 0, seed=9, shape=shape)
        b = gen.generate(tmp_path / "b", "400K", 0, seed=9, shape=shape)
        for kind in ("plain", "zstd"):
            assert a[kind].read_bytes() == b[kind].read_bytes()


def test_default_shape_paths_are_unchanged(gen, tmp_path):
    """Inputs generated before shapes existed are found (and not regenerated) at the same paths."""
    p = gen.session_paths(tmp_path, "120M", 4, 7)
    assert p["plain"] == tmp_path / "120M" / "v4" / "plain" / "--home-ann-bench--" / "bench-120m-v4-s7" / "session.v4.jsonl"
    assert gen.session_paths(tmp_path, "120M", 4, 7, gen.DEFAULT_SHAPE) == p


def test_project_key_is_dshs(gen):
    from dshlog.protocol.layout import project_key

    for cwd in [gen.CWD, *(c for c, _ in gen.MANY_PROJECTS), "C:\\Users\\x", "//a//b/", "/😀 x~y"]:
        assert gen.project_key(cwd) == project_key(cwd), cwd


@pytest.fixture(scope="module")
def many(gen, tmp_path_factory):
    out = tmp_path_factory.mktemp("many")
    manifest = gen.generate_many(out, count=45, seed=3)
    return out, gen.many_paths(out, 45, 3), manifest


def test_many_small_has_the_count_and_layout(gen, many):
    from dshlog.protocol.layout import encode_segment

    _, paths, manifest = many
    sessions = manifest["sessions"]
    assert len(sessions) == 45 == manifest["count"]
    assert len({s["id"] for s in sessions}) == 45
    for kind, suffix in (("plain", ""), ("zstd", ".zstd")):
        root = paths[kind]
        expected = set()
        for s in sessions:
            name = ("session.v4.jsonl" if s["version"] == 4 else "session.jsonl") + suffix
            f = root / gen.project_key(s["cwd"]) / encode_segment(s["id"]) / name
            assert f.is_file(), f
            expected.add(f)
            header = orjson.loads(f.read_bytes().split(b"\n", 1)[0]) if not suffix else None
            if header is not None:
                assert (header["id"], header["version"], header["cwd"], header["createdAt"]) == (s["id"], s["version"], s["cwd"], s["createdAt"])
        assert {p for p in root.rglob("*") if p.is_file()} == expected  # nothing else in the root
    assert {s["version"] for s in sessions} == {0, 4}
    assert len({s["cwd"] for s in sessions}) >= 4
    days = {s["createdAt"] // 86_400_000 for s in sessions}
    assert len(days) >= 7 and max(days) - min(days) >= 14  # spread over a few weeks
    assert {"fallback", "provider", "none"} <= {s["title"] for s in sessions if s["parent"] is None}
    assert any(s["marker"] for s in sessions)


def test_many_small_children_name_their_parents(gen, many):
    _, paths, manifest = many
    by_id = {s["id"]: s for s in manifest["sessions"]}
    children = [s for s in manifest["sessions"] if s["parent"]]
    assert children
    for c in children:
        parent = by_id[c["parent"]]
        assert c["id"] in parent["children"] and c["cwd"] == parent["cwd"]
        rows = _rows(paths["plain"] / c["path"])
        assert rows[0]["parentSession"] == parent["id"] and rows[0]["origin"] == "subagent" and rows[0]["delegationDepth"] == 1
        (desc,) = [r["data"] for r in rows if r.get("type") == "subagent/descriptor"]
        if parent["version"] == 4:  # the parent's catalog entry matches the child's header and descriptor
            entries = [r["data"] for r in _rows(paths["plain"] / parent["path"]) if r.get("type") == "subagent/catalog"]
            (entry,) = [e for e in entries if e["childId"] == c["id"]]
            assert entry["childCreatedAt"] == c["createdAt"] and entry["label"] == desc["label"] and entry["mode"] == desc["mode"]
    for s in manifest["sessions"]:
        if s["version"] == 4 and s["parent"] is None:
            entries = [r["data"]["childId"] for r in _rows(paths["plain"] / s["path"]) if r.get("type") == "subagent/catalog"]
            assert entries == s["children"]  # no catalog entry names a session that is not in the root


def test_many_small_is_valid_through_the_cli(gen, many):
    _, paths, manifest = many
    for kind in ("plain", "zstd"):
        dirs = sorted(d for d in paths[kind].glob("*/*") if d.is_dir())
        assert len(dirs) == 45
        _cli_valid(*dirs)
    v0 = [(paths["plain"] / s["path"]).parent for s in manifest["sessions"] if s["version"] == 0]
    _cli_migrates(*v0)


def test_many_small_migrates_as_a_root_and_greps(gen, many, tmp_path):
    """A real migration of the root finds each v0 parent's children, and `ls --grep` finds the marked sessions."""
    import shutil

    _, paths, manifest = many
    root = tmp_path / "root"
    shutil.copytree(paths["plain"], root)
    code, out, err = run_env("migrate", "-R", str(root))
    n0 = sum(s["version"] == 0 for s in manifest["sessions"])
    assert code == 0 and f"{n0} migrated, {45 - n0} skipped (already v4), 0 failed" in err.decode(), (out.decode()[-300:], err.decode()[-300:])
    for s in manifest["sessions"]:
        if s["version"] == 0 and s["parent"] is None:
            v4 = root / s["path"].replace("session.jsonl", "session.v4.jsonl")
            assert [r["data"]["childId"] for r in _rows(v4) if r.get("type") == "subagent/catalog"] == s["children"]
    code, out, _ = run_env("ls", "--json", "--grep", manifest["marker"], str(paths["zstd"]))
    assert code == 0
    found = {orjson.loads(line)["id"] for line in out.splitlines()}
    assert found == {s["id"] for s in manifest["sessions"] if s["marker"]}


def test_many_small_is_deterministic(gen, many, tmp_path):
    out, paths, manifest = many
    again = gen.generate_many(tmp_path, count=45, seed=3)
    assert again == manifest
    other = gen.many_paths(tmp_path, 45, 3)
    for f in paths["base"].rglob("*"):
        if f.is_file():
            assert (other["base"] / f.relative_to(paths["base"])).read_bytes() == f.read_bytes(), f
