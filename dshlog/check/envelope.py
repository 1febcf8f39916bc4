"""The event envelope rule (FORMAT §3.1, SEMANTICS §1.1), once for the reader and ``validate``.

Exactly the envelope keys; a string ``type``; a count ``seq``; a safe-integer
``time``; ``data`` present; ``ignorable`` absent or exactly ``true``.  The row
decoder applies it to every stored row (strict: the first problem refuses the
log), ``validate`` to every event (all problems, plus density).  Texts extend
dsh's ``seed event at index <i> has an invalid event envelope`` with the detail.

:func:`well_formed` is the proof for the common case: one condition that holds
exactly when :func:`check_envelope` would report nothing for the event expected
at ``seq``.  Both hot loops (the reader, the validator) try it first.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..protocol.values import MAX_SAFE_INTEGER, TypedCount, TypedSafeInt, is_count, is_safe_integer
from ..protocol.vocabulary import ENVELOPE_KEYS
from .problems import Problem, Reporter

__all__ = ["check_envelope", "invalid_envelope", "typed_envelope", "well_formed"]

#: The envelope fields :func:`well_formed` judges, as msgspec shapes (``type`` is the tag, ``data`` the caller's)
_ENVELOPE_SHAPES: dict[str, tuple[Any, ...]] = {
    "seq": (TypedCount,),  # equal to the expected seq: the caller compares
    "time": (TypedSafeInt,),
    "ignorable": (Literal[True] | msgspec.UnsetType, msgspec.UNSET),
}


def invalid_envelope(index: int) -> str:
    """dsh's refusal of an event that is not an envelope at all (not an object)."""
    return f"seed event at index {index} has an invalid event envelope"


def well_formed(event: dict[str, Any], seq: int) -> bool:
    """Whether ``event`` certainly passes :func:`check_envelope` as the event expected at ``seq``.

    Integer ``seq``/``time`` only: a JS-legal float such as ``1.0`` is left to the
    exact checks, which accept it.
    """
    value = event.get("seq")
    time = event.get("time")
    return (
        value == seq
        and type(value) is int
        and type(time) is int
        and -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER
        and "data" in event
        and type(event.get("type")) is str
        and ENVELOPE_KEYS.issuperset(event)
        and event.get("ignorable", True) is True
    )


def typed_envelope(etype: str, data: Any) -> type[msgspec.Struct]:
    """The msgspec shape of a well-formed ``etype`` event whose ``data`` has the shape ``data``.

    Exactly the envelope keys (``type`` as the tag); what :func:`well_formed` checks
    of each; the keys it does not judge may hold anything or be absent.  An event it
    accepts passes :func:`well_formed` once its ``seq`` is the expected one.
    """
    fields: list[tuple[Any, ...]] = [("data", data)]
    for key in sorted(ENVELOPE_KEYS - {"type", "data"}):
        fields.append((key, *_ENVELOPE_SHAPES.get(key, (Any | msgspec.UnsetType, msgspec.UNSET))))
    return msgspec.defstruct(f"{etype}-event", fields, tag_field="type", tag=etype, forbid_unknown_fields=True, gc=False, kw_only=True)


def check_envelope(event: dict[str, Any], index: int, report: Reporter, *, dense: bool = True, loc: Any = None) -> bool:
    """Report every envelope defect of the event at position ``index``.

    ``dense`` also requires ``seq == index`` (code ``seq-gap``, the v4 artifact
    rule); the row decoder judges gaps itself, against the rows it has read.
    Returns whether ``type`` and ``data`` are usable (the fold may see the event).
    """
    head = invalid_envelope(index)
    for key in event:
        if key not in ENVELOPE_KEYS:
            report.report(
                Problem("envelope", f"{head}: unexpected key {key!r} (dsh refuses unexpected envelope keys)", seq=index, loc=loc)
            )
    usable = True
    if not isinstance(event.get("type"), str):
        report.report(Problem("envelope", f"{head}: type must be a string", seq=index, loc=loc))
        usable = False
    seq = event.get("seq")
    if type(seq) is float and seq == 0:
        seq = 0  # ``-0``: dsh's decoder and restore compare seqs with ``===``, and ``-0 === 0``
    if "seq" not in event or not is_count(seq):
        report.report(Problem("envelope", f"{head}: seq must be a non-negative safe integer", seq=index, loc=loc))
    elif dense and seq != index:
        report.report(Problem("seq-gap", f"format v4 event {index} is not dense (seq {seq}, expected {index})", seq=index, loc=loc))
    if "time" not in event or not is_safe_integer(event.get("time")):
        report.report(Problem("envelope", f"{head}: time must be a safe integer", seq=index, loc=loc))
    if "data" not in event:
        report.report(Problem("envelope", f"{head}: data is missing", seq=index, loc=loc))
        usable = False
    if "ignorable" in event and event["ignorable"] is not True:
        report.report(Problem("envelope", f"{head}: ignorable must be true when present", seq=index, loc=loc))
    return usable
