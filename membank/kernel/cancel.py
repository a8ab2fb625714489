"""Cooperative cancellation: a call may be canceled by its caller or bounded by a deadline.

A `Token` carries a cancel flag and, optionally, a monotonic deadline. The token of the running call
is per thread (a context variable: each thread has a context of its own); long work calls `check()`
at its checkpoints, which raises `MembankError(CANCELED)` or `MembankError(TIMEOUT)` there and costs
one context-variable read when no token is installed. Raising at a checkpoint is what makes it safe:
every checkpoint sits where an exception leaves nothing half-done (inside the index transaction,
which rolls back; before a journal line is appended; before a cache is filled).

`scope(deadline_ms, cancellable)` is how a channel runs (runtime/dispatch.py): it bounds the token by
the payload's `deadlineMs`, refuses at once a call already canceled or late, and installs the token
for the handler only when the channel can stop halfway (`cancellable`); any other channel runs
shielded, to its end. Tests swap the clock with `use`, as `kernel.clock.use` swaps the wall clock.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, ContextManager, Iterator

from .errors import CANCELED, TIMEOUT, MembankError

DEADLINE_FIELD = "deadlineMs"  # a payload field of this name (kernel/payload.py `DeadlineMs`) bounds the call

Ticks = Callable[[], float]  # seconds, monotonic
_ticks: Ticks = time.monotonic


def monotonic() -> float:
    """Now, in the seconds deadlines are counted in."""
    return _ticks()


class Token:
    """One call's cancel flag and deadline. `cancel()` may come from any thread; the call notices at its
    next checkpoint. `started` is when the call was received: a deadline counts from there."""

    __slots__ = ("started", "canceled", "deadline", "deadline_ms")

    def __init__(self, started: float | None = None) -> None:
        self.started = monotonic() if started is None else started
        self.canceled = False  # one assignment: safe to set from another thread without a lock
        self.deadline: float | None = None
        self.deadline_ms: int | None = None

    def cancel(self) -> None:
        self.canceled = True

    def bound(self, deadline_ms: int) -> None:
        """Finish within `deadline_ms` of `started` (a second bound only ever brings the deadline nearer)."""
        deadline = self.started + deadline_ms / 1000
        if self.deadline is None or deadline < self.deadline:
            self.deadline, self.deadline_ms = deadline, deadline_ms

    def check(self) -> None:
        if self.canceled:
            raise MembankError(CANCELED, "the call was canceled by its caller; nothing it began was kept")
        if self.deadline is not None and monotonic() >= self.deadline:
            raise MembankError(TIMEOUT, f"the call did not finish within its deadline of {self.deadline_ms:,} ms "
                               "(deadlineMs); nothing it began was kept", {"deadlineMs": self.deadline_ms})


_current: ContextVar[Token | None] = ContextVar("membank_cancel_token", default=None)


def current() -> Token | None:
    """The token of the call running on this thread, if any."""
    return _current.get()


def check() -> None:
    """A checkpoint: raise CANCELED or TIMEOUT if the running call should stop here; else nothing."""
    token = _current.get()
    if token is not None:
        token.check()


@contextmanager
def installed(token: Token | None) -> Iterator[Token | None]:
    """Run a block with `token` as this thread's current token (None: shielded, no checkpoint fires)."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def shielded() -> ContextManager[Token | None]:
    """A block that runs to its end whatever happens to the call (no checkpoint inside fires)."""
    return installed(None)


@contextmanager
def scope(deadline_ms: int | None, cancellable: bool) -> Iterator[Token | None]:
    """Run a channel: the token already installed (the sidecar's, made when the request arrived) or a new
    one, bounded by `deadline_ms`; a call canceled or late before it starts is refused here, before
    anything runs. Inside, checkpoints fire only for a `cancellable` channel."""
    token = _current.get()
    if deadline_ms is not None:
        if token is None:
            token = Token()
        token.bound(deadline_ms)
    if token is not None:
        token.check()
    with installed(token if cancellable else None):
        yield token


@contextmanager
def use(ticks: Ticks) -> Iterator[None]:
    """Run a block with another monotonic clock (a test's stepping time)."""
    global _ticks
    before, _ticks = _ticks, ticks
    try:
        yield
    finally:
        _ticks = before
