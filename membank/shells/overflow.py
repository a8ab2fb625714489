"""watchdog reports a lost-event queue only in its log: this turns that warning into a full reconcile
of every running watcher (`Watcher.overflowed`)."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any


class _OverflowSpy(logging.Handler):
    """Turns watchdog's "queue overflowed" warning into a full reconcile of every running watcher."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.watchers: weakref.WeakSet[Any] = weakref.WeakSet()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            overflowed = "overflow" in record.getMessage().lower()
        except Exception:  # a malformed record is not our business
            return
        if overflowed:
            for watcher in list(self.watchers):
                watcher.overflowed()


_SPY = _OverflowSpy()
_SPY_LOCK = threading.Lock()


def listen(watcher: Any) -> None:
    """Call `watcher.overflowed()` whenever watchdog says its event queue overflowed."""
    with _SPY_LOCK:
        logger = logging.getLogger("watchdog")
        if _SPY not in logger.handlers:
            logger.addHandler(_SPY)
        if not logging.getLogger("watchdog.observers.inotify_c").isEnabledFor(logging.WARNING):
            logger.setLevel(logging.WARNING)  # the overflow warning must be emitted for us to see it
        _SPY.watchers.add(watcher)


def forget(watcher: Any) -> None:
    _SPY.watchers.discard(watcher)
