"""The JSON transcript export: ``{"shape":1,"session":{…},"turns":[…],"summary":{…}}``.

A log dsh refuses has ``"refusal":{"kind","reason","rescue"}`` right after ``shape``
(dsh's words, and the ``dshlog rescue`` command line, ``null`` for a session dsh refuses for where
it sits, which rescue does not change); the key is absent otherwise.

Written one turn per line as the turns arrive (only the current turn's items are
held); items keep the field names of the transcript dataclasses (``kind`` first).
The shape number is :data:`~dshlog.output.jsondoc.SHAPE`.
"""

from __future__ import annotations

from typing import Any

from ..model.transcript import Item, SessionHead, Totals, TurnEnd, TurnStart
from ..protocol.jsjson import dumps
from . import labels as L
from .jsondoc import SHAPE
from .renderer import Write

__all__ = ["JsonRenderer"]


class JsonRenderer:
    """``{"shape":1,"session":…,"turns":[…],"summary":…}``, one turn per line."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._turn: dict[str, Any] | None = None
        self._count = 0

    def begin(self, head: SessionHead) -> None:
        self._write(b'{"shape":' + str(SHAPE).encode())
        if head.refusal is not None:  # first: what follows is not a session dsh opens (absent when dsh opens it)
            r = head.refusal
            refusal = {"kind": r.kind, "reason": r.reason, "rescue": L.rescue_command(r.rescue) if r.rescue is not None else None}
            self._write(b',"refusal":' + dumps(refusal))
        self._write(b',"session":' + dumps(head.facts) + b',"turns":[')

    def _flush(self) -> None:
        if self._turn is not None:
            self._write((b"," if self._count else b"") + b"\n" + dumps(self._turn))
            self._count += 1
            self._turn = None

    def item(self, item: Item) -> None:
        if isinstance(item, TurnStart):
            self._flush()
            self._turn = {"turn": item.turn, "seq": item.seq, "time": item.time, "end": None, "items": []}
            return
        if self._turn is None:  # events outside any turn (between turns, before the first)
            self._turn = {"turn": None, "seq": item.seq, "time": None, "end": None, "items": []}
        if isinstance(item, TurnEnd):
            self._turn["end"] = {"seq": item.seq, "outcome": item.outcome, "label": item.label}
            self._flush()
            return
        self._turn["items"].append(item.as_dict())

    def end(self, totals: Totals) -> None:
        self._flush()
        self._write(b"\n],\"summary\":" + dumps(totals.as_dict()) + b"}\n")
