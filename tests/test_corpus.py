"""Every real session file of the shared corpus opens, and every reading command runs on it.

The corpus is walked, so files added to it later are picked up automatically.
"""

from __future__ import annotations

import pytest

from conftest import CORPUS, corpus_files, corpus_ids, requires_corpus, run_env
from dshlog.errors import DshlogError, ExitCode
from dshlog.read.session import open_log

FILES = corpus_files()
IDS = corpus_ids()


@requires_corpus
def test_corpus_is_present_and_large():
    assert len(FILES) >= 300, f"expected the whole corpus under {CORPUS}"


@requires_corpus
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_opens_leniently(path):
    with open_log(path, strict=False) as s:
        n = sum(1 for _ in s.stored())
    assert n >= 0
    assert s.version is not None


@requires_corpus
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reading_commands_run_without_traceback(path):
    for cmd in (["events"], ["events", "--json"], ["info"], ["info", "--json"], ["validate"]):
        code, out, err = run_env(*cmd, str(path))
        assert b"Traceback" not in err and b"internal error" not in err, (cmd, err.decode(errors="replace"))
        assert code in (ExitCode.OK, ExitCode.UNSUPPORTED, ExitCode.CORRUPT), (cmd, code, err.decode(errors="replace"))
        if cmd[0] == "events" and code == 0:
            with open_log(path, strict=False) as s:
                n = sum(1 for _ in s.stored())
            assert out.count(b"\n") == n, cmd


@requires_corpus
@pytest.mark.parametrize("path", [p for p in FILES if p.suffix == ".jsonl"], ids=[i for p, i in zip(FILES, IDS) if p.suffix == ".jsonl"])
def test_zstd_copy_yields_same_events(path, tmp_path):
    """A multi-frame zstd copy (one frame per line, as dsh appends) reads exactly like the plain file."""
    import zstandard

    cctx = zstandard.ZstdCompressor(write_checksum=True)
    lines = path.read_bytes().splitlines(keepends=True)
    z = tmp_path / (path.name + ".zstd")
    z.write_bytes(b"".join(cctx.compress(line) for line in lines))

    def read(p):
        try:
            with open_log(p, strict=False) as s:
                return [(r.event, r.raw) for r in s.stored()], None
        except DshlogError as exc:
            return None, exc.message

    assert read(z) == read(path)
