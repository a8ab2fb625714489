"""Front matter read again with the very same text within one write (a card written, read back, then
indexed), parsed once: `remembering()` opens the scope; inside it each reader gets its own copy of
what the first read built, so no reader can change what another gets. The memo is the opening thread's
only: a thread that runs in a copy of the scope's context (`asyncio.to_thread`, or every thread where
threads inherit it) parses as if outside it."""

from __future__ import annotations

import copy
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

_read: ContextVar[tuple[int, dict[str, Any]] | None] = ContextVar("membank_front_matter_read", default=None)


@contextmanager
def remembering() -> Iterator[None]:
    token = _read.set((threading.get_ident(), {}))
    try:
        yield
    finally:
        _read.reset(token)


def loaded(text: str, load: Callable[[str], Any]) -> Any:
    """`load(text)`, or a copy of what it gave for this text earlier in the scope (errors are not kept)."""
    scope = _read.get()
    if scope is None or scope[0] != threading.get_ident():
        return load(text)
    memo = scope[1]
    if text not in memo:
        memo[text] = load(text)
    return copy.deepcopy(memo[text])
