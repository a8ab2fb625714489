"""A strong encoder for tests (`MEMBANK_STRONG_ENCODER=tests.strongfake:load`): words hashed into 32
dimensions, instant, no model files. `GATE` holds each batch of passages after the first `HOLD_AFTER`
while it is clear (a test sets it again to let them through); `ENTERED` is set when one is held;
`CALLERS` names the thread of each batch of passages."""

from __future__ import annotations

import threading
import zlib
from typing import Any, Iterable

import numpy as np

from membank.index.strong import StrongEncoder

DIM = 32
GATE = threading.Event()
GATE.set()
ENTERED = threading.Event()
CALLS = {"passages": 0}
CALLERS: list[str] = []  # the thread of each call for passages, in order
HOLD_AFTER = [0]  # batches of passages let through before the gate applies


class _Model:
    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        if not query:
            CALLS["passages"] += 1
            CALLERS.append(threading.current_thread().name)
            if CALLS["passages"] > HOLD_AFTER[0]:
                ENTERED.set()
                GATE.wait(60)
        rows = np.zeros((len(texts), DIM), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, zlib.crc32(word.strip(".,!?").encode()) % DIM] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def load() -> StrongEncoder:
    return StrongEncoder("fake-strong:1:32", DIM, _Model())


def load_other() -> StrongEncoder:
    """Another model: its vectors are not comparable with `load`'s."""
    return StrongEncoder("fake-strong-2:1:32", DIM, _Model())


class _Broken:
    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        if not query:
            ENTERED.set()
            raise RuntimeError("the model broke")
        return _Model().encode(texts, query=True)


def load_broken() -> StrongEncoder:
    """A model that loads and then fails on every batch of passages."""
    return StrongEncoder("fake-broken:1:32", DIM, _Broken())


class _NotFinite:
    """Every vector NaN (a model gone wrong): neither a stored row nor a query may carry it into a score."""

    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        return np.full((len(texts), DIM), np.nan, np.float32)


def load_nan() -> StrongEncoder:
    return StrongEncoder("fake-nan:1:32", DIM, _NotFinite())


class _BrokenQueries:
    """A model that fills the tier and then fails on every query (a swapped model.onnx of another shape)."""

    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        if query:
            raise RuntimeError("the query broke")
        return _Model().encode(texts)


def load_broken_queries() -> StrongEncoder:
    return StrongEncoder("fake-broken-queries:1:32", DIM, _BrokenQueries())


class _Poisoned:
    """A model that fails on any batch holding the word POISON (one text it cannot take)."""

    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        if any("POISON" in t for t in texts):
            raise ValueError("cannot take this text")
        return _Model().encode(texts, query=query)


def load_poisoned() -> StrongEncoder:
    return StrongEncoder("fake-poisoned:1:32", DIM, _Poisoned())


LOADED_AT: list[int] = []  # the nice value of each thread that loaded `load_noting_priority`


def load_noting_priority() -> StrongEncoder:
    """`load`, noting the loading thread's priority: the threads a real model starts at its load (the
    query session's) inherit it."""
    import os

    LOADED_AT.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    return load()


class _NotFiniteOn:
    """`_Model`, but NaN for every passage text holding `poison` (a model gone wrong on one window)."""

    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        rows = _Model().encode(texts, query=query)
        rows[[i for i, t in enumerate(texts) if "poison" in t and not query]] = np.nan
        return rows


def load_nan_on_poison() -> StrongEncoder:
    return StrongEncoder("fake-strong:1:32", DIM, _NotFiniteOn())


def filled(bank: Any) -> None:
    """Until every entry of `bank` has its strong vector (the `index:strong` announcements, no sleeps)."""
    done = threading.Event()

    def heard(method: str, params: dict[str, Any]) -> None:
        if method == "index:strong" and params["done"] == params["total"]:
            done.set()

    bank.listeners.append(heard)
    status = bank.status()["strong"]
    if not (status["state"] == "ready" and status["done"] == status["total"]):
        assert done.wait(30), bank.status()["strong"]
    bank.listeners.remove(heard)


def hashed(words: Iterable[list[str]], dim: int) -> np.ndarray:
    """Unit rows, one per text given as its words: each word hashed into one of `dim` dimensions."""
    listed = list(words)
    rows = np.zeros((len(listed), dim), np.float32)
    for i, found in enumerate(listed):
        for word in found:
            rows[i, zlib.crc32(word.strip(".,!?:;'\"()？，。").encode()) % dim] += 1.0
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
