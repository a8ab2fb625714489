"""A card's state at a position (story/state.py `state_at`) and its view (graph.py `entity`): each position's
rank asked once, the same answers as asking `order.reached` for every progression and sorting by rank —
scenes, a position the order does not know, progressions at the same position, a top-level `state`."""

from __future__ import annotations

import random
from typing import Any

from membank.domains.story.cards import build
from membank.domains.story.graph import entity
from membank.domains.story.order import StoryOrder
from membank.domains.story.state import CardState, Cited, progressions, state_at

ORDER = StoryOrder(("a.md", "b.md", "c.md"), True, (("b.md", ("Rain", "Dawn")),))
AT = ["a.md", "b.md", "b.md#Dawn", "b.md#2", "b.md#nowhere", "c.md", "zz.md", "./a.md", 7, None]


def _asked_one_by_one(card: dict[str, Any], order: StoryOrder, position: str | None) -> CardState:
    source = card["source"]
    state = None
    if card.get("state") is not None and not card.get("stateAt"):
        state = Cited(str(card["state"]), source, card.get("lines", {}).get("state", 1))
    known = position is not None and order.knows(position)
    items = progressions(card)
    reached = [(i, p) for i, p in enumerate(items) if known and order.reached(p[0], position)]  # type: ignore[arg-type]
    reached.sort(key=lambda ip: (order.rank(ip[1][0]), ip[0]))
    facets = {}
    for _, (at, item, line) in reached:
        if item.get("state") is not None:
            state = Cited(str(item["state"]), source, line, at)
        for key, value in (item.get("set") or {}).items() if isinstance(item.get("set"), dict) else ():
            facets[str(key)] = Cited(value, source, line, at)
    return CardState(state, dict(sorted(facets.items())), len(items) - len(reached))


def _card(rng: random.Random, n: int) -> dict[str, Any]:
    items = [{"at": rng.choice(AT), **({"state": rng.choice(["calm", 3, None])} if rng.random() < 0.6 else {}),
              **({"set": rng.choice([{"location": rng.choice("xyz")}, {"alive": False, "mood": "up"}, "odd"])}
                 if rng.random() < 0.6 else {})} for _ in range(rng.randint(0, 5))]
    card = {"id": f"c{n}", "name": f"C{n}", "kind": "character", "section": "characters", "aliases": [],
            "source": f".writenow/characters/c{n}.md", "content": "", "progressions": items,
            "lines": {"progressions": list(range(10, 10 + len(items))), "state": 4}}
    if rng.random() < 0.4:
        card.update(state=rng.choice(["asleep", 0]), **({"stateAt": rng.choice(AT[:6])} if rng.random() < 0.5 else {}))
    return card


def test_the_state_at_each_position_is_what_asking_each_progression_gives() -> None:
    rng = random.Random(33)
    cards = [_card(rng, n) for n in range(200)]
    cat = build(cards)
    for card in cards:
        for position in ["a.md", "b.md", "b.md#Rain", "b.md#Dawn", "b.md#9", "c.md", "zz.md", None]:
            assert state_at(card, ORDER, position) == _asked_one_by_one(card, ORDER, position)
            items = progressions(card)
            view = entity(card, cat, ORDER, position, whole=True)
            if position is not None:  # hidden: the progressions not reached there, and relations that do not hold
                assert view["hidden"] == sum(1 for p in items if not ORDER.reached(p[0], position))
            assert view == entity(card, cat, ORDER, position, whole=True, items=items)
