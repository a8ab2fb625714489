"""Working memory's pure decisions: eviction order under the cap, the word measure, identity, the threshold."""

from __future__ import annotations

import pytest

from membank.domains.working.decide import (Held, SIGNAL, eviction_order, fits, key, kind_of, overlap, reached, victims,
                                            words)


def held(id_: str, tokens: int, importance: float, touched: int) -> Held:
    return Held(id_, tokens, importance, touched)


def test_nothing_goes_while_the_newcomer_fits() -> None:
    entries = [held("a", 3000, 0.1, 1), held("b", 3000, 0.9, 2)]
    assert victims(entries, 2000, 8000, {}) == []  # exactly the cap is within it


def test_the_lowest_importance_goes_first_and_only_as_much_as_needed() -> None:  # MS1-R1-S2
    entries = [held("high", 2000, 0.9, 1), held("low", 2000, 0.1, 2), held("mid", 2000, 0.5, 3),
               held("mid2", 2000, 0.6, 4)]
    assert [h.id for h in victims(entries, 1, 8000, {})] == ["low"]
    assert [h.id for h in victims(entries, 2001, 8000, {})] == ["low", "mid"]
    assert [h.id for h in victims(entries, 8000, 8000, {})] == ["low", "mid", "mid2", "high"]


def test_a_more_important_entry_stays_even_when_it_is_unrelated_to_the_focus() -> None:
    entries = [held("related", 100, 0.2, 1), held("unrelated", 100, 0.3, 2)]
    relation = {"related": 0.95, "unrelated": 0.0}
    assert [h.id for h in victims(entries, 1, 200, relation)] == ["related"]


def test_among_equal_importance_the_least_related_to_the_focus_goes_first() -> None:
    entries = [held("old-related", 100, 0.5, 1), held("new-unrelated", 100, 0.5, 2), held("new-half", 100, 0.5, 3)]
    relation = {"old-related": 0.8, "new-unrelated": 0.05, "new-half": 0.4}
    assert [h.id for h in eviction_order(entries, relation)] == ["new-unrelated", "new-half", "old-related"]
    assert [h.id for h in victims(entries, 1, 300, relation)] == ["new-unrelated"]


def test_then_the_least_recently_added_then_the_id() -> None:
    entries = [held("b", 10, 0.5, 7), held("a", 10, 0.5, 3), held("c", 10, 0.5, 3)]
    assert [h.id for h in eviction_order(entries, {})] == ["a", "c", "b"]  # no focus: relation decides nothing


def test_an_entry_alone_over_the_cap_never_fits() -> None:
    assert fits(8000, 8000) and not fits(8001, 8000)
    with pytest.raises(ValueError):
        victims([], 8001, 8000, {})


def test_words_take_english_words_and_cjk_pairs() -> None:
    assert words("Omit the needless WORDS") == {'"omit"', '"needless"', '"words"'}  # stopwords out, case folded
    assert words("海边的巨浪") >= {'"海 边"', '"巨 浪"'}
    assert words("海") == {'"海"'}


def test_overlap_is_the_cosine_of_the_word_sets() -> None:
    assert overlap(words("the storm at sea"), words("storm over the sea")) == 1.0
    assert overlap(words("storm sea"), words("storm lighthouse keeper night")) == pytest.approx(1 / (2 * 4) ** 0.5,
                                                                                            abs=1e-6)
    assert overlap(words("林默在海边看着巨浪"), words("海边的巨浪")) > overlap(words("她去超市买了牛奶"), words("海边的巨浪")) == 0
    assert overlap(frozenset(), words("sea")) == 0.0


def test_identity_is_the_kind_and_the_normalized_text() -> None:
    assert key(" Signal ", "Omit  needless\u3000words") == key("signal", "omit needless words")
    assert key("note", "x") != key("signal", "x")
    assert kind_of("  SELECTION ") == "selection"


def test_only_signals_reach_the_threshold() -> None:
    assert reached(SIGNAL, 3, 3) and reached(SIGNAL, 4, 3)
    assert not reached(SIGNAL, 2, 3)
    assert not reached("note", 10, 3)
