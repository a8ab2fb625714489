"""Files are the truth: deleting the index and syncing again gives identical answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import membank
from membank import Bank

from .helpers import answers, write_memory


def test_rebuild_from_scratch_gives_identical_answers(bank: Bank, sample: Path) -> None:
    bank.create_memory("fact", "project", "The causeway floods twice a day.", tags=["tide"])
    bank.create_memory("note", "document", "Slow the pace here.", document_id="chapters/ch05.md")
    gone = bank.create_memory("preference", "global", "Prefer British spelling.")
    bank.delete_memory(gone["id"])
    write_memory(sample, "notes/broken.md", "text", confidence="very")  # a diagnostic too
    bank.sync()
    before = answers(bank)
    bank.close()

    shutil.rmtree(sample / ".writenow" / ".index")
    reopened = membank.open(sample)
    try:
        assert answers(reopened) == before
    finally:
        reopened.close()


def test_rebuild_flag_gives_identical_answers(bank: Bank) -> None:
    before = answers(bank)
    bank.sync(rebuild=True)
    assert answers(bank) == before


def test_index_with_another_schema_version_rebuilds_itself(bank: Bank, sample: Path) -> None:
    before = answers(bank)
    bank.index.db.execute("PRAGMA user_version = 999")
    bank.close()
    reopened = membank.open(sample)
    try:
        assert answers(reopened) == before
    finally:
        reopened.close()
