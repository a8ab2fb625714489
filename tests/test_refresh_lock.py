"""`index:sync` while another thread holds the writer's connection under the index lock (a read channel run
outside `reading()`: the sidecar's daily look asks `index:status` that way): the sync waits for the lock
instead of answering DB_ERROR (ThreadingViolationError). Its temporary-file sweep read the index's meta
outside the lock (seen in CI: a sidecar's first `index:sync` failed)."""

from __future__ import annotations

import threading
from typing import Any

from membank import Bank


def test_a_sync_waits_for_a_reader_holding_the_writers_connection(bank: Bank) -> None:
    entered, gate = threading.Event(), threading.Event()

    def hold() -> int:  # runs inside the writer connection's statement: the connection is in use meanwhile
        entered.set()
        gate.wait(30)
        return 0

    def reader() -> None:  # as dispatch runs a read channel outside `reading()`: under the index lock
        with bank.index.lock:
            bank.index.db.execute("SELECT hold()").fetchall()

    with bank.index.lock:
        bank.index.db.create_scalar_function("hold", hold, 0)
    answer: dict[str, Any] = {}
    busy = threading.Thread(target=reader)
    busy.start()
    try:
        assert entered.wait(30)
        syncing = threading.Thread(target=lambda: answer.update(bank.call("index:sync", {})))
        syncing.start()
        syncing.join(0.5)  # before: DB_ERROR at once; now it waits for the lock
        assert not answer or answer["ok"], answer
    finally:
        gate.set()
        busy.join(30)
    syncing.join(30)
    assert answer["ok"], answer
