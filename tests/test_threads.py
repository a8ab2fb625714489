"""The Python API from another thread while a watcher writes: reads never collide on the connection."""

from __future__ import annotations

import threading
from pathlib import Path

from membank import Bank
from membank.shells.watch import Watcher

from .helpers import write_memory
from .watching import wait_until


def test_reads_from_another_thread_while_the_watcher_writes(bank: Bank, sample: Path) -> None:
    watcher = Watcher(bank, debounce=0.01)
    watcher.start()
    failures: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                bank.list_memories()
                bank.preview(query_text="is the hero injured?")
                bank.status()
                bank.get_memory("m-fact-linmo-wounded")
            except BaseException as e:  # noqa: BLE001 - any failure is the finding
                failures.append(e)
                return

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(60):
            write_memory(sample, f"notes/burst-{i}.md", f"note number {i}", id=f"m-burst-{i}")
        wait_until(lambda: len(bank.list_memories()["items"]) == 13 + 60, timeout=20, what="all 60 notes indexed")
    finally:
        done.set()
        for t in threads:
            t.join()
        watcher.stop()
    assert failures == []
