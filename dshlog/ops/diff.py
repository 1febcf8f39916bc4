"""``dshlog diff``: two requests, of one log or of two, rebuilt as dsh sent them, and what changed between them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model.diff import diff_requests, requests_at
from ..output.jsondoc import SHAPE, diff_document
from .outcome import ReadNotes
from .sessions import located, open_target
from ..read.source import Source, Target

__all__ = ["RequestDiff", "request_diff"]


@dataclass(frozen=True, slots=True)
class RequestDiff:
    """``dshlog diff``: what changed from request ``a`` to request ``b`` (of one log or two).

    ``changes`` is :func:`dshlog.model.diff.diff_requests`'s document: config,
    tools, messages added, removed or replaced, where the byte prefix broke.
    """

    a: Mapping[str, Any]
    b: Mapping[str, Any]
    changes: Mapping[str, Any]

    def as_dict(self, label_a: str = "a", label_b: str = "b") -> dict[str, Any]:
        """``diff --json``, the two requests named by their labels."""
        return {"shape": SHAPE, **diff_document(dict(self.changes), label_a, label_b)}


def _requests(target: Source | Target, numbers: list[int], *,
              read: Callable[[ReadNotes], None] | None) -> dict[int, dict[str, Any]]:
    with open_target(target) as log:
        with located(log.path), log.v4() as view:
            built = requests_at(view, numbers, session_id=log.session_id)
        if read is not None:
            read(ReadNotes.of(log))
        return built


def request_diff(a: Source | Target, number_a: int, number_b: int, *, b: Source | Target | None = None,
                 read: Callable[[ReadNotes], None] | None = None) -> RequestDiff:
    """Request ``number_a`` of ``a`` against request ``number_b`` of ``b`` (of ``a`` itself when ``b`` is ``None``).

    ``a`` and ``b``: paths, or :class:`~dshlog.read.source.Source` values (each with its own
    stream when it is ``-``).  One log is read once for both requests; the read stops after
    the later one.  ``read`` hears each log's notes as soon as that log is read (before the
    next is opened, so a failure of the second does not hide what the first said).
    """
    if b is None:
        built = _requests(a, [number_a, number_b], read=read)
        req_a, req_b = built[number_a], built[number_b]
    else:
        req_a = _requests(a, [number_a], read=read)[number_a]
        req_b = _requests(b, [number_b], read=read)[number_b]
    return RequestDiff(req_a, req_b, diff_requests(req_a, req_b))
