"""Safe publication of files: staged temp, fsync, link-without-overwrite, rollback.

Every writing command (migrate, repair, fork) must leave either the complete new
file under its final name or nothing at all, even when the disk fills up or the
process dies half way.  The recipe is dsh's own: write a same-directory temporary
file created exclusively with mode 0600, ``fsync`` it, then make it visible under
the final name with ``link`` (which fails instead of replacing an existing file),
``fsync`` the directory and drop the temporary name.  Appends are rolled back by
truncation to the previous length.

Temporary names are recognisable (``.<final name>.dshlog-<16 hex>.tmp``, or dsh's
``session.migration.<16 hex>.jsonl[.zstd].tmp`` for migrations) so that a later
run of any writer can remove what a killed run left behind.  These are the
primitives; :mod:`dshlog.write.transaction` puts them together for every writer.  Every ``OSError`` is reported as
:class:`IOFailure` with the path and a one-line reason.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path
from collections.abc import Callable

from ..errors import IOFailure, Refused
from ..protocol.layout import is_migration_staging_name, is_staging_name, staging_affixes

try:  # POSIX only
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]  # off POSIX the module is None, tested before use


_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def io_failure(exc: OSError, path: Path | str, action: str) -> IOFailure:
    """One-line :class:`IOFailure` for ``exc`` (``cannot write: No space left on device``)."""
    reason = exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)
    return IOFailure(f"cannot {action}: {reason}", path=str(path))


def temp_affixes(final: Path) -> tuple[str, str]:
    """Prefix and suffix of the temporary name for a file published as ``final``."""
    return staging_affixes(final.name)


def migration_affixes(compressed: bool) -> tuple[str, str]:
    """dsh's own staging name for a migration successor (``session.migration.<hex>.jsonl[.zstd].tmp``)."""
    return staging_affixes(".zstd" if compressed else "", migration=True)


def is_leftover(name: str) -> bool:
    """True for a temporary name this project (or a dsh migration) stages files under."""
    return is_staging_name(name)


def _write_all(fd: int, data: bytes | memoryview, path: Path, action: str) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as exc:
            raise io_failure(exc, path, action) from exc
        if n <= 0:
            raise io_failure(OSError(errno.EIO, "write made no progress"), path, action)
        view = view[n:]


def fsync_dir(directory: Path) -> None:
    """Make a directory entry change (link, rename, unlink) durable."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise io_failure(exc, directory, "open the directory to sync it") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):  # some filesystems cannot sync dirs
            raise io_failure(exc, directory, "sync the directory") from exc
    finally:
        os.close(fd)


class StagedFile:
    """An exclusively created 0600 temporary file that is either published or removed.

    Use it as a context manager: leaving the block with an exception (or without
    publishing) deletes the temporary file, so a failure never leaves it behind.
    A failed :meth:`write` removes the file at once.
    """

    __slots__ = ("path", "_fd", "size")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self.size = 0

    @property
    def closed(self) -> bool:
        return self._fd is None

    def fileno(self) -> int:
        """The open descriptor (owner and mode are applied through it, never through the name)."""
        if self._fd is None:
            raise ValueError("staged file is closed")
        return self._fd

    def write(self, data: bytes) -> None:
        """Append ``data``; on failure the temporary file is discarded and IOFailure raised."""
        if self._fd is None:
            raise ValueError("staged file is closed")
        try:
            _write_all(self._fd, data, self.path, "write the staged file")
        except IOFailure:
            self.discard()
            raise
        self.size += len(data)

    def sync_and_close(self) -> None:
        """``fsync`` and close (idempotent); the content is durable afterwards."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            self._unlink()
            raise io_failure(exc, self.path, "sync the staged file") from exc
        os.close(fd)

    def discard(self) -> None:
        """Close and delete the temporary file (idempotent, never raises for a missing file)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        self._unlink()

    def _unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError:
            pass  # leftover; cleanup_leftovers() will find it by name

    def __enter__(self) -> StagedFile:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # Published files were renamed/linked away and their temp name removed already;
        # anything still here is unpublished and must go.
        if exc_type is not None or self.path.exists() or self._fd is not None:
            self.discard()


def stage_file(directory: Path, prefix: str, suffix: str = ".tmp") -> StagedFile:
    """Create ``directory/<prefix><16 hex><suffix>`` exclusively, mode 0600, holding its ``flock``.

    ``prefix``/``suffix`` come from :func:`temp_affixes` or
    :func:`migration_affixes`, so the name is recognisable as a leftover later.
    The file is returned only once this process holds its ``flock`` and the name
    still refers to the inode it created: between the exclusive create and the
    lock, another run's :func:`cleanup_leftovers` may take the new file for a
    dead one, and then a fresh name is tried.
    """
    directory = Path(directory)
    last_exc: OSError | None = None
    for _ in range(8):
        path = directory / f"{prefix}{secrets.token_hex(8)}{suffix}"
        try:
            fd = os.open(path, _CREATE_FLAGS, 0o600)
        except FileExistsError as exc:
            last_exc = exc
            continue
        except OSError as exc:
            raise io_failure(exc, path, "create a temporary file") from exc
        try:
            os.fchmod(fd, 0o600)  # a restrictive umask could only lower it; make it exact
        except OSError:
            pass
        if _mark_in_use(fd, path):
            return StagedFile(path, fd)
        os.close(fd)  # a cleaner holds it or removed it already; the name is the cleaner's to drop
        last_exc = FileExistsError(errno.EEXIST, "the new temporary file was taken for a leftover")
    assert last_exc is not None
    raise io_failure(last_exc, directory, "create a unique temporary file")


def _mark_in_use(fd: int, path: Path) -> bool:
    """Hold a ``flock`` on a temp file while it is written: a live writer's file is never a leftover.

    The kernel drops the lock when the process dies (even by SIGKILL), which is
    exactly when the file becomes a leftover that :func:`cleanup_leftovers` may
    remove.  False when someone else holds the lock or the name no longer refers
    to ``fd``'s inode (a cleaner removed it before this process locked it).
    """
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            return False
        return True  # a filesystem without flock: nothing to mark with
    try:
        held, current = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino)


def _lock_if_dead(path: Path) -> int | None:
    """A descriptor holding the ``flock`` of a temp file no live process holds; None when one does.

    The caller removes the name while it holds this lock, so a writer that
    created the file a moment ago and locks it now finds either the lock taken
    or the name gone (see :func:`_mark_in_use`), never a file removed under it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    if fcntl is None:  # pragma: no cover
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            os.close(fd)
            return None
    return fd


def _finish(temp: StagedFile | Path) -> Path:
    if isinstance(temp, StagedFile):
        temp.sync_and_close()
        return temp.path
    path = Path(temp)
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        _quiet_unlink(path)
        raise io_failure(exc, path, "sync the staged file") from exc
    return path


def _quiet_unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def taken_message(final: Path) -> str:
    """The refusal for a final name that is taken (by a file, a directory or a symlink)."""
    return f"refusing to overwrite existing file {final}"


def publish_no_overwrite(temp: StagedFile | Path, final: Path, *, taken: str | None = None) -> Path:
    """Make ``temp`` visible as ``final`` only if ``final`` does not exist yet.

    fsync file, ``link(temp, final)``, fsync the directory, unlink ``temp``.  An
    existing ``final`` is never touched (a symlink there is not followed):
    :class:`Refused` names it, in the words ``taken`` when given.  On any failure
    the temporary file is removed and ``final`` is either absent or complete.
    """
    final = Path(final)
    path = _finish(temp)
    try:
        os.link(path, final)
    except FileExistsError:
        _quiet_unlink(path)
        raise Refused(taken or taken_message(final), path=str(final)) from None
    except OSError as exc:
        _quiet_unlink(path)
        raise io_failure(exc, final, "publish the new file") from exc
    try:
        fsync_dir(final.parent)
    finally:
        _quiet_unlink(path)
    return final


def replace_atomically(temp: StagedFile | Path, final: Path) -> Path:
    """Replace ``final`` with ``temp`` in one step (only for rewrites the user asked for).

    fsync file, ``rename`` over ``final``, fsync the directory.  Readers see the old
    or the new content, never a mixture.
    """
    final = Path(final)
    path = _finish(temp)
    try:
        os.replace(path, final)
    except OSError as exc:
        _quiet_unlink(path)
        raise io_failure(exc, final, "replace the file") from exc
    fsync_dir(final.parent)
    return final


def append_durably(path: Path, data: bytes) -> int:
    """Append ``data`` to an existing file and fsync; all or nothing.

    On failure (disk full, quota) the file is truncated back to its previous length
    before :class:`IOFailure` is raised.  Returns the new length.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise io_failure(exc, path, "open for appending") from exc
    try:
        try:
            before = os.fstat(fd).st_size
        except OSError as exc:
            raise io_failure(exc, path, "stat") from exc
        try:
            _write_all(fd, data, path, "append")
            try:
                os.fsync(fd)
            except OSError as exc:
                raise io_failure(exc, path, "sync the appended data") from exc
        except IOFailure:
            try:
                os.ftruncate(fd, before)
                os.fsync(fd)
            except OSError as exc:
                raise IOFailure(
                    f"append failed and the file could not be truncated back to {before} bytes: "
                    f"{exc.strerror or exc}",
                    path=str(path),
                ) from exc
            raise
        return before + len(data)
    finally:
        os.close(fd)


def cleanup_leftovers(
    directory: Path,
    *,
    keep: Callable[[Path], bool] | None = None,
    session_locked: bool = True,
    problems: list[str] | None = None,
) -> list[Path]:
    """Remove temporary files interrupted runs of any writer left in ``directory``; return them.

    dshlog's own staged files carry a ``flock`` while their writer lives, so one
    that nobody holds is a dead run's and goes, wherever it is.  dsh stages a
    migration under ``session.migration.*`` without such a mark, holding
    ``session.lock`` instead: those names are removed only when the caller holds
    that directory's ``session.lock`` (``session_locked``).  ``keep`` can exempt
    paths.  A leftover that cannot be removed (a sticky directory, another
    owner's file) is named in ``problems`` when given, and otherwise raises
    :class:`IOFailure`.
    """
    directory = Path(directory)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        raise io_failure(exc, directory, "list the directory") from exc
    for entry in entries:
        if not is_leftover(entry.name):
            continue
        if not session_locked and is_migration_staging_name(entry.name):
            continue
        path = Path(entry.path)
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        if keep is not None and keep(path):
            continue
        fd = _lock_if_dead(path)
        if fd is None:
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failure = io_failure(exc, path, "remove a leftover temporary file")
            if problems is None:
                raise failure from exc
            problems.append(f"{failure.message}: {path}")
            continue
        finally:
            os.close(fd)
        removed.append(path)
    if removed:
        fsync_dir(directory)
    return sorted(removed)


__all__ = [
    "StagedFile",
    "append_durably",
    "cleanup_leftovers",
    "fsync_dir",
    "io_failure",
    "is_leftover",
    "migration_affixes",
    "publish_no_overwrite",
    "replace_atomically",
    "stage_file",
    "taken_message",
    "temp_affixes",
]
