"""What one call reads again and again, made once for that call: `remembering()` opens the scope (one
`context:assemble`), inside it `kept(key, make)` gives what `make()` gave the first time the key was asked.
Each call opens a scope of its own, so an edit between two calls is seen by the second. The memo is the
opening thread's only: a thread that runs in a copy of the scope's context makes its own, as outside it.
Only values that cannot change within the call belong here (the settings files, the story order: nothing
an assembly does writes them), and only shared, unchanged values (frozen, or copied by their readers).
`Memo` is the scope itself, so another kind of call (a review's front matter, `files/yamlmemo.py`) keeps
a memo of its own that this one never sees."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Hashable, Iterator, TypeVar

T = TypeVar("T")


class Memo:
    """One kind of scope: opened by `remembering()`, read by `kept()`, the opening thread's only."""

    def __init__(self, name: str) -> None:
        self._scope: ContextVar[tuple[int, dict[Hashable, Any]] | None] = ContextVar(name, default=None)

    @contextmanager
    def remembering(self) -> Iterator[None]:
        token = self._scope.set((threading.get_ident(), {}))
        try:
            yield
        finally:
            self._scope.reset(token)

    def active(self) -> bool:
        scope = self._scope.get()
        return scope is not None and scope[0] == threading.get_ident()

    def kept(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, or what it gave for `key` earlier in the scope (an error is not kept)."""
        scope = self._scope.get()
        if scope is None or scope[0] != threading.get_ident():
            return make()
        memo = scope[1]
        if key not in memo:
            memo[key] = make()
        return memo[key]  # type: ignore[no-any-return]


CALL = Memo("membank_call_memo")
remembering = CALL.remembering
kept = CALL.kept
