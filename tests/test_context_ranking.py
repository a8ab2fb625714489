"""Layer 4's order of fused hits and its relevance floor (domains/context/memories.py): the same answers as
rounding every score to 9 places, with the rounding left to the scores close enough to need it."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from membank.domains.context.memories import (RELEVANCE_FLOOR, STRONG_RELEVANCE_FLOOR, best_first,
                                              relevant_enough)
from membank.index.fusion import Hit


def _hit(rowid: int, fused: float) -> Hit:
    return Hit(rowid, None, None, None, None, fused)


def _rounded(hits: list[Hit], tie: dict[int, object]) -> list[Hit]:
    return sorted(hits, key=lambda h: (-round(h.fused, 9), tie[h.rowid]))


def test_scores_apart_go_by_score_and_close_ones_by_their_rounding_then_the_tie() -> None:
    base = 0.4
    hits = [_hit(1, base), _hit(2, base + 4e-10), _hit(3, 0.9), _hit(4, base - 4e-10), _hit(5, 0.1),
            _hit(6, base + 6e-10)]
    tie = {1: "c", 2: "a", 3: "z", 4: "b", 5: "a", 6: "d"}
    got = best_first(hits, lambda h: tie[h.rowid])
    assert got == _rounded(hits, tie)
    assert [h.rowid for h in got][0] == 3 and got[-1].rowid == 5


def test_equal_keys_keep_the_order_they_came_in() -> None:
    hits = [_hit(r, 0.5) for r in (7, 3, 9)] + [_hit(1, 0.5 + 1e-12)]
    assert best_first(hits, lambda h: 0) == _rounded(hits, {h.rowid: 0 for h in hits})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.3, 0.35, 0.35 - 5e-10, 0.35 + 5e-10, 0.7]),
                          st.floats(-3e-9, 3e-9), st.integers(0, 3)), max_size=40), st.integers(0, 2**32))
def test_the_order_is_that_of_every_score_rounded(parts: list[tuple[float, float, int]], seed: int) -> None:
    rng = random.Random(seed)
    hits = [_hit(i, base + nudge * rng.choice([0, 1])) for i, (base, nudge, _) in enumerate(parts)]
    tie = {i: (t, rng.choice("ab")) for i, (_, _, t) in enumerate(parts)}
    assert best_first(hits, lambda h: tie[h.rowid]) == _rounded(hits, tie)


def test_the_floor_is_that_of_the_score_rounded_to_nine_places() -> None:
    for floor, centred in ((RELEVANCE_FLOOR, None), (STRONG_RELEVANCE_FLOOR, {})):
        for nudge in (0.0, -4e-10, -5e-10, -5.1e-10, -6e-10, -1e-9, -2e-9, 1e-12, -1e-12, 0.2, -0.2):
            score = floor + nudge
            got = relevant_enough(score, None, 1) if centred is None else relevant_enough(0.0, {1: score}, 1)
            assert got is (round(score, 9) >= floor), (floor, nudge)
    assert relevant_enough(0.9, {}, 1) is False  # a hit the strong side did not rank never passes


def test_fusion_lists_the_vector_side_first_then_words_alone_in_their_order_with_exact_scores() -> None:
    from membank.index.fusion import fuse

    hits = fuse([(4, 0.25), (2, 0.5)], [(9, -3.0), (2, -1.5), (7, -0.75)], 0.8)
    assert [h.rowid for h in hits] == [4, 2, 9, 7]
    assert [(h.vector_rank, h.lexical_rank) for h in hits] == [(1, None), (2, 2), (None, 1), (None, 3)]
    assert [h.fused for h in hits] == [0.8 * 0.75 + (1 - 0.8) * 0.0, 0.8 * 0.5 + (1 - 0.8) * (-1.5 / -3.0),
                                       0.8 * 0.0 + (1 - 0.8) * 1.0, 0.8 * 0.0 + (1 - 0.8) * (-0.75 / -3.0)]
    assert fuse([], []) == [] and [h.fused for h in fuse([(1, 1.0)], [])] == [0.5 * 0.0 + 0.5 * 0.0]


def test_a_score_that_is_not_a_number_orders_as_rounding_every_score_did() -> None:
    nan = float("nan")
    hits = [_hit(1, 0.5), _hit(2, nan), _hit(3, 0.7), _hit(4, 0.1), _hit(5, nan), _hit(6, 0.6)]
    tie = {h.rowid: -h.rowid for h in hits}
    assert [h.rowid for h in best_first(hits, lambda h: tie[h.rowid])] == [h.rowid for h in _rounded(hits, tie)]


_ANY = st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), 5e-324, 4e6, 4e6 + 9.3e-10,
                                                     1e300, -1e-10, 0.35, 0.35 + 5e-10, 0.35 - 5e-10])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ANY, st.integers(0, 2)), max_size=30))
def test_any_scores_infinite_signed_zero_or_huge_order_as_every_score_rounded(parts: list[tuple[float, int]]) -> None:
    hits = [_hit(i, score) for i, (score, _) in enumerate(parts)]
    tie = {i: t for i, (_, t) in enumerate(parts)}
    assert best_first(hits, lambda h: tie[h.rowid]) == _rounded(hits, tie)


@settings(max_examples=300, deadline=None)
@given(_ANY | st.floats(), st.sampled_from([RELEVANCE_FLOOR, STRONG_RELEVANCE_FLOOR]), st.floats(-3e-9, 3e-9))
def test_the_floor_for_any_score_is_that_of_the_score_rounded(score: float, floor: float, nudge: float) -> None:
    for s in (score, floor + nudge, floor):
        got = relevant_enough(s, None, 1) if floor == RELEVANCE_FLOOR else relevant_enough(0.0, {1: s}, 1)
        assert got is (round(s, 9) >= floor), (s, floor)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ANY | st.sampled_from([0.5, 0.5 + 4e-10, 0.5 - 4e-10]), st.integers(0, 2)), max_size=30),
       st.integers(0, 35))
def test_the_first_k_are_the_first_k_of_every_score_rounded(parts: list[tuple[float, int]], k: int) -> None:
    hits = [_hit(i, score) for i, (score, _) in enumerate(parts)]
    tie = {i: t for i, (_, t) in enumerate(parts)}
    assert best_first(hits, lambda h: tie[h.rowid], k) == _rounded(hits, tie)[:k]
    nan = float("nan")
    hits += [_hit(99, nan)]
    tie[99] = 0
    assert [h.rowid for h in best_first(hits, lambda h: tie[h.rowid], k)] == [h.rowid for h in _rounded(hits, tie)[:k]]
