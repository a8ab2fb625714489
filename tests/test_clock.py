"""One clock: every time membank writes comes from kernel.clock, which a test (or a replay) can swap."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import membank
from membank.kernel import clock

AT = dt.datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)


def test_stamps_in_files_the_journal_and_the_index_come_from_the_clock(sample: Path, home: Path) -> None:
    with clock.use(lambda: AT):
        bank = membank.open(sample, home=home)
        try:
            memory = bank.create_memory("note", "project", "Written at a chosen time.")
            deleted = bank.delete_memory(memory["id"])
            bank.ingest_feedback("r1", "polish", "accept", "omit needless words")
            last_sync = bank.status()["lastSync"]
        finally:
            bank.close()
    assert memory["createdAt"] == memory["updatedAt"] == deleted["deletedAt"] == last_sync == "2031-05-06T07:08:09Z"
    month = sample / ".writenow" / "journal" / "2031-05.jsonl"
    assert json.loads(month.read_text("utf-8").splitlines()[-1])["at"] == "2031-05-06T07:08:09.123456Z"


def test_a_naive_clock_is_taken_as_utc() -> None:
    with clock.use(lambda: AT.replace(tzinfo=None)):
        assert clock.now_iso() == "2031-05-06T07:08:09Z"
    assert clock.now_iso() != "2031-05-06T07:08:09Z"  # the system clock is back after the block
