"""When the sidecar settles its heap (`kernel.heap.settle`, then `release`): once after each burst of
changes, at the first moment no call is running.

A change (a project opened, a write, a re-index by the watcher) marks the heap as unsettled. The
settler waits until no new mark has come for `quiet` seconds, then until no call is in flight, and
settles holding the server's idle lock, so no call starts during the collection. A stream of calls
delays the settle; it never interrupts one."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ..kernel import heap

log = logging.getLogger(__name__)

QUIET = 1.0  # seconds without a new change before settling: a burst of writes settles once


class Settler:
    """A daemon thread settling the heap after changes; `idle` is the server's condition, `busy` says
    whether a call is in flight (read under that condition's lock)."""

    def __init__(self, idle: threading.Condition, busy: Callable[[], bool], *, quiet: float = QUIET,
                 settle: Callable[[], int] = heap.settle):
        self._idle = idle
        self._busy = busy
        self._quiet = quiet
        self._settle = settle
        self._marked = threading.Event()
        self._stopped = threading.Event()
        self.settled = 0  # how many times the heap was settled
        self._thread = threading.Thread(target=self._run, name="membank-settle", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def changed(self) -> None:
        """Something changed what the process holds: settle after the quiet period."""
        self._marked.set()

    def stop(self) -> None:
        self._stopped.set()
        self._marked.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            self._marked.wait()
            if self._stopped.is_set():
                return
            self._marked.clear()
            if self._stopped.wait(self._quiet):
                return
            if self._marked.is_set():
                continue  # still changing: wait for the burst to end
            with self._idle:
                while self._busy() and not self._stopped.is_set():
                    self._idle.wait(0.5)
                if self._stopped.is_set():
                    return
                started = time.perf_counter()
                frozen = self._settle()
                self.settled += 1
            heap.release()  # what the burst freed goes back to the system (a cold sync leaves tens of MB)
            log.debug("heap settled: %d objects frozen in %.1f ms", frozen, (time.perf_counter() - started) * 1000)
