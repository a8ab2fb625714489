"""The pure decisions, tested directly: score fusion, the sync plan, learned confidence, budget fitting."""

from __future__ import annotations

import itertools

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from membank.domains.indexing.sync import plan
from membank.domains.learning.decisions import confidence
from membank.domains.recall import order
from membank.domains.recall.rank import Hit, fuse, rank_semantic
from membank.files.records import SCOPE_RANK, TYPE_RANK
from membank.files.scan import FileStat
from membank.kernel.budget import fit

# -- fuse: fused = 0.5 * cosine + 0.5 * bm25 / best bm25 ------------------------------------------------


def by_row(hits: list[Hit]) -> dict[int, Hit]:
    return {h.rowid: h for h in hits}


def test_fuse_weighs_both_sides_and_keeps_each_rank() -> None:
    hits = by_row(fuse([(1, 0.2), (2, 0.4)], [(2, -4.0), (1, -2.0)]))
    assert set(hits) == {1, 2}
    one, two = hits[1], hits[2]
    assert (one.vector_rank, one.lexical_rank, two.vector_rank, two.lexical_rank) == (1, 2, 2, 1)
    assert one.similarity == pytest.approx(0.8) and one.bm25 == -2.0
    assert one.fused == pytest.approx(0.5 * 0.8 + 0.5 * 0.5)
    assert two.fused == pytest.approx(0.5 * 0.6 + 0.5 * 1.0)


def test_a_hit_missing_from_one_side_scores_zero_there() -> None:
    hits = by_row(fuse([(1, 0.1)], [(3, -1.5)]))
    assert hits[1].lexical_rank is None and hits[1].bm25 is None
    assert hits[1].fused == pytest.approx(0.5 * 0.9)
    assert hits[3].vector_rank is None and hits[3].similarity is None
    assert hits[3].fused == pytest.approx(0.5)  # the best word match scores 1 on its side


def test_the_best_bm25_scales_the_word_side_to_one() -> None:
    small = by_row(fuse([], [(5, -0.002), (6, -0.001)]))
    large = by_row(fuse([], [(5, -20.0), (6, -10.0)]))
    assert small[5].fused == large[5].fused == pytest.approx(0.5)
    assert small[6].fused == large[6].fused == pytest.approx(0.25)


def test_a_zero_bm25_gives_no_word_score_and_no_division_by_zero() -> None:
    assert fuse([], [(1, 0.0)])[0].fused == 0.0
    assert fuse([], []) == []


@given(st.lists(st.floats(-50.0, -0.01), min_size=1, max_size=8), st.floats(0.1, 100.0))
def test_fusion_ignores_the_scale_of_bm25(scores: list[float], factor: float) -> None:
    lexical = list(enumerate(sorted(scores), start=1))  # best (most negative) first, as FTS5 gives them
    plain = [h.fused for h in fuse([], lexical)]
    scaled = [h.fused for h in fuse([], [(r, s * factor) for r, s in lexical])]
    assert scaled == pytest.approx(plain)
    assert max(plain) == pytest.approx(0.5) and all(0.0 < f <= 0.5 + 1e-12 for f in plain)


def hit(rowid: int, fused: float) -> Hit:
    return Hit(rowid, None, None, None, None, fused)


def test_equal_fused_scores_go_by_the_deterministic_order() -> None:
    # 0.1 + 0.2 is 0.30000000000000004: float noise must not decide, the deterministic key does
    hits = [hit(7, 0.1 + 0.2), hit(8, 0.3), hit(9, 0.9)]
    eligible = {7: (10, ("b",)), 8: (10, ("a",)), 9: (10, ("z",))}
    assert [h.rowid for h, _ in rank_semantic(hits, eligible, 10, 1000)] == [9, 8, 7]
    eligible[7], eligible[8] = (10, ("a",)), (10, ("b",))
    assert [h.rowid for h, _ in rank_semantic(hits, eligible, 10, 1000)] == [9, 7, 8]


def test_ranking_leaves_out_what_is_not_eligible_and_fits_the_budget() -> None:
    hits = [hit(1, 0.9), hit(2, 0.8), hit(3, 0.7), hit(4, 0.6)]
    eligible = {1: (60, (1,)), 3: (50, (3,)), 4: (40, (4,))}  # 2 is not eligible (deleted, shadowed, ...)
    assert rank_semantic(hits, eligible, 10, 100) == [(hits[0], 60), (hits[3], 40)]


# -- plan: which files a sync reads --------------------------------------------------------------------


def stat(name: str, size: int = 10, mtime_ns: int = 1000) -> FileStat:
    return FileStat(f".writenow/memories/{name}", f"memories/{name}", "memories", size, mtime_ns)


def known(size: int = 10, mtime_ns: int = 1000) -> tuple[int, int]:
    return (size, mtime_ns)  # what the index holds of a file that the plan compares (Index.file_stamps)


def test_plan_reads_new_and_changed_files_and_lists_removed_ones() -> None:
    disk = [stat("new.md"), stat("bigger.md", size=11), stat("touched.md", mtime_ns=2000), stat("same.md")]
    index = {s.source: known() for s in disk[1:]} | {".writenow/memories/z-gone.md": known(),
                                                     ".writenow/memories/a-gone.md": known()}
    p = plan(disk, index)
    assert [s.rel for s in p.to_read] == ["memories/new.md", "memories/bigger.md", "memories/touched.md"]
    assert p.removed == (".writenow/memories/a-gone.md", ".writenow/memories/z-gone.md")  # sorted
    assert p.unchanged == 1


def test_plan_trusts_a_matching_size_and_mtime() -> None:
    # no hash is looked at: a same-size edit within the clock's resolution is a stat scan's limit
    p = plan([stat("same.md")], {stat("same.md").source: known()})
    assert (p.to_read, p.removed, p.unchanged) == ((), (), 1)


def test_plan_of_nothing() -> None:
    p = plan([], {})
    assert (p.to_read, p.removed, p.unchanged) == ((), (), 0)
    assert plan(iter([stat("a.md")]), {}).to_read == (stat("a.md"),)  # any iterable, read once


names = st.sampled_from([f"{c}.md" for c in "abcdef"])


@given(st.dictionaries(names, st.tuples(st.integers(0, 3), st.integers(0, 3))),
       st.dictionaries(names, st.tuples(st.integers(0, 3), st.integers(0, 3))))
def test_plan_partitions_the_disk_and_removes_exactly_what_is_gone(on_disk: dict, indexed: dict) -> None:
    disk = [stat(n, size, mtime) for n, (size, mtime) in on_disk.items()]
    index = {stat(n).source: known(size, mtime) for n, (size, mtime) in indexed.items()}
    p = plan(disk, index)
    read = {s.source for s in p.to_read}
    assert read == {s.source for s in disk if index.get(s.source) != known(s.size, s.mtime_ns)}
    assert p.unchanged == len(disk) - len(read)
    assert set(p.removed) == set(index) - {s.source for s in disk} and list(p.removed) == sorted(p.removed)


# -- confidence of a learned preference ------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [1, 3, 5, 10])
def test_confidence_is_half_at_the_threshold_and_three_quarters_at_twice(threshold: int) -> None:
    assert confidence(threshold, threshold) == 0.5
    assert confidence(2 * threshold, threshold) == 0.75
    assert confidence(0, threshold) == 0.0


def test_a_partial_accept_counts_half() -> None:
    assert 0.5 < confidence(3.5, 3) < confidence(4, 3) < 0.75


@given(st.integers(1, 20), st.integers(0, 400))
def test_confidence_grows_with_the_count_and_stays_within_0_and_1(threshold: int, halves: int) -> None:
    count = halves / 2
    assert 0.0 <= confidence(count, threshold) <= confidence(count + 0.5, threshold) <= 1.0
    if count <= 10 * threshold:  # rounded to 3 places, it reads 1.0 only past ~11 times the threshold
        assert confidence(count, threshold) < 1.0


# -- fit: the one greedy budget rule ------------------------------------------------------------------------


def test_fit_stops_at_max_items() -> None:
    assert list(fit([("a", 1), ("b", 1), ("c", 1)], 2, 100)) == [("a", 1), ("b", 1)]


def test_fit_keeps_within_the_token_budget_exactly() -> None:
    assert list(fit([("a", 50), ("b", 40), ("c", 20)], 10, 100)) == [("a", 50), ("b", 40)]
    assert list(fit([("a", 60), ("b", 40)], 10, 100)) == [("a", 60), ("b", 40)]  # up to the budget itself


def test_a_too_large_item_is_skipped_and_later_smaller_ones_still_fit() -> None:
    assert list(fit([("a", 60), ("long", 50), ("c", 40), ("d", 1)], 10, 100)) == [("a", 60), ("c", 40)]
    assert list(fit([("huge", 500), ("small", 5)], 10, 100)) == [("small", 5)]


@pytest.mark.parametrize("max_items", [0, -1])
def test_no_items_when_max_items_is_not_positive(max_items: int) -> None:
    assert list(fit([("a", 1)], max_items, 100)) == []


def test_fit_stops_reading_candidates_once_full() -> None:
    endless = ((i, 1) for i in itertools.count())  # a cursor over many rows: only what is needed is read
    assert [i for i, _ in fit(endless, 3, 100)] == [0, 1, 2]


@given(st.lists(st.integers(0, 60), max_size=20), st.integers(-1, 8), st.integers(0, 150))
def test_fit_is_an_ordered_greedy_choice(sizes: list[int], max_items: int, budget: int) -> None:
    candidates = list(enumerate(sizes))
    kept = list(fit(candidates, max_items, budget))
    positions = [i for i, _ in kept]
    assert positions == sorted(positions) and all(candidates[i] == (i, t) for i, t in kept)
    assert len(kept) <= max(max_items, 0) and sum(t for _, t in kept) <= budget
    if 0 < max_items and len(kept) < max_items:  # not full: nothing left out would have fit in what is left
        room = budget - sum(t for _, t in kept)
        assert all(t > room for i, t in candidates if i not in positions)


@given(st.lists(st.tuples(st.sampled_from(["project", "document", "global"]),
                          st.sampled_from(["preference", "fact", "note", "clue", "plot-thread", "Zed", "ü"]),
                          st.integers(0, 2_000_000_000_000_000), st.text(min_size=1, max_size=5)),
                min_size=1, max_size=20))
def test_the_sql_key_and_order_are_the_python_key(memories: list[tuple[str, str, int, str]]) -> None:
    """order.KEY_SQL and ORDER_SQL, run by SQLite, agree with order.key_of on the same columns."""
    db = apsw.Connection(":memory:")
    db.execute(f"CREATE TABLE entries({order.KEY_COLUMNS})")
    rows = [(SCOPE_RANK[scope], TYPE_RANK.get(type_, order.OTHER_TYPES), type_, updated, id_)
            for scope, type_, updated, id_ in memories]
    db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?)", rows)
    keys = db.execute(f"SELECT {order.KEY_SQL} FROM entries ORDER BY {order.ORDER_SQL}").fetchall()
    assert keys == sorted(order.key_of(*row) for row in rows)
