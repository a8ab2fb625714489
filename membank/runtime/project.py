"""One open project: its bank folders, index, write lock, settings and model, as every domain sees them.

`Project` holds state and nothing about channels; the Python API's methods (one per channel) are
attached from the catalog by `runtime/api.py`. The embedding model's code and the sync are imported
when first used: every CLI command imports this module, and `membank --help` opens no project."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..files.lock import LOCK_FILE, WriteLock
from ..files.project import BANK_DIR, ProjectError, global_home, read_project
from ..files.scan import BankRoot
from ..files.settings import SettingsCache
from ..files.write import check_inside
from ..index import Index, IndexError_, StorageError
from ..index.failures import storage_error
from ..index.unsynced import unsynced
from ..kernel import errors
from ..kernel.background import Worker
from ..kernel.errors import MembankError
from ..kernel.log import log

if TYPE_CHECKING:
    from ..index.embed import Embedder, ModelInfo

INDEX_FILE = "index.db"


class Project:
    """A project's bank (and the writer's global bank), kept in step with its index."""

    def __init__(self, root: Path, home: Path | None = None):
        from ..index import embed
        from . import schemas  # noqa: F401  # every domain's tables registered before the index opens

        try:
            self.info = read_project(root)
            self.home = Path(home).expanduser() if home is not None else global_home()
        except ProjectError as e:
            raise MembankError(errors.INVALID_ARGUMENT, str(e), {"field": "path"}) from None
        except (OSError, RuntimeError) as e:  # the global bank folder cannot be made (or `~` has no home)
            raise MembankError(errors.DB_ERROR, f"the global bank folder cannot be used: "
                               f"{getattr(e, 'strerror', None) or e}") from None
        self.root = self.info.root
        self.project = BankRoot("project", self.root / BANK_DIR)
        self.global_ = BankRoot("global", self.home)
        # the index, its lock and their WAL files are written too: a `.index` link out of the bank is refused
        check_inside(self.project.path, self.project.path / ".index" / INDEX_FILE, self.project.source)
        # one writer per project, across threads and processes: files and index change together (lock.py)
        self.write_lock = WriteLock.at(self.project.path / ".index" / LOCK_FILE)
        with self.write_lock:  # another process may be creating or repairing the index right now
            try:
                self.index = Index(self.project.path / ".index" / INDEX_FILE)
            except (IndexError_, StorageError, OSError) as e:
                raise storage_error(e) from None
        self.settings_files = SettingsCache(self.home / "settings.yaml", self.project.path / "settings.yaml",
                                            f"{BANK_DIR}/settings.yaml")
        self.model = embed.ModelHandle()
        self.memo: dict[str, Any] = {}  # per-domain caches for as long as the project is open
        self.watcher: Any = None  # the running membank.shells.watch.Watcher, if one is attached
        self.background = Worker(f"membank-later-{self.info.id}")  # writes done off the caller's path
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []  # the sidecar's notifications
        self.closers: list[Callable[[], None]] = []  # run first by close(): working memory archives its sessions

    @property
    def roots(self) -> list[BankRoot]:
        return [self.project, self.global_]

    def close(self) -> None:
        from ..domains.indexing import strongfill

        # the strong model's fills first (memories', then passages' windows: stopped even for a project gone,
        # whose closers are dropped): each drops its batch after the chunk inside the model, waited for
        strongfill.stop(self)
        closers, self.closers = self.closers, []
        if closers and not self.present():  # gone from disk: archiving would make part of the folder again
            log.warning("the project %s is gone from disk; its working memory is dropped, not archived", self.info.id)
            closers = []
        for closer in closers:  # before the writer closes: they may still write (archived episodes)
            try:
                closer()
            except Exception:  # one closer's failure is not the next one's, nor the close's
                log.exception("a closer failed while closing the project")
        self.background.close()  # the writes accepted off the caller's path are finished first
        if self.watcher is not None:
            self.watcher.stop()
        self.index.close()

    def present(self) -> bool:
        """Whether the project's `.writenow/project.yaml` is still on disk (of any kind: a project.yaml
        made a folder is a hostile file, which doctor reports, not a vanished project)."""
        return os.path.lexists(self.project.path / "project.yaml")

    def check_present(self) -> None:
        """NOT_FOUND (project) when the project's `.writenow/project.yaml` is gone from disk (the folder
        deleted under a running sidecar): nothing may be written, not even a folder (which would recreate
        part of a bank without its project.yaml), and no answer may come from an index of what is gone.
        One stat per call; the project answers again as soon as the folder is back."""
        if not self.present():
            # no absolute path in an answer (the app knows where it opened the project)
            raise MembankError(errors.NOT_FOUND, f"the project `{self.info.name}` is gone: its .writenow/ folder"
                               " no longer holds project.yaml; nothing was read or written (restore the folder,"
                               " or open the project where it is now)",
                               {"projectId": self.info.id})

    def renew_index(self) -> bool:
        """After the index file was deleted under this process (`.writenow/.index/` removed to reset it): a
        new one made from the files, as `index:sync` makes it (DB_ERROR when something else is where the
        folder was, CONFLICT when a link is: never read through), instead of writing on into the unlinked file
        nobody else reads. One stat while the file is there; True when it was made again."""
        index = self.index
        if index.path is None or index.on_disk():
            return False
        if os.path.lexists(index.path):  # another process's file there now (the next write's transaction
            # follows it), unless it, or `.index` itself, is a link: refused, never read nor written through
            check_inside(self.project.path, index.path, self.project.source)
            if not unsynced(index.path):
                return False
        from ..domains.indexing.refresh import refresh

        with self.write_lock:
            if index.on_disk() or (os.path.lexists(index.path) and not unsynced(index.path)):
                return False  # another thread or process made it meanwhile
            check_inside(self.project.path, index.path, self.project.source)  # `.index` a link now: refused
            log.warning("the index of %s was deleted; making it again from the files", self.info.id)
            refresh(self)  # a new file, or the one another process opened without a sync (it follows it)
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait for the writes accepted off the caller's path (`memory:episode:record`) to finish."""
        return self.background.drain(timeout)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Tell whoever listens (the sidecar sends it as a notification): `episode:failed`, …"""
        for listener in list(self.listeners):
            try:
                listener(method, {"projectId": self.info.id, **params})
            except Exception:  # one listener's failure is not another's, nor the writer's
                log.exception("a listener failed on %s", method)

    def model_info(self) -> ModelInfo | str:
        """The embedding model's name, dimension and vocabulary, read from its files (no load), or why
        it cannot be used."""
        from ..index import embed

        try:
            return self.model.info(embed.resolve(self.settings_files.embedding()["model"], self.root))
        except embed.ModelUnavailable as e:
            return str(e)

    def embedder(self) -> Embedder | None:
        """The embedding model settings name (the bundled one by default), loaded once; None if it cannot load."""
        from ..index import embed

        return self.model.get(embed.resolve(self.settings_files.embedding()["model"], self.root))

    def sync_one(self, root: BankRoot, rel: str) -> None:
        """Re-read one file of a bank now (after a write): the index never waits for a later sync."""
        from ..domains.indexing.sync import sync_paths

        sync_paths(self.index, root, [rel], self.embedder)
        self._strong_after_sync()

    def sync_many(self, root: BankRoot, rels: list[str]) -> None:
        """Re-read the files of one write together (a capture review's cards): one sync, not one per file."""
        from ..domains.indexing.sync import sync_paths

        sync_paths(self.index, root, rels, self.embedder)
        self._strong_after_sync()

    def _strong_after_sync(self) -> None:
        """What a sync left without a strong vector is embedded in the background (when a long-lived
        process started the tier: domains/indexing/strongfill.py)."""
        from ..domains.indexing import strongfill

        strongfill.kick(self)

    def file_of(self, source: str) -> Path | None:
        """The file a citation names (`.writenow/…` or `global:…`); None for a citation of neither bank."""
        for root in self.roots:
            rel = root.rel(source)
            if rel is not None:
                return root.file(rel)
        return None
