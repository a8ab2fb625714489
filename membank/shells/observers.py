"""Choosing how to watch: the platform's native events, or polling where events may never arrive.

Linux reports close-after-write (inotify); a network or host-shared drive may deliver no events at
all, so the watcher polls there; a system out of watches says so in words a writer can act on."""

from __future__ import annotations

import errno
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from ..files.scan import BankRoot

_NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p", "drvfs", "ceph", "glusterfs", "lustre",
    "gpfs", "davfs", "fuse.sshfs", "sshfs", "fuse.rclone", "fuse.s3fs", "fuse.gcsfuse", "fuse.davfs2", "fuse.gvfsd-fuse",
    "fuse.glusterfs", "fuse.ceph", "fuse.smbnetfs",
}


def _unescape_mount(field_: str) -> str:
    return field_.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def network_filesystem(path: Path | str, mounts: str = "/proc/self/mounts") -> str | None:
    """The file-system type of `path` when it is a network or host-shared one (Linux), else None."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    try:
        real = os.path.realpath(path)
    except OSError:
        return None
    best, best_type = "", None
    for parts in mounts:
        if len(parts) < 3:
            continue
        point = _unescape_mount(parts[1])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, best_type = point, parts[2]
    return best_type if best_type in _NETWORK_FS else None


def native_observer() -> tuple[BaseObserver, bool]:
    """The platform's native observer, and whether it reports close-after-write (inotify)."""
    if sys.platform.startswith("linux"):
        from watchdog.observers.inotify import InotifyObserver

        return InotifyObserver(generate_full_events=True), True
    from watchdog.observers import Observer

    return Observer(), False


def explain(e: OSError) -> str:
    if e.errno == errno.ENOSPC:
        return ("the system's limit on watched folders is reached (on Linux raise fs.inotify.max_user_watches, "
                "e.g. `sysctl fs.inotify.max_user_watches=524288`)")
    if e.errno == errno.EMFILE:
        return ("the system's limit on file watchers is reached (on Linux raise fs.inotify.max_user_instances, "
                "or close other programs that watch files)")
    return f"native file events are not available here ({e.strerror or e.__class__.__name__})"


def count_dirs(path: str) -> int:
    """Folders under `path` (itself included) that a recursive native watch needs, links not followed
    (a list, not os.walk: os.walk recurses, and folders can be nested deeper than the recursion limit)."""
    total, todo = 0, [path]
    while todo:
        folder = todo.pop()
        total += 1
        try:
            with os.scandir(folder) as entries:
                todo.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
    return total


def watched_dirs(observer: BaseObserver) -> int | None:
    """How many folders the inotify emitters really watch (None when this watchdog does not say)."""
    try:
        return sum(len(e._inotify._active_callbacks_by_path) for e in observer.emitters)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return None


@dataclass(frozen=True)
class Opened:
    observer: BaseObserver
    mode: str  # "native" or "polling"
    note: str | None  # why it polls, when it does
    tracks_close: bool  # the events say when a writer closes a file (inotify)


def open_observer(prefixes: list[str], roots: list[BankRoot], handler: FileSystemEventHandler,
                  events: list[type[FileSystemEvent]], force_polling: bool, poll_interval: float) -> Opened:
    """A started observer on every existing folder of `prefixes` (the bank folders, `roots` in the same
    order): native events where they can work, polling (with the reason) where they cannot."""
    reason = "polling was asked for (MEMBANK_WATCH_POLLING or force_polling)" if force_polling else None
    if reason is None:
        for root in roots:
            fs = network_filesystem(root.path)
            if fs is not None:
                where = "the global bank" if root.bank == "global" else "the project's .writenow/ folder"
                reason = f"{where} is on a network or shared drive ({fs}), where change events may never arrive"
                break
    if reason is None:
        observer: BaseObserver | None = None
        try:
            observer, tracks_close = native_observer()
            _schedule(observer, prefixes, handler, events)
            observer.start()
            if tracks_close:
                _check_watches(observer, prefixes)
            return Opened(observer, "native", None, tracks_close)
        except (OSError, RecursionError) as e:  # RecursionError: watchdog walks folders recursively
            reason = explain(e) if isinstance(e, OSError) else "the folders are nested too deeply for native events"
            if observer is not None:
                _stop_quietly(observer)
    polling = PollingObserver(timeout=poll_interval)
    try:
        _schedule(polling, prefixes, handler, events)
        polling.start()
    except RecursionError:
        raise OSError(errno.ELOOP, "the folders are nested too deeply to be watched (about 900 levels at most); "
                      "run `membank index` after changes") from None
    return Opened(polling, "polling", f"watching by polling every {poll_interval:g} s: {reason}", False)


def _schedule(observer: BaseObserver, prefixes: list[str], handler: FileSystemEventHandler,
              events: list[type[FileSystemEvent]]) -> None:
    for prefix in prefixes:
        if os.path.isdir(prefix):
            observer.schedule(handler, prefix, recursive=True, event_filter=events)


def _check_watches(observer: BaseObserver, prefixes: list[str]) -> None:
    """watchdog silently skips sub-folders it cannot watch (the inotify limit): treat that as failure."""
    need = sum(count_dirs(prefix) for prefix in prefixes if os.path.isdir(prefix))
    for attempt in range(3):
        have = watched_dirs(observer)
        if have is None or have >= need:
            return
        time.sleep(0.1 * (attempt + 1))  # folders made meanwhile get their watches from the event thread
        need = sum(count_dirs(prefix) for prefix in prefixes if os.path.isdir(prefix))
    raise OSError(errno.ENOSPC, f"only {have} of {need} folders could be watched")


def _stop_quietly(observer: Any) -> None:
    try:
        observer.stop()
        if observer.is_alive():
            observer.join(timeout=5)
    except Exception:
        pass
