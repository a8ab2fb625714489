"""Live sync: a watchdog observer feeds a debounced worker that keeps the index equal to the files.

Events only say *where* to look. The worker re-reads the named files and compares content hashes
(`sync.sync_paths`); folder events, bursts, a lost-event queue overflow and a periodic timer fall
back on a full stat scan (`sync.sync`). Every change goes through `bank.write_lock`, in one index
transaction per batch, so API writes and watcher batches never interleave. The watcher only ever
writes the index: never a writer's file. See docs/watcher.md for the behaviour and its limits.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import statistics
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import apsw
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from ..domains.indexing import sync as sync_
from ..files.scan import SECTIONS, BankRoot, is_ignored, is_temporary

if TYPE_CHECKING:
    from ..runtime.project import Bank

log = logging.getLogger("membank.shells.watch")
# watchdog warns when a folder made and filled at once gets its watch twice (mkdir -p; git checkout): harmless
warnings.filterwarnings("ignore", message="Callback with id .* already exists", category=RuntimeWarning)

POLLING_ENV = "MEMBANK_WATCH_POLLING"  # set to 1 to watch by polling even where native events work
BURST = 200  # more files than this in one batch: a full stat scan runs as well
HOLD = 2.0  # a file written but not yet closed is left alone this long after its last write...
HOLD_MAX = 10.0  # ...and never longer than this after its first write
RECONCILE_EVERY = 60.0  # the safety net: a full stat scan this often, even when all is quiet
POLL_INTERVAL = 1.0

# the events that can change what the index should hold; opens and read-closes (our own reads) are not among them
_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileModifiedEvent, FileClosedEvent, FileAttribEvent, FileDeletedEvent, FileMovedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
]
_NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p", "drvfs", "ceph", "glusterfs", "lustre",
    "gpfs", "davfs", "fuse.sshfs", "sshfs", "fuse.rclone", "fuse.s3fs", "fuse.gcsfuse", "fuse.davfs2", "fuse.gvfsd-fuse",
    "fuse.glusterfs", "fuse.ceph", "fuse.smbnetfs",
}


def _iso_now() -> str:
    return sync_.now_iso()


# -- overflow: watchdog reports a lost-event queue only in its log ------------------------------------


class _OverflowSpy(logging.Handler):
    """Turns watchdog's "queue overflowed" warning into a full reconcile of every running watcher."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.watchers: weakref.WeakSet[Watcher] = weakref.WeakSet()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            overflowed = "overflow" in record.getMessage().lower()
        except Exception:  # a malformed record is not our business
            return
        if overflowed:
            for watcher in list(self.watchers):
                watcher._overflowed()


_SPY = _OverflowSpy()
_SPY_LOCK = threading.Lock()


def _listen_for_overflow(watcher: Watcher) -> None:
    with _SPY_LOCK:
        logger = logging.getLogger("watchdog")
        if _SPY not in logger.handlers:
            logger.addHandler(_SPY)
        if not logging.getLogger("watchdog.observers.inotify_c").isEnabledFor(logging.WARNING):
            logger.setLevel(logging.WARNING)  # the overflow warning must be emitted for us to see it
        _SPY.watchers.add(watcher)


# -- choosing native events or polling --------------------------------------------------------------


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


def _native_observer() -> tuple[BaseObserver, bool]:
    """The platform's native observer, and whether it reports close-after-write (inotify)."""
    if sys.platform.startswith("linux"):
        from watchdog.observers.inotify import InotifyObserver

        return InotifyObserver(generate_full_events=True), True
    from watchdog.observers import Observer

    return Observer(), False


def _explain(e: OSError) -> str:
    if e.errno == errno.ENOSPC:
        return ("the system's limit on watched folders is reached (on Linux raise fs.inotify.max_user_watches, "
                "e.g. `sysctl fs.inotify.max_user_watches=524288`)")
    if e.errno == errno.EMFILE:
        return ("the system's limit on file watchers is reached (on Linux raise fs.inotify.max_user_instances, "
                "or close other programs that watch files)")
    return f"native file events are not available here ({e.strerror or e.__class__.__name__})"


def _count_dirs(path: str) -> int:
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


def _watched_dirs(observer: BaseObserver) -> int | None:
    """How many folders the inotify emitters really watch (None when this watchdog does not say)."""
    try:
        return sum(len(e._inotify._active_callbacks_by_path) for e in observer.emitters)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return None


# -- the watcher -------------------------------------------------------------------------------------


@dataclass
class _Batch:
    files: dict[str, tuple[BankRoot, str]] = field(default_factory=dict)  # absolute path -> (bank root, rel)
    settings: set[str] = field(default_factory=set)
    full: bool = False

    def __bool__(self) -> bool:
        return bool(self.files or self.settings or self.full)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher):
        self.watcher = watcher

    def dispatch(self, event: FileSystemEvent) -> None:
        try:
            self.watcher._on_event(event)
        except Exception:  # never let one odd event stop the observer thread
            log.exception("the watcher could not handle a file event; a full sync will follow")
            self.watcher._request_full()


class Watcher:
    """Keeps `bank`'s index equal to its files (project and global bank) until stopped.

    `on_change(sources)` is called from the watcher's thread after each applied batch with the
    sorted citations whose index entries changed (settings files included, by their source).
    """

    def __init__(self, bank: Bank, on_change: Callable[[list[str]], None] | None = None, debounce: float = 0.1, *,
                 force_polling: bool | None = None, poll_interval: float = POLL_INTERVAL,
                 reconcile_every: float | None = RECONCILE_EVERY):
        self.bank = bank
        self.on_change = on_change
        self.debounce = max(0.0, float(debounce))
        self.max_wait = max(0.5, 5 * self.debounce)  # a steady stream of events still flushes this often
        if force_polling is None:
            force_polling = os.environ.get(POLLING_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")
        self.force_polling = force_polling
        self.poll_interval = poll_interval
        self.reconcile_every = reconcile_every
        # longest prefix first, so a global bank inside the project (odd, but possible) maps right
        self._roots = sorted(((os.path.abspath(str(r.path)), r) for r in bank.roots), key=lambda x: -len(x[0]))
        self._cond = threading.Condition()
        self._pending = _Batch()
        self._first = 0.0  # when the oldest pending event came
        self._last = 0.0  # when the newest one came
        self._writing: dict[str, tuple[float, float]] = {}  # written, not closed yet: path -> (first, last write)
        self._tracks_close = False
        self._stopping = False
        self._running = False
        self._observer: BaseObserver | None = None
        self._thread: threading.Thread | None = None
        self._mode = "polling" if force_polling else "native"
        self._note: str | None = None
        self._last_change: str | None = None
        self._batches = 0  # applied batches, for tests and benchmarks that wait for the watcher to settle
        self._busy = False  # a batch is being applied
        self.overflows = 0  # event-queue overflows seen (each one answered by a full stat scan)
        self.full_scans = 0  # full stat scans run (the first reconcile included)
        self._retry_at = 0.0  # after a failed batch: not before this
        self._failures = 0  # failed batches in a row
        self._seen = 0.0  # when the observer last handed over any event
        self._real = {root.bank: os.path.realpath(root.path) for root in bank.roots}

    # -- the contract ----------------------------------------------------------------------------

    def start(self) -> None:
        """Watch at once, then reconcile (a full sync) in the background before applying events."""
        if self._thread is not None:
            if self._stopping:
                raise RuntimeError("this watcher was stopped; a Watcher runs once, make a new one")
            return  # already running
        self._observer = self._open_observer()
        _listen_for_overflow(self)
        self._running = True
        self.bank.watcher = self
        self._thread = threading.Thread(target=self._run, name="membank-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching, apply what is already pending (the in-flight sync finishes), and return."""
        observer, self._observer = self._observer, None
        if observer is not None:
            # let events already on their way reach the worker (a save just before quitting): wait until
            # the observer's queue is empty and no event came for 50 ms, a second at most
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                if not getattr(observer.event_queue, "unfinished_tasks", 0) and time.monotonic() - self._seen >= 0.05:
                    break
                time.sleep(0.005)
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=10)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
        self._running = False
        _SPY.watchers.discard(self)
        if getattr(self.bank, "watcher", None) is self:
            self.bank.watcher = None

    def status(self) -> dict[str, Any]:
        return {"mode": self._mode, "running": self._running, "note": self._note, "lastChange": self._last_change}

    # -- extras for tests, the CLI and benchmarks -------------------------------------------------

    @property
    def batches(self) -> int:
        """How many batches (the first reconcile included) have been applied so far."""
        return self._batches

    def idle(self) -> bool:
        """True when the first reconcile is done and no event is waiting to be applied."""
        with self._cond:
            return self._batches > 0 and not self._pending and not self._busy

    # -- observer --------------------------------------------------------------------------------

    def _open_observer(self) -> BaseObserver:
        reason = "polling was asked for (MEMBANK_WATCH_POLLING or force_polling)" if self.force_polling else None
        if reason is None:
            for _, root in self._roots:
                fs = network_filesystem(root.path)
                if fs is not None:
                    where = "the global bank" if root.bank == "global" else "the project's .writenow/ folder"
                    reason = f"{where} is on a network or shared drive ({fs}), where change events may never arrive"
                    break
        if reason is None:
            observer: BaseObserver | None = None
            try:
                observer, self._tracks_close = _native_observer()
                self._schedule(observer)
                observer.start()
                self._check_watches(observer)
                self._mode = "native"
                return observer
            except (OSError, RecursionError) as e:  # RecursionError: watchdog walks folders recursively
                reason = _explain(e) if isinstance(e, OSError) else "the folders are nested too deeply for native events"
                self._tracks_close = False
                if observer is not None:
                    try:
                        observer.stop()
                        if observer.is_alive():
                            observer.join(timeout=5)
                    except Exception:
                        pass
        polling = PollingObserver(timeout=self.poll_interval)
        try:
            self._schedule(polling)
            polling.start()
        except RecursionError:
            raise OSError(errno.ELOOP, "the folders are nested too deeply to be watched (about 900 levels at most); "
                          "run `membank index` after changes") from None
        self._mode = "polling"
        self._note = f"watching by polling every {self.poll_interval:g} s: {reason}"
        log.warning("membank watch: %s", self._note)
        return polling

    def _schedule(self, observer: BaseObserver) -> None:
        handler = _Handler(self)
        for prefix, _ in self._roots:
            if os.path.isdir(prefix):
                observer.schedule(handler, prefix, recursive=True, event_filter=_EVENTS)

    def _check_watches(self, observer: BaseObserver) -> None:
        """watchdog silently skips sub-folders it cannot watch (the inotify limit): treat that as failure."""
        if not self._tracks_close:
            return
        need = sum(_count_dirs(prefix) for prefix, _ in self._roots if os.path.isdir(prefix))
        for attempt in range(3):
            have = _watched_dirs(observer)
            if have is None or have >= need:
                return
            time.sleep(0.1 * (attempt + 1))  # folders made meanwhile get their watches from the event thread
            need = sum(_count_dirs(prefix) for prefix, _ in self._roots if os.path.isdir(prefix))
        raise OSError(errno.ENOSPC, f"only {have} of {need} folders could be watched")

    # -- events ----------------------------------------------------------------------------------

    def _locate(self, path: str) -> tuple[str, BankRoot, list[str]] | None:
        for prefix, root in self._roots:
            if path == prefix:
                return prefix, root, []
            if path.startswith(prefix + os.sep):
                return prefix, root, path[len(prefix) + 1:].split(os.sep)
        return None

    def _on_event(self, event: FileSystemEvent) -> None:
        moved = isinstance(event, (FileMovedEvent, DirMovedEvent))
        paths = [(os.fsdecode(event.src_path), moved)]  # (path, the file left it)
        if moved:
            paths.append((os.fsdecode(event.dest_path), False))
        now = self._seen = time.monotonic()
        with self._cond:
            if self._stopping:
                return
            noted = False
            for path, left in paths:
                if not path:
                    continue  # one side of a move from or to outside the watched folders
                if event.is_directory:
                    noted |= self._note_dir(path)
                else:
                    noted |= self._note_file(path, event, left, now)
            if noted:
                if self._first == 0.0:
                    self._first = now
                self._last = now
                self._cond.notify_all()

    def _note_dir(self, path: str) -> bool:
        found = self._locate(path)
        if found is None:
            return False
        _, root, parts = found
        if parts and (parts[0] not in SECTIONS or any(p.startswith(".") for p in parts)):
            return False  # .index/, journal/, history/, hidden folders: nothing the index holds
        self._pending.full = True  # a folder came, went or moved: a stat scan finds out what is in it
        return True

    def _note_file(self, path: str, event: FileSystemEvent, left: bool, now: float) -> bool:
        found = self._locate(path)
        if found is None:
            return False
        _, root, parts = found
        if parts == ["settings.yaml"]:
            self._pending.settings.add(root.source("settings.yaml"))
            return True
        if len(parts) < 2 or parts[0] not in SECTIONS or any(p.startswith(".") for p in parts):
            return False
        name = parts[-1]
        if is_ignored(name):
            if is_temporary(name) or name.lower().endswith(".md") or not isinstance(
                    event, (FileCreatedEvent, FileDeletedEvent, FileMovedEvent)):
                return False  # swap, backup and temporary files
            # not Markdown: it may be a link to a folder (refused with a diagnostic by the scan)
            self._pending.full = True
            return True
        self._pending.files[path] = (root, "/".join(parts))
        if self._tracks_close:  # inotify says when a writer closes the file: until then it may be half-written
            if isinstance(event, FileModifiedEvent) or (isinstance(event, FileCreatedEvent) and _empty(path)):
                self._writing[path] = (self._writing.get(path, (now, now))[0], now)
            elif isinstance(event, (FileClosedEvent, FileDeletedEvent)) or left:
                self._writing.pop(path, None)
        return True

    def _overflowed(self) -> None:
        """Events were lost (the kernel's queue overflowed): only a full stat scan can tell what changed."""
        self.overflows += 1
        log.warning("membank watch: file events were lost (queue overflow); reconciling with a full scan")
        self._request_full()

    def _request_full(self) -> None:
        with self._cond:
            self._pending.full = True
            now = time.monotonic()
            if self._first == 0.0:
                self._first = now
            self._last = now
            self._cond.notify_all()

    # -- the worker ------------------------------------------------------------------------------

    def _held(self, now: float) -> dict[str, float]:
        """Pending files still being written (modified, not closed), with when their hold ends."""
        held = {}
        for path in list(self._writing):
            first, last = self._writing[path]
            until = min(last + HOLD, first + HOLD_MAX)
            if now >= until:
                del self._writing[path]  # quiet for long enough: take it as it is
            elif path in self._pending.files:
                held[path] = until
        return held

    def _take(self, now: float, final: bool) -> tuple[_Batch | None, float | None]:
        """The batch that is ready now (or None), and when to look again."""
        if not self._pending:
            return None, None
        if now < self._retry_at:
            return None, self._retry_at
        ready_at = min(self._last + self.debounce, self._first + self.max_wait)
        if not final and now < ready_at:
            return None, ready_at
        if final:  # stopping: everything as it is now (the next start's reconcile re-reads what changes later)
            batch, self._pending, self._first = self._pending, _Batch(), 0.0
            self._writing.clear()
            return (batch or None), None
        held = self._held(now)
        batch = _Batch({p: v for p, v in self._pending.files.items() if p not in held}, set(self._pending.settings),
                       self._pending.full and not held)
        self._pending = _Batch({p: self._pending.files[p] for p in held}, set(), self._pending.full and not batch.full)
        self._first = now if self._pending else 0.0
        return (batch or None), min(held.values(), default=None)

    def _run(self) -> None:
        try:
            self._apply(_Batch(full=True))  # the first reconcile; events seen meanwhile are pending
            next_reconcile = time.monotonic() + (self.reconcile_every or 0)
            while True:
                with self._cond:
                    while True:
                        now = time.monotonic()
                        batch, again = self._take(now, final=self._stopping)
                        if batch is not None or (self._stopping and again is None):
                            break
                        if self.reconcile_every and now >= next_reconcile:
                            batch = _Batch(full=True)
                            break
                        wait = None if again is None else max(0.0, again - now)
                        if self.reconcile_every:
                            wait = max(0.0, next_reconcile - now) if wait is None else min(wait, next_reconcile - now)
                        self._cond.wait(wait)
                    self._busy = batch is not None
                if batch is None:
                    return  # stopping, nothing left
                if batch.full:
                    next_reconcile = time.monotonic() + (self.reconcile_every or 0)
                self._apply(batch)
                with self._cond:
                    self._busy = False
        finally:
            with self._cond:
                self._busy = False
            self._running = False

    def _apply(self, batch: _Batch) -> None:
        try:
            changed = self._sync(batch)
        except Exception as e:
            # the connection in use by a thread reading outside `reading()`: a moment later it is free
            passing = isinstance(e, apsw.ThreadingViolationError)
            if passing:
                log.debug("the index was busy in another thread; retrying the batch")
            else:
                log.exception("the watcher could not update the index; it will retry with a full sync")
            with self._cond:
                self._batches += 1
                self._failures += 1
                if self._stopping and (not passing or self._failures > 100):
                    return  # the next start reconciles anyway
                self._pending.files.update(batch.files)
                self._pending.settings |= batch.settings
                self._pending.full = self._pending.full or batch.full or not passing
                now = time.monotonic()
                self._first = self._first or now
                self._last = now
                self._retry_at = now + (0.02 if passing else 1.0)  # back off before the retry
            return
        with self._cond:
            self._batches += 1
            self._failures = 0
        if not changed:
            return
        self._last_change = _iso_now()
        if self.on_change is not None:
            try:
                self.on_change(changed)
            except Exception:
                log.exception("the watcher's change listener failed")

    def _sync(self, batch: _Batch) -> list[str]:
        """Apply one batch in one transaction; the sources that changed, sorted."""
        changed: set[str] = set(batch.settings)
        by_root: dict[str, tuple[BankRoot, list[str]]] = {}
        full = batch.full or len(batch.files) > BURST
        for path, (root, rel) in batch.files.items():
            if not _plain_path(path, self._real[root.bank], rel):
                full = True  # a link: the scan decides whether it stays inside the bank
                continue
            by_root.setdefault(root.bank, (root, []))[1].append(rel)
        bank = self.bank
        embedder = getattr(bank, "embedder", None)
        with bank.write_lock:
            if batch.settings:
                bank._settings_cache = None  # re-read even where the file system's clock is coarse
            index = bank.index
            with index.transaction():
                if full:
                    self.full_scans += 1
                    changed.update(sync_.sync(index, bank.roots, embedder=embedder).changed)
                gone: list[str] = []
                for root, rels in by_root.values():
                    changed.update(sync_.sync_paths(index, root, rels, embedder).changed)
                    gone.extend(root.source(rel) for rel in rels if not os.path.lexists(root.file(rel)))
                if gone and not full:
                    # a removed file the index never held (a link out of the bank) may leave a stale diagnostic
                    stale = {d.source for d in index.diagnostics()} & set(gone)
                    if stale:
                        self.full_scans += 1
                        changed.update(sync_.sync(index, bank.roots, embedder=embedder).changed)
                index.drop_moved_tombstones(changed)
        return sorted(changed)


def _empty(path: str) -> bool:
    """A file just created and still empty is about to be written (no close event follows a file
    that was already complete when its folder got a watch, and such a file is not empty)."""
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return False


def _plain_path(path: str, real_root: str, rel: str) -> bool:
    """True when no link is involved between the bank folder and the file."""
    try:
        return os.path.realpath(path) == os.path.join(real_root, *rel.split("/"))
    except OSError:
        return False


# -- measuring save-to-visible latency (the benchmark calls this) -----------------------------------


def measure_latency(bank: Bank, samples: int = 50, *, debounce: float = 0.1, folder: str = "memories/_latency-probe",
                    timeout: float = 5.0) -> dict[str, float]:
    """Save memory files the way editors do (temporary file, then rename) and time until each is visible.

    Uses the bank's running watcher, or starts one for the measurement. The probe files are written
    under `folder` in the project bank and removed afterwards. Returns milliseconds.
    """
    from ..index.store import reading

    own = getattr(bank, "watcher", None) is None
    watcher = Watcher(bank, debounce=debounce) if own else bank.watcher
    if own:
        watcher.start()
    base = bank.project.path / folder
    base.mkdir(parents=True, exist_ok=True)
    took: list[float] = []
    try:
        _wait(lambda: watcher.idle(), timeout)
        for i in range(-1, samples):  # probe -1 warms up (its folder is new) and is not counted
            memory_id = f"latency-probe-{i}"
            text = f"Latency probe {i} at {time.time_ns()}."
            data = (f"---\nid: {memory_id}\ntype: note\nupdated: 2026-01-01T00:00:00Z\n---\n{text}\n").encode()
            tmp = base / f".probe-{i}.md.tmp"
            tmp.write_bytes(data)
            started = time.perf_counter()
            os.replace(tmp, base / f"probe-{i}.md")

            def visible() -> bool:
                with reading():  # a snapshot of its own: never in the watcher's way
                    found = bank.index.find("memory", memory_id)
                return found is not None and found[1]["content"] == text
            if not _wait(visible, timeout, step=0.001):
                raise TimeoutError(f"probe {i} did not show up within {timeout} s")
            if i >= 0:
                took.append((time.perf_counter() - started) * 1000)
    finally:
        for path in sorted(base.glob("*"), reverse=True):
            path.unlink(missing_ok=True)
        try:
            base.rmdir()
        except OSError:
            pass
        def gone() -> bool:
            with reading():
                return not any(bank.index.find("memory", f"latency-probe-{i}") for i in range(-1, samples))
        _wait(gone, timeout)
        if own:
            watcher.stop()
    ordered = sorted(took)
    return {
        "samples": len(took),
        "medianMs": round(statistics.median(ordered), 2),
        "p95Ms": round(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)], 2),  # nearest rank
        "maxMs": round(ordered[-1], 2),
    }


def _wait(condition: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
