"""The daily lifecycle trigger without a resident scheduler (episodes.md, Lifecycle): a process that
keeps projects open (`membank serve`, `membank watch`) runs it for each project when a day has passed
since its last run — when a project opens, then at each hourly look."""

from __future__ import annotations

import threading
from typing import Callable

from ..domains.lifecycle.triggers import due
from ..kernel import clock
from ..kernel.log import log
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry

LOOK_EVERY = 3600.0  # seconds between looks; a day late by at most an hour


class Daily:
    """Looks at every open project now and then; `run(project_id)` queues the trigger (the caller's
    way: the sidecar puts it on the project's write lane, `watch` runs it in place)."""

    def __init__(self, registry: Registry, run: Callable[[str], None], every: float = LOOK_EVERY):
        self.registry = registry
        self.run = run
        self.every = every
        self._stop = threading.Event()
        self._nudge = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="membank-daily", daemon=True)
        self._thread.start()

    def nudge(self) -> None:
        """Look again now (a project was opened)."""
        self._nudge.set()

    def stop(self) -> None:
        self._stop.set()
        self._nudge.set()
        if self._thread is not None:
            self._thread.join(5)

    def look(self) -> list[str]:
        """Queue the daily run of every open project that has episodes and is due; the ones queued."""
        queued = []
        for project_id in list(self.registry.banks):
            envelope = dispatch(self.registry, "index:status", {"projectId": project_id})
            if not envelope["ok"] or not envelope["data"]["episodes"]["live"]:
                continue  # nothing to score: the writer's journal gets no line for nothing
            if due(envelope["data"]["lifecycle"]["lastRun"]["daily"], clock.now()):
                self.run(project_id)
                queued.append(project_id)
        return queued

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except Exception:  # a bug here must not stop the process it runs in
                log.exception("the daily lifecycle look failed")
            self._nudge.wait(self.every)
            self._nudge.clear()
