"""membank's logger ("membank"), with `logging` imported at its first use.

Every module that may log takes `log` from here rather than `logging.getLogger("membank")` at import:
a reading command that logs nothing (`membank status`, `show`, …) then never imports `logging` and the
modules it brings (traceback, string, threading's helpers: ~30 M instructions of each such process).
`log` is the real logger to every caller: each attribute asked for is the logger's own."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging


@functools.cache
def logger() -> logging.Logger:
    """The "membank" logger itself."""
    import logging

    return logging.getLogger("membank")


class _Membank:
    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        return getattr(logger(), name)

    def __repr__(self) -> str:
        return repr(logger())


log: logging.Logger = _Membank()  # type: ignore[assignment]
