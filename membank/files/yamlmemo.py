"""Front matter read again with the very same text within one write (a card written, read back, then
indexed), parsed once: `remembering()` opens the scope; inside it each reader gets its own copy of
what the first read built, so no reader can change what another gets. The memo is the opening thread's
only (`kernel.callmemo.Memo`): a thread that runs in a copy of the scope's context (`asyncio.to_thread`,
or every thread where threads inherit it) parses as if outside it."""

from __future__ import annotations

import copy
from typing import Any, Callable

from ..kernel.callmemo import Memo

_READ = Memo("membank_front_matter_read")
remembering = _READ.remembering


def loaded(text: str, load: Callable[[str], Any]) -> Any:
    """`load(text)`, or a copy of what it gave for this text earlier in the scope (errors are not kept)."""
    if not _READ.active():
        return load(text)
    return copy.deepcopy(_READ.kept(text, lambda: load(text)))
