"""Measuring save-to-visible latency: probe files saved the way editors save them, timed until the
index shows them (docs/watcher.md)."""

from __future__ import annotations

import math
import os
import statistics
import time
from typing import Callable

from ..index.store import reading
from ..runtime.project import Project as Bank
from .watch import Watcher


def measure_latency(bank: Bank, samples: int = 50, *, debounce: float = 0.1, folder: str = "memories/_latency-probe",
                    timeout: float = 5.0) -> dict[str, float]:
    """Save memory files the way editors do (temporary file, then rename) and time until each is visible.

    Uses the bank's running watcher, or starts one for the measurement. The probe files are written
    under `folder` in the project bank and removed afterwards. Returns milliseconds.
    """
    own = getattr(bank, "watcher", None) is None
    watcher = Watcher(bank, debounce=debounce) if own else bank.watcher
    if own:
        watcher.start()
    base = bank.project.path / folder
    base.mkdir(parents=True, exist_ok=True)
    took: list[float] = []
    try:
        _wait(lambda: watcher.idle(), timeout)
        for i in range(-1, samples):  # probe -1 warms up (its folder is new) and is not counted
            memory_id = f"latency-probe-{i}"
            text = f"Latency probe {i} at {time.time_ns()}."
            data = (f"---\nid: {memory_id}\ntype: note\nupdated: 2026-01-01T00:00:00Z\n---\n{text}\n").encode()
            tmp = base / f".probe-{i}.md.tmp"
            tmp.write_bytes(data)
            started = time.perf_counter()
            os.replace(tmp, base / f"probe-{i}.md")

            def visible() -> bool:
                with reading():  # a snapshot of its own: never in the watcher's way
                    found = bank.index.find("memory", memory_id)
                return found is not None and found[1]["content"] == text
            if not _wait(visible, timeout, step=0.001):
                raise TimeoutError(f"probe {i} did not show up within {timeout} s")
            if i >= 0:
                took.append((time.perf_counter() - started) * 1000)
    finally:
        for path in sorted(base.glob("*"), reverse=True):
            path.unlink(missing_ok=True)
        try:
            base.rmdir()
        except OSError:
            pass
        def gone() -> bool:
            with reading():
                return not any(bank.index.find("memory", f"latency-probe-{i}") for i in range(-1, samples))
        _wait(gone, timeout)
        if own:
            watcher.stop()
    ordered = sorted(took)
    return {
        "samples": len(took),
        "medianMs": round(statistics.median(ordered), 2),
        "p95Ms": round(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)], 2),  # nearest rank
        "maxMs": round(ordered[-1], 2),
    }


def _wait(condition: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
