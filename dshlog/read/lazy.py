"""The lazy row reader: a v4 JSONL body's rows admitted in C, each payload decoded only where it is read.

The exact reader parses every line into dicts (:func:`~dshlog.protocol.jsjson.loads`)
and hands each to :class:`~dshlog.read.rows.RowDecoder`.  Most rows of a real log are
well-formed (``check.envelope.well_formed``), and for those the decoder only counts the
seq and passes the parsed object on: ``info``, ``stats``, ``tail`` and ``events --json``
then use a few envelope fields, a few payloads, or the line's own bytes.  A
:class:`RowGate` decides, for one line, that the exact reader would have done exactly
that, without building the payload:

* msgspec decodes the line into :class:`~dshlog.protocol.events.RowHead` (the envelope
  keys and no other, typed; ``data`` kept raw): it refuses anything else;
* the row is the well-formed one expected next: ``seq`` is the decoder's next seq,
  ``time`` a safe integer, ``ignorable`` absent or true, ``sourceEventSeqs`` without
  ranges (the exact reader expands those), and the decoder already knows the body is
  no projection (its first row is always read exactly);
* :func:`~dshlog.protocol.jsjson.plain_text` says the exact reader admits the line
  (UTF-8, numbers that overflow, nesting), and ``same_values`` that the values
  msgspec decoded are the ones it reads (64-bit integers, ``-0``); for most lines
  ``plain_values`` settles both in the C pass over the bytes;
* the type is not one whose payload the consumer reads whole (``exact``), and a
  payload it reads in part (``views``) decodes into its view.

Any "no" sends the line to the exact reader, which words every note and error; a
"yes" advances the decoder's seq as the exact reader would.  The gate is a fast
path: the exact mode of :mod:`dshlog.fastpaths` reads without it (the reader asks
there, ``SessionLog._gate``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import msgspec

from ..errors import Location
from ..protocol.events import RowHead
from ..protocol.jsjson import loads, plain_text, plain_values, same_values, struct_decoder
from ..protocol.values import MAX_SAFE_INTEGER
from .rows import RowDecoder

__all__ = ["LazyRecord", "RowGate"]

_decode_head = struct_decoder(RowHead)


class LazyRecord:
    """A stored event admitted by the gate and not parsed: :attr:`event` parses the line on first use.

    The line is exactly the event (``raw``, no newline), as in an
    :class:`~dshlog.read.session.EventRecord`; the parsed event is what the exact
    reader would have handed on, because the gate admitted it as well-formed.
    """

    __slots__ = ("_event", "loc", "raw")

    def __init__(self, raw: bytes, loc: Location) -> None:
        self.raw = raw
        self.loc = loc
        self._event: dict[str, Any] | None = None

    @property
    def event(self) -> dict[str, Any]:
        if self._event is None:
            self._event = loads(self.raw)
        return self._event


class RowGate:
    """The lazy reader's decision on one line of a body read by ``decoder`` (see the module docstring).

    ``exact``: types whose payload the consumer reads whole (the exact reader reads
    them); ``views``: types whose payload it reads in part, through one view Struct
    for all of them (each row is decoded once, its payload into that view; the
    event's ``data`` is the view's present keys as dicts).  Every other payload
    stays unread.
    """

    __slots__ = ("_decode", "_decoder", "_exact", "_viewed")

    def __init__(self, decoder: RowDecoder, *, exact: frozenset[str] = frozenset(),
                 views: Mapping[str, type[msgspec.Struct]] | None = None) -> None:
        self._decoder = decoder
        self._exact = exact
        classes = set((views or {}).values())
        if len(classes) > 1:
            raise ValueError("the lazy reader decodes a row in one pass: one view Struct for every viewed type")
        self._viewed = frozenset(views or ())
        self._decode: Callable[[bytes], RowHead | None] = _decode_head if not classes else _row_decoder(classes.pop())

    def head(self, raw: bytes) -> dict[str, Any] | None:
        """The row's ``type``, ``seq``, ``time`` (and its view's ``data``) as the consumer's event; ``None``: read it exactly."""
        dec = self._decoder
        if dec.projection is not False:
            return None
        h = self._decode(raw)
        if h is None or h.seq != dec.next_seq or h.ignorable is not True or h.type in self._exact \
                or not -MAX_SAFE_INTEGER <= h.time <= MAX_SAFE_INTEGER:
            return None
        refs = h.sourceEventSeqs
        if refs and b"[" in bytes(refs)[1:]:  # ranges: the exact reader expands them
            return None
        # one pass over the bytes settles most rows; else the two exact checks
        sure = plain_values(raw)
        if not sure and (not plain_text(raw) or (h.time == 0 and not same_values(0, raw))):  # a "-0" time is -0.0 to loads
            return None
        event: dict[str, Any] = {"type": h.type, "seq": h.seq, "time": h.time}
        if h.type in self._viewed:
            data = msgspec.to_builtins(h.data)
            if not sure and not same_values(data, raw):
                return None
            event["data"] = data
        dec.next_seq += 1
        return event


def _row_decoder(view: type[msgspec.Struct]) -> Callable[[bytes], RowHead | None]:
    """A decoder of a whole row with its payload typed as ``view`` (the envelope is :class:`RowHead`'s)."""
    row = msgspec.defstruct(f"RowWith{view.__name__}", [("data", view)], bases=(RowHead,), forbid_unknown_fields=True)
    return struct_decoder(cast("type[RowHead]", row))  # a subclass of RowHead: defstruct is typed as making a Struct
