"""A domain's tables are its own: registered with the index, versioned apart, rebuilt alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import membank
from membank.index import schema


def _feedback(bank: membank.Bank, n: int) -> None:
    for i in range(n):
        assert bank.call("memory:preferences:ingest", {"runId": f"r{i}", "skillId": "polish", "action": "accept",
                                                       "evidenceRef": "omit needless words"})["ok"]


def test_a_domain_schema_change_rebuilds_only_what_comes_from_its_files(
        sample: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bank = membank.open(sample, home=home)
    try:
        _feedback(bank, 3)
        memories = bank.list_memories(include_deleted=True)["items"]
        journals = sorted(p for p in (sample / ".writenow" / "journal").glob("*.jsonl"))
    finally:
        bank.close()

    events = schema.SCHEMAS["learning.events"]
    monkeypatch.setitem(schema.SCHEMAS, "learning.events", dataclasses.replace(events, version=events.version + 1))
    bank = membank.open(sample, home=home, sync=False)
    try:
        report = bank.sync()
        assert report["added"] == len(journals) and report["updated"] == report["removed"] == 0  # journals alone
        assert bank.list_memories(include_deleted=True)["items"] == memories  # memories were not touched
        again = bank.ingest_feedback("r9", "polish", "accept", "omit needless words")
        assert again["count"] == 4  # the counts came back from the re-read journal
        assert bank.sync()["added"] == 0  # and the version is recorded: nothing more to re-read
    finally:
        bank.close()


def test_an_index_without_a_domain_table_gets_it_on_open(sample: Path, home: Path) -> None:
    bank = membank.open(sample, home=home)
    try:
        with bank.index.transaction():
            bank.index.db.execute("DROP TABLE events")
            bank.index.set_meta("schema:learning.events", "0")  # as an index written before the table existed
    finally:
        bank.close()
    bank = membank.open(sample, home=home)
    try:
        _feedback(bank, 1)
        assert bank.ingest_feedback("r5", "polish", "accept", "omit needless words")["count"] == 2
    finally:
        bank.close()
