"""Work done off the caller's path: one worker thread per owner, jobs in the order given.

A job is a function of no arguments; a failure inside one is the job's own business (it logs and
reports it), so the worker never dies of one. `drain` waits until every job given so far has run;
`close` drains and stops the thread, so nothing is left pending when a project closes.

An owner whose jobs run native code that must not be running while the interpreter tears its modules
down (the strong tier's fills inside onnxruntime: a C++ abort) registers with `stop_at_exit`: at exit,
before the modules go, each such owner's `stop()` runs (it stops at its next checkpoint and waits for
its worker). `lowest_priority` puts the calling thread at the lowest scheduling priority (the fills)."""

from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref
from typing import Callable, Protocol

from .log import log

Job = Callable[[], None]
_STOP = object()
LOWEST = 19  # the nice value of a background fill's thread


class Stoppable(Protocol):
    def stop(self) -> None: ...


_AT_EXIT: "weakref.WeakSet[Stoppable]" = weakref.WeakSet()
_AT_EXIT_LOCK = threading.Lock()


def stop_at_exit(owner: Stoppable) -> None:
    """`owner.stop()` runs at interpreter exit (if the owner is still alive then): a daemon thread is
    otherwise left running native code while the modules are torn down."""
    with _AT_EXIT_LOCK:
        _AT_EXIT.add(owner)


def stop_all() -> None:
    """Stop every owner registered with `stop_at_exit` and wait for each (run at exit; a test calls it)."""
    with _AT_EXIT_LOCK:
        owners = list(_AT_EXIT)
    for owner in owners:
        try:
            owner.stop()
        except Exception:  # one owner's failure is not the next one's
            log.exception("a background owner failed to stop at exit")


atexit.register(stop_all)


def lowest_priority() -> None:
    """The calling thread at the lowest priority, where the OS lets a thread have one (Linux: a thread's
    nice value): a background fill then uses what the app's requests and the machine leave, instead of a
    fair half of a core it shares."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST)
    except (AttributeError, OSError):  # no per-thread priority here (Windows, macOS): the fill runs as is
        pass


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
