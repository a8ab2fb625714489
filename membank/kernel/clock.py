"""The one clock: every time membank writes into a file or the index comes from here.

Tests (and anything replaying history) swap it with `use`; nothing else reads the system time for
a stamp. Durations (`tookMs`, timeouts) use `time.perf_counter` / `time.monotonic`, not this."""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from typing import Callable, Iterator

Clock = Callable[[], dt.datetime]


def _system() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


_clock: Clock = _system


def now() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    value = _clock()
    return value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def now_iso() -> str:
    """UTC to the second, `2026-11-23T10:00:00Z`: what front matter and the index carry."""
    return now().strftime("%Y-%m-%dT%H:%M:%SZ")


def now_precise() -> str:
    """UTC with microseconds: journal events within one second must still order."""
    return now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def timestamp() -> float:
    """Seconds since the epoch, for comparing with file times."""
    return now().timestamp()


@contextmanager
def use(clock: Clock) -> Iterator[None]:
    """Run a block with another clock (a test's fixed or stepping time)."""
    global _clock
    before, _clock = _clock, clock
    try:
        yield
    finally:
        _clock = before
