"""``export ROOT --format html -o DIR``: a page per session and an index for the store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import load_bench_script

from dshlog.errors import Refused
from dshlog.ops.export import INDEX, export_store, page_name
from dshlog.read.store import list_sessions, sort_entries


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("store")
    load_bench_script("generate").generate_many(out, count=12, seed=7, zstd=False)
    return next(out.glob("MANY-*")) / "plain"


def test_one_page_per_session_and_an_index(root, tmp_path) -> None:
    out = tmp_path / "site"
    result = export_store(root, str(out))
    entries = list_sessions(root)
    assert result.failed == [] and len(result.pages) == len(entries) == 12
    assert sorted(p.name for p in out.iterdir()) == sorted([INDEX] + [page_name(e) for e in entries])
    index = (out / INDEX).read_text("utf-8")
    hrefs = re.findall(r'<td>(?:↳ )?<a href="([^"]+)">', index)
    assert len(hrefs) == 12 and all((out / h).is_file() for h in hrefs)
    # most recent first among the top-level sessions; each child right below its parent
    by_page = {page_name(e): e for e in entries}
    top = [by_page[h] for h in hrefs if by_page[h].parent is None]
    assert top == [e for e in sort_entries(entries, "time") if e.parent is None]
    children = [e for e in entries if e.parent is not None]
    assert children, "the generated root has subagents"
    for child in children:
        parent = next(e for e in entries if e.id == child.parent)
        i = hrefs.index(page_name(child))
        assert page_name(parent) in hrefs[:i]
        assert re.search(rf'<tr class="child"><td>↳ <a href="{re.escape(page_name(child))}">', index)
        child_page = (out / page_name(child)).read_text("utf-8")
        assert f'<a href="{page_name(parent)}">{parent.id}</a>' in child_page  # up to the parent
        parent_page = (out / page_name(parent)).read_text("utf-8")
        assert f'<a href="{page_name(child)}">{child.id}</a>' in parent_page  # down to the child
        assert '<a href="index.html">' in child_page


def test_a_damaged_session_is_listed_not_fatal(root, tmp_path) -> None:
    import shutil

    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    victim = sort_entries(list_sessions(copy), "time")[-1]
    assert victim.path is not None
    lines = victim.path.read_bytes().split(b"\n")
    victim.path.write_bytes(b"\n".join([lines[0], b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":"x"}}', *lines[1:]]))
    result = export_store(copy, str(tmp_path / "site"))
    assert [sid for sid, _ in result.failed] == [victim.id]
    index = (tmp_path / "site" / INDEX).read_text("utf-8")
    assert len(result.pages) == 11 and index.count('<div class="cut">') == 1


def test_never_overwrites(root, tmp_path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / INDEX).write_text("mine")
    with pytest.raises(Refused):
        export_store(root, str(out))
    assert (out / INDEX).read_text() == "mine" and sorted(p.name for p in out.iterdir()) == [INDEX]


def test_cli_exports_a_root(root, tmp_path, capsysbinary) -> None:
    from conftest import run_cli

    out = tmp_path / "site"
    code, stdout, err = run_cli(capsysbinary, "export", str(root), "--format", "html", "-o", str(out))
    assert code == 0, err
    assert stdout == b"" and f"written: {out / INDEX} (12 session pages)".encode() in err
    assert len(list(out.glob("*.html"))) == 13
    # a root needs html and a directory
    for args in (["-f", "md", "-o", str(tmp_path / "x")], ["-f", "html"]):
        code, _, err = run_cli(capsysbinary, "export", str(root), *args)
        assert code == 2 and b"persistence root" in err


def test_cli_says_which_sessions_failed(root, tmp_path, capsysbinary) -> None:
    import shutil

    from conftest import run_cli

    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    victim = sort_entries(list_sessions(copy), "time")[0]
    assert victim.path is not None
    victim.path.write_bytes(victim.path.read_bytes().split(b"\n")[0] + b'\n{"type":"turn/start","seq":0,"time":1,"data":{"turn":"x"}}\n')
    code, _, err = run_cli(capsysbinary, "export", str(copy), "-f", "html", "-o", str(tmp_path / "site"))
    assert code == 4 and f"{victim.id}: not exported:".encode() in err and b"1 of 12 sessions could not be exported" in err
    assert (tmp_path / "site" / INDEX).is_file()
