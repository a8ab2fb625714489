"""The role link study (benchmarks/rolelink.py): a question's content-word phrases that a card's summary holds
name that card, worth the phrase's rarity among the cards; memories naming it gain that, times the card's
rarity in their pool."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.rolelink import RoleLink, ranked, matrix
from membank.domains.recall.calibrate import calibrated_arrays
from membank.domains.story.matching import Keyed

CARDS = [
    (Keyed("c-pike", "Jonah Pike", ("Mr Pike",)), "First mate of the Gannet's Wake; one-eyed."),
    (Keyed("c-marrow", "Isolde Marrow", ("Captain Marrow", "马伊素")), "Privateer captain of the Gannet's Wake."),
    (Keyed("c-roux", "Agathe Roux", ()), "Gunsmith with a berth on the Gannet's Wake."),
    (Keyed("c-meng", "孟婆婆", ("Granny Meng",)), "黑水渡忘川栈的老板娘。"),
    (Keyed("c-shen", "Shen Qingya", ("沈青崖",)), "Expelled disciple, Shen's sword."),
]


def test_a_rare_role_phrase_names_its_card_and_a_common_one_names_none() -> None:
    link = RoleLink(CARDS)
    assert link.cards("how does the first mate die") == {"c-pike": 1.0}
    assert link.cards("which gunsmith can only hear on one side") == {"c-roux": 1.0}
    assert link.cards("what made the captain lame") == {"c-marrow": 1.0}  # a title word stays a role word
    assert RoleLink(CARDS, most=2).cards("who sails on the Gannet's Wake") == {}  # in three summaries: df > most
    assert link.cards("the gannet") == {c: math.log(5 / 3) / math.log(5)
                                                           for c in ("c-pike", "c-marrow", "c-roux")}


def test_names_stopwords_and_possessives_are_no_roles() -> None:
    link = RoleLink(CARDS)
    assert "shen" not in link.phrases("why is Shen's sword broken")  # a name: the name bridge's
    assert link.cards("Shen's cat") == {}
    assert link.phrases("how does the first mate die") >= {"first mate", "mate", "die"}
    assert not {"how", "does", "the"} & link.phrases("how does the first mate die")


def test_chinese_phrases_are_substrings_with_names_cut_out_and_no_function_characters() -> None:
    link = RoleLink(CARDS)
    assert link.cards("开客栈的老板娘是谁") == {"c-meng": 1.0}
    phrases = link.phrases("沈青崖一紧张就会做什么")
    assert not any("崖" in p or "什么" in p or "一" in p for p in phrases)
    assert link.cards("") == {} and RoleLink(CARDS[:1]).cards("first mate") == {}


def test_memories_naming_a_linked_card_gain_its_rarity_in_their_pool() -> None:
    texts = ["Jonah Pike drowns", "Mr Pike lost an eye", "the storm", "风暴", "马伊素受伤"]
    zh = np.array([False, False, False, True, True])
    found = matrix(texts, ["how does the first mate die", "船上的老板娘", "nothing here"], zh, CARDS)
    n, df = 3, 2  # the English pool, two of its memories naming Jonah Pike
    assert np.allclose(found[0], [math.log(n / df) / math.log(n)] * 2 + [0.0, 0.0, 0.0])
    assert found[1].tolist() == [0.0] * 5  # Granny Meng linked, but no memory names her
    assert found[2].tolist() == [0.0] * 5


def test_with_no_role_evidence_the_ranking_is_the_shipped_calibrated_one() -> None:
    rng = np.random.default_rng(7)
    strong, static = rng.normal(size=(3, 20)), rng.normal(size=(3, 20))
    zh = np.arange(20) % 3 == 0
    names = np.where(rng.random((3, 20)) < 0.2, 1.0, 0.0)
    qzh = [False, True, False]
    rank = ranked(strong, static, zh, qzh, np.zeros((3, 20)), names)
    for qi in range(3):
        scores, competes = calibrated_arrays(strong[qi], static[qi], zh, qzh[qi], evidence=names[qi])
        assert rank(qi) == list(np.lexsort((-scores, ~competes)))


def test_hostile_names_and_empty_texts_link_nothing_by_accident() -> None:
    cards = [(Keyed("c-a", "a.*(", ("[沈]", "")), ""), (Keyed("c-b", "B", ()), "(first) mate [x]"),
             (Keyed("c-c", "C", ()), "")]
    link = RoleLink(cards)
    assert link.cards("the first mate?!") == {"c-b": 1.0}
    assert link.cards("沈 .*( [沈]") == {} and link.cards("!!! ???") == {}
    assert RoleLink([]).cards("first mate") == {}
