"""Work done off the caller's path: one worker thread per owner, jobs in the order given.

A job is a function of no arguments; a failure inside one is the job's own business (it logs and
reports it), so the worker never dies of one. `drain` waits until every job given so far has run;
`close` drains and stops the thread, so nothing is left pending when a project closes."""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

log = logging.getLogger("membank")
Job = Callable[[], None]
_STOP = object()


class Worker:
    def __init__(self, name: str):
        self.name = name
        self._jobs: queue.Queue[object] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._closed

    @property
    def pending(self) -> int:
        """Jobs given and not yet finished."""
        with self._lock:
            return self._pending

    def submit(self, job: Job) -> bool:
        """Queue a job; False (and nothing queued) once the worker is closed."""
        with self._lock:  # queued under the lock: `close` cannot put its stop marker in front of it
            if self._closed:
                return False
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._jobs.put(job)
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every job given so far has finished; False if `timeout` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Take no more jobs, finish the queued ones and stop the thread."""
        with self._lock:
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._jobs.put(_STOP)  # after every job already queued
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            try:
                job()  # type: ignore[operator]
            except Exception:  # a job reports its own failures; this is a bug in one
                log.exception("a background job of %s failed", self.name)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()
