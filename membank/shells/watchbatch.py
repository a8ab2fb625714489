"""A watcher's batch: the files, settings and manuscript changes seen since the last one, and applying
them to the index in one transaction (a full stat scan where only one can tell what changed)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..domains.indexing import strongfill, sync as sync_
from ..files.scan import BankRoot
from . import chapterwatch

if TYPE_CHECKING:
    from ..runtime.project import Project as Bank

BURST = 200  # more files than this in one batch: a full stat scan runs as well


@dataclass
class Batch:
    files: dict[str, tuple[BankRoot, str]] = field(default_factory=dict)  # absolute path -> (bank root, rel)
    settings: set[str] = field(default_factory=set)
    full: bool = False
    manuscript: bool = False  # a manuscript document (or project.yaml's story order) changed

    def __bool__(self) -> bool:
        return bool(self.files or self.settings or self.full or self.manuscript)


@dataclass(frozen=True)
class Applied:
    changed: list[str]  # the sources whose index entries changed, sorted
    full_scans: int  # full stat scans it ran


def apply(bank: Bank, batch: Batch, real_roots: dict[str, str]) -> Applied:
    """Apply one batch to `bank`'s index in one transaction (`real_roots`: each bank's folder, links resolved)."""
    changed: set[str] = set(batch.settings)
    scans = 0
    by_root: dict[str, tuple[BankRoot, list[str]]] = {}
    full = batch.full or len(batch.files) > BURST
    for path, (root, rel) in batch.files.items():
        if not _plain_path(path, real_roots[root.bank], rel):
            full = True  # a link: the scan decides whether it stays inside the bank
            continue
        by_root.setdefault(root.bank, (root, []))[1].append(rel)
    embedder = getattr(bank, "embedder", None)
    with bank.write_lock:
        if batch.settings:
            bank.settings_files.forget()  # re-read even where the file system's clock is coarse (a renewed index too)
        if bank.renew_index():  # `.index/` deleted under the watcher: made again from the files, this batch's too
            changed.update(root.source(rel) for root, rels in by_root.values() for rel in rels)
            return Applied(sorted(changed), 1)
        index = bank.index
        with index.transaction():
            if full:
                scans += 1
                changed.update(sync_.sync(index, bank.roots, embedder=embedder).changed)
            gone: list[str] = []
            for root, rels in by_root.values():
                changed.update(sync_.sync_paths(index, root, rels, embedder).changed)
                gone.extend(root.source(rel) for rel in rels if not os.path.lexists(root.file(rel)))
            if gone and not full:
                # a removed file the index never held (a link out of the bank) may leave a stale diagnostic
                stale = {d.source for d in index.diagnostics()} & set(gone)
                if stale:
                    scans += 1
                    changed.update(sync_.sync(index, bank.roots, embedder=embedder).changed)
            index.drop_moved_tombstones(changed)
            if full or batch.manuscript:
                changed.update(chapterwatch.sync(bank))
    strongfill.kick(bank)  # the batch's new entries get their strong vectors in the background
    return Applied(sorted(changed), scans)


def _plain_path(path: str, real_root: str, rel: str) -> bool:
    """True when no link is involved between the bank folder and the file."""
    try:
        return os.path.realpath(path) == os.path.join(real_root, *rel.split("/"))
    except OSError:
        return False
