"""The read side the sidecar relies on: `index.store.reading()` snapshots on per-thread connections."""

from __future__ import annotations

import threading
import time

import apsw
import pytest

from membank.runtime.project import Bank
from membank.index.store import reading


def _in_thread(fn):  # noqa: ANN001, ANN202
    """Run fn in a fresh thread (its own read connection); its result, or its exception raised here."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert not t.is_alive()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def test_a_read_does_not_wait_for_a_writer_transaction_nor_see_it(bank: Bank) -> None:
    before = len(bank.list_memories()["items"])
    entered, release = threading.Event(), threading.Event()

    def writer() -> None:
        with bank.write_lock, bank.index.transaction():
            bank.index.db.execute("DELETE FROM entries WHERE kind = 'memory'")
            entered.set()
            release.wait(30)
            raise RuntimeError("roll back")  # leave the index as it was

    t = threading.Thread(target=lambda: pytest.raises(RuntimeError, writer))
    t.start()
    assert entered.wait(30)
    started = time.perf_counter()

    def read() -> int:
        with reading():
            return len(bank.list_memories()["items"])
    assert _in_thread(read) == before  # the last committed state, not the writer's half
    assert time.perf_counter() - started < 5
    release.set()
    t.join(30)
    assert len(bank.list_memories()["items"]) == before


def test_one_snapshot_for_the_whole_block(bank: Bank) -> None:
    with reading():
        first = bank.index.counts()["memories"]
        _in_thread(lambda: bank.create_memory("note", "project", "Made while a reader holds its snapshot."))
        assert bank.index.counts()["memories"] == first  # still the snapshot the block began with
        assert len(bank.list_memories()["items"]) == first
    with reading():
        assert bank.index.counts()["memories"] == first + 1  # a new block sees the commit
        assert len(bank.list_memories()["items"]) == first + 1


def test_reads_refuse_to_write(bank: Bank) -> None:
    with reading():
        with pytest.raises(apsw.ReadOnlyError):
            bank.index.db.execute("DELETE FROM entries")
    assert bank.list_memories()["items"]


def test_reads_during_a_rebuild_answer_from_the_old_index(bank: Bank) -> None:
    with reading():
        expected = bank.list_memories()["items"]  # this thread now has a read connection
    bank.index.rebuild()  # a new, empty file: not committed by a sync yet
    with reading():
        assert bank.list_memories()["items"] == expected
        assert bank.index.counts()["memories"] == len(expected)
    bank.sync()
    with reading():
        assert bank.list_memories()["items"] == expected  # now from the rebuilt file
    assert bank.list_memories()["items"] == expected


def test_outside_reading_the_writer_connection_is_used(bank: Bank) -> None:
    assert bank.index.db is bank.index._writer
    with reading():
        assert bank.index.db is not bank.index._writer
    assert bank.index.db is bank.index._writer
