"""Retry rules: ``llm/retry`` chains and the attempts they schedule (FORMAT §5.2 item 7).

A chain is one (turn, step, provider, policyKey): its retries are numbered 1, 2, …
and share one ``retryId``, which no other chain uses; each ``llm/retry-started``
pairs exactly one scheduled attempt, at the coordinates it was scheduled for.
Retry ids and chains are facts of the whole log, so they are kept as 16-byte
digests (:func:`~dshlog.check.keys.fact_key`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..protocol.values import is_count
from .common import nonempty_str
from .keys import attempt_key, fact_key
from .problems import Reporter, report_lifecycle

__all__ = ["Retries"]


class Retries:
    """Retry chains of the log; :meth:`check` relates one retry event to them and to the open step."""

    __slots__ = ("_chains", "_ids", "_scheduled", "_started")

    def __init__(self) -> None:
        self._chains: dict[bytes, tuple[int, Any]] = {}  # fact_key(chain) -> (last retry, retryId)
        self._ids: set[Any] = set()
        self._scheduled: dict[bytes, bytes] = {}  # attempt_key(retryId, retry) -> fact_key(turn, step)
        self._started: set[bytes] = set()  # attempt_key of each started attempt

    def check(self, etype: str, data: dict[str, Any], seq: int, turn: int | None, step: int, provider: Any, report: Reporter) -> None:
        """One retry event; ``turn``/``step`` are the open turn and current step, ``provider`` the open route's."""

        problem = partial(report_lifecycle, report, seq=seq)

        rid, attempt = data.get("retryId"), data.get("retry")
        if not nonempty_str(rid):
            problem("retryId requires a nonempty string")
            return
        if not is_count(attempt):
            problem("retry must be a non-negative safe integer")
            return
        pair = attempt_key(rid, attempt)
        if etype == "llm/retry-started":
            scheduled = self._scheduled.get(pair)
            if scheduled is None:
                problem("llm/retry-started pairs no prior scheduled attempt")
                return
            if scheduled != fact_key(data.get("turn"), data.get("step")):
                problem("llm/retry-started changes scheduled coordinates")
            if pair in self._started:
                problem("llm/retry-started repeats one scheduled attempt")
            self._started.add(pair)
            return
        if turn is None or data.get("turn") != turn or data.get("step") != step:
            problem("llm/retry does not match the current turn and step")
        if data.get("provider") != provider:
            problem("llm/retry provider does not match the open request/header")
        chain = fact_key(data.get("turn"), data.get("step"), data.get("provider"), data.get("policyKey"))
        prior = self._chains.get(chain)
        if attempt != (1 if prior is None else prior[0] + 1):
            problem("llm/retry skips its policy attempt sequence")
        if (rid in self._ids) if prior is None else (prior[1] != rid):
            problem("llm/retry must keep one retryId per policy chain")
        self._chains[chain] = (attempt, rid)
        self._ids.add(rid)
        if pair not in self._scheduled:
            self._scheduled[pair] = fact_key(data.get("turn"), data.get("step"))
