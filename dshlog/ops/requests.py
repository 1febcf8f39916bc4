"""``dshlog requests``: every request of a log, whether it extends its predecessor byte for byte, and why not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..check.problems import Problem
from ..errors import boundary
from ..model.requests import SharedSurface, iter_requests
from ..output.jsondoc import SHAPE
from ..read.container import Position
from .sessions import located, open_target
from ..read.source import Source, Target
from .stance import stance

if TYPE_CHECKING:
    from ..model.requests import RequestInfo

__all__ = ["RequestRow", "RequestSeries", "request_series"]


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request of the series: its settlement, size, prefix reuse and why it broke, tokens."""

    number: int
    settlement_seq: int
    settlement: str  # assistant/message or assistant/attempt
    turn: Any
    step: Any
    messages: int
    extends: bool | None  # None for the first request
    reason: str | None  # why it does not extend its predecessor
    changes: tuple[str, ...]  # everything that changed since the previous request
    header_seq: int | None
    interrupted: bool
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None

    @classmethod
    def of(cls, r: RequestInfo) -> RequestRow:
        return cls(r.number, r.seq, r.kind, r.turn, r.step, r.message_count, r.extends, r.reason, tuple(r.changes),
                   r.header_seq, r.interrupted, r.input_tokens, r.output_tokens, r.cache_read_tokens)

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "settlementSeq": self.settlement_seq,
            "settlement": self.settlement,
            "turn": self.turn,
            "step": self.step,
            "messages": self.messages,
            "extends": self.extends,
            "reason": self.reason,
            "changes": list(self.changes),
            "headerSeq": self.header_seq,
            "interrupted": self.interrupted,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
        }


@dataclass(frozen=True, slots=True)
class RequestSeries:
    """``dshlog requests``: every request of a log; ``series[n]`` is request ``n`` (1-based)."""

    requests: tuple[RequestRow, ...]
    notes: tuple[Problem, ...] = ()
    path: str = ""
    suppressed: Mapping[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.requests)

    def __getitem__(self, number: int) -> RequestRow:
        """Request ``number`` (1-based, as every command counts them)."""
        if not 1 <= number <= len(self.requests):
            raise IndexError(f"request {number} does not exist: the log holds {len(self.requests)}")
        return self.requests[number - 1]

    def as_dict(self) -> dict[str, Any]:
        return {"shape": SHAPE, "requests": [r.as_dict() for r in self.requests]}


@boundary
def request_series(target: Source | Target, *, allow_unknown: bool = False,
                   progress: Position | None = None, cache: str | None = None) -> RequestSeries:
    """``dshlog requests``: every request, whether it extends its predecessor byte for byte, and why not.

    dsh's decision on the whole log comes before the series is returned.  ``cache``: the
    directory of the verified cache, or none; with one, an old log's proven successor is
    read instead of migrating it again (:mod:`dshlog.read.successor`).
    """
    with open_target(target, strict=stance("requests").strict, progress=progress, cache=cache) as log:
        with located(log.path), log.v4(allow_unknown=allow_unknown) as view:
            session_id = log.session_id  # as known before the body is read (sharing the fold peeks at it)
            shared = SharedSurface(digests=True)
            shared.fold = view.share_surface(shared.share)  # the restore folds the surface once, for both
            rows = tuple(RequestRow.of(r) for r in iter_requests(view, session_id=session_id,
                                                                 strict_unknown=not allow_unknown, shared=shared))
        return RequestSeries(rows, tuple(log.notes), log.path, log.notes.suppressed())
