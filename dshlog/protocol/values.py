"""What a JSON value means to dsh: safe integers, counts, seqs, and snapshot placeholders.

dsh is JavaScript: every JSON number is an IEEE double, so ``1`` and ``1.0`` are the
same value, and "is this a seq?" is ``Number.isSafeInteger`` plus dsh's own refusal of
``-0`` (``sessionFormatCount``).  Python keeps ``1`` and ``1.0`` apart, and every place
that asked the question used to answer it its own way.  These predicates are the one
answer; everything that checks a number imports them.

Placeholders are the other value rule that used to be spelt four ways: dsh's test
snapshots replace real values with tokens such as ``{{cwd}}`` or ``{{session:2}}``.
A token is ``{{``, a letter, then letters, digits, ``_``, ``:`` or ``-``, then ``}}``
(every token the corpus holds); ``{{1}}`` is not one.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Final, TypeGuard

import msgspec

__all__ = [
    "MAX_SAFE_INTEGER",
    "PLACEHOLDER_TOKEN",
    "TypedCount",
    "TypedPositive",
    "TypedSafeInt",
    "has_placeholder",
    "is_count",
    "is_placeholder",
    "is_safe_integer",
    "placeholder_bytes_search",
    "safe_int",
]

#: ``Number.MAX_SAFE_INTEGER``.
MAX_SAFE_INTEGER: Final[int] = 2**53 - 1

# The same rules as msgspec constraints, for the typed decoders of check/ (a fast proof
# that a JSON value is clean).  Narrower than the predicates on purpose: only a true
# ``int`` passes (``bool``, and the integral floats JavaScript also counts, are left to
# the predicates), so whatever passes here passes them.
#: An ``int`` that :func:`is_safe_integer` accepts.
TypedSafeInt = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
#: An ``int`` that :func:`is_count` accepts.
TypedCount = Annotated[int, msgspec.Meta(ge=0, le=MAX_SAFE_INTEGER)]
#: An ``int`` that :func:`is_count` accepts and that is not 0.
TypedPositive = Annotated[int, msgspec.Meta(ge=1, le=MAX_SAFE_INTEGER)]

#: The grammar of one snapshot placeholder token (without anchors).
PLACEHOLDER_TOKEN: Final[str] = r"\{\{[A-Za-z][A-Za-z0-9_:\-]*\}\}"
_WHOLE = re.compile(PLACEHOLDER_TOKEN + r"\Z")
_ANY = re.compile(PLACEHOLDER_TOKEN)
_ANY_BYTES = re.compile(PLACEHOLDER_TOKEN.encode("ascii"))


def is_safe_integer(value: Any) -> TypeGuard[int]:
    """``Number.isSafeInteger(value)`` for a parsed JSON value, with dsh's refusal of ``-0``.

    Integral floats count (``1.0`` is the integer 1 to JavaScript); ``bool`` does not
    (``true`` is not a number in JSON); ``-0.0`` does not (dsh rejects it as not
    losslessly serialisable).  Type checkers see an ``int``: an integral float
    compares, hashes and adds as the int it equals (:func:`safe_int` converts).
    """
    if type(value) is int:  # the overwhelmingly common case, decided first
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if type(value) is float:
        if not value.is_integer() or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return False  # NaN and the infinities are not integral
        return not (value == 0.0 and math.copysign(1.0, value) < 0.0)
    if isinstance(value, bool):
        return False
    if isinstance(value, int):  # an int subclass other than bool
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    return False


def is_count(value: Any) -> TypeGuard[int]:
    """A non-negative safe integer (dsh's ``sessionFormatCount``: seqs, turns, steps, sizes)."""
    if type(value) is int:
        return 0 <= value <= MAX_SAFE_INTEGER
    return is_safe_integer(value) and value >= 0


def safe_int(value: Any) -> int:
    """The Python ``int`` of a value :func:`is_safe_integer` accepted (``1.0`` -> ``1``)."""
    return value if type(value) is int else int(value)


def is_placeholder(value: Any) -> bool:
    """The whole value is one snapshot placeholder (``"{{tools}}"`` standing for an array)."""
    return isinstance(value, str) and _WHOLE.match(value) is not None


def has_placeholder(value: Any) -> bool:
    """The value holds a snapshot placeholder somewhere (``"{{cwd}}/workspace"``)."""
    return isinstance(value, str) and _ANY.search(value) is not None


def placeholder_bytes_search(data: bytes) -> bool:
    """Whether raw log bytes hold a placeholder token (a snapshot, before anything is parsed)."""
    return _ANY_BYTES.search(data) is not None
