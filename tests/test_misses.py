"""benchmarks/misses.py says why a same-language answer is missing from the top 5, counting what it says."""

from __future__ import annotations

from benchmarks.misses import CAUSES, causes, without_other

LANGS = {"e1": "en", "e2": "en", "e3": "en", "e4": "en", "e5": "en", "e6": "en", "z1": "zh", "z2": "zh", "z3": "zh"}


def test_without_other_keeps_the_query_language_and_every_answer() -> None:
    query = {"lang": "en", "relevant": ["z2", "e3"]}
    assert without_other(["z1", "e1", "z2", "e2", "z3", "e3"], query, LANGS) == ["e1", "z2", "e2", "e3"]
    assert without_other(["e1", "z1"], {"lang": "zh", "relevant": ["z1"]}, LANGS) == ["z1"]


def test_an_answer_in_the_other_language_is_its_own_cause() -> None:
    query = {"lang": "en", "relevant": ["e1", "z3"]}
    assert causes(["e1", "e2", "e3", "e4", "e5", "z3"], query, LANGS) == {"z3": CAUSES[0]}


def test_an_answer_pushed_out_by_other_language_memories_and_one_the_own_order_keeps_out() -> None:
    query = {"lang": "en", "relevant": ["e4", "e6"]}
    ranking = ["z1", "e1", "z2", "e2", "e3", "e4", "e5", "e6"]
    # without z1 and z2, e4 is 4th: the other language took its place; e6 is 6th either way
    assert causes(ranking, query, LANGS) == {"e4": CAUSES[1], "e6": CAUSES[2]}


def test_nothing_missing_and_an_answer_not_ranked_at_all() -> None:
    query = {"lang": "en", "relevant": ["e1", "e6"]}
    assert causes(["e1", "e6", "e2"], query, LANGS) == {}
    assert causes(["e1", "e2"], query, LANGS) == {"e6": CAUSES[2]}
