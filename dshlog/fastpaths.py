"""One switch for every fast path: ``fast`` (the default) or ``exact`` (the one plain body everywhere).

Ten facts have a fast body beside the exact one, and each fast body exists only
for speed or memory: its answers are the exact body's.  Each asks this module at
its decision point, and nowhere else:

========================  ==========================================  ===============================
fast path                 decision point                              exact body
========================  ==========================================  ===============================
C byte scan               ``protocol/jsjson.py`` (``_scan``)          the Python checks beside it
lazy row gate             ``read/session.py`` ``SessionLog._gate``    every row through ``loads``
msgspec shapes            ``check/validate.py`` ``Validator``         every rule run in Python
lean surface fold         ``check/surface.py`` ``SurfaceFold``        the fold that keeps messages
fused line reader         ``read/input.py`` ``_open_body``            ``read/container.iter_lines``
whole packed runs         ``read/input.py`` ``_rows``                 packed rows expanded to chunks
forked helpers            ``forked.py`` ``can_fork``                  in the caller's process
one restore               ``ops/validate.py`` ``_dsh_lists``,         the listing, dsh's decision, the
                          ``_one_restore``                            migrated form each read apart
payload checked once      ``migrate/chain.py`` ``migrate_stream``     v2->v3 checks a v0 log's payloads
                                                                      again, version-blind types too
lean payload pass         ``migrate/payload.py``                      dsh's switch for every payload
                          ``assert_payload_semantics``
========================  ==========================================  ===============================

The resumed read of a log that only grew (:mod:`dshlog.read.resume`) goes on where the
fused line reader stopped: in ``exact`` mode a grown log is read whole (its answer is the same).

``exact`` turns the forked helpers off too, although ``parallel`` is already the
caller's policy: exact means one plain body everywhere, so a run in that mode is
the reference the fast one is compared with (the test suite runs under both
modes; the fuzzer compares the two on each input).

The mode is the process's, not a log's or a call's: the command line sets it
from ``DSHLOG_PATHS`` (``cli/env.py``), a program with :func:`set_mode`, the test
suite for its whole session (``tests/conftest.py``).  The core never reads the
environment.  It is read when a fold, a view or a helper is made, and per line
by the C scan; changing it while another thread reads a log is not supported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, cast

from .errors import InvalidArgument

__all__ = ["MODES", "Mode", "fast", "mode", "set_mode", "using"]

Mode = Literal["fast", "exact"]

#: The modes, the default first.
MODES: tuple[Mode, ...] = ("fast", "exact")

_fast = True


def fast() -> bool:
    """Whether the fast bodies run (every decision point asks this, and only this)."""
    return _fast


def mode() -> Mode:
    """The current mode's name."""
    return "fast" if _fast else "exact"


def set_mode(name: str) -> None:
    """Run every fast path (``"fast"``, the default) or none of them (``"exact"``), from now on.

    Raises :class:`~dshlog.errors.InvalidArgument` (a usage error) for any other name.
    """
    global _fast
    if name not in MODES:
        raise InvalidArgument(f"unknown paths mode {name!r}: expected {' or '.join(MODES)}")
    _fast = name == "fast"


@contextmanager
def using(name: str) -> Iterator[Mode]:
    """:func:`set_mode` for the ``with`` block, the previous mode restored after it."""
    before = mode()
    set_mode(name)
    try:
        yield cast("Mode", name)
    finally:
        set_mode(before)
