"""The read side the sidecar relies on: `index.store.reading()` snapshots on per-thread connections."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw
import pytest

from membank import Bank
from membank.index.store import reading
from membank.runtime.registry import Registry
from membank.shells.server import Server

from .helpers import write_memory
from .wire import Wire


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

    def read() -> int:
        with reading():
            return len(bank.list_memories()["items"])
    # the writer holds its transaction until `release`, set only after the read is back: the read
    # returning at all shows it did not wait for the writer (a wait would end in _in_thread's deadline)
    assert _in_thread(read) == before  # the last committed state, not the writer's half
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
    writer = bank.index.db
    assert bank.index.db is writer  # one connection outside `reading()`, and it writes
    with bank.index.transaction():
        bank.index.set_meta("probe", "written")
    with reading():
        assert bank.index.db is not writer  # a connection of this thread's own, read-only
        assert bank.index.get_meta("probe") == "written"
        with pytest.raises(apsw.ReadOnlyError):
            bank.index.set_meta("probe", "refused")
    assert bank.index.db is writer  # the block over: the writer's connection again
    with bank.index.transaction():
        bank.index.set_meta("probe", "again")
    assert bank.index.get_meta("probe") == "again"


# -- the sidecar's read lane during a rebuild, the rebuild held halfway (no race: an event) -------------


def test_status_reads_during_a_held_rebuild_answer_from_the_last_commit(sample: Path) -> None:
    # one read thread: the status read after project:open runs after its connection was warmed
    wire = Wire(lambda fd: Server(Registry(), fd, watch=False, read_workers=1))
    rebuild: threading.Thread | None = None
    release = threading.Event()
    try:
        project_id = wire.call("project:open", {"path": str(sample)})["projectId"]
        before = wire.call("index:status")["counts"]
        # a file the index has not read yet: only the rebuilt index holds it
        write_memory(sample, "notes/after-the-snapshot.md", "Written before the rebuild.", id="m-late", type="note")
        halfway, errors = threading.Event(), []

        def hold(done: int, total: int) -> None:  # `progress`: called inside the rebuild's transaction
            if done == total // 2 + 1:
                halfway.set()
                release.wait(30)

        def run() -> None:
            try:
                wire.server.registry.get(project_id).sync(rebuild=True, progress=hold)
            except BaseException as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)
        rebuild = threading.Thread(target=run)
        rebuild.start()
        assert halfway.wait(30), "the rebuild never reached its halfway point"
        # the rebuild holds the write lock and its transaction until `release`: three reads come back
        # meanwhile (so none waited for it), each from the last committed index, not the half-built one
        ids = [wire.send("index:status") for _ in range(3)]
        statuses = [wire.reply(id_) for id_ in ids]
        assert [s["counts"] for s in statuses] == [before] * 3
        assert rebuild.is_alive()
        release.set()
        rebuild.join(30)
        assert not rebuild.is_alive() and errors == []
        after = wire.call("index:status")["counts"]  # now the rebuilt index, with the new file
        assert after == {**before, "memories": before["memories"] + 1}
    finally:
        release.set()
        if rebuild is not None:
            rebuild.join(30)
        wire.close()


def test_each_read_thread_keeps_its_own_memo_until_the_data_moves(bank: Bank) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def other() -> None:
        with reading():
            memo = bank.index.view_memo("probe")
            assert memo is not None and "mine" not in memo  # another connection, another view
            memo["theirs"] = 2

    with ThreadPoolExecutor(1) as pool:  # a read thread warmed as the sidecar warms them
        pool.submit(bank.index.prepare_reader).result(30)
        with reading():
            bank.index.view_memo("probe")["mine"] = 1  # type: ignore[index]
        pool.submit(other).result(30)
        with reading():
            assert bank.index.view_memo("probe") == {"mine": 1}  # not thrown away by the other thread's read
    bank.create_memory("note", "project", "A commit moves every view on.")
    with reading():
        assert bank.index.view_memo("probe") == {}
    with bank.index.transaction():
        assert bank.index.view_memo("probe") is None  # mid-write: nothing read may be kept


def test_the_index_commits_without_a_sync_of_its_own_and_readers_are_read_only(bank: Bank) -> None:
    """The index is derived from the files (which are fsynced): its commits go to the WAL unsynced
    (synchronous NORMAL; FULL would fsync at every commit, ~10 ms of a write on a busy disk)."""
    assert bank.index.db.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert bank.index.db.execute("PRAGMA synchronous").fetchall() == [(1,)]  # NORMAL
    with reading():
        assert bank.index.db.execute("PRAGMA query_only").fetchall() == [(1,)]
        assert bank.index.db.execute("PRAGMA synchronous").fetchall() == [(1,)]
