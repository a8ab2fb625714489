"""`index:sync` while another thread holds the writer's connection under the index lock (a read channel run
outside `reading()`: the sidecar's daily look asks `index:status` that way): the sync waits for the lock
instead of answering DB_ERROR (ThreadingViolationError). Its temporary-file sweep read the index's meta
outside the lock (seen in CI: a sidecar's first `index:sync` failed)."""

from __future__ import annotations

import threading
from typing import Any

from membank import Bank

from .helpers import writer_in_use


def test_a_sync_waits_for_a_reader_holding_the_writers_connection(bank: Bank) -> None:
    answer: dict[str, Any] = {}
    syncing = threading.Thread(target=lambda: answer.update(bank.call("index:sync", {})))
    with writer_in_use(bank):
        syncing.start()
        syncing.join(0.5)  # before: DB_ERROR at once; now it waits for the lock
        assert not answer or answer["ok"], answer
    syncing.join(30)
    assert answer["ok"], answer
