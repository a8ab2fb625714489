"""Which strong encoder a process uses, loaded once per project and remembered with the reason when it
cannot run (so nothing retries or warns per call).

`MEMBANK_STRONG_ENCODER` chooses it for the whole process: unset, the bundled model (`strong.load_strong`);
`off`, none (the test suite's default: it never pays for a real model); `module:function`, the encoder
that function returns (a test double, or a model being tried out). The writer's own switch is the
`embedding.strong` setting (`auto` or `off`), read by the domain that asks."""

from __future__ import annotations

import importlib
import os
import threading
from typing import Callable

from .strong import StrongEncoder, StrongUnavailable, describe_strong, load_strong

ENV = "MEMBANK_STRONG_ENCODER"
OFF_BY_ENV = f"the strong tier is off in this process ({ENV}=off)"


def _loader() -> Callable[[], StrongEncoder]:
    chosen = os.environ.get(ENV, "").strip()
    if not chosen:
        return load_strong
    if chosen == "off":
        def off() -> StrongEncoder:
            raise StrongUnavailable(OFF_BY_ENV)
        return off
    module, _, name = chosen.partition(":")
    try:
        found = getattr(importlib.import_module(module), name or "load")
    except (ImportError, AttributeError, ValueError) as e:
        message = f"{ENV} names `{chosen}`, which cannot be imported ({e.__class__.__name__})"

        def missing() -> StrongEncoder:
            raise StrongUnavailable(message)
        return missing
    return found  # type: ignore[no-any-return]


class StrongHandle:
    """One project's strong encoder: loaded on first use; a failure is kept as its reason."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: StrongEncoder | str | None = None  # None: not tried yet

    def get(self) -> StrongEncoder | None:
        """The encoder (loaded now if not yet: the background's first batch, or a query); None when it
        cannot run here (`why` says why)."""
        with self._lock:
            if self._loaded is None:
                try:
                    self._loaded = _loader()()
                except StrongUnavailable as e:
                    self._loaded = str(e) or "the strong model cannot run here"
                except Exception as e:  # a broken model must not take the bank down
                    self._loaded = f"the strong model could not be loaded ({e.__class__.__name__})"
            return self._loaded if isinstance(self._loaded, StrongEncoder) else None

    def describe(self) -> tuple[str, int] | str:
        """(model identity, dimension) the tier runs with, or why it cannot, without loading a model not
        loaded yet (`index:status`): the bundled model is described from its files (`describe_strong`);
        `off` is its reason; a `module:function` encoder (a test double, a model tried out) is loaded."""
        found = self._loaded
        if isinstance(found, StrongEncoder):
            return found.name, found.dim
        if isinstance(found, str):
            return found
        chosen = os.environ.get(ENV, "").strip()
        if chosen == "off":
            return OFF_BY_ENV
        if chosen:
            encoder = self.get()
            return (encoder.name, encoder.dim) if encoder is not None else self.why() or "the strong model cannot run here"
        try:
            info = describe_strong()
        except StrongUnavailable as e:
            return str(e) or "the strong model cannot run here"
        return info.name, info.dim

    def loaded(self) -> StrongEncoder | None:
        """The encoder if it is loaded already; never loads."""
        found = self._loaded
        return found if isinstance(found, StrongEncoder) else None

    def why(self) -> str | None:
        """Why the encoder cannot run, once tried; None when it runs or was not tried."""
        found = self._loaded
        return found if isinstance(found, str) else None


MEMO = "index.strong_handle"


def handle(memo: dict[str, object]) -> StrongHandle:
    """The project's handle, kept in its per-project memo (`Bank.memo`): the background and the queries
    share one encoder."""
    found = memo.get(MEMO)
    if not isinstance(found, StrongHandle):
        found = memo[MEMO] = StrongHandle()
    return found


def switched_on(embedding: dict[str, object]) -> bool:
    """Whether the `embedding:` settings leave the tier on (`strong: auto`, the default, or null)."""
    return embedding.get("strong") != "off"
