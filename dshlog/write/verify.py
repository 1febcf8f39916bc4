"""The read-back every staged v4 log passes before it gets its final name.

dsh verifies a migration successor before publishing it (FORMAT.md 6.2 step 4):
strict decode, the exact event count, every current rule, and the verifier's
byte length and SHA-256 equal to what was written.  dshlog applies the same
read-back to every v4 log it publishes (``migrate``, ``repair --write``,
``repair -o``, ``fork -o``), so none of them can publish a log that ``validate``
rejects.

The strict read is pure Python and costs about a quarter of a migration, so for
a large output it runs in a forked process that decodes the plaintext as it is
written (:class:`_ForkedReadBack`); the byte comparison afterwards proves the
file holds exactly that plaintext.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path
from typing import Any, Protocol
from collections.abc import Callable

from .. import forked as _forked
from ..check.validate import Validator
from ..errors import Refused
from ..read.container import SourceInfo, iter_zstd_lines
from ..read.session import SessionLog, open_log
from ..read.source import Source

# Below this output size the read-back runs in process: a fork costs more than it saves
# (a batch over thousands of small sessions would pay it for each).
FORK_MIN_BYTES = 1 << 20


class EventCheck(Protocol):
    """A writer's own condition on its output, checked along the read-back (e.g. repair: balanced)."""

    def feed(self, event: dict[str, Any]) -> None: ...

    def finish(self) -> None:
        """Raise :class:`Refused` when the output does not meet the condition."""


def check_rules(
    log: Any,
    header: dict[str, Any] | None,
    snapshot: bool,
    path: str,
    subject: str,
    extra: Callable[[], EventCheck] | None = None,
) -> int:
    """dsh's strict read of a staged log: the header as written, then every v4 rule; returns the event count."""
    if header is not None and log.header != header:
        raise Refused(f"{subject} does not verify: header differs", path=path)
    n = 0
    rules = None
    more = extra() if extra is not None else None
    for r in log.stored():
        if rules is None:
            rules = Validator(log.header, projection=snapshot, json_values=True)
        n += 1
        for p in rules.feed(r.event):
            if p.severity == "error":
                raise Refused(f"{subject} does not verify at seq {p.seq}: {p.message}", path=path)
        if more is not None:
            more.feed(r.event)
    if rules is None:
        rules = Validator(log.header, projection=snapshot, json_values=True)
    for p in rules.finish():
        if p.severity == "error":
            raise Refused(f"{subject} does not verify: {p.message}", path=path)
    if log.info.torn is not None:
        raise Refused(f"{subject} does not verify: it ends in a torn line", path=path)
    if more is not None:
        more.finish()
    return n


class ReadBack:
    """The verification of one staged v4 log.

    Create it once the file is staged and before writing (``tee`` then receives
    the plaintext as it is written, for the forked reader); call :meth:`verify`
    after the file is synced; :meth:`close` (or leaving the ``with``) reaps the
    reader process in every case.
    """

    def __init__(
        self,
        staged: Path,
        header: dict[str, Any] | None,
        *,
        compressed: bool,
        snapshot: bool,
        subject: str = "staged successor",
        size_hint: int = 0,
        extra: Callable[[], EventCheck] | None = None,
        stream: bool = True,
        parallel: bool = False,
    ) -> None:
        """``size_hint``: about how large the output is (the source's size); ``stream``: the
        writer hands every plaintext byte to :attr:`tee` (needed for the forked reader);
        ``parallel``: the caller allows forked helpers (the strict read of a large output,
        the decode of a compressed one); by default everything runs in process."""
        self.path = Path(staged)
        self.parallel = parallel
        self.header = header
        self.compressed = compressed
        self.snapshot = snapshot
        self.subject = subject
        self.extra = extra
        self._reader: _ForkedReadBack | None = None
        if stream and size_hint >= FORK_MIN_BYTES and _forked.can_fork(parallel):
            try:
                self._reader = _ForkedReadBack(str(self.path), header, snapshot, subject, extra)
            except OSError:
                self._reader = None  # fork refused (process or memory limits): read back in process

    @property
    def tee(self) -> Callable[[bytes], None] | None:
        return self._reader.feed if self._reader is not None else None

    def verify(self, path: Path, *, events: int, plain: tuple[int, str] | None) -> None:
        """Read ``path`` back: the same plaintext bytes (``plain`` = size, sha256), then the rules.

        With a forked reader the strict decode has already run over the plaintext
        as it was written; the byte comparison proves the file holds exactly that
        plaintext, so the two together verify the file.  ``plain=None`` (a file
        copied partly as raw bytes) skips the byte comparison; the strict read of
        the file itself then runs in process.
        """
        if plain is not None:
            self._compare_bytes(path, *plain)
        if self._reader is not None and plain is not None:
            n = self._reader.result()
        else:
            with open_log(Source(str(path), parallel=self.parallel)) as check:
                n = check_rules(check, self.header, self.snapshot, str(path), self.subject, self.extra)
        if n != events:
            raise Refused(f"{self.subject} does not verify: {n} events read back, {events} written", path=str(path))

    def _compare_bytes(self, path: Path, size: int, digest: str) -> None:
        h = hashlib.sha256()
        n_bytes = 0
        with open(path, "rb") as fh:
            if self.compressed:
                info = SourceInfo(path=str(path), container="jsonl.zstd")
                for rec in iter_zstd_lines(fh, info, self.parallel):
                    raw: bytes = rec.raw  # type: ignore[assignment]  # a line record always holds its bytes
                    h.update(raw + b"\n")
                    n_bytes += len(raw) + 1
                torn = info.torn is not None
            else:
                # the plaintext is the file: hash it in blocks (a third of the time of a line walk)
                last = b""
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
                    n_bytes += len(block)
                    last = block[-1:]
                torn = n_bytes > 0 and last != b"\n"
        if torn:
            raise Refused(f"{self.subject} does not verify: it ends in a torn line", path=str(path))
        if n_bytes != size or h.hexdigest() != digest:
            raise Refused(f"{self.subject} does not verify: its bytes differ from what was written", path=str(path))

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def __enter__(self) -> ReadBack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ForkedReadBack:
    """The strict read of a staged log, run in a forked process while the log is written.

    The writer hands each plaintext batch to :meth:`feed` as it writes it; the
    child decodes that stream exactly as :func:`check_rules` decodes the file
    (the same reader in strict mode and the same rules) and reports the event
    count or the refusal.  :meth:`ReadBack.verify` then proves the file holds
    exactly these bytes.  If the child goes away early (it found a problem and
    stopped reading), the rest of the stream is dropped and its verdict still stands.
    """

    def __init__(
        self, path: str, header: dict[str, Any] | None, snapshot: bool, subject: str, extra: Callable[[], EventCheck] | None
    ) -> None:
        data_r, self._data_w = os.pipe()
        self._result_r, result_w = os.pipe()
        self._subject = subject
        _forked.enlarge_pipe(self._data_w)
        try:
            self._pid: int | None = os.fork()
        except OSError:  # no process to spare: the caller reads back in process
            for fd in (data_r, self._data_w, self._result_r, result_w):
                os.close(fd)
            raise
        if self._pid == 0:  # pragma: no cover - the child's coverage is not collected
            self._child(data_r, result_w, path, header, snapshot, subject, extra)
        os.close(data_r)
        os.close(result_w)
        self._open = True

    @staticmethod
    def _child(
        data_r: int,
        result_w: int,
        path: str,
        header: dict[str, Any] | None,
        snapshot: bool,
        subject: str,
        extra: Callable[[], EventCheck] | None,
    ) -> None:
        def work() -> None:
            try:
                with open(data_r, "rb", buffering=1 << 20) as stream, SessionLog(Source(path, stream=stream)) as check:
                    verdict: tuple[Any, ...] = ("ok", check_rules(check, header, snapshot, path, subject, extra))
            except BaseException as exc:  # noqa: BLE001 - handed to the parent, raised there
                verdict = ("error", _forked.pack_error(exc))
            with open(result_w, "wb") as out:
                out.write(pickle.dumps(verdict))

        _forked.run_child((data_r, result_w), work)

    def feed(self, data: bytes) -> None:
        """The next plaintext bytes of the staged log, in write order."""
        if not self._open:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._data_w, view) :]
        except BrokenPipeError:
            self._end_feed()  # the child stopped reading: it has found a problem

    def _end_feed(self) -> None:
        if self._open:
            self._open = False
            os.close(self._data_w)

    def result(self) -> int:
        """End the stream and wait for the verdict: the event count, or the refusal raised here."""
        self._end_feed()
        with open(self._result_r, "rb", closefd=False) as fh:
            blob = fh.read()
        if not blob:
            raise Refused(f"{self._subject} does not verify: the read-back process ended without a verdict")
        kind, value = pickle.loads(blob)
        if kind != "ok":
            raise _forked.unpack_error(value)
        return int(value)

    def close(self) -> None:
        """Stop the child (if it still runs) and reap it; idempotent."""
        if self._pid is None:
            return
        self._end_feed()
        os.close(self._result_r)
        os.waitpid(self._pid, 0)
        self._pid = None


__all__ = ["EventCheck", "FORK_MIN_BYTES", "ReadBack", "check_rules"]
