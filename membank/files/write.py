"""Writing bank files: atomic replace, free file names, slugs and new ids."""

from __future__ import annotations

import os
import re
import secrets
import string
import unicodedata
from pathlib import Path

TEMP_SUFFIX = ".membank-tmp"
_ID_ALPHABET = string.ascii_lowercase + string.digits


def new_id(prefix: str = "m") -> str:
    return f"{prefix}-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))


def slug(text: str, limit: int = 60) -> str:
    """Letters and digits of any script kept, everything else `-`."""
    text = unicodedata.normalize("NFKC", text).lower()
    out = "".join(ch if ch.isalnum() else "-" for ch in text)
    out = re.sub(r"-+", "-", out).strip("-")[:limit].strip("-")
    return out or "memory"


def free_path(folder: Path, base: str) -> Path:
    """`folder/base.md`, or `base-2.md`, `base-3.md` … when taken."""
    candidate = folder / f"{base}.md"
    n = 2
    while candidate.exists():
        candidate = folder / f"{base}-{n}.md"
        n += 1
    return candidate


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Temporary file, fsync, rename: readers see the old file or the new one, never a torn one.

    With `exclusive`, refuses to replace a file that exists (FileExistsError)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    try:
        mode = os.stat(path).st_mode & 0o7777  # a rewrite keeps the file's permissions
    except OSError:
        mode = 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # the umask must not narrow them
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            os.link(tmp, path)  # fails if the name was taken meanwhile
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
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
