"""Small value tests the rule families share (the fold imports this: keep it light)."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeGuard

import msgspec

__all__ = ["DECIMAL", "NOT_PROVEN", "NonEmptyStr", "is_record", "nonempty_str", "seq_in", "typed_converter", "typed_one_of", "typed_none_of"]

#: A canonical decimal counter as dsh writes it in closer ids (JS ``/^(0|[1-9]\d*)$/``).
#: Use ``fullmatch``: a Python ``$`` would also match before a trailing newline.
DECIMAL = re.compile(r"0|[1-9][0-9]*")


def is_record(value: Any) -> TypeGuard[dict[str, Any]]:
    """A JSON object (dsh's ``isRecord``)."""
    return isinstance(value, dict)


def nonempty_str(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) > 0


def seq_in(seqs: array[int], seq: Any) -> bool:
    """Membership in an ascending ``array('q')`` of seqs (``seq`` may be an integral float)."""
    i = bisect_left(seqs, seq)
    return i < len(seqs) and seqs[i] == seq


# --------------------------------------------------------------------------- typed-decoder pieces

#: What a typed conversion raises when it proves nothing: the value does not fit the shape, or
#: an object key holds a lone surrogate (which ``jsjson`` keeps, as ``JSON.parse`` does, and
#: msgspec cannot encode to the UTF-8 it matches field names by).  Either way the exact rules run.
NOT_PROVEN = (msgspec.ValidationError, UnicodeEncodeError)

#: A string :func:`nonempty_str` accepts, as a msgspec type.
NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]


def _alternatives(values: Iterable[str]) -> str:
    return "(?:" + "|".join(map(re.escape, sorted(values))) + ")"


def typed_one_of(values: Iterable[str]) -> Any:
    """A string equal to one of ``values`` (the set's owner stays the vocabulary), as a msgspec type."""
    return Annotated[str, msgspec.Meta(pattern="^" + _alternatives(values) + r"\Z")]


def typed_none_of(values: Iterable[str]) -> Any:
    """A string equal to none of ``values``, as a msgspec type."""
    return Annotated[str, msgspec.Meta(pattern="^(?!" + _alternatives(values) + r"\Z)")]


def typed_converter(shape: Any) -> Callable[[Any], Any]:
    """``msgspec.convert(value, shape)`` (raising ``msgspec.ValidationError``), fast for any shape.

    msgspec caches a type's conversion plan on ``Struct`` types only: a union or a
    ``list[...]`` passed to ``convert`` is planned again on every call (7x slower for
    the union of the typed events).  So the shape is one field of a ``Struct``.
    """
    holder = msgspec.defstruct("typed", [("value", shape)], gc=False)
    convert = msgspec.convert

    def converted(value: Any) -> Any:
        return convert({"value": value}, holder).value  # type: ignore[attr-defined]  # the field defstruct made

    return converted
