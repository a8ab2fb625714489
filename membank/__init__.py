"""membank: a file-first memory bank for an AI writing assistant."""

from __future__ import annotations

from pathlib import Path

from .bank import Bank
from .errors import MembankError

__version__ = "0.1.0"
__all__ = ["Bank", "MembankError", "open", "__version__"]


def open(path: str | Path = ".", *, home: str | Path | None = None, sync: bool = True) -> Bank:  # noqa: A001
    """The bank of the project at or above `path`, its index brought up to date unless `sync` is False."""
    from .files.project import find_root

    bank = Bank(find_root(Path(path)), Path(home) if home is not None else None)
    if sync:
        bank.sync()
    return bank
