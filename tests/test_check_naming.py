"""The consistency check's facts that name a mentioned card (story/check.py `Facts`, `naming`), and the story
order's ranks kept per position: the same answers as asking every fact, every time."""

from __future__ import annotations

import random

from membank.domains.story.check import Facts, naming
from membank.domains.story.order import StoryOrder
from membank.kernel.limits import MAX_LISTED


def _naive(items: list[tuple[dict, tuple[str, ...]]], mentioned: set[str]) -> tuple[list[dict], int]:
    out, total = [], 0
    for memory, ids in items:
        names = [i for i in ids if i in mentioned]
        if names:
            total += 1
            if len(out) < MAX_LISTED:
                out.append({**memory, "entities": names})
    return out, total


def test_the_facts_naming_a_mentioned_card_are_those_asking_each_fact_gives() -> None:
    rng = random.Random(7)
    cards = [f"c{i}" for i in range(60)]
    for _ in range(40):
        sets = [tuple(sorted(rng.sample(cards, rng.randint(0, 6)))) for _ in range(12)]
        items = [({"id": f"f{n}", "content": "x"}, rng.choice(sets)) for n in range(rng.randint(0, 500))]
        mentioned = set(rng.sample(cards, rng.randint(0, 20)))
        assert naming(Facts.of(items), mentioned) == _naive(items, mentioned)


def test_a_listed_fact_is_a_copy_and_its_names_keep_the_facts_own_order() -> None:
    fact = {"id": "f1", "content": "Maren and Lin"}
    listed, total = naming(Facts.of([(fact, ("lin", "maren", "zed"))]), {"zed", "lin"})
    assert (listed, total) == ([{"id": "f1", "content": "Maren and Lin", "entities": ["lin", "zed"]}], 1)
    listed[0]["entities"].append("other")
    assert "entities" not in fact and naming(Facts.of([(fact, ("lin",))]), set()) == ([], 0)
    twice = [(fact, ("lin", "lin")), ({"id": "f2"}, ("zed",)), ({"id": "f3"}, ("lin", "zed", "lin"))]
    assert naming(Facts.of(twice), {"lin"}) == _naive(twice, {"lin"})  # a name a fact holds twice, as it does


def test_the_facts_of_a_list_asked_again_with_other_cards_answer_for_those() -> None:
    items = [({"id": f"f{n}"}, ids) for n, ids in enumerate([("a", "b"), ("b",), ("c", "a"), ("d", "e"), ("a", "b")])]
    facts = Facts.of(items)
    for mentioned in ({"a"}, {"e"}, {"b", "c"}, {"zz"}, {"a"}, set()):
        assert naming(facts, mentioned) == _naive(items, mentioned)


def test_a_rank_asked_again_is_the_one_a_fresh_order_gives() -> None:
    order = StoryOrder(("a.md", "b.md"), True, (("b.md", ("Rain", "Dawn")),))
    asked = ["b.md#Dawn", "a.md", "b.md#2", "zz.md", "b.md#nowhere", "./a.md"]
    first = [order.rank(p) for p in asked]
    assert [order.rank(p) for p in asked] == first == [StoryOrder(order.positions, True, order.scenes).rank(p)
                                                       for p in asked]
    assert [order.knows(p) for p in asked] == [True, True, True, False, True, True]
    assert hash(order) == hash(StoryOrder(("a.md", "b.md"), True, (("b.md", ("Rain", "Dawn")),)))
