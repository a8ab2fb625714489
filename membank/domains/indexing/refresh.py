"""`index:sync`: bring the index level with the files (everything, or from scratch)."""

from __future__ import annotations

import os
from typing import Any

from ...files import write as write_files
from ...files.project import BANK_DIR
from ...files.scan import SECTIONS
from ...kernel import cancel, clock, errors
from ...kernel.errors import MembankError
from ..contract import Bank
from . import strongfill
from .sync import Progress, sync


def refresh(bank: Bank, rebuild: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """One sync of both banks under the write lock; `rebuild` starts the index from an empty file.

    A sync canceled or past its deadline stops at its next file and rolls back (kernel/cancel.py). A
    rebuild can stop only before it begins: it drops the old index first, and a rebuild stopped
    halfway would leave an index that answers nothing until the next sync."""
    with bank.write_lock:
        now = clock.timestamp()
        rebuild = rebuild or _gone(bank)
        if not rebuild:
            # a sweep that is due rides on the sync's scan of the sections (the bulk of the files)
            temps: dict[str, list[str]] | None = {} if _sweep_due(bank, now) else None
            report = sync(bank.index, bank.roots, progress, bank.embedder, temps).to_api()
            if temps is not None:
                _sweep(bank, now, temps)
            _manuscript(bank)
            _kept(bank)
            strongfill.kick(bank)  # the strong tier after the static one, in the background
            return report
        if _sweep_due(bank, now):
            _sweep(bank, now, None)
        cancel.check()
        # the writer's connection held throughout: a read of another thread outside `reading()` waits for the whole
        # new index, never answers from it empty (the sync scans the files between the reset and the fill)
        with cancel.shielded(), bank.index.lock:
            bank.index.rebuild()
            report = sync(bank.index, bank.roots, progress, bank.embedder).to_api()
            _manuscript(bank)
        _kept(bank)
        strongfill.kick(bank)
        return report


def _gone(bank: Bank) -> bool:
    """Whether the index file was deleted since the project opened (`.writenow/.index/` removed under a
    sidecar): the sync starts a new file there, as a rebuild does, instead of filling the unlinked one
    nobody will read again. A file (or anything else) put where the folder was is DB_ERROR, untouched."""
    index = bank.index
    if index.path is not None and not index.on_disk() and os.path.islink(index.path):
        write_files.check_inside(bank.project.path, index.path, bank.project.source)  # a link: never followed
    if index.path is None or index.on_disk() or os.path.lexists(index.path):
        return False  # still there, or another index file there now (the sync's transaction follows it)
    folder = index.path.parent
    if os.path.lexists(folder) and not folder.is_dir():
        raise MembankError(errors.DB_ERROR, f"{BANK_DIR}/{folder.name} is not a folder (something else is in"
                           " its place): nothing was indexed; move it away and run `membank index` again")
    return True


def _kept(bank: Bank) -> None:
    """DB_ERROR when the index file was deleted or replaced while the sync wrote it (NOT_FOUND when the
    whole `.writenow/` went): what the sync wrote went into a file no longer on disk, so the sync did not
    happen (the next one starts a new file)."""
    if bank.index.on_disk():
        return
    if not bank.present():  # the whole bank went: the project is gone, as every later call says
        raise MembankError(errors.NOT_FOUND, f"the project's {BANK_DIR}/ folder was deleted while this sync ran; "
                           "nothing of it is kept (restore the folder, or open the project where it is now)",
                           {"projectId": bank.info.id})
    raise MembankError(errors.DB_ERROR, f"the index ({BANK_DIR}/.index/) was deleted or replaced while this"
                       " sync ran: what it wrote is lost; run `membank index` again")


def _manuscript(bank: Bank) -> None:
    """The manuscript's passages, level with its documents (domains/manuscript/sync.py): a document that
    cannot be read is a diagnostic there, never a failed sync."""
    from ..manuscript.sync import sync as sync_manuscript

    sync_manuscript(bank)


def _sweep_due(bank: Bank, now: float) -> bool:
    """Whether the temporary files a killed writer left (untouched for STALE_AFTER) are to be looked
    for: only a crash leaves one, so at most once per STALE_AFTER, not on every command's sync."""
    with bank.index.lock:  # the writer's connection: a read channel run outside `reading()` may hold it
        last = bank.index.get_meta("last_sweep")
    return last is None or not 0 <= now - float(last) < write_files.STALE_AFTER


def _sweep(bank: Bank, now: float, temps: dict[str, list[str]] | None) -> None:
    """The sweep of each bank: with `temps` (what the sync's scan saw under the sections), the walk
    covers only the bank's other folders."""
    for root in bank.roots:
        if temps is None:
            write_files.sweep_temps(root.path)
        else:
            write_files.sweep_temps(root.path, skip=SECTIONS, found=temps.get(root.bank, ()))
    with bank.index.lock:
        bank.index.set_meta("last_sweep", repr(now))
