"""Work handed to a forked child process, so a second core can run Python too.

Two jobs of dshlog are pure-Python loops that a thread cannot run in parallel
(the GIL): walking the frames of a zstd body, and the strict read-back of a
staged successor during ``migrate``.  Both run in a child made with ``fork``
and talk to the parent through pipes.  This module holds what they share: when
forking is safe and useful, what the child must do first, and how an exception
crosses the pipe so the parent raises exactly what the serial code would have.

Whether helpers may be forked at all is the caller's policy, passed down as
``parallel`` (never a module setting): the library's default is in-process, so a
script, a thread pool or a server embedding dshlog never sees a child process it
did not ask for; the command line turns it on (``Env.parallel``).  A helper is a
fast path too: the exact mode of :mod:`dshlog.fastpaths` keeps every job in the
caller's process, whatever ``parallel`` says.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import NoReturn

from .fastpaths import fast

try:  # POSIX only; without it pipes keep their default size
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]  # off POSIX the module is None, tested before use


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def can_fork(parallel: bool) -> bool:
    """Whether a worker child may be forked now, for a caller whose policy is ``parallel``.

    The policy is checked first, so the in-process default costs nothing.  A child
    only pays off where a second core can run it, and forking a process that runs
    other threads can leave the child holding a lock no thread will ever release,
    so a threaded caller keeps the serial path.  The exact mode of
    :mod:`dshlog.fastpaths` keeps it too.
    """
    return parallel and fast() and hasattr(os, "fork") and threading.active_count() == 1 and usable_cpus() > 1


def enlarge_pipe(fd: int, size: int = 1 << 20) -> None:
    """Best effort: a larger pipe means fewer hand-offs between the processes."""
    if fcntl is None:  # pragma: no cover - not POSIX
        return
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except OSError:
        pass


def close_inherited(keep: Iterable[int]) -> None:
    """In the child, first thing: close every descriptor except ``keep``.

    The child must not keep a parent's lock alive (``session.lock`` and a staged
    file's flock live as long as any descriptor of them is open), nor hold a
    file the parent closes and expects gone.
    """
    low = 0
    for fd in sorted(set(keep)):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def pack_error(exc: BaseException) -> bytes:
    """An exception as bytes: its class, args and attributes (``path``, ``loc``, ...)."""
    import pickle  # only where a helper fails: a command that forks none loads no pickle

    try:
        return pickle.dumps((type(exc), exc.args, dict(getattr(exc, "__dict__", {}))))
    except Exception:  # noqa: BLE001 - an unpicklable payload: keep the class and text
        return pickle.dumps((RuntimeError, (f"{type(exc).__name__}: {exc}",), {}))


def unpack_error(blob: bytes) -> BaseException:
    """The exception :func:`pack_error` described, rebuilt without calling its ``__init__``."""
    import pickle  # only when a helper failed

    cls, args, attrs = pickle.loads(blob)
    exc: BaseException = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(attrs)
    return exc


def run_child(keep: Iterable[int], work: Callable[[], None]) -> NoReturn:
    """The body of every forked child: close what it inherited, do ``work``, leave.

    The exit skips the parent's atexit hooks, finalizers and buffer flushes.  An
    exception escaping ``work`` (the parent closed the pipe, or worse) ends the child
    with status 1; ``work`` hands the errors the parent must see over the pipe itself.
    """
    status = 0
    try:
        close_inherited(keep)
        work()
    except BaseException:  # noqa: BLE001 - nobody is left to tell
        status = 1
    finally:
        os._exit(status)
