"""Small value tests the rule families share (the fold imports this: keep it light)."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from typing import Any, TypeGuard

__all__ = ["DECIMAL", "is_record", "nonempty_str", "seq_in"]

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
