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


WHERES = ("selection", "instruction", "before", "after")  # scanned in this order: the first wins a tie


def _through_cards(catalog: Catalog, frontier: list[str], depth: int, allowed: set[str], best: dict[str, Found],
                   skipped: list[Skipped]) -> dict[str, Found]:
    """Cards named in the text of the `frontier` cards, not found before; each card's text decides
    alone (its exclude and secondary keys too), so what a card names is known once per generation
    of the cards. A card named by several is credited to the first, in id order."""
    fresh: dict[str, Found] = {}
    named = [catalog.named_in(source) for source in frontier]
    for n in named:
        skipped.extend(n.skipped)
    # what they name, a word's cards at a time (a word 40 cards share is in most cards' texts), less
    # what was found before (most of it)
    groups = {id(cards): cards for n in named for cards in n.groups}
    pending = set().union(*groups.values()) - best.keys()
    for source, n in zip(frontier, named):
        if not pending:
            break
        mine = n.ids & pending
        if not mine:
            continue
        pending -= mine
        for other in mine:
            if catalog.sections.get(other) not in allowed:
                continue
            m = n.first[other]
            fresh[other] = Found(other, catalog.cards[other]["name"], m.word, f"card:{source}", m.offset, depth, 0)
    return fresh


def _ranked_spans(catalog: Catalog, texts: dict[str, str], skipped: list[Skipped]
                  ) -> list[tuple[tuple[int, int, int, int, int], str, str, int, int, tuple[str, ...]]]:
    """Every span that activates cards in the scanned texts, ranked as `Found.key` ranks what it would
    make of it (then, in one text, as the matcher's `keep` does): (rank, word, where, offset, distance,
    cards). The match nearest to the selection is kept: the last one before it, the first elsewhere."""
    out = []
    for i, where in enumerate(WHERES):
        text = texts.get(where) or ""
        if not text:
            continue
        found, problems = catalog.matcher.spans(text, "last" if where == "before" else "first")
        skipped.extend(problems)
        tier, size = TIERS[where], len(text)
        for a, b, cards in found:
            if not cards:
                continue
            if where == "before":  # nearest: ends last (then the longer)
                out.append(((tier, size - b, i, a, 0), text[a:b], where, a, size - b, cards))
            elif where == "instruction":  # no distance: starts first (then the longer)
                out.append(((tier, 0, i, a, -b), text[a:b], where, a, a, cards))
            else:  # nearest: starts first (then the longer)
                out.append(((tier, a, i, -b, 0), text[a:b], where, a, a, cards))
    return out


def activate(catalog: Catalog, texts: dict[str, str], allowed: set[str],
             recursion: int) -> tuple[list[Found], list[Skipped]]:
    """The activated cards of the sections in `allowed` ("characters", "world"), in Layer 4's order."""
    skipped: list[Skipped] = []
    spans = _ranked_spans(catalog, texts, skipped)
    spans.sort(key=lambda s: s[0], reverse=True)  # the worst first: each card ends with its best span
    chosen: dict[str, tuple[Any, ...]] = {}
    for span in spans:
        chosen.update(dict.fromkeys(span[5], span))  # a word 40 cards share: one call, not 40
    best: dict[str, Found] = {}
    keys: dict[str, tuple[Any, ...]] = {}
    for card_id, (rank, word, where, offset, distance, _) in chosen.items():
        if catalog.sections.get(card_id) not in allowed:
            continue
        name = catalog.cards[card_id]["name"]
        best[card_id] = Found(card_id, name, word, where, offset, 0, distance)
        keys[card_id] = (rank[0], 0, rank[1], name, card_id)  # Found.key
    frontier = sorted(best)
    for depth in range(1, recursion + 1):
        fresh = _through_cards(catalog, frontier, depth, allowed, best, skipped)
        best.update(fresh)
        keys.update((f.id, f.key()) for f in fresh.values())
        frontier = sorted(fresh)
        if not frontier:
            break
    unique = {(s.id, s.key, s.reason): s for s in skipped}
    # each key ends with its card's id: no two are equal, so the keys sort alone
    return [best[key[-1]] for key in sorted(keys.values())], sorted(unique.values(), key=lambda s: (s.id, s.key))
