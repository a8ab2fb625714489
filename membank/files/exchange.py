"""Replacing a file only if it is still what the caller read: an atomic swap, a look, a swap back.

A check of the file followed by a rename leaves a gap: an editor's save (temporary file + rename)
landing between the two would be replaced by a copy of the older text. Where the system can swap
two names atomically (Linux `renameat2(RENAME_EXCHANGE)`, macOS `renamex_np(RENAME_SWAP)`), the new
file is swapped in and what came out is compared with what the caller read; when it differs, an
editor saved meanwhile and the swap is undone, so the writer's save is what stays. Files are told
apart by inode number while membank holds each one open, so that no number is reused. Elsewhere the
file is checked again just before a plain rename (a gap of one system call remains).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import sys
from pathlib import Path
from typing import Callable

from .reader import Unreadable, read_regular
from ..kernel.log import log


TEMP_SUFFIX = ".membank-tmp"
KEPT_SUFFIX = ".membank-kept"  # not a temporary file: the sweep leaves it for the writer
# Swaps back allowed after a mismatch. Each extra one is needed only when yet another save lands
# within the microseconds between two system calls, so the bound is never reached in practice.
MAX_SWAPS = 64
# errno values that mean "this system or file system cannot swap": fall back to check + rename
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, getattr(errno, "ENOTSUP", -1), getattr(errno, "EOPNOTSUPP", -1)}
# renameat2 by system call number, for a C library without the wrapper (glibc < 2.28, some musl)
_RENAMEAT2_NR = {"x86_64": 316, "amd64": 316, "aarch64": 276, "arm64": 276, "riscv64": 276, "i386": 353,
                 "i686": 353, "armv7l": 382, "armv6l": 382, "ppc64le": 357, "ppc64": 357, "s390x": 347}
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # linux/fs.h
_RENAME_SWAP = 2  # macOS sys/stdio.h


class Changed(Exception):
    """The file was no longer what the caller read; the newest save is at the path, nothing was replaced.

    `kept` names a file (next to it) holding a save that could not be put back, in the
    never-seen case of more saves landing than MAX_SWAPS allows."""

    def __init__(self, kept: Path | None = None):
        super().__init__("changed")
        self.kept = kept


Swap = Callable[[bytes, bytes], int]


def _linux_swap() -> Swap | None:
    import ctypes
    import platform

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int
        return lambda a, b: fn(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE)
    number = _RENAMEAT2_NR.get(platform.machine().lower())
    if number is None:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    return lambda a, b: syscall(ctypes.c_long(number), ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(a),
                                ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(b), ctypes.c_uint(_RENAME_EXCHANGE))


def _macos_swap() -> Swap | None:
    import ctypes

    try:
        libc = ctypes.CDLL("/usr/lib/libSystem.B.dylib", use_errno=True)
        fn = libc.renamex_np  # macOS 10.12 and later
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return lambda a, b: fn(a, b, _RENAME_SWAP)


@functools.cache
def _find_swap() -> Swap | None:
    """The swap, looked for at the first write that needs it: a reading command never loads ctypes."""
    if sys.platform.startswith("linux"):
        return _linux_swap()
    if sys.platform == "darwin":
        return _macos_swap()
    return None  # Windows and the rest: check + rename


def can_swap() -> bool:
    """Whether this system offers an atomic swap at all (a file system may still refuse it)."""
    return _find_swap() is not None


def swap(a: Path, b: Path) -> bool:
    """Exchange the two names atomically. False when the system or file system cannot; other
    failures (one of them missing, …) raise OSError."""
    found = _find_swap()
    if found is None:
        return False
    if found(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    import ctypes  # loaded by _find_swap

    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code))


def temp_path(path: Path) -> Path:
    import secrets  # here: `random` and its imports are for writes, not every command

    return path.parent / f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def write_temp(path: Path, data: bytes) -> tuple[Path, os.stat_result]:
    """`data` in a fresh temporary file beside `path`, fsynced, with `path`'s permissions."""
    tmp = temp_path(path)
    try:
        mode = os.stat(path).st_mode & 0o7777  # a rewrite keeps the file's permissions
    except OSError:
        mode = 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # the umask must not narrow them
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp, st


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not supported on this platform (Windows)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _same(path: Path, expected: bytes) -> bool:
    """Whether the file holds exactly `expected` (read no further than one byte past its length)."""
    try:
        return read_regular(path, len(expected) + 1)[0] == expected
    except (FileNotFoundError, NotADirectoryError, Unreadable):
        return False


class _Held:
    """A file membank has placed or holds, kept open until the protocol ends.

    An open file's inode cannot be freed, so no later save can be given its number: comparing
    `(st_dev, st_ino)` is then a comparison of files, not of recycled numbers (ext4 hands a freed
    inode number to the very next file created)."""

    def __init__(self, path: Path):
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        self.fd: int | None = None
        try:
            self.fd = os.open(path, flags)
        except FileNotFoundError:
            raise
        except OSError:  # a link or a file membank may not read: only its number can be compared
            pass
        st = os.lstat(path) if self.fd is None else os.fstat(self.fd)
        self.identity = (st.st_dev, st.st_ino)
        self.regular = stat.S_ISREG(st.st_mode)

    def holds(self, expected: bytes) -> bool:
        if self.fd is None or not self.regular:
            return False
        chunks: list[bytes] = []
        left = len(expected) + 1
        offset = 0
        while left > 0:
            chunk = os.pread(self.fd, left, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            left -= len(chunk)
        return b"".join(chunks) == expected

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _at(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def replace_unchanged(path: Path, data: bytes, expected: bytes, *, sync_dir: bool = True) -> str:
    """Put `data` at `path` if the file there still holds `expected`; else raise Changed, leaving the
    newest file at `path`. Returns "swap" or "recheck": how the file was guarded.

    Without `sync_dir` the folder is not fsynced after a replacement that went through: a caller writing
    many files in one folder fsyncs it once when all are in place (the file itself is fsynced always)."""
    tmp, _ = write_temp(path, data)
    opened: list[_Held] = []  # every file placed or held stays open until the end (see _Held)
    try:
        try:
            mine = _Held(tmp)  # nobody else knows the temporary name: this is the file just written
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        opened.append(mine)
        return _replace(path, tmp, expected, mine, opened, sync_dir)
    finally:
        for held in opened:
            held.close()


def _replace(path: Path, tmp: Path, expected: bytes, mine: _Held, opened: list[_Held], sync_dir: bool) -> str:
    try:
        swapped = swap(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, FileNotFoundError):
            raise Changed() from None  # removed meanwhile: a removal is a change too
        raise
    if not swapped:
        try:
            if not _same(path, expected):  # the best without a swap: a gap of one rename remains
                raise Changed()
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        if sync_dir:
            fsync_dir(path.parent)
        return "recheck"
    # `tmp` now holds what was at `path`; nobody else knows its name
    try:
        displaced = _Held(tmp)
    except FileNotFoundError:
        # another program removed it (membank's own sweep waits for the write lock this writer
        # holds): what it held cannot be looked at any more, and the new file stays
        log.warning("the replaced copy of %s vanished before it was checked", path.name)
        if sync_dir:
            fsync_dir(path.parent)
        return "swap"
    opened.append(displaced)
    if displaced.holds(expected):
        tmp.unlink()
        if sync_dir:
            fsync_dir(path.parent)
        if _at(path) != mine.identity:
            # a save landed after the swap: it replaced membank's version, and it stays
            raise Changed()
        return "swap"
    kept = _swap_back(path, tmp, mine, displaced, opened)
    fsync_dir(path.parent)
    raise Changed(kept)


def _swap_back(path: Path, tmp: Path, placed: _Held, held: _Held, opened: list[_Held]) -> Path | None:
    """Undo the swap so the newest save is at `path`; `placed` is what we last put at `path`, `held`
    what `tmp` holds. A save landing between two swaps displaces `placed`; then swap again."""
    for _ in range(MAX_SWAPS):
        try:
            swapped = swap(tmp, path)
        except FileNotFoundError:  # the writer removed the file meanwhile: the removal is the newest act
            tmp.unlink()
            return None
        except OSError:
            _keep(path, tmp)
            raise
        if not swapped:  # the swap worked a moment ago: never unlink what `tmp` holds on a guess
            return _keep(path, tmp)
        came_out = _Held(tmp)
        opened.append(came_out)
        if came_out.identity == placed.identity:  # what we put there came back out: nothing newer landed
            tmp.unlink()
            return None
        placed, held = held, came_out  # a newer save came out: it goes back in on the next turn
    return _keep(path, tmp)


def _keep(path: Path, tmp: Path) -> Path:
    """Move a save that could not be put back where the writer (and no sweep) will find it."""
    import secrets

    kept = path.parent / f"{path.name}.{secrets.token_hex(4)}{KEPT_SUFFIX}"
    os.replace(tmp, kept)  # never unlink a save that may be the newest
    log.warning("%s kept aside: membank could not put an editor's save back in place", kept.name)
    return kept
