"""PTC dispatch rules: nested tool calls of programmatic tool calling (FORMAT §5.2 item 7).

Each ``subCallId`` starts once and settles once, under one root, with the
coordinates it started with.  The starts must be remembered for the whole log,
so each is kept as one bytes value: digest of its root (16), digest of its
coordinates (16), settled flag (1).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from .common import nonempty_str
from .keys import value_digest
from .problems import Reporter, report_lifecycle

__all__ = ["Dispatches"]


class Dispatches:
    """Every PTC start of the log, compactly; :meth:`check` relates each dispatch event to them."""

    __slots__ = ("_starts",)

    def __init__(self) -> None:
        self._starts: dict[str, bytes] = {}  # subCallId -> root digest + coordinates digest + settled byte

    def check(self, etype: str, data: dict[str, Any], seq: int, report: Reporter) -> None:
        """Unique starts, each settled once with identical coordinates."""

        problem = partial(report_lifecycle, report, seq=seq)

        # nonempty strings once the loop below has passed
        sub: Any = data.get("subCallId")
        root: Any = data.get("rootCallId")
        parent: Any = data.get("parentCallId")
        for value, name in ((sub, "PTC subCallId"), (root, "PTC rootCallId"), (parent, "PTC parentCallId")):
            if not nonempty_str(value):
                problem(f"{name} requires a nonempty string")
                return
        root_digest = value_digest(root)
        existing = self._starts.get(sub)
        if existing is not None and existing[:16] != root_digest:
            problem("PTC dispatch changes its rootCallId")
        if parent != root and (self._starts.get(parent) or b"")[:16] != root_digest:
            problem("PTC parentCallId does not belong to rootCallId")
        digest = value_digest(root, parent, data.get("name"), data.get("arguments"))
        if etype == "tool/ptc-dispatch-start":
            if existing is not None:
                problem("PTC dispatch repeats subCallId")
                return
            self._starts[sub] = root_digest + digest + b"\x00"
            return
        if existing is None or existing[32]:
            problem("PTC dispatch has no unique start")
            return
        if existing[16:32] != digest:
            problem("PTC dispatch does not match its start")
        self._starts[sub] = existing[:32] + b"\x01"
