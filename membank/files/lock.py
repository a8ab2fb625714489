"""The write lock: one writer per bank at a time, across threads and processes.

Every write (memory files, settings, the journal, the index: syncs and watcher batches included)
runs under `Bank.write_lock`. It is two locks taken in one order, so no two writers can wait on
each other: first a thread lock shared by every Bank of that folder in this process, then,
by the outermost holder only, an exclusive lock on a file (`.writenow/.index/write.lock`) that
other processes take too. A writer waits for both (`MEMBANK_LOCK_WAIT` seconds, 30 by default)
and then gives up with DB_ERROR, having written nothing.

The file lock is `flock` on POSIX and `msvcrt.locking` on Windows; both are released by the
operating system when the process dies, so a killed writer never leaves the bank locked. Where
neither exists, or the file system refuses file locks (ENOLCK: NFS without lockd; EINVAL, ENOSYS,
EOPNOTSUPP), only the thread lock applies (and SQLite's own busy timeout between processes); that
is logged once per process.

A lock file deleted while it is opened and locked (`.index/` removed to reset the index) would exclude
nobody who opens the path afterwards: a writer checks, once it holds the lock, that its file is still the
one at the path, and locks the one there now otherwise.
"""

from __future__ import annotations

import errno
import os
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType

from ..kernel import env, errors
from ..kernel.errors import MembankError
from ..kernel.log import log

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None  # type: ignore[assignment]

LOCK_FILE = "write.lock"
DEFAULT_WAIT = 30.0
WAIT_ENV = "MEMBANK_LOCK_WAIT"  # seconds; tests make it short


# flock's answers meaning "this file system has no file locks", not "another process holds it"
NO_FILE_LOCK = frozenset(getattr(errno, n) for n in ("ENOLCK", "EINVAL", "ENOSYS", "EOPNOTSUPP", "ENOTSUP")
                         if hasattr(errno, n))
_warned = threading.Event()


class NoFileLock(Exception):
    """The file system cannot lock this file: only the thread lock applies."""


def wait_seconds() -> float:
    """How long a writer waits for the lock: $MEMBANK_LOCK_WAIT, else 30 s."""
    return env.seconds(WAIT_ENV, DEFAULT_WAIT)


def _try_lock(fd: int) -> bool:
    """Take the file lock without waiting; False when another process holds it, NoFileLock when
    the file system has no file locks."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as e:
            if e.errno in NO_FILE_LOCK:
                raise NoFileLock(e.strerror or e.__class__.__name__) from None
            raise
    elif msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # one byte at offset 0 stands for the whole bank
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EDEADLK):  # held by another process
                return False
            raise
    return True


def _is_at(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is still the file at `path` (not deleted, nor replaced)."""
    try:
        held, there = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def _unlock(fd: int) -> None:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
        elif msvcrt is not None:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    finally:
        os.close(fd)  # closing releases it anyway


class WriteLock:
    """Reentrant in a thread; exclusive across threads and processes. Use `WriteLock.at(path)`."""

    _shared: "weakref.WeakValueDictionary[str, WriteLock]" = weakref.WeakValueDictionary()
    _shared_lock = threading.Lock()

    def __init__(self, path: Path):
        self.path = path
        self._thread = threading.RLock()
        self._depth = 0  # changed only by the thread holding `_thread`
        self._fd: int | None = None

    @classmethod
    def at(cls, path: Path) -> "WriteLock":
        """The lock for this lock file: one object per file in a process, so two Banks of one
        project never wait on each other from the same thread."""
        key = os.path.normcase(os.path.realpath(path))  # two spellings of one file: one lock
        with cls._shared_lock:
            lock = cls._shared.get(key)
            if lock is None:
                lock = cls._shared[key] = cls(path)
            return lock

    def acquire(self, wait: float | None = None) -> None:
        wait = wait_seconds() if wait is None else wait
        deadline = time.monotonic() + wait
        got = self._thread.acquire(timeout=wait) if wait > 0 else self._thread.acquire(blocking=False)
        if not got:
            raise self._busy(wait)
        try:
            if self._depth == 0:
                self._fd = self._lock_file(deadline, wait)
        except BaseException:
            self._thread.release()
            raise
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                _unlock(fd)
        finally:
            self._thread.release()

    def __enter__(self) -> "WriteLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def _lock_file(self, deadline: float, wait: float) -> int | None:
        for _ in range(100):
            fd = self._lock_once(deadline, wait)
            if fd is None or _is_at(fd, self.path):
                return fd
            # the file was deleted (`.index/` removed) while it was opened and locked: a lock on it excludes
            # nobody who opens the path now, so the file there now is locked instead
            _unlock(fd)
        raise MembankError(errors.DB_ERROR, "the write lock in .index/ is deleted as fast as it is made; nothing "
                           "was written, try again")

    def _lock_once(self, deadline: float, wait: float) -> int | None:
        if fcntl is None and msvcrt is None:
            return None
        if not self.path.parent.parent.is_dir():  # the bank folder is gone: never made again without project.yaml
            raise MembankError(errors.NOT_FOUND, f"the bank folder {self.path.parent.parent} is gone; nothing was "
                               "written", {"path": str(self.path.parent.parent)})
        if os.path.islink(self.path.parent):  # `.index` made a link (after a deletion): never written through
            raise MembankError(errors.CONFLICT, f"{self.path.parent.parent.name}/{self.path.parent.name} is a link; "
                               "membank writes its lock only in the folder itself, so nothing was written (replace "
                               "the link with a folder)", {"source": f"{self.path.parent.parent.name}/{self.path.parent.name}"})
        try:
            self.path.parent.mkdir(exist_ok=True)
            # never through a link: the lock file is created inside .index/, nowhere else
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0),
                         0o644)
        except OSError as e:
            raise MembankError(errors.DB_ERROR, f"could not open the write lock in .index/: "
                               f"{e.strerror or e.__class__.__name__}") from None
        pause = 0.001
        try:
            while not _try_lock(fd):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._busy(wait)
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)  # quick for short writes, gentle on the CPU for long ones
        except NoFileLock as e:
            os.close(fd)
            if not _warned.is_set():
                _warned.set()
                log.warning("the file system refuses file locks (%s); writers of this process still take turns, "
                            "other processes rely on the index's own locking", e)
            return None
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _busy(wait: float) -> MembankError:
        return MembankError(errors.DB_ERROR, f"another writer held this bank for {wait:g} s; nothing was written, "
                            "try again", {"lockWait": wait})
