"""The strong tier's background fill yields the processor: its thread runs at the lowest priority, so
a request the app sends while the fill embeds (minutes, a whole core) is served at once."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

import membank
from membank.domains.indexing import strongfill

from . import strongfake


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority (nice value) is Linux's")
def test_the_background_fill_runs_at_the_lowest_priority(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load")
    strongfake.CALLS["passages"], strongfake.HOLD_AFTER[0] = 0, 0
    strongfake.ENTERED.clear()
    strongfake.GATE.clear()  # the first batch is held while it is being embedded, on the filler's thread
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    bank = membank.open(sample)
    try:
        assert strongfake.ENTERED.wait(30)
        filler = next(t for t in threading.enumerate() if t.name == f"membank-strong-{bank.info.id}")
        assert filler.native_id is not None
        assert os.getpriority(os.PRIO_PROCESS, filler.native_id) == strongfill.LOWEST
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the caller's thread as it was
    finally:
        strongfake.GATE.set()
        bank.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority (nice value) is Linux's")
def test_the_model_is_loaded_at_normal_priority(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fill's first batch loads the model, and the query session's threads onnxruntime starts then
    inherit the loading thread's nice value: loaded at the lowest, a query's second thread would be too."""
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_noting_priority")
    strongfake.CALLS["passages"], strongfake.HOLD_AFTER[0] = 0, 0
    strongfake.ENTERED.clear()
    strongfake.GATE.clear()
    strongfake.LOADED_AT.clear()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    bank = membank.open(sample)
    try:
        assert strongfake.ENTERED.wait(30)
        assert strongfake.LOADED_AT == [mine]
    finally:
        strongfake.GATE.set()
        bank.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority (nice value) is Linux's")
def test_the_passages_fill_runs_at_the_lowest_priority(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load")
    strongfake.CALLS["passages"], strongfake.HOLD_AFTER[0] = 0, 10**9
    strongfake.GATE.set()
    bank = membank.open(sample)
    try:
        assert strongfill.filler(bank).worker.drain(30)  # the memories' fill is done
        strongfake.HOLD_AFTER[0] = strongfake.CALLS["passages"]  # the passages' first batch is held
        strongfake.ENTERED.clear()
        strongfake.GATE.clear()
        bank.search_manuscript(query_text="harbour")  # starts the passages' fill
        assert strongfake.ENTERED.wait(30)
        filler = next(t for t in threading.enumerate() if t.name == f"membank-passages-{bank.info.id}")
        assert filler.native_id is not None
        assert os.getpriority(os.PRIO_PROCESS, filler.native_id) == strongfill.LOWEST
    finally:
        strongfake.GATE.set()
        strongfake.HOLD_AFTER[0] = 0
        bank.close()
