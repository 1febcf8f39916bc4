"""Write open of a historical session: publish ``session.v4.jsonl`` beside the old file.

What dsh does when it opens an old session for writing (FORMAT.md 6.2, 6.3), as a
batch job: take ``session.lock``, stream the migrated events into an exclusive
0600 temporary file in the same directory, fsync it, read it back and verify it,
check the source did not change meanwhile, publish with a hard link (never over
an existing file), fsync the directory and drop the temporary name.  The source
generation is never opened for writing.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .. import forked as _forked
from ..errors import DshlogError, ExitCode, Refused, UsageError
from ..protocol.layout import generation_name, parse_generation, persistence_root
from ..protocol.vocabulary import CURRENT_VERSION
from ..read.container import select_generation


@dataclass
class Outcome:
    """The result for one session; ``status`` is one of the values documented in the README."""

    source: str
    status: str  # migrated | current | needed | would-migrate | failed
    version: int | None = None
    target: str | None = None
    events: int | None = None
    bytes: int | None = None
    error: str | None = None
    exit_code: int = ExitCode.OK
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "status": self.status, "version": self.version}
        for k in ("target", "events", "bytes", "error"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        if self.notes:
            d["notes"] = self.notes
        return d


# Below this source size the read-back runs in process: a fork costs more than it saves
# (a batch over thousands of small sessions would pay it for each).
FORK_MIN_BYTES = 1 << 20


def _identity(path: Path) -> tuple[int, int, int, int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def target_name(source: Path) -> str:
    """The successor's name: the current generation, in the source's encoding."""
    g = parse_generation(source.name)
    return generation_name(CURRENT_VERSION, g.compressed if g is not None else source.name.endswith(".zstd"))


def find_sessions(paths: list[str], *, recursive: bool) -> Iterator[Path]:
    """Session generation files to consider: files as given, directories by generation choice.

    With ``recursive``, every directory below a path that holds a canonical
    generation is one session (a dsh persistence root or any tree of them).
    """
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and recursive:
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames.sort()
                if any(parse_generation(n) is not None for n in filenames):
                    yield select_generation(Path(dirpath))
        elif p.is_dir():
            yield select_generation(p)
        else:
            yield p


def _child_facts(log: Any, children: str) -> list[dict]:
    if children == "none":
        return []
    root = persistence_root(log.path)
    if root is None:
        raise UsageError(
            "cannot look for child sessions: the file is not inside a dsh persistence root "
            "(<root>/<project>/<session>/); pass --no-children to state that it has none",
            path=log.path,
        )
    from ..read.children import discover_child_facts
    from ..read.session import _open_events, _open_header

    return discover_child_facts(root, log.session_id or "", open_header=_open_header, open_events=_open_events)


def migrate_session(source: Path, *, check: bool = False, dry_run: bool = False, children: str = "auto",
                    system_prompt_plugins: tuple[str, ...] = ()) -> Outcome:
    """Migrate one session generation (see module docstring); never raises for the session's own problems.

    ``system_prompt_plugins``: more package names the v3->v4 edge takes for dsh's
    system-prompt producer (``--system-prompt-plugin``); the outcome notes them.
    """
    from ..read.session import open_session

    out = Outcome(source=str(source), status="failed")
    try:
        _require_regular(source)
        d = source.parent
        if source.is_file() and parse_generation(source.name) is not None:
            chosen = select_generation(d)
            if chosen.name != source.name:
                out.notes.append(f"{chosen.name} is the generation dsh reads in this directory")
                source = chosen
                out.source = str(source)
        with open_session(str(source), system_prompt_plugins=system_prompt_plugins) as log:
            out.version = log.version
            if log.version >= CURRENT_VERSION:
                out.status = "current"
                if not check and not dry_run:
                    _clean_after_publication(d, out)
                return out
            if log.info.container not in ("jsonl", "jsonl.zstd") or log.header is None:
                raise UsageError(f"only session generation files can be migrated (this is a {log.info.container} input)", path=log.path)
            target = d / target_name(source)
            out.target = str(target)
            if check:
                out.status = "needed"
                out.exit_code = ExitCode.PENDING
                return out
            facts = _child_facts(log, children)
            if system_prompt_plugins:  # the report says which rule produced the successor
                out.notes.append("system-prompt producers besides upstream's: " + ", ".join(system_prompt_plugins))
            if dry_run:
                out.events = sum(1 for _ in log.v4(child_facts=facts))
                out.status = "would-migrate"
                return out
        _publish(source, target, facts, out, system_prompt_plugins)
        out.status = "migrated"
    except DshlogError as exc:
        out.status = "failed"
        out.error = exc.one_line()
        out.exit_code = exc.exit_code
    return out


def _require_regular(source: Path) -> None:
    """Migration reads its source twice (probe, then the stable read): a pipe or stdin cannot be re-read."""
    if str(source) == "-":
        raise UsageError("migrate needs a session file or directory, not standard input")
    try:
        st = os.stat(source)
    except OSError:
        return  # open_session reports a missing or unreadable path with its own message
    if not stat.S_ISREG(st.st_mode):
        raise UsageError("not a regular file: only session generation files can be migrated", path=str(source))


def _clean_after_publication(d: Path, out: Outcome) -> None:
    """Remove temps of a run killed after it published the successor but before it dropped the temp name.

    The session is current now, so :func:`_publish` never runs again there; the
    lock is taken only when such a leftover exists, and a held lock means its
    holder may still be using them, so they are left alone.
    """
    from ..write.atomic import cleanup_leftovers, is_leftover
    from ..write.lock import session_lock

    try:
        if not any(is_leftover(n) for n in os.listdir(d)):
            return
        with session_lock(d):
            for p in cleanup_leftovers(d):
                out.notes.append(f"removed leftover {p.name}")
    except (DshlogError, OSError):
        return  # best effort: the session itself is fine


def _publish(source: Path, target: Path, facts: list[dict], out: Outcome, system_prompt_plugins: tuple[str, ...] = ()) -> None:
    from ..write.atomic import cleanup_leftovers, migration_affixes, publish_no_overwrite, stage_file
    from ..write.lock import session_lock
    from ..read.session import open_session
    from ..check.validate import Validator
    from ..write.writer import LogWriter

    compressed = source.name.endswith(".zstd")
    d = source.parent
    with open_session(str(source)) as probe:
        sid = probe.session_id
    with session_lock(d, session_id=sid):
        # leftovers of an interrupted earlier run are ours to clean while we hold the lock
        for p in cleanup_leftovers(d):
            out.notes.append(f"removed leftover {p.name}")
        if target.exists():
            raise Refused(f'current session generation already exists at "{target}"', path=str(target))
        before = _identity(source)
        prefix, suffix = migration_affixes(compressed)
        with stage_file(d, prefix, suffix) as staged:
            reader: _ForkedReadBack | None = None
            try:
                with open_session(str(source), system_prompt_plugins=system_prompt_plugins) as log:
                    view = log.v4(child_facts=facts)
                    header, events = view.header, iter(view)
                    projection = log.projection
                    snapshot = log.snapshot
                    if projection:
                        out.notes.append("the source is a test-snapshot projection (no seq/time): the successor is written in the same form")
                    if before[2] >= FORK_MIN_BYTES and _forked.can_fork():
                        try:
                            reader = _ForkedReadBack(str(staged.path), header, snapshot, Validator)
                        except OSError:
                            reader = None  # fork refused (process or memory limits): read back in process
                    w = LogWriter(staged, compressed=compressed, projection=projection, tee=reader.feed if reader else None)
                    w.header(header)
                    for ev in events:
                        w.event(ev)
                    size, digest = w.close()
                staged.sync_and_close()
                _verify(staged.path, header, w.events, size, digest, Validator, compressed, snapshot, reader)
            finally:
                if reader is not None:
                    reader.close()
            if _identity(source) != before:
                raise Refused(f'historical session generation changed during migration: "{source}"', path=str(source))
            publish_no_overwrite(staged, target)
    out.events = w.events
    out.bytes = size


def _verify(
    path: Path,
    header: dict,
    count: int,
    size: int,
    digest: str,
    validator_cls: Any,
    compressed: bool,
    snapshot: bool,
    reader: "_ForkedReadBack | None" = None,
) -> None:
    """Read the staged file back: the same plaintext bytes, then a strict decode with every rule.

    With ``reader`` the strict decode has already run, in a forked process, over
    the plaintext as it was written; the byte comparison here proves the file
    holds exactly that plaintext, so the two together verify the file.
    """
    import hashlib

    from ..read.session import open_session
    from ..read.container import SourceInfo, iter_zstd_lines

    h = hashlib.sha256()
    n_bytes = 0
    with open(path, "rb") as fh:
        if compressed:
            info = SourceInfo(path=str(path), container="jsonl.zstd")
            for rec in iter_zstd_lines(fh, info):
                h.update(rec.raw + b"\n")
                n_bytes += len(rec.raw) + 1
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
            raise Refused("staged successor does not verify: it ends in a torn line", path=str(path))
    if n_bytes != size or h.hexdigest() != digest:
        raise Refused("staged successor does not verify: its bytes differ from what was written", path=str(path))
    if reader is not None:
        n = reader.result()
    else:
        with open_session(str(path)) as check:
            n = _check_rules(check, header, validator_cls, snapshot, str(path))
    if n != count:
        raise Refused(f"staged successor does not verify: {n} events read back, {count} written", path=str(path))


def _check_rules(check: Any, header: dict, validator_cls: Any, snapshot: bool, path: str) -> int:
    """dsh's strict read of a successor: the header as written, then every v4 rule; returns the event count."""
    if check.header != header:
        raise Refused("staged successor does not verify: header differs", path=path)
    n = 0
    rules = None
    for r in check.stored():
        if rules is None:
            rules = validator_cls(check.header, projection=snapshot)
        n += 1
        for p in rules.feed(r.event):
            if p.severity == "error":
                raise Refused(f"staged successor does not verify at seq {p.seq}: {p.message}", path=path)
    if rules is None:
        rules = validator_cls(check.header, projection=snapshot)
    for p in rules.finish():
        if p.severity == "error":
            raise Refused(f"staged successor does not verify: {p.message}", path=path)
    return n


class _ForkedReadBack:
    """The strict read of the successor, run in a forked process while the successor is written.

    Reading the staged file back with every rule is a quarter of ``migrate``; it
    is pure Python, so only a second process can overlap it with the writing.
    The writer hands each plaintext batch to :meth:`feed` as it writes it; the
    child decodes that stream exactly as :func:`_check_rules` decodes the file
    (the same reader in strict mode and the same rules) and reports the event
    count or the refusal.  :func:`_verify` then proves the file holds exactly
    these bytes.  If the child goes away early (it found a problem and stopped
    reading), the rest of the stream is dropped and its verdict still stands.
    """

    def __init__(self, path: str, header: dict, snapshot: bool, validator_cls: Any) -> None:
        import os

        data_r, self._data_w = os.pipe()
        self._result_r, result_w = os.pipe()
        _forked.enlarge_pipe(self._data_w)
        try:
            self._pid = os.fork()
        except OSError:  # no process to spare: the caller reads back in process
            for fd in (data_r, self._data_w, self._result_r, result_w):
                os.close(fd)
            raise
        if self._pid == 0:  # pragma: no cover - the child's coverage is not collected
            self._child(data_r, result_w, path, header, snapshot, validator_cls)
        os.close(data_r)
        os.close(result_w)
        self._open = True

    @staticmethod
    def _child(data_r: int, result_w: int, path: str, header: dict, snapshot: bool, validator_cls: Any) -> None:
        import pickle

        from ..read.session import SessionLog

        def work() -> None:
            try:
                with open(data_r, "rb", buffering=1 << 20) as stream, SessionLog(path, stream=stream) as check:
                    verdict: tuple = ("ok", _check_rules(check, header, validator_cls, snapshot, path))
            except BaseException as exc:  # noqa: BLE001 - handed to the parent, raised there
                verdict = ("error", _forked.pack_error(exc))
            with open(result_w, "wb") as out:
                out.write(pickle.dumps(verdict))

        _forked.run_child((data_r, result_w), work)

    def feed(self, data: bytes) -> None:
        """The next plaintext bytes of the successor, in write order."""
        import os

        if not self._open:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._data_w, view) :]
        except BrokenPipeError:
            self._end_feed()  # the child stopped reading: it has found a problem

    def _end_feed(self) -> None:
        import os

        if self._open:
            self._open = False
            os.close(self._data_w)

    def result(self) -> int:
        """End the stream and wait for the verdict: the event count, or the refusal raised here."""
        import pickle

        self._end_feed()
        with open(self._result_r, "rb", closefd=False) as fh:
            blob = fh.read()
        if not blob:
            raise Refused("staged successor does not verify: the read-back process ended without a verdict")
        kind, value = pickle.loads(blob)
        if kind != "ok":
            raise _forked.unpack_error(value)
        return int(value)

    def close(self) -> None:
        """Stop the child (if it still runs) and reap it; idempotent."""
        import os

        if self._pid is None:
            return
        self._end_feed()
        os.close(self._result_r)
        os.waitpid(self._pid, 0)
        self._pid = None  # type: ignore[assignment]
