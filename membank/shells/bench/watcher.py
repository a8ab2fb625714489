"""The watcher row: a file saved on disk until a preview through the channel table shows it."""

from __future__ import annotations

import os
import shutil
import threading
import time
from typing import Any

from ..watch import Watcher
from .measure import caller
from .rows import Row

SHOW_WITHIN_S = 5.0  # a probe not visible by then is a failure, not a slow sample


def _probe_text(document: str, marker: str) -> str:
    return (f"---\nid: bench-probe\ntype: preference\nscope: document\ndocument: {document}\n"
            f"updated: 2030-01-01T00:00:00Z\n---\nKeep the probe {marker} in mind.\n")


def watcher_row(bank: Any, size: int, reps: int) -> Row:
    """A file saved (in place, or by rename like vim and VS Code) until a preview through the channel shows it."""
    row = Row("watcher", "watcher: file saved → visible in a preview", "ms", size, target=300,
              target_text="p95 ≤ 300 ms", note="debounce 0.1 s included; native events")
    call = caller(bank)
    changed = threading.Event()
    watcher = Watcher(bank, on_change=lambda sources: changed.set(), debounce=0.1)
    folder = bank.project.path / "memories" / "bench-probe"
    folder.mkdir(parents=True, exist_ok=True)
    document = "chapters/bench-probe.md"
    watcher.start()
    try:
        deadline = time.monotonic() + 120
        while not watcher.idle() and time.monotonic() < deadline:  # the first reconcile (a full sync)
            time.sleep(0.01)
        row.note = f"debounce 0.1 s included; {watcher.status()['mode']} events"
        for i in range(reps):
            marker = f"probe{i:03d}x{time.time_ns() % 1_000_000}"
            text = _probe_text(document, marker)
            path = folder / "probe.md"  # the same file saved again and again, as a writer does
            changed.clear()
            started = time.perf_counter()
            if i % 2:  # save by rename, as vim, VS Code and gedit do
                tmp = folder / ".probe.md.swp"
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            else:
                path.write_text(text, encoding="utf-8")
            seen = False
            limit = time.monotonic() + SHOW_WITHIN_S
            while not seen and time.monotonic() < limit:
                changed.wait(0.05)  # the app waits for index:changed, then asks for a preview
                changed.clear()
                items = call("memory:injection:preview", {"documentId": document})["items"]
                seen = any(marker in it["content"] for it in items)
            if not seen:
                raise RuntimeError(f"probe {i} did not show up in a preview within {SHOW_WITHIN_S:g} s")
            row.samples.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
    finally:
        watcher.stop()
        shutil.rmtree(folder, ignore_errors=True)
        bank.sync()
    return row
