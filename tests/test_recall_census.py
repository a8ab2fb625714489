"""The census of eligible memories (recall/census.py): its pure rules, the budget's floor, and the
cached census on a real index, fresh after every write."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, strategies as st

from membank import Bank
from membank.domains.recall import census, queries
from membank.domains.recall.census import Census
from membank.kernel.budget import fit

from .helpers import write_memory


def test_the_two_halves_add_and_the_fewest_is_the_smaller() -> None:
    assert census.combine(Census(5, 40), Census(2, 12)) == Census(7, 12)
    assert census.combine(Census(5, 40), census.NOBODY) == Census(5, 40)
    assert census.combine(census.NOBODY, Census(1, 9)) == Census(1, 9)
    assert census.combine(census.NOBODY, census.NOBODY) == census.NOBODY


def test_a_row_of_count_and_min_makes_a_census() -> None:
    assert census.of_row(0, None) == census.NOBODY
    assert census.of_row(3, 17) == Census(3, 17)


def test_something_may_fit_only_when_the_fewest_is_within_what_is_left() -> None:
    assert census.may_fit(Census(3, 17), 17)
    assert not census.may_fit(Census(3, 17), 16)
    assert not census.may_fit(census.NOBODY, 10**6)


def test_fit_reads_no_further_once_less_than_the_floor_is_left() -> None:
    read: list[int] = []

    def rows():  # type: ignore[no-untyped-def]
        for i in itertools.count():
            read.append(i)
            yield i, 30
    assert [i for i, _ in fit(rows(), 10, 100, floor=30)] == [0, 1, 2]
    assert read == [0, 1, 2]  # 10 tokens left, fewer than any row takes: the fourth is never read
    assert list(fit([("a", 5)], 10, 4, floor=5)) == []


@given(st.lists(st.integers(1, 60), max_size=20), st.integers(0, 8), st.integers(0, 150))
def test_a_true_floor_never_changes_what_fits(sizes: list[int], max_items: int, budget: int) -> None:
    candidates = list(enumerate(sizes))
    floor = min(sizes, default=0)
    assert list(fit(candidates, max_items, budget, floor)) == list(fit(candidates, max_items, budget))


def _fits(bank: Bank, document: str | None, max_items: int, budget: int) -> None:
    with bank.index.lock:
        assert queries.fitting(bank.index, document, max_items, budget) == list(
            fit(queries.ordered(bank.index, document), max_items, budget))


def test_the_census_sees_a_write_between_two_calls(bank: Bank, sample: Path) -> None:
    """Counted once per view of the index: a memory written, then synced, is in the next count and,
    smaller than any before it, in the next fitting."""
    doc = "chapters/ch05.md"
    with bank.index.lock:
        before, before_doc = queries.eligible_count(bank.index, None), queries.eligible_count(bank.index, doc)
        fewest = queries.eligible_census(bank.index, doc).fewest
    assert fewest is not None and fewest > 1
    _fits(bank, doc, 50, fewest - 1)  # nothing fits
    write_memory(sample, "notes/tiny.md", "Tiny.", id="m-tiny", type="note", scope="document", document=doc,
                 updated="2020-01-01T00:00:00Z")
    bank.sync()
    with bank.index.lock:
        assert queries.eligible_count(bank.index, None) == before
        assert queries.eligible_count(bank.index, doc) == before_doc + 1
        assert queries.fitting(bank.index, doc, 50, fewest - 1)[0][0]["id"] == "m-tiny"
    _fits(bank, doc, 50, fewest - 1)
    bank.create_memory("note", "project", "One more memory about the harbour at dusk.")
    with bank.index.lock:
        assert queries.eligible_count(bank.index, None) == before + 1
    assert [i["id"] for i in bank.preview(document_id=doc)["items"]] == [
        m["id"] for m, _ in queries.fitting(bank.index, doc, 20, 1200)]


def test_fitting_with_a_hidden_set_is_fit_over_the_order(bank: Bank) -> None:
    with bank.index.lock:
        rowids = [r for (r,) in bank.index.db.execute("SELECT rowid FROM entries WHERE kind = 'memory'")]
    for hidden, types in ((rowids[::2], ()), ((), ("preference",)), (rowids[1::3], ("fact",))):
        with queries.hiding(hidden, types):
            for document in (None, "chapters/ch05.md"):
                for max_items, budget in ((20, 1200), (3, 40), (500, 10**6), (20, 0)):
                    _fits(bank, document, max_items, budget)
                with bank.index.lock:
                    assert queries.eligible_count(bank.index, document) == sum(
                        1 for _ in queries.ordered(bank.index, document))


def test_mid_write_nothing_is_kept_and_the_census_is_the_transactions(bank: Bank) -> None:
    """Inside a write transaction the census is counted afresh, with the transaction's own rows."""
    doc = "chapters/ch05.md"
    with bank.index.lock:
        before = queries.eligible_count(bank.index, doc)
    with bank.index.transaction():
        bank.index.db.execute("UPDATE entries SET tokens = 1 WHERE rowid = (SELECT min(rowid) FROM entries"
                              " WHERE kind = 'memory' AND scope != 'document' AND deleted = 0 AND tokens > 0)")
        assert queries.eligible_census(bank.index, doc).fewest == 1
        assert queries.eligible_count(bank.index, doc) == before
        _fits(bank, doc, 50, 1)
        bank.index.db.execute("ROLLBACK; BEGIN IMMEDIATE")
    with bank.index.lock:
        assert queries.eligible_census(bank.index, doc).fewest != 1 or before == 0
