"""An index file another process left at the index's path without syncing it (it opened the project
with `sync=False` after `.index/` was deleted): a process whose own file was deleted fills it rather than
follow it as it is (runtime/project.py `renew_index`)."""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from .store import SCHEMA_VERSION


def unsynced(path: Path) -> bool:
    """Whether `path` holds an index of this version that was never synced (no `last_sync`); False for
    anything else there (nothing, a link, another version, a file that cannot be read)."""
    if os.path.islink(path):
        return False
    try:
        other = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return False
    try:
        return bool(other.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION
                    and not other.execute("SELECT 1 FROM meta WHERE key = 'last_sync'").fetchall())
    except apsw.Error:
        return False
    finally:
        other.close()
