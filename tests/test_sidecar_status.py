"""`index:status` and the preview through the sidecar's read pool: each read block keeps its snapshot's
connection and view key for the block alone, so a write between two calls is seen by the second."""

from __future__ import annotations

from pathlib import Path

from membank.index.store import reading

from .helpers import write_memory
from .wire import Wire


def test_a_write_between_two_status_calls_is_seen(sample: Path) -> None:
    wire = Wire()
    try:
        wire.call("project:open", {"path": str(sample)})
        first = [wire.call("index:status") for _ in range(4)]  # every read thread, its view memo made
        assert all(s["counts"] == first[0]["counts"] for s in first)
        wire.call("memory:create", {"type": "note", "scope": "project", "content": "Seen by the next status."})
        after = [wire.call("index:status") for _ in range(4)]
        assert all(s["counts"]["memories"] == first[0]["counts"]["memories"] + 1 for s in after)
        errors = first[0]["diagnostics"]["errors"]
        write_memory(sample, "notes/broken.md", "A file with a bad type.", id="m-broken", type="Not A Type")
        wire.call("index:sync")
        assert all(wire.call("index:status")["diagnostics"]["errors"] == errors + 1 for _ in range(4))
    finally:
        wire.close()


def test_a_preview_after_a_write_counts_it(sample: Path) -> None:
    wire = Wire()
    try:
        wire.call("project:open", {"path": str(sample)})
        before = [wire.call("memory:injection:preview") for _ in range(4)]
        wire.call("memory:create", {"type": "note", "scope": "project", "content": "One more to count."})
        for _ in range(4):
            after = wire.call("memory:injection:preview")
            assert len(after["items"]) + after["diagnostics"]["truncated"] == \
                len(before[0]["items"]) + before[0]["diagnostics"]["truncated"] + 1
    finally:
        wire.close()


def test_blocks_in_turn_on_one_thread_each_see_the_last_commit(bank) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        with reading():
            seen = bank.index.counts()["memories"]
            assert bank.index.view_key() == bank.index.view_key()  # one key for the block
        bank.create_memory("note", "project", f"Commit {i} between two blocks.")
        with reading():
            assert bank.index.counts()["memories"] == seen + 1
