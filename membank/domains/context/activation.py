"""Activation (context.md): which cards Layer 4 gets, in what order, and why. Pure over the story
catalog: the scanned text is the selection, the instruction and the surrounding text; the text of
activated cards is scanned again to `recursion` depth, never twice the same card."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..story.cards import Catalog
from ..story.matching import Skipped

# where a card was first found, best first: the selection, the writer's instruction, the text
# around the selection (nearest first), then through another card
TIERS = {"selection": 0, "instruction": 1, "before": 2, "after": 2}


class Found(NamedTuple):  # a tuple: a prompt may activate hundreds
    id: str
    name: str
    word: str
    where: str  # selection | instruction | before | after | card:<id>
    offset: int
    depth: int  # 0: in the scanned text; n: through n cards
    distance: int  # code points from the selection (0 inside it)

    def key(self) -> tuple[Any, ...]:
        tier = TIERS.get(self.where, 3)
        return (tier, self.depth, self.distance if tier in (0, 2) else 0, self.name, self.id)

    def reason(self) -> dict[str, Any]:
        return {"match": self.word, "where": self.where, "offset": self.offset, "depth": self.depth}


def _distance(where: str, offset: int, length: int, text: str) -> int:
    if where == "before":
        return len(text) - (offset + length)
    return offset


def _through_cards(catalog: Catalog, frontier: list[str], depth: int, allowed: set[str], best: dict[str, Found],
                   skipped: list[Skipped]) -> dict[str, Found]:
    """Cards named in the text of the `frontier` cards, not found before; each card's text decides
    alone (its exclude and secondary keys too), so what a card names is known once per generation
    of the cards. A card named by several is credited to the first, in id order."""
    fresh: dict[str, Found] = {}
    seen = set(best)
    for source in frontier:
        named = catalog.named_in(source)
        skipped.extend(named.skipped)
        for other in named.ids - seen:  # most were found before: set arithmetic skips them
            seen.add(other)
            if catalog.sections.get(other) not in allowed:
                continue
            m = named.first[other]
            fresh[other] = Found(other, catalog.cards[other]["name"], m.word, f"card:{source}", m.offset, depth, 0)
    return fresh


def activate(catalog: Catalog, texts: dict[str, str], allowed: set[str],
             recursion: int) -> tuple[list[Found], list[Skipped]]:
    """The activated cards of the sections in `allowed` ("characters", "world"), in Layer 4's order."""
    best: dict[str, Found] = {}
    chosen: dict[str, tuple[tuple[Any, ...], str, Any, int]] = {}  # id -> (its key, where, match, distance)
    skipped: list[Skipped] = []
    for where in ("selection", "instruction", "before", "after"):
        text = texts.get(where) or ""
        if not text:
            continue
        # the match nearest to the selection: the last one before it, the first one elsewhere
        hits, problems = catalog.matcher.activated(text, keep="last" if where == "before" else "first")
        skipped.extend(problems)
        tier = TIERS[where]
        for card_id, matches in hits.items():
            if catalog.sections.get(card_id) not in allowed:
                continue
            m = matches[0]
            distance = _distance(where, m.offset, m.length, text)
            key = (tier, 0, distance if tier != 1 else 0, catalog.cards[card_id]["name"], card_id)  # Found.key
            if card_id not in chosen or key < chosen[card_id][0]:
                chosen[card_id] = (key, where, m, distance)
    keys = {card_id: found[0] for card_id, found in chosen.items()}
    for card_id, (_, where, m, distance) in chosen.items():
        best[card_id] = Found(card_id, catalog.cards[card_id]["name"], m.word, where, m.offset, 0, distance)
    frontier = sorted(best)
    for depth in range(1, recursion + 1):
        fresh = _through_cards(catalog, frontier, depth, allowed, best, skipped)
        best.update(fresh)
        keys.update((f.id, f.key()) for f in fresh.values())
        frontier = sorted(fresh)
        if not frontier:
            break
    unique = {(s.id, s.key, s.reason): s for s in skipped}
    return sorted(best.values(), key=lambda f: keys[f.id]), sorted(unique.values(), key=lambda s: (s.id, s.key))
