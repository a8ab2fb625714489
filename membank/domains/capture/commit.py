"""Writing the files of one `capture:review`: every file or none, each durable before the proposal
file records the decisions.

Each file goes in atomically (a temporary file, fsynced, swapped in only if the file still holds
what review read: files/exchange.py), the files of one folder side by side, several at a time (a
disk commits fsyncs that arrive together at once). Each folder is fsynced once, when all its files
are in; the proposal file is written last, after that, so it never records a decision whose files
are not on disk. A crash midway leaves each file whole, old or new, and the proposal file as it
was; review wrote the call's record first (intent.py), and the next review finishes the call from it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...files.exchange import Changed, fsync_dir, replace_unchanged
from ...files.write import atomic_write
from ...index.failures import storage_error
from ...kernel import errors
from ...kernel.errors import MembankError
from ..contract import Bank

TOGETHER = 8  # files written at a time: enough for the disk to take their fsyncs as one


@dataclass(frozen=True)
class Write:
    path: Path
    source: str
    root: Any  # the bank root to sync, None for the proposal file
    rel: str
    original: bytes | None  # None: a new file
    new: bytes
    ops: tuple[str, ...] = ()  # the ops whose changes it holds (intent.py names them after a crash)


def _put(w: Write) -> MembankError | None:
    """`w` written, its folder not fsynced yet; the failure, if any."""
    try:
        if w.original is None:
            atomic_write(w.path, w.new, exclusive=True, sync_dir=False)  # (it makes the folders)
        else:
            replace_unchanged(w.path, w.new, w.original, sync_dir=False)
    except (Changed, FileExistsError):
        return MembankError(errors.CONFLICT, f"{w.source} was changed on disk during the review; the "
                            "writer's version stays; nothing was written")
    except OSError as e:
        return storage_error(e, w.source)
    return None


def _put_all(writes: list[Write]) -> list[MembankError | None]:
    if len(writes) < 2:
        return [_put(w) for w in writes]
    with ThreadPoolExecutor(min(TOGETHER, len(writes))) as pool:
        return list(pool.map(_put, writes))


def _undo(done: list[Write]) -> list[Write]:
    """Each file of `done` put back; those that could not be (a disk error, or an editor's save kept beside
    the file): what they hold is not known."""
    stuck = []
    for w in reversed(done):
        try:
            if w.original is None:
                w.path.unlink(missing_ok=True)  # (removed meanwhile: put back as well)
            else:
                replace_unchanged(w.path, w.original, w.new)
        except Changed as e:  # an editor saved meanwhile: the writer's version stays (unless it had to be
            if e.kept is not None:  # kept beside the file, in the never-seen case exchange.py describes)
                stuck.append(w)
        except OSError:
            stuck.append(w)
    return stuck[::-1]


def _unknown(failure: MembankError, stuck: list[Write]) -> MembankError:
    """DB_ERROR naming, in `details.unknownState`, the files a failed put-back left as they may be: the
    call never says nothing was written when a file may hold its change (`_undo` could not put it back)."""
    names = ", ".join(w.source for w in stuck)
    why = failure.message.removesuffix("; nothing was written")
    return MembankError(errors.DB_ERROR, f"{why}; and {names} could not be put back as "
                        f"{'it was' if len(stuck) == 1 else 'they were'}: check {'it' if len(stuck) == 1 else 'them'}, "
                        "it may hold this call's change", {**failure.details, "unknownState": [w.source for w in stuck]})


def _folders(done: list[Write]) -> dict[Path, None]:
    """The folders to fsync: each written file's; for a new file also each one above it up to its bank's
    root (its `mkdir` may have made them, and a folder made is on disk once the one holding it is fsynced)."""
    out: dict[Path, None] = {}
    for w in done:
        out[w.path.parent] = None
        if w.original is None:
            for folder in w.path.parent.parents:
                if w.root.path not in (folder, *folder.parents):
                    break
                out[folder] = None
    return out


def commit(bank: Bank, writes: list[Write]) -> None:
    """Every file written, or none: a failure puts back the files already written (DB_ERROR with
    `details.unknownState` naming those that could not be). The files of the banks first, their folders
    fsynced, then the proposal file; then one index sync per bank, whose own failure after a failed write
    is not the answer (the write's is)."""
    banked = [w for w in writes if w.root is not None]
    last = [w for w in writes if w.root is None]
    outcomes = _put_all(banked)
    done = [w for w, failed in zip(banked, outcomes) if failed is None]
    failure = next((f for f in outcomes if f is not None), None)
    if failure is None:
        for folder in _folders(done):
            fsync_dir(folder)
        for w in last:
            failure = _put(w)
            if failure is not None:
                break
            fsync_dir(w.path.parent)
            done.append(w)
    stuck = _undo(done) if failure is not None else []
    roots = {id(w.root): w.root for w in done if w.root is not None}
    try:
        with bank.index.transaction():  # one sync per bank, not one per card
            for key, root in roots.items():
                bank.sync_many(root, [w.rel for w in done if id(w.root) == key])
    except Exception:
        if failure is None:
            raise
        # the write's failure is the answer (with the files it may have left): never lost to the index's,
        # which the next sync makes level with the files
    if failure is not None:
        raise _unknown(failure, stuck) if stuck else failure
