"""Opening one file so that it can neither hang membank nor flood it: ordinary files only, up to a cap.

A FIFO opened for reading blocks until a writer comes; a link to `/dev/zero` never ends. So every
file membank reads goes through `read_regular`: opened without blocking (O_NONBLOCK, where the
platform has it), checked with fstat to be an ordinary file (the scan checked too, but the file can
be swapped between the scan and the open), and read up to a cap. What can go wrong is said in plain
words for a diagnostic on that one file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

# O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer (a no-op for ordinary
# files). O_NOCTTY: a terminal device never becomes our controlling terminal. Windows has neither.
_FLAGS = (os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
          | getattr(os, "O_CLOEXEC", 0))


class Unreadable(Exception):
    """The path exists but membank will not or cannot read it; `message` says why, for a writer (the
    caller adds what follows: the file is skipped, the defaults are used, …)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def kind_of(mode: int) -> str | None:
    """None for an ordinary file; else what it is, in plain words."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def not_regular(what: str) -> str:
    return f"this is {what}, not an ordinary file (membank reads only ordinary files)"


LOOP = "this link leads back to itself (a link loop), so there is no file to read"


def why(e: OSError) -> str:
    """Plain words for an error opening or reading one file (never its path: str(e) would carry it)."""
    if e.errno == errno.ELOOP:
        return LOOP
    if e.errno in (errno.EACCES, errno.EPERM):
        return "membank is not allowed to read this file (check its permissions)"
    if e.errno == errno.ENAMETOOLONG:
        return "the path of this file is too long for the system to open; move it to a shorter path"
    if e.errno == errno.EISDIR:
        return not_regular("a folder")
    if e.errno in (errno.ENXIO, errno.ENODEV, getattr(errno, "EOPNOTSUPP", -1)):
        return not_regular("a socket or a device")
    return f"this file cannot be read ({e.strerror or e.__class__.__name__})"


def read_regular(path: Path | str, cap: int | None, *, follow_links: bool = True) -> tuple[bytes, os.stat_result]:
    """The first `cap` bytes of an ordinary file (all of it when `cap` is None; never more than its size
    at open + 1, so a growing file cannot keep the read going), and its stat at open. Without
    `follow_links`, a link is refused (where the platform has O_NOFOLLOW).

    Raises FileNotFoundError or NotADirectoryError when it is gone, Unreadable for anything else."""
    try:
        fd = os.open(path, _FLAGS if follow_links else _FLAGS | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError as e:
        raise Unreadable(why(e)) from None
    try:
        st = os.fstat(fd)
        what = kind_of(st.st_mode)
        if what is not None:
            raise Unreadable(not_regular(what))
        limit = st.st_size + 1 if cap is None else min(st.st_size + 1, cap)
        chunks, got = [], 0
        while got < limit:
            chunk = os.read(fd, limit - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), st
    except OSError as e:
        raise Unreadable(why(e)) from None
    finally:
        os.close(fd)


def content_hash(data: bytes) -> str:
    """What the index compares to know a file changed: a 128-bit BLAKE2b of its bytes."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()
