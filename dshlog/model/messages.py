"""The derived messages of a log: what the model is shown after its last event.

dsh never builds model messages: it *selects* them.  A node's message is the
exact object stored in the log (same keys, same order, same id), so a request
rebuilt here is byte-identical to what dsh sent.  The per-node rule
(``derive_message``, SEMANTICS §3) lives with the fold that decides which nodes
exist, in :mod:`dshlog.check.surface`.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable

from ..check.surface import fold

def derive(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Derived model messages of a whole log (or prefix), in surface order.

    One streaming pass: the fold keeps only the current nodes' messages.
    """
    return fold(events).messages()
