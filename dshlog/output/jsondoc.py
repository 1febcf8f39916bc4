"""JSON for programs: the transcript export, and documents built from typed results.

The export has a versioned shape, ``{"shape":1,"session":{…},"turns":[…],
"summary":{…}}``, written one turn per line as the turns arrive (only the current
turn's items are held); items keep the field names of the transcript
dataclasses (``kind`` first).  Bump :data:`SHAPE` on any incompatible change.

JSON is written by :func:`dshlog.protocol.jsjson.dumps` and is exact: it is never
passed through the terminal sanitiser (JSON escapes control characters itself).
"""

from __future__ import annotations

from typing import Any

from ..model.transcript import Item, SessionHead, Totals, TurnEnd, TurnStart
from ..protocol.jsjson import dumps
from .renderer import Write
from .text import preview

__all__ = ["SHAPE", "JsonRenderer", "diff_document"]

SHAPE = 1

class JsonRenderer:
    """``{"shape":1,"session":…,"turns":[…],"summary":…}``, one turn per line."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._turn: dict[str, Any] | None = None
        self._count = 0

    def begin(self, head: SessionHead) -> None:
        self._write(b'{"shape":' + str(SHAPE).encode() + b',"session":' + dumps(head.facts) + b',"turns":[')

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


def _previewed(m: dict[str, Any]) -> dict[str, Any]:
    return {"index": m["index"], "id": m["id"], "role": m["role"], "preview": preview(m["message"])}


def diff_document(d: dict[str, Any], label_a: str, label_b: str) -> dict[str, Any]:
    """The body of ``diff --json``: the two labels, then the request diff with a preview in place of each message."""
    msgs = d["messages"]
    messages = {
        **msgs,
        "added": [_previewed(m) for m in msgs["added"]],
        "removed": [_previewed(m) for m in msgs["removed"]],
        "replaced": [{**r, "before": _previewed(r["before"]), "after": _previewed(r["after"])} for r in msgs["replaced"]],
    }
    return {"a": label_a, "b": label_b, **d, "messages": messages}

