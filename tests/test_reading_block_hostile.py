"""Hostile checks of a reading() block's snapshot (index/store.py): kept for the whole block, nested
blocks included, while the writer writes or rebuilds on another thread; the next block sees it all."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from membank import Bank
from membank.domains.indexing.refresh import refresh
from membank.domains.recall import queries
from membank.index.store import reading

from .helpers import write_memory

_DOC = "chapters/ch05.md"


def _ids(bank: Bank) -> tuple[int, list[str]]:
    return (queries.eligible_count(bank.index, _DOC),
            [m["id"] for m, _ in queries.fitting(bank.index, _DOC, 50, 10**6)])


def _tiny(sample: Path, name: str) -> None:
    write_memory(sample, f"hostile/{name}.md", "Tiny.", id=f"m-{name}", type="note", scope="document",
                 document=_DOC, updated="2020-01-01T00:00:00Z")


@pytest.mark.parametrize("rebuild", [False, True])
def test_a_block_keeps_its_snapshot_while_the_writer_moves_on(bank: Bank, sample: Path, rebuild: bool) -> None:
    inside, written = threading.Event(), threading.Event()
    seen: list[tuple[int, list[str]]] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            with reading():
                seen.append(_ids(bank))
                inside.set()
                assert written.wait(30)
                with reading():  # nested: still the outer block's snapshot
                    seen.append(_ids(bank))
                seen.append(_ids(bank))
            with reading():
                seen.append(_ids(bank))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
            inside.set()
    reader = threading.Thread(target=read)
    reader.start()
    assert inside.wait(30)
    _tiny(sample, "tiny")
    refresh(bank, rebuild=rebuild)
    written.set()
    reader.join()
    assert not errors
    before, after = seen[0], seen[3]
    assert seen[1] == seen[2] == before
    assert after[0] == before[0] + 1 and "m-tiny" in after[1] and "m-tiny" not in before[1]
    with bank.index.lock:
        assert _ids(bank) == after


def test_a_write_inside_a_block_fails_loudly_and_the_block_reads_on(bank: Bank, sample: Path) -> None:
    with bank.index.lock:
        start = _ids(bank)
    with reading():
        assert _ids(bank) == start
        with pytest.raises(Exception):
            bank.index.db.execute("DELETE FROM entries")
        assert _ids(bank) == start
    _tiny(sample, "late")
    bank.sync()
    with reading():
        assert _ids(bank)[0] == start[0] + 1
