"""``requests`` and ``rebuild`` fold the surface once: they follow the restore's fold (``V4View.share_surface``).

The answers themselves are held by the other request tests, the differential suite and
the corpus; these hold the single pass (every event folded once, whatever the command
reads of the log) and the refusal of a log whose restore refuses an event mid-way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES
from dshlog.check.surface import SurfaceFold
from dshlog.errors import CorruptLog
from dshlog.ops.rebuild import rebuild_request, rebuild_text
from dshlog.ops.requests import request_series

LOG = FIXTURES / "v4" / "loop" / "session.v4.jsonl"


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The seqs every surface fold of the process is given, in order."""
    seen: list[int] = []
    apply = SurfaceFold.apply

    def counted(self: SurfaceFold, event: dict[str, Any]) -> None:
        seen.append(event.get("seq", -1))
        apply(self, event)

    monkeypatch.setattr(SurfaceFold, "apply", counted)
    yield seen


def _events(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines()[1:] if line.strip())


def test_requests_fold_each_event_once(folds: list[int]) -> None:
    series = request_series(LOG)
    assert len(series) >= 2
    assert sorted(folds) == list(range(_events(LOG)))


@pytest.mark.parametrize("number", [1, 2])
def test_rebuild_folds_each_event_once(folds: list[int], number: int) -> None:
    rebuild_request(LOG, number)
    assert sorted(folds) == list(range(_events(LOG)))
    folds.clear()
    with rebuild_text(LOG, number) as text:
        assert b"".join(text.pieces())
    assert sorted(folds) == list(range(_events(LOG)))


def test_an_event_the_restore_refuses_ends_in_dsh_refusal(tmp_path: Path) -> None:
    """The shared fold skips an event it refuses; the consumer is given nothing after it, and dsh's refusal is raised.

    The refusal is the one a consumer's own fold stopping at that event gave (the restore's, with dsh's words).
    """
    lines = LOG.read_bytes().splitlines(keepends=True)
    at = next(i for i in range(len(lines) // 2, len(lines)) if b'"surfaceOp":"append"' in lines[i])
    lines[at] = lines[at].replace(b'"surfaceOp":"append"', b'"surfaceOp":{"op":"replace","startSeq":900,"endSeq":900}')
    broken = tmp_path / "session.v4.jsonl"
    broken.write_bytes(b"".join(lines))
    refusal = "startSeq and endSeq must reference earlier events"
    for number in (1, 10**6):  # a request before the refused event, and one past the end
        with pytest.raises(CorruptLog, match=refusal):
            rebuild_request(broken, number)
        with pytest.raises(CorruptLog, match=refusal):
            rebuild_text(broken, number)
    with pytest.raises(CorruptLog, match=refusal):
        request_series(broken)
