"""What the watcher (watch.py) knows of the manuscript: the folders of its documents, watched one by one
(outside the bank folders), which file events there are chapter saves, and the sync that follows one
(domains/manuscript/sync.py reads only the documents whose size or mtime moved)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # the sidecar imports this module for `split` alone
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers.api import BaseObserver

log = logging.getLogger("membank.shells.watch")
SUFFIXES = (".md", ".txt")


def watch_folders(bank: Any, observer: BaseObserver, handler: FileSystemEventHandler,
                  events: list[type[FileSystemEvent]], in_bank: Callable[[str], bool],
                  already: frozenset[str] = frozenset()) -> set[str]:
    """Schedule a watch on the project folder and on each manuscript document's folder that is not in a
    bank folder nor `already` watched (project.yaml may name a chapter in a new folder); the folders
    newly watched."""
    from ..domains.manuscript.sync import documents
    from ..index.store import reading

    try:
        root = os.path.realpath(bank.root)
        folders = {root}
        with reading():  # the watcher's thread reads on a connection of its own, never the writer's
            folders |= {os.path.dirname(os.path.realpath(bank.root / doc)) for doc in documents(bank)}
        # a link leading out of the project is never read (a warning): its target's folder is not watched
        folders = {f for f in folders if f == root or f.startswith(root.rstrip(os.sep) + os.sep)}
    except Exception:
        log.warning("membank watch: the manuscript's folders could not be listed; the periodic scan covers them",
                    exc_info=True)
        return set()
    watched = set()
    for folder in sorted(f for f in folders - already if not in_bank(f) and os.path.isdir(f)):
        try:
            observer.schedule(handler, folder, recursive=False, event_filter=events)
            watched.add(folder)
        except OSError:
            log.warning("membank watch: cannot watch %s; the periodic scan covers it", folder)
    return watched


def unwatch(observer: BaseObserver, folders: set[str], events: list[type[FileSystemEvent]]) -> None:
    """Drop the watches of `folders` (scheduled by `watch_folders`), those a folder's removal stopped too."""
    from watchdog.observers.api import ObservedWatch

    for folder in folders:
        try:
            observer.unschedule(ObservedWatch(folder, recursive=False, event_filter=events))
        except KeyError:
            pass  # never watched (a folder not there when the order named it)


def is_chapter(path: str, folders: set[str]) -> bool:
    """Whether a file event's path is a manuscript document in a watched folder (not a temporary file)."""
    from ..files.scan import is_temporary

    name = os.path.basename(path)
    return (os.path.dirname(path) in folders and not name.startswith(".") and not is_temporary(name)
            and name.lower().endswith(SUFFIXES))


def sync(bank: Any) -> list[str]:
    """The manuscript documents whose passages changed."""
    from ..domains.manuscript.sync import sync as sync_manuscript

    return sync_manuscript(bank).changed


def split(sources: list[str]) -> tuple[list[str], list[str]]:
    """The watcher's changed sources as (the bank's, cited `.writenow/…` or `global:…`; the manuscript
    documents'), for `index:changed` and `chapter:changed`."""
    from ..files.scan import GLOBAL_PREFIX, PROJECT_PREFIX

    bank = [s for s in sources if s.startswith((PROJECT_PREFIX, GLOBAL_PREFIX))]
    return bank, [s for s in sources if not s.startswith((PROJECT_PREFIX, GLOBAL_PREFIX))]


def capture_state(bank: Any, document: str) -> dict[str, Any] | None:
    """The document's capture state for `chapter:changed` (docs/capture.md): its pending ops stale once the
    chapter's text changed; None when it cannot be read now (the notification still goes out)."""
    if bank is None:
        return None
    from ..domains.capture.flows import document_state
    from ..index.store import reading

    try:
        with reading():  # on the watcher's thread: a read connection of its own, never the writer's
            return document_state(bank, document)
    except Exception:  # a notification never fails because its extra cannot be computed
        log.warning("the capture state of %s cannot be read", document, exc_info=True)
        return None
