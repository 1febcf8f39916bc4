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
    """A session that cannot be read at all is listed with its error; one dsh refuses gets its page, opening with the refusal."""
    import shutil

    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    unreadable, refused = sort_entries(list_sessions(copy), "time")[-2:]
    assert unreadable.path is not None and refused.path is not None
    unreadable.path.write_bytes(b"{garbage\n")
    lines = refused.path.read_bytes().split(b"\n")
    refused.path.write_bytes(b"\n".join([lines[0], b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":"x"}}', *lines[1:]]))
    result = export_store(copy, str(tmp_path / "site"))
    assert [sid for sid, _ in result.failed] == [unreadable.id]
    assert [(sid, rescue) for sid, _, rescue in result.refused] == [(refused.id, refused.id)]
    index = (tmp_path / "site" / INDEX).read_text("utf-8")
    assert len(result.pages) == 11 and index.count('<div class="cut">') == 1
    assert index.count('<div class="cut refused">dsh refuses to open this session: ') == 1
    page = (tmp_path / "site" / page_name(refused)).read_text("utf-8")
    assert '<header><div class="refusal" id="refusal" role="alert"><strong>dsh refuses to open this session:</strong> ' in page
    assert f"<code>dshlog rescue {refused.id}</code>" in page


def test_never_overwrites(root, tmp_path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / INDEX).write_text("mine")
    with pytest.raises(Refused):
        export_store(root, str(out))
    assert (out / INDEX).read_text() == "mine" and sorted(p.name for p in out.iterdir()) == [INDEX]


def test_cli_exports_a_root(root, tmp_path) -> None:
    from conftest import run_env

    out = tmp_path / "site"
    code, stdout, err = run_env("export", str(root), "--format", "html", "-o", str(out))
    assert code == 0, err
    assert stdout == b"" and f"written: {out / INDEX} (12 session pages)".encode() in err
    assert len(list(out.glob("*.html"))) == 13
    # a root needs html and a directory
    for args in (["-f", "md", "-o", str(tmp_path / "x")], ["-f", "html"]):
        code, _, err = run_env("export", str(root), *args)
        assert code == 2 and b"persistence root" in err


def test_cli_says_which_sessions_failed(root, tmp_path) -> None:
    import shutil

    from conftest import run_env

    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    victim, refused = sort_entries(list_sessions(copy), "time")[:2]
    assert victim.path is not None and refused.path is not None
    victim.path.write_bytes(b"{garbage\n")
    refused.path.write_bytes(refused.path.read_bytes().split(b"\n")[0] + b'\n{"type":"turn/start","seq":0,"time":1,"data":{"turn":"x"}}\n')
    code, _, err = run_env("export", str(copy), "-f", "html", "-o", str(tmp_path / "site"))
    assert code == 4 and f"{victim.id}: not exported:".encode() in err and b"1 of 12 sessions could not be exported" in err
    assert f"{refused.id}: exported as stored: corrupt: ".encode() in err
    assert f"; to bring it back: dshlog rescue {refused.id}".encode() in err
    assert (tmp_path / "site" / INDEX).is_file() and (tmp_path / "site" / page_name(refused)).is_file()


def test_cli_exports_the_sessions_dsh_refuses_with_their_refusal(root, tmp_path) -> None:
    """A session dsh refuses is exported as far as its rows can be read: the exit code says what dsh refuses (3 here)."""
    import shutil

    from conftest import run_env

    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    newer = next(e for e in sort_entries(list_sessions(copy), "time") if e.path is not None and e.path.name == "session.v4.jsonl")
    assert newer.path is not None
    lines = newer.path.read_bytes().split(b"\n")
    newer.path.write_bytes(b"\n".join([lines[0].replace(b'"version":4', b'"version":5'), *lines[1:]]))
    code, _, err = run_env("export", str(copy), "-f", "html", "-o", str(tmp_path / "site"))
    assert code == 3, err
    assert f"{newer.id}: exported as stored: unsupported: ".encode() in err and b"could not be exported" not in err
    page = (tmp_path / "site" / page_name(newer)).read_text("utf-8")
    assert "uses log format v5, but this harness reads only v4" in page
