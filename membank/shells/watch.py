"""Live sync: a watchdog observer feeds a debounced worker that keeps the index equal to the files.

Events only say *where* to look. The worker re-reads the named files and compares content hashes
(`sync.sync_paths`); folder events, bursts, a lost-event queue overflow and a periodic timer fall
back on a full stat scan (`sync.sync`). Every change goes through `bank.write_lock`, in one index
transaction per batch, so API writes and watcher batches never interleave. The watcher only ever
writes the index: never a writer's file. See docs/watcher.md for the behaviour and its limits.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Callable, Iterator

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

from ..files.scan import JOURNAL, SECTIONS, BankRoot, is_ignored, is_temporary
from ..kernel import clock
from ..kernel.errors import MembankError
from . import chapterwatch, overflow, watchbatch
from .observers import open_observer
from .watchbatch import Batch
from .watchreport import Problem, Report, diff, problems

if TYPE_CHECKING:
    from ..runtime.project import Project as Bank

log = logging.getLogger("membank.shells.watch")
# watchdog warns when a folder made and filled at once gets its watch twice (mkdir -p; git checkout): harmless
warnings.filterwarnings("ignore", message="Callback with id .* already exists", category=RuntimeWarning)

POLLING_ENV = "MEMBANK_WATCH_POLLING"  # set to 1 to watch by polling even where native events work
HOLD = 2.0  # a file written but not yet closed is left alone this long after its last write...
HOLD_MAX = 10.0  # ...and never longer than this after its first write
RECONCILE_EVERY = 60.0  # the safety net: a full stat scan this often, even when all is quiet
POLL_INTERVAL = 1.0

# the events that can change what the index should hold; opens and read-closes (our own reads) are not among them
_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileModifiedEvent, FileClosedEvent, FileAttribEvent, FileDeletedEvent, FileMovedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
]
# -- the watcher -------------------------------------------------------------------------------------


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
    `on_report(report)` is called there too, with those sources and the problems `membank doctor` would
    report that the batch introduced or fixed (`watchreport.Report`); only then are problems looked up.
    """

    def __init__(self, bank: Bank, on_change: Callable[[list[str]], None] | None = None, debounce: float = 0.1, *,
                 force_polling: bool | None = None, poll_interval: float = POLL_INTERVAL,
                 reconcile_every: float | None = RECONCILE_EVERY,
                 on_report: Callable[[Report], None] | None = None):
        self.bank = bank
        self.on_change = on_change
        self.on_report = on_report
        self._known: list[Problem] = []  # the problems as of the last batch (on_report only)
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
        self._pending = Batch()
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
        self._batches = 0  # batches handled, failed ones too, for tests and benchmarks that wait for the watcher
        self._busy = False  # a batch is being applied
        self.overflows = 0  # event-queue overflows seen (each one answered by a full stat scan)
        self.full_scans = 0  # full stat scans run (the first reconcile included)
        self._retry_at = 0.0  # after a failed batch: not before this
        self._failures = 0  # failed batches in a row
        self._refused: str | None = None  # the last refusal said (a file where `.index/` was): said once
        self._seen = 0.0  # when the observer last handed over any event
        self._real = {root.bank: os.path.realpath(root.path) for root in bank.roots}
        self._manuscript_dirs: set[str] = set()  # folders of manuscript documents, watched one by one
        self._dead_dirs: set[str] = set()  # of those, deleted or moved away since: their watch died with them

    # -- the contract ----------------------------------------------------------------------------

    def start(self) -> None:
        """Watch at once, then reconcile (a full sync) in the background before applying events."""
        if self._thread is not None:
            if self._stopping:
                raise RuntimeError("this watcher was stopped; a Watcher runs once, make a new one")
            return  # already running
        self._observer = self._open_observer()
        overflow.listen(self)
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
        overflow.forget(self)
        if getattr(self.bank, "watcher", None) is self:
            self.bank.watcher = None

    def status(self) -> dict[str, Any]:
        return {"mode": self._mode, "running": self._running, "note": self._note, "lastChange": self._last_change}

    # -- extras for tests, the CLI and benchmarks -------------------------------------------------

    @property
    def batches(self) -> int:
        """How many batches (the first reconcile included) have been handled so far: applied, or failed and
        queued for a retry (a wait for a refusal counts those)."""
        return self._batches

    def idle(self) -> bool:
        """True when the first reconcile is done and no event is waiting to be applied."""
        with self._cond:
            return self._batches > 0 and not self._pending and not self._busy

    def alive(self) -> bool:
        """True while the worker thread runs: from start() until stop() has let it finish."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def tracks_close(self) -> bool:
        """True when the events say when a writer closes a file (inotify): a file written but not yet
        closed is then left alone until it is closed (HOLD, HOLD_MAX at most), never indexed torn."""
        return self._tracks_close

    def reconcile(self) -> None:
        """Ask for a full stat scan, applied like any event (debounced, one transaction). For an app that
        knows files changed behind the watcher's back (a restore from a backup), and for tests."""
        self._request_full()

    @contextmanager
    def holding_events(self) -> Iterator[bool]:
        """A test seam: while held, the native observer reads no more events from the kernel, as on a
        machine too busy to keep up, so the kernel queues them and past its limit drops the rest (an
        overflow, answered by a full scan). Yields False, holding nothing, when there is no such reader
        to hold (polling, or a watchdog without inotify's reader lock)."""
        # watchdog 7's InotifyFD takes this lock between reads: its reader waits here, the kernel queues
        reader_lock = getattr(getattr(self._observer, "_inotify_fd", None), "_lock", None)
        with reader_lock if reader_lock is not None else nullcontext():
            yield reader_lock is not None

    # -- observer --------------------------------------------------------------------------------

    def _open_observer(self) -> BaseObserver:
        opened = open_observer([prefix for prefix, _ in self._roots], [root for _, root in self._roots], _Handler(self),
                               _EVENTS, self.force_polling, self.poll_interval)
        self._mode, self._note, self._tracks_close = opened.mode, opened.note, opened.tracks_close
        self._manuscript_dirs = chapterwatch.watch_folders(self.bank, opened.observer, _Handler(self), _EVENTS,
                                                           lambda folder: self._locate(folder) is not None)
        if opened.note is not None:
            log.warning("membank watch: %s", opened.note)
        return opened.observer

    def _note_manuscript(self, path: str) -> bool:
        self._pending.manuscript |= chapterwatch.is_chapter(path, self._manuscript_dirs)
        return self._pending.manuscript

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
                    noted |= self._note_dir(path, left or isinstance(event, DirDeletedEvent))
                else:
                    noted |= self._note_file(path, event, left, now)
            if noted:
                if self._first == 0.0:
                    self._first = now
                self._last = now
                self._cond.notify_all()

    def _note_dir(self, path: str, gone: bool) -> bool:
        found = self._locate(path)
        if found is None:  # chapters/ gone or made again (a checkout): synced, and watched again (`_rewatch`)
            if gone and path in self._manuscript_dirs:
                self._dead_dirs.add(path)
            if path in self._manuscript_dirs or os.path.dirname(path) in self._manuscript_dirs:
                self._pending.manuscript = True
            return self._pending.manuscript
        _, root, parts = found
        if gone and parts == [".index"] and root.bank == "project":
            self._pending.full = True  # the index deleted (to reset it): the batch makes it again (watchbatch.py)
            return True
        if parts and (parts[0] not in SECTIONS or any(p.startswith(".") for p in parts)):
            return False  # .index/, journal/, history/, hidden folders: nothing the index holds
        self._pending.full = True  # a folder came, went or moved: a stat scan finds out what is in it
        return True

    def _note_file(self, path: str, event: FileSystemEvent, left: bool, now: float) -> bool:
        found = self._locate(path)
        if found is None:
            return self._note_manuscript(path)
        _, root, parts = found
        if parts == ["project.yaml"] and root.bank == "project":
            self._pending.manuscript = True  # the story order may have moved
            return True
        if parts == ["settings.yaml"]:
            self._pending.settings.add(root.source("settings.yaml"))
            return True
        if len(parts) == 2 and parts[0] == JOURNAL and parts[1].endswith(".jsonl") and not parts[1].startswith("."):
            self._pending.files[path] = (root, "/".join(parts))  # a pull or checkout (never traces/: only membank
            return True  # writes there); membank's own appends read as unchanged
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

    def overflowed(self) -> None:
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

    def _take(self, now: float, final: bool) -> tuple[Batch | None, float | None]:
        """The batch that is ready now (or None), and when to look again."""
        if not self._pending:
            return None, None
        if now < self._retry_at:
            return None, self._retry_at
        ready_at = min(self._last + self.debounce, self._first + self.max_wait)
        if not final and now < ready_at:
            return None, ready_at
        if final:  # stopping: everything as it is now (the next start's reconcile re-reads what changes later)
            batch, self._pending, self._first = self._pending, Batch(), 0.0
            self._writing.clear()
            return (batch or None), None
        held = self._held(now)
        batch = Batch({p: v for p, v in self._pending.files.items() if p not in held}, set(self._pending.settings),
                       self._pending.full and not held, self._pending.manuscript)
        self._pending = Batch({p: self._pending.files[p] for p in held}, set(), self._pending.full and not batch.full)
        self._first = now if self._pending else 0.0
        return (batch or None), min(held.values(), default=None)

    def _run(self) -> None:
        try:
            if self.on_report is not None:
                self._known = self._problems()  # as the index held them before watching: the baseline
            self._apply(Batch(full=True))  # the first reconcile; events seen meanwhile are pending
            next_reconcile = time.monotonic() + (self.reconcile_every or 0)
            while True:
                with self._cond:
                    while True:
                        now = time.monotonic()
                        batch, again = self._take(now, final=self._stopping)
                        if batch is not None or (self._stopping and again is None):
                            break
                        if self.reconcile_every and now >= next_reconcile:
                            batch = Batch(full=True)
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

    def _apply(self, batch: Batch) -> None:
        try:
            applied = watchbatch.apply(self.bank, batch, self._real)
        except Exception as e:
            # the connection in use by a thread reading outside `reading()`: a moment later it is free
            passing = isinstance(e, apsw.ThreadingViolationError)
            if passing:
                log.debug("the index was busy in another thread; retrying the batch")
            elif getattr(e, "code", None) == "NOT_FOUND":  # the bank folder is gone: nothing to sync until it is back
                log.debug("the watcher waits for the bank folder to come back: %s", e)
            elif isinstance(e, MembankError) or not self.bank.index.on_disk():
                # a refusal with its reason (`.index` a file or a link), or the index deleted again while it was
                # made: no bug; said once, not a traceback a second until it is fixed
                said = str(e) if isinstance(e, MembankError) else \
                    f"the index was deleted while it was written ({e.__class__.__name__}); it is made again"
                if said != self._refused:
                    log.warning("the watcher cannot update the index until this is fixed: %s", said)
                self._refused = said
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
                self._pending.manuscript |= batch.manuscript
                now = time.monotonic()
                self._first = self._first or now
                self._last = now
                self._retry_at = now + (0.02 if passing else 1.0)  # back off before the retry
            return
        self._refused = None
        with self._cond:
            self._batches += 1
            self._failures = 0
            self.full_scans += applied.full_scans
        if batch.manuscript and self._observer is not None:  # the story order may name a new folder
            self._rewatch(self._observer)
        changed = applied.changed
        if not changed:
            return
        self._last_change = clock.now_iso()
        if self.on_change is not None:
            try:
                self.on_change(changed)
            except Exception:
                log.exception("the watcher's change listener failed")
        if self.on_report is not None:
            found = self._problems()
            introduced, fixed = diff(self._known, found)
            self._known = found
            try:
                self.on_report(Report(changed, introduced, fixed))
            except Exception:
                log.exception("the watcher's report listener failed")

    def _rewatch(self, observer: BaseObserver) -> None:
        """Watch the folders the story order names now. A folder deleted or moved away lost its watch: it is
        forgotten, so it is watched again once it is back; a folder newly watched is synced once more (a
        chapter saved in it between the sync and its watch has no event)."""
        with self._cond:
            dead, self._dead_dirs = self._dead_dirs, set()
        dead |= {folder for folder in self._manuscript_dirs if not os.path.isdir(folder)}
        chapterwatch.unwatch(observer, dead, _EVENTS)
        self._manuscript_dirs -= dead
        added = chapterwatch.watch_folders(self.bank, observer, _Handler(self), _EVENTS,
                                           lambda folder: self._locate(folder) is not None,
                                           frozenset(self._manuscript_dirs))
        self._manuscript_dirs |= added
        if added:
            with self._cond:
                self._pending.manuscript = True
                self._first = self._first or time.monotonic()
                self._last = time.monotonic()
                self._cond.notify_all()

    def _problems(self) -> list[Problem]:
        try:
            return problems(self.bank)
        except Exception:  # a report without its problems beats none: keep the last known ones
            log.exception("the watcher could not list the bank's problems")
            return self._known

def _empty(path: str) -> bool:
    """A file just created and still empty is about to be written (no close event follows a file
    that was already complete when its folder got a watch, and such a file is not empty)."""
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return False

