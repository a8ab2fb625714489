"""membank: a file-first memory bank for an AI writing assistant."""

from __future__ import annotations

from pathlib import Path

from .runtime.project import Bank
from .kernel.errors import MembankError

__version__ = "0.1.0"
__all__ = ["Bank", "MembankError", "open", "__version__"]


def open(path: str | Path = ".", *, home: str | Path | None = None, sync: bool = True) -> Bank:  # noqa: A001
    """The bank of the project at or above `path` (`~` expanded), its index brought up to date unless
    `sync` is False. Raises MembankError only: NOT_FOUND when no project is there or above,
    INVALID_ARGUMENT when its project.yaml is unusable, DB_ERROR when the index cannot be opened
    or written (another writer held it past the wait, a damaged disk)."""
    from .runtime.boundary import locate

    bank = Bank(locate(path), Path(home).expanduser() if home is not None else None)
    if sync:
        try:
            bank.sync()
        except MembankError:
            bank.close()
            raise
    return bank
