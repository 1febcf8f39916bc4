"""dsh's per-session write lock (``session.lock``), shared by every writing command.

dsh serialises writers of one session with a non-blocking ``flock(LOCK_EX)`` on a
0-byte ``session.lock`` in the session directory.  Taking the same lock before
dshlog writes anything (migrate, repair, fork into an existing directory) means a
running dsh and dshlog can never both append, and two dshlog runs cannot race.

Rules kept from dsh: the directory is created 0700 when absent; after locking,
the locked inode must still be the file at the path (a racing creator may have
replaced it), retried up to three times; releasing is closing the descriptor and
the file is never deleted (later lockers compare against its stable inode).
Readers never lock.

Added here: ``session.lock`` is opened with ``O_NOFOLLOW`` (and ``O_NONBLOCK``, so
a FIFO planted there cannot hang the open); a symlink or anything but a regular
file at that name is refused.  A directory or lock file this process creates can
be given to the session's owner, so a run as root does not leave a session its
owner's dsh can no longer lock.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

from ..errors import IOFailure, LockHeld, Refused, UsageError
from ..protocol.layout import LOCK_FILENAME, decode_segment
from ..protocol.texts import already_owned

try:  # POSIX only; dsh itself uses a kernel semaphore on Windows.
    import fcntl
except ImportError:  # pragma: no cover - exercised only on Windows
    fcntl = None  # type: ignore[assignment]  # off POSIX the module is None, tested before use

_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lock, as far as the platform tells (``/proc/locks`` on Linux)."""

    pid: int
    cmdline: str | None

    def describe(self) -> str:
        return f"pid {self.pid}" + (f" ({self.cmdline})" if self.cmdline else "")


class SessionLock:
    """A held ``session.lock``; :meth:`release` (or leaving the ``with``) frees it."""

    __slots__ = ("path", "_fd", "created", "made_dir")

    def __init__(self, path: Path, fd: int, *, created: bool = False, made_dir: bool = False) -> None:
        self.path = path
        self._fd: int | None = fd
        #: this lock created the lock file (and ``made_dir``: its directory)
        self.created = created
        self.made_dir = made_dir

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Close the descriptor, which drops the flock.  Idempotent; never unlinks."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def withdraw(self) -> None:
        """Release, first removing what taking the lock created (the lock file, its directory): a writer
        that published nothing leaves the directory as it found it.

        The file is unlinked while its flock is held and only if the name is still
        this inode; a locker that opened it meanwhile finds the name gone after
        the lock drops and starts over, as the rule above has every locker do.
        """
        fd = self._fd
        try:
            if fd is not None and self.created:
                held, now = os.fstat(fd), os.lstat(self.path)
                if (held.st_ino, held.st_dev) == (now.st_ino, now.st_dev):
                    os.unlink(self.path)
                    if self.made_dir:
                        os.rmdir(self.path.parent)  # only when empty: anything else there stays
        except OSError:
            pass  # what cannot be removed stays, as it would have without this
        finally:
            self.release()

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _session_name(directory: Path) -> str:
    """The session id a directory encodes, for messages; the name itself when it encodes none."""
    try:
        return decode_segment(directory.name)
    except UsageError:
        return directory.name


def _cmdline(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # One line for one-line errors: arguments may contain newlines (``python -c``).
    text = " ".join(" ".join(part.decode("utf-8", "replace").split()) for part in raw.split(b"\0") if part)
    if len(text) > 200:
        text = text[:199] + "…"
    return text or None


def find_holder(path: Path) -> Holder | None:
    """Best effort: the process holding a ``flock`` on ``path`` (Linux ``/proc/locks``).

    Returns ``None`` where the platform does not say (no ``/proc``, another pid
    namespace, a race with the holder's exit).
    """
    try:
        st = os.stat(path)
        text = Path("/proc/locks").read_text()
    except OSError:
        return None
    wanted_dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    inode_only: Holder | None = None
    for line in text.splitlines():
        fields = line.split()
        if "->" in fields:  # a blocked waiter, not the holder
            continue
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            pid = int(fields[4])
            dev_major, dev_minor, inode = fields[5].split(":")
        except ValueError:
            continue
        if int(inode) != st.st_ino or pid <= 0:
            continue
        holder = Holder(pid, _cmdline(pid))
        if f"{int(dev_major, 16):02x}:{int(dev_minor, 16):02x}" == wanted_dev:
            return holder
        inode_only = inode_only or holder  # overlay filesystems may report another device
    return inode_only


def _held_message(session_id: str, holder: Holder | None) -> str:
    text = already_owned(session_id)
    return f"{text} (held by {holder.describe()})" if holder else text


def _io(exc: OSError, path: Path, action: str) -> IOFailure:
    reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
    return IOFailure(f"cannot {action}: {reason}", path=str(path))


_OPEN_FLAGS = os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _give(path: Path, fd: int | None, owner: tuple[int, int] | None) -> None:
    """Best effort: hand a directory or lock file this process just created to ``owner`` (uid, gid)."""
    if owner is None:
        return
    try:
        if fd is not None:
            os.fchown(fd, *owner)
        else:
            os.chown(path, *owner, follow_symlinks=False)
    except OSError:
        pass  # not root: the creator keeps it, as it would without dshlog


def _open_lock_file(path: Path, owner: tuple[int, int] | None) -> tuple[int, bool]:
    """Open (creating if absent) the lock file itself: never through a symlink, never a FIFO or device.

    Returns the descriptor and whether this call created the file.
    """
    created = False
    try:
        try:
            fd = os.open(path, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            # No O_TRUNC: whatever an older writer left in the file stays untouched.
            fd = os.open(path, _OPEN_FLAGS)
        else:
            created = True
            _give(path, fd, owner)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{LOCK_FILENAME} is a symbolic link: refusing to lock the session through it", path=str(path)) from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise Refused(f"{LOCK_FILENAME} is not a regular file: refusing to lock the session through it", path=str(path)) from None
        raise _io(exc, path, "open the session lock") from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise _io(exc, path, "open the session lock") from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Refused(f"{LOCK_FILENAME} is not a regular file: refusing to lock the session through it", path=str(path))
    return fd, created


def acquire_session_lock(
    session_dir: Path, *, session_id: str | None = None, owner: tuple[int, int] | None = None
) -> SessionLock:
    """Take ``session_dir/session.lock`` without waiting.

    Raises :class:`LockHeld` with dsh's ``SessionAlreadyOwnedError`` text (plus the
    holder's pid and command line when known) if another descriptor holds it,
    :class:`Refused` when the name is a symlink or not a regular file, and
    :class:`IOFailure` when the file cannot be created or locked for another reason.
    ``session_id`` names the session in the message; by default it is decoded from
    the directory name.  ``owner`` (uid, gid) receives the directory and the lock
    file when this call creates them.
    """
    if fcntl is None:  # pragma: no cover
        raise IOFailure("session locking needs POSIX flock, which this platform lacks", path=str(session_dir))
    session_dir = Path(session_dir)
    sid = session_id if session_id is not None else _session_name(session_dir)
    path = session_dir / LOCK_FILENAME
    try:
        existed = session_dir.is_dir()
        session_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise _io(exc, session_dir, "create the session directory") from exc
    if not existed:
        _give(session_dir, None, owner)
    for _ in range(_ATTEMPTS):
        fd, created = _open_lock_file(path, owner)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise LockHeld(_held_message(sid, find_holder(path)), path=str(path)) from None
                raise _io(exc, path, "lock the session") from exc
            held = os.fstat(fd)
            try:
                current = os.lstat(path)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_ino, current.st_dev) == (held.st_ino, held.st_dev):
                return SessionLock(path, fd, created=created, made_dir=created and not existed)
        except BaseException:
            os.close(fd)
            raise
        # The locked inode is no longer the file at the path: start over against the new one.
        os.close(fd)
    raise LockHeld(_held_message(sid, None), path=str(path))


@contextmanager
def session_lock(
    session_dir: Path, *, session_id: str | None = None, owner: tuple[int, int] | None = None
) -> Iterator[SessionLock]:
    """``with session_lock(dir):`` — hold dsh's write lock for the block's duration."""
    lock = acquire_session_lock(session_dir, session_id=session_id, owner=owner)
    try:
        yield lock
    finally:
        lock.release()


__all__ = [
    "Holder",
    "LOCK_FILENAME",
    "SessionLock",
    "acquire_session_lock",
    "find_holder",
    "session_lock",
]
