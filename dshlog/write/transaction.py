"""The one publication transaction every writing command goes through.

``migrate``, ``repair --write``, ``repair -o``, ``fork -o`` and ``export -o`` each
make one new file visible under a final name.  They share one contract, and
:class:`Publication` is where it lives:

1. **Lock.**  Hold the ``session.lock`` the writer names (the source session for
   ``migrate`` and ``repair --write``; the target directory when it is a session
   directory, see :func:`output_lock`), opened without following a symlink.
   A writer never publishes into another session's directory without holding
   that session's lock, and never publishes a generation file next to another
   session's generation (it would change which log dsh reads there).
2. **Clean up.**  Remove what earlier runs of *any* writer left in the target
   directory: staged names no live process holds (dsh's own migration names only
   under the session lock), and, under the lock of that directory, the
   companions of a final name that is not there (see below).
3. **Identity.**  Record the source's identity (dev, ino, size, mtime, ctime)
   before the source is read.
4. **Stage** under the one naming scheme (``protocol.layout``), exclusively, 0600.
5. **Publish**: give the staged file its owner, group and mode (those of the
   source or original, or a shareable mode for exports) through its descriptor,
   fsync it, check its size, run the writer's verification (v4 logs: the strict
   read-back of :mod:`dshlog.write.verify`), check the source identity again,
   then publish the **companions** (files that say what the main file is: a
   rescue record, a repair's torn bytes), each through its own staging and
   ``link``, then ``link`` the main file without overwrite (new files) or
   ``rename`` it over the original (in-place work), and fsync the directory.

The main file's ``link`` (or ``rename``) is the commit point.  Any failure before
it leaves the target as it was and removes the staged file; a crash leaves a
staged name that the next run of any writer removes.  A crash between a
companion's link and the commit leaves the companion alone: for a new file, a
companion whose main file is not there describes nothing
(``protocol.layout.companion_names``), and the next publication of that name,
holding the directory's lock, removes it before it publishes; a companion holding
exactly the bytes the next run would write is kept as it is.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from collections.abc import Callable, Sequence

from ..errors import DshlogError, IOFailure, Refused
from ..protocol.layout import companion_names, is_staging_name, parse_generation
from ..read.store import is_session_directory
from . import atomic
from .atomic import StagedFile, io_failure
from .lock import SessionLock, acquire_session_lock, session_lock


@dataclass(frozen=True, slots=True)
class Identity:
    """What proves a source file was not changed meanwhile (dsh's stable-read identity)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


def source_identity(path: Path | str) -> Identity:
    """The identity of the file at ``path`` (symlinks followed: the file that is read)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise io_failure(exc, path, "stat the source") from exc
    return Identity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class FileOwner:
    """Owner, group and permission bits a published file receives.

    ``uid``/``gid`` of ``None`` leave the file to whoever runs the command.
    """

    uid: int | None
    gid: int | None
    mode: int

    @classmethod
    def like(cls, st: os.stat_result) -> FileOwner:
        """The owner, group and mode of an existing file (the source, or the log replaced)."""
        return cls(st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))

    @classmethod
    def of(cls, path: Path | str) -> FileOwner:
        try:
            return cls.like(os.stat(path))
        except OSError as exc:
            raise io_failure(exc, path, "stat the source") from exc

    @classmethod
    def shared(cls) -> FileOwner:
        """A file to share (an export): the runner's, with the usual ``0666 & ~umask`` mode."""
        umask = os.umask(0o22)
        os.umask(umask)
        return cls(None, None, 0o666 & ~umask)

    @property
    def ids(self) -> tuple[int, int] | None:
        return (self.uid, self.gid) if self.uid is not None and self.gid is not None else None


def output_lock(final: Path) -> Path | None:
    """The session directory whose ``session.lock`` a writer of ``final`` must hold, if any.

    An output named like a generation makes its directory a session directory;
    an existing session directory is another session's, and its lock is what
    keeps dsh from appending there while a file appears.  ``None`` for a plain
    directory (or one that does not exist, which staging then reports).
    """
    d = Path(final).parent
    if not d.is_dir():
        return None
    if parse_generation(Path(final).name) is not None or is_session_directory(d):
        return d
    return None


def make_directory(path: Path, owner: FileOwner | None) -> None:
    """Create an output directory (0700, as dsh creates session directories), given to ``owner``."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError as exc:
        if path.is_dir():
            return
        raise io_failure(exc, path, "create the output directory") from exc
    except OSError as exc:
        raise io_failure(exc, path, "create the output directory") from exc
    if owner is not None and owner.ids is not None:
        try:
            os.chown(path, *owner.ids, follow_symlinks=False)
        except OSError:
            pass  # not root: the directory stays the runner's, like the file will


def leftover_note(path: Path) -> str:
    """What a report says of a leftover a publication or a sweep removed."""
    return f"removed leftover {path.name}"


def sweep(directory: Path) -> list[Path]:
    """Remove leftovers in a session directory no writer is going to publish into (under its lock).

    For a session that is current already (a killed ``migrate`` had published
    before dropping its staged name).  The lock is taken only when a leftover is
    there; a held lock means its holder may still be using them, so they stay.
    """
    try:
        if not any(is_staging_name(n) for n in os.listdir(directory)):
            return []
    except OSError:
        return []
    with session_lock(directory):
        return atomic.cleanup_leftovers(directory, problems=[])


class Publication:
    """One file made visible under ``final``: see the module docstring for the steps.

    Use it as a context manager; inside, :meth:`stage` gives the staged file to
    write and :meth:`publish` ends the transaction.  Leaving the block without
    publishing (or with an exception) removes the staged file and releases the lock.
    """

    def __init__(
        self,
        final: Path,
        *,
        replace: bool = False,
        lock: Path | None = None,
        session_id: str | None = None,
        source: Path | None = None,
        changed: str | None = None,
        owner: FileOwner | Literal["source"] | None = None,
        migration: bool = False,
        successor: bool = False,
        taken: str | None = None,
        cleanup: bool = True,
        overwrite: bool = False,
    ) -> None:
        """
        ``replace``: rename over an existing ``final`` (in-place work) instead of
        linking a new name.  ``lock``: the session directory whose lock to hold.
        ``source``: the file whose identity must not change (``changed`` is the
        refusal, naming it).  ``owner``: what the published file receives
        (``"source"``: the source's owner, group and mode; ``None``: the staging
        0600, the runner's).  ``migration``: stage under dsh's migration name.
        ``successor``: ``final`` is the next generation of the session in its
        directory (otherwise a generation name next to another generation is
        refused).  ``taken``: the refusal when ``final`` exists.  ``cleanup``:
        remove leftovers first (off for a companion file inside another
        publication's lock).  ``overwrite``: an existing regular ``final`` (never a
        session generation) is renamed over, as ``replace`` does; an absent one is
        linked as usual (``export --force`` refreshing an earlier export).
        """
        self.final = Path(final)
        self.directory = self.final.parent
        self.replace = replace
        self.lock_dir = Path(lock) if lock is not None else None
        self.session_id = session_id
        self.source = Path(source) if source is not None else None
        self.changed = changed or f"the source changed while {self.final.name} was written; nothing was published"
        self._owner_spec = owner
        self.owner: FileOwner | None = owner if isinstance(owner, FileOwner) else None
        self.migration = migration
        self.successor = successor
        self.taken = taken or atomic.taken_message(self.final)
        self.cleanup = cleanup
        self.overwrite = overwrite
        self.before: Identity | None = None
        self.removed: list[Path] = []
        self.warnings: list[str] = []
        self.published = False
        self._lock: SessionLock | None = None
        self._staged: StagedFile | None = None

    # ------------------------------------------------------------------ steps

    def __enter__(self) -> Publication:
        try:
            self._open()
        except BaseException:
            self._close()
            raise
        return self

    def _open(self) -> None:
        source_stat = self._stat_source()
        if self._owner_spec == "source":
            self.owner = FileOwner.like(source_stat) if source_stat is not None else None
        if self.lock_dir is not None:
            ids = self.owner.ids if self.owner is not None else None
            self._lock = acquire_session_lock(self.lock_dir, session_id=self.session_id, owner=ids)
        if self.cleanup and self.directory.is_dir():
            locked = self.lock_dir is not None and _same_dir(self.lock_dir, self.directory)
            self.removed = atomic.cleanup_leftovers(self.directory, session_locked=locked, problems=self.warnings)
            if locked:
                self.removed += self._remove_orphans()
        self._check_target()
        if self.source is not None:
            self.before = source_identity(self.source)

    def _remove_orphans(self) -> list[Path]:
        """Companions of ``final`` left without it by a run killed between their links (under the lock).

        Only for a new file: an in-place rewrite's main file is always there.  A
        companion that cannot be removed is named in the warnings; publishing then
        refuses to overwrite it, naming it.
        """
        if self.replace or os.path.lexists(self.final):
            return []
        removed: list[Path] = []
        for name in companion_names(self.final.name):
            path = self.directory / name
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                self.warnings.append(f"{io_failure(exc, path, 'remove a record left without its file').message}: {path}")
                continue
            removed.append(path)
        if removed:
            atomic.fsync_dir(self.directory)
        return removed

    def _stat_source(self) -> os.stat_result | None:
        if self.source is None:
            return None
        try:
            return os.stat(self.source)
        except OSError as exc:
            raise io_failure(exc, self.source, "stat the source") from exc

    def _check_target(self) -> None:
        if self.overwrite and not self.replace and os.path.lexists(self.final):
            try:
                st = os.lstat(self.final)
            except OSError as exc:
                raise io_failure(exc, self.final, "stat the file to replace") from exc
            if not stat.S_ISREG(st.st_mode):
                raise Refused("is not a regular file: refusing to replace it", path=str(self.final))
            if parse_generation(self.final.name) is not None:
                raise Refused("is a session log: refusing to replace it with an export", path=str(self.final))
            self.replace = True
            return
        if self.replace:
            try:
                st = os.lstat(self.final)
            except OSError as exc:
                raise io_failure(exc, self.final, "stat the file to replace") from exc
            if stat.S_ISLNK(st.st_mode):
                raise Refused("is a symbolic link: refusing to replace it (give the path of the file it points to)",
                              path=str(self.final))
            return
        if os.path.lexists(self.final):
            raise Refused(self.taken, path=str(self.final))
        if not self.successor and parse_generation(self.final.name) is not None:
            try:
                others = sorted(n for n in os.listdir(self.directory) if parse_generation(n) is not None)
            except OSError:
                others = []
            if others:
                raise Refused(
                    f"{self.directory} already holds the session generation {others[0]}: publishing "
                    f"{self.final.name} there would change which log dsh reads; write into a new directory",
                    path=str(self.final),
                )

    def stage(self) -> StagedFile:
        """Create the staged file (once) in the target directory under the one naming scheme."""
        if self._staged is None:
            if self.migration:
                affixes = atomic.migration_affixes(self.final.name.endswith(".zstd"))
            else:
                affixes = atomic.temp_affixes(self.final)
            self._staged = atomic.stage_file(self.directory, *affixes)
        return self._staged

    @property
    def staged(self) -> StagedFile:
        if self._staged is None:
            raise ValueError("nothing is staged yet")
        return self._staged

    def publish(
        self,
        verify: Callable[[Path], None] | None = None,
        *,
        companions: Sequence[tuple[Path, bytes]] = (),
    ) -> Path:
        """Own, sync, verify, re-check the source, publish the companions, then link (or rename) into place.

        ``verify`` receives the staged path once it is synced and raises to refuse.
        ``companions`` (path, bytes) are files that must exist only once the main
        file is ready and before its name appears (see the module docstring):
        each gets the main file's owner and mode; one that holds exactly its bytes
        already (a killed earlier run published it) is kept.
        """
        staged = self.staged
        if self.owner is not None:
            self._apply_owner(staged)
        staged.sync_and_close()
        self.verify_staged(staged, verify)
        self.check_source()
        for path, data in companions:
            self._publish_companion(path, data)
        if self.replace:
            atomic.replace_atomically(staged, self.final)
        else:
            atomic.publish_no_overwrite(staged, self.final, taken=self.taken)
        self.published = True
        return self.final

    def _publish_companion(self, path: Path, data: bytes) -> None:
        if _holds(path, data):
            return
        with Publication(path, owner=self.owner, cleanup=False) as companion:
            companion.stage().write(data)
            companion.publish()
        self.warnings.extend(companion.warnings)

    def verify_staged(self, staged: StagedFile, verify: Callable[[Path], None] | None) -> None:
        """The staged file holds every byte written (cheap, every writer), then the writer's own check."""
        try:
            size = os.lstat(staged.path).st_size
        except OSError as exc:
            raise io_failure(exc, staged.path, "stat the staged file") from exc
        if size != staged.size:
            raise Refused(f"staged file holds {size} bytes, {staged.size} were written; nothing was published",
                          path=str(self.final))
        if verify is not None:
            try:
                verify(staged.path)
            except DshlogError as exc:
                # a source that changed meanwhile explains the refusal: say so, naming the source (exit 5),
                # not what the read-back of the staged file happened to trip over
                self.check_source()
                if exc.path == str(staged.path):
                    exc.path = str(self.final)  # the staged name is gone with the refusal; name what was not published
                raise

    def check_source(self) -> None:
        """Refuse (naming the source) when it is no longer the file that was read."""
        if self.source is not None and self.before is not None:
            try:
                now = source_identity(self.source)
            except IOFailure:
                now = None
            if now != self.before:
                raise Refused(self.changed, path=str(self.source))

    def _apply_owner(self, staged: StagedFile) -> None:
        """Owner, group, then mode (a chown may clear set-id bits), through the descriptor."""
        owner = self.owner
        assert owner is not None
        fd = staged.fileno()
        try:
            st = os.fstat(fd)
            if owner.ids is not None and (st.st_uid, st.st_gid) != owner.ids:
                self._chown(fd, st, owner)
            os.fchmod(fd, owner.mode)
        except OSError as exc:
            raise io_failure(exc, staged.path, "set the owner and mode of the staged file") from exc

    def _chown(self, fd: int, st: os.stat_result, owner: FileOwner) -> None:
        assert owner.uid is not None and owner.gid is not None
        try:
            os.fchown(fd, owner.uid, owner.gid)
            return
        except PermissionError:
            pass
        kept = f"uid {st.st_uid}"
        try:
            os.fchown(fd, -1, owner.gid)  # a member of the group may still give the file its group
        except PermissionError:
            kept += f", gid {st.st_gid}"
        self.warnings.append(
            f"{self.final}: kept owner {kept} (the source is {owner.uid}:{owner.gid}; only root can give a file away)"
        )

    # ------------------------------------------------------------------ ending

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._close()

    def _close(self) -> None:
        try:
            if self._staged is not None and not self.published:
                self._staged.discard()
        finally:
            if self._lock is not None:
                if self.published or _holds_log(self._lock.path.parent):
                    self._lock.release()  # a session's lock file stays, as dsh never deletes one
                else:  # nothing published where no log is: no lock file (or directory) of this run's making stays
                    self._lock.withdraw()
                self._lock = None

    @property
    def notes(self) -> list[str]:
        """What the transaction did besides publishing (for a report)."""
        return [leftover_note(p) for p in self.removed]


def _holds(path: Path, data: bytes) -> bool:
    """True when ``path`` is a regular file (not a link) holding exactly ``data``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        with open(fd, "rb", closefd=False) as fh:
            return fh.read(len(data) + 1) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def _holds_log(directory: Path) -> bool:
    """Whether ``directory`` holds a generation (when it cannot be listed: assume it does)."""
    try:
        return any(parse_generation(name) is not None for name in os.listdir(directory))
    except OSError:
        return True


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


__all__ = [
    "Identity",
    "FileOwner",
    "Publication",
    "is_session_directory",
    "leftover_note",
    "make_directory",
    "output_lock",
    "source_identity",
    "sweep",
]
