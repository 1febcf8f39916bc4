"""How per-session batch work runs: one interface, chosen by the caller.

Commands over many sessions (``report``, ``search``, ``validate`` and ``stats`` of
many files, ``migrate -R``) do the same thing for each session, independently, and
merge the results in the order of their input.  This module owns how that work
runs; the operations only say *what* runs for one session (a module-level
function of one argument, usually a path) and consume results in input order.

Three policies, one contract (:meth:`Executor.map`):

* :class:`InProcess` runs each item in the calling process, one after the other.
  It is the library default, and what ``-j 1`` means.
* :class:`ProcessPool` runs them in ``jobs`` worker processes on this machine.
* :class:`DaskExecutor` sends them to a Dask ``distributed`` scheduler (the optional
  ``dshlog[dask]`` extra), so a fleet of machines can share a large store.

The contract, whatever the policy: results come back in input order; an exception
raised for an item is raised in the caller when that item's turn comes, as the
exception the in-process run would have raised (class, message, location), after
the results of every item before it; only the items travel (paths, never file
bytes), so what a worker reads is the file as the worker sees it.  At most a
bounded window of chunks is in flight, so memory does not grow with the number of
sessions.  Ctrl-C in the caller stops the workers and raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import signal
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from .errors import IOFailure, UsageError
from .fastpaths import mode, set_mode
from .forked import pack_error, unpack_error, usable_cpus

__all__ = ["JOBS_PER_CPU", "DaskExecutor", "Executor", "InProcess", "ProcessPool", "default_jobs", "helpers_allowed", "max_jobs", "run_chunk"]

T = TypeVar("T")
R = TypeVar("R")

#: One item's outcome as it crosses a process boundary: (True, result) or (False, packed error).
Outcome = tuple[bool, Any]


#: The most worker processes per core a local pool starts, whatever ``-j`` asks: the work is
#: reading files, so more workers than a few per core only add processes, memory and start-up.
JOBS_PER_CPU = 4


def default_jobs() -> int:
    """What ``-j`` means when it is not given: every core this process may run on."""
    return usable_cpus()


def max_jobs() -> int:
    """The most workers a local pool starts (:data:`JOBS_PER_CPU` per usable core)."""
    return JOBS_PER_CPU * usable_cpus()


def run_chunk(fn: Callable[[T], R], items: Sequence[T], paths: str | None = None) -> list[Outcome]:
    """Run ``fn`` on each item of a chunk, in order, in a worker.

    ``paths``: the caller's :mod:`dshlog.fastpaths` mode, which a spawned worker or a
    cluster's would not otherwise share (``None``: the worker's own).

    An exception is packed (:func:`dshlog.forked.pack_error`) instead of raised, so
    the items after it still run, and the caller decides when to raise it: when
    the item's turn comes in input order, as the serial run does.
    """
    if paths is not None:
        set_mode(paths)
    out: list[Outcome] = []
    for item in items:
        try:
            out.append((True, fn(item)))
        except Exception as exc:  # noqa: BLE001 - every error crosses back to the caller
            out.append((False, pack_error(exc)))
    return out


def _unpack(outcomes: list[Outcome]) -> Iterator[Any]:
    for ok, value in outcomes:
        if not ok:
            raise unpack_error(value)
        yield value


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _chunk_size(n: int, workers: int) -> int:
    """Items per hand-off: a few chunks per worker, so no worker idles at the end, but not one per item."""
    return max(1, min(32, n // (workers * 8)))


class Executor(ABC):
    """The one interface for per-session batch work (see the module docstring)."""

    #: How many items may run at the same time.
    jobs: int = 1

    #: Told ``(done, total)`` after each result is yielded: how a caller shows progress on a long
    #: batch (the core never prints; the command line draws it, on a terminal only).
    progress: Callable[[int, int], None] | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(item)`` for each item, yielded in input order.

        ``fn`` must be picklable for the parallel policies: a module-level function,
        or a :func:`functools.partial` of one with picklable arguments.
        """
        todo = list(items)
        told = self.progress
        if told is None:
            yield from self._map(fn, todo)
            return
        for done, result in enumerate(self._map(fn, todo), 1):
            yield result
            told(done, len(todo))

    @abstractmethod
    def _map(self, fn: Callable[[T], R], items: list[T]) -> Iterator[R]:
        """:meth:`map` of one policy."""

    def close(self) -> None:  # noqa: B027 - optional to override: nothing to release by default
        """Release workers or connections (nothing for the in-process policy)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class InProcess(Executor):
    """Each item in the calling process, in order: the library default and ``-j 1``."""

    def _map(self, fn: Callable[[T], R], items: list[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)


def helpers_allowed(executor: Executor, parallel: bool) -> bool:
    """Whether a task run by ``executor`` may fork helper processes (the caller's ``parallel``).

    Only a task run in the caller's process may: the workers of a pool or a cluster
    are the batch's parallelism already, and a helper per worker would only contend
    with the other workers for the same cores.
    """
    return parallel and isinstance(executor, InProcess)


def _ignore_sigint() -> None:
    """In a pool worker: Ctrl-C is the parent's to handle (it stops the workers), not each worker's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Windowed(Executor):
    """Shared by the parallel policies: chunks submitted ahead within a window, collected in order."""

    def _submit(self, fn: Callable[[Any], Any], chunk: Sequence[Any]) -> Any:
        raise NotImplementedError

    def _collect(self, handle: Any) -> list[Outcome]:
        raise NotImplementedError

    def _abort(self) -> None:
        raise NotImplementedError

    #: Whether one item (or one job) runs in the caller instead: right for a local pool, whose
    #: workers see what the caller sees; never for a cluster, whose workers are the ones to read.
    _local_shortcut = True
    #: How many chunks the current :meth:`map` hands out (a local pool starts no more workers).
    _tasks = 1

    def _window(self) -> int:
        return self.jobs * 4

    def _map(self, fn: Callable[[T], R], items: list[T]) -> Iterator[R]:
        todo = items
        if self._local_shortcut and (len(todo) <= 1 or self.jobs <= 1):  # nothing to share: no start-up
            yield from InProcess().map(fn, todo)
            return
        size = _chunk_size(len(todo), self.jobs)
        self._tasks = -(-len(todo) // size)  # never more workers than there are chunks to hand out
        chunks = _chunks(todo, size)
        pending: deque[Any] = deque()
        try:
            for chunk in chunks:
                pending.append(self._submit(fn, chunk))
                if len(pending) >= self._window():
                    break
            while pending:
                outcomes = self._collect(pending.popleft())
                nxt = next(chunks, None)
                if nxt is not None:
                    pending.append(self._submit(fn, nxt))
                yield from _unpack(outcomes)
        except BaseException:
            # Ctrl-C, an item's error, or the consumer closing the generator early: stop the rest
            self._abort()
            raise


class ProcessPool(_Windowed):
    """``jobs`` worker processes on this machine.

    Workers are forked when the caller runs no other thread (forking a threaded
    process can leave a child holding a lock nobody releases), else spawned.  They
    ignore SIGINT: Ctrl-C reaches the whole process group, and the parent alone
    stops the pool, so no worker prints a traceback of its own.
    """

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = max(1, min(jobs if jobs is not None else default_jobs(), max_jobs()))
        self._pool: Any = None

    def _ensure(self) -> Any:
        if self._pool is None:
            import multiprocessing  # late: 4 ms of start-up that only a pool of workers uses

            method = "fork" if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods() else "spawn"
            ctx = multiprocessing.get_context(method)
            self._pool = ctx.Pool(min(self.jobs, self._tasks), initializer=_ignore_sigint)
        return self._pool

    def _submit(self, fn: Callable[[Any], Any], chunk: Sequence[Any]) -> Any:
        return self._ensure().apply_async(run_chunk, (fn, list(chunk), mode()))

    def _collect(self, handle: Any) -> list[Outcome]:
        result: list[Outcome] = handle.get()
        return result

    def _abort(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None


class DaskExecutor(_Windowed):
    """Items sent to a Dask ``distributed`` scheduler: ``--scheduler ADDRESS``.

    Workers need dshlog installed (the same version) and must see the session
    paths the caller passes, at the same names (a shared file system); they read
    the files themselves.  ``client`` lets a caller (a test, a notebook) pass a
    connected :class:`distributed.Client` instead of an address.
    """

    def __init__(self, address: str | None = None, *, client: Any = None) -> None:
        if client is None:
            try:
                from distributed import (
                    Client,  # lazy: an optional extra, heavy to import
                )
            except ImportError:
                raise UsageError("--scheduler needs Dask distributed: pip install 'dshlog[dask]'") from None
            try:
                client = Client(address)  # type: ignore[no-untyped-call]  # distributed ships without annotations here
            except ValueError as exc:  # not an address at all: the caller's to fix
                raise UsageError(f"--scheduler {address!r}: {' '.join(str(exc).split())}") from None
            except OSError as exc:  # refused or timed out (distributed waits 30 s by default)
                raise IOFailure(f"cannot reach the Dask scheduler {address}: {' '.join(str(exc).split())}") from None
            self._owned = True
        else:
            self._owned = False
        self._client = client
        workers = client.scheduler_info().get("workers", {})
        self.jobs = max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
        self._futures: list[Any] = []

    _local_shortcut = False

    def _submit(self, fn: Callable[[Any], Any], chunk: Sequence[Any]) -> Any:
        fut = self._client.submit(run_chunk, fn, list(chunk), mode(), pure=False)
        self._futures.append(fut)
        return fut

    def _collect(self, handle: Any) -> list[Outcome]:
        result: list[Outcome] = handle.result()
        self._futures.remove(handle)
        return result

    def _abort(self) -> None:
        if self._futures:
            self._client.cancel(self._futures)
            self._futures.clear()

    def close(self) -> None:
        self._abort()
        if self._owned:
            self._client.close()
