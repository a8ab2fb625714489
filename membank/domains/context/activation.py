"""Activation (context.md): which cards Layer 4 gets, in what order, and why. Pure over the story
catalog: the scanned text is the selection, the instruction and the surrounding text; the text of
activated cards is scanned again to `recursion` depth, never twice the same card."""

from __future__ import annotations

import functools
from operator import itemgetter
from typing import Any, NamedTuple

from ..story.cards import Catalog
from ..story.matching import Skipped, call_allowance

# where a card was first found, best first: the selection, the writer's instruction, the text
# around the selection (nearest first), then through another card
TIERS = {"selection": 0, "instruction": 1, "before": 2, "after": 2}
THROUGH = 3  # the tier of a card found through another card's text


class Found(NamedTuple):  # a tuple: a prompt may activate hundreds
    id: str
    name: str
    word: str
    where: str  # selection | instruction | before | after | card:<id>
    offset: int
    depth: int  # 0: in the scanned text; n: through n cards
    distance: int  # code points from the selection (0 inside it)

    def key(self) -> tuple[Any, ...]:
        tier = TIERS.get(self.where, THROUGH)
        return (tier, self.depth, self.distance if tier in (0, 2) else 0, self.name, self.id)

    def reason(self) -> dict[str, Any]:
        return {"match": self.word, "where": self.where, "offset": self.offset, "depth": self.depth}


_RANK = itemgetter(0)  # a ranked span's rank
WHERES = ("selection", "instruction", "before", "after")  # scanned in this order: the first wins a tie
# a Found without NamedTuple's __new__ (a Python function): half the cost, over hundreds of cards a prompt
_found = functools.partial(tuple.__new__, Found)


def _through_cards(catalog: Catalog, info: dict[str, Card], frontier: list[str], depth: int, allowed: set[str],
                   best: dict[str, Found], skipped: list[Skipped]) -> dict[str, Found]:
    """Cards named in the text of the `frontier` cards, not found before; each card's text decides
    alone (its exclude and secondary keys too), so what a card names is known once per generation
    of the cards. A card named by several is credited to the first, in id order."""
    fresh: dict[str, Found] = {}
    named = list(map(catalog.named_in, frontier))
    for n in named:
        if n.skipped:
            skipped.extend(n.skipped)
    # what they name, a word's cards at a time (a word 40 cards share is in most cards' texts), less
    # what was found before (most of it)
    groups = {id(cards): cards for n in named for cards in n.groups}
    pending = set().union(*groups.values()) - best.keys()
    for source, n in zip(frontier, named):
        if not pending:
            break
        if n.ids.isdisjoint(pending):  # most: what a card names was mostly found before (no set made)
            continue
        mine = n.ids & pending
        pending -= mine
        where, first = f"card:{source}", n.first
        for other in mine:
            section, name, _ = info[other]
            if section not in allowed:
                continue
            m = first[other]
            fresh[other] = _found((other, name, m.word, where, m.offset, depth, 0))
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


class Card(NamedTuple):
    section: str | None  # "characters" | "world", None for a card never injected
    name: str
    place: int  # in the order of (name, id)


def _cards(catalog: Catalog) -> tuple[dict[str, Card], list[str], dict[str, int]]:
    """What activation reads of each card, in one place (a prompt reads it for hundreds of cards); the
    ids by name (then id), and each id's place among the ids: made once per generation of the cards,
    so that ordering the activated cards compares integers, not names and ids."""
    memo = catalog.memo("context.activation")
    made = memo.get("cards")
    if made is None:  # assigned whole: another thread never sees it half made
        cards = catalog.cards
        by_name = sorted(cards, key=lambda i: (cards[i]["name"], i))
        info = {card_id: Card(catalog.sections.get(card_id), cards[card_id]["name"], n)
                for n, card_id in enumerate(by_name)}
        made = memo["cards"] = (info, by_name, {card_id: n for n, card_id in enumerate(sorted(cards))})
    return made  # type: ignore[no-any-return]


# `Found.key` as one integer, the name and id as the card's place by name, for the same order:
# (((tier << 8 | depth) << 64 | distance) << 32) | place; a depth is at most 5, a distance a count of
# code points, a place one of fewer than 2**32 cards. Written out where it is made (a call each costs).
PLACE = (1 << 32) - 1


def activate(catalog: Catalog, texts: dict[str, str], allowed: set[str],
             recursion: int) -> tuple[list[Found], list[Skipped]]:
    """The activated cards of the sections in `allowed` ("characters", "world"), in Layer 4's order. The
    regex keys of every scan (the texts, then the cards' texts) share one call's time allowance."""
    with call_allowance():
        return _activate(catalog, texts, allowed, recursion)


def _activate(catalog: Catalog, texts: dict[str, str], allowed: set[str],
              recursion: int) -> tuple[list[Found], list[Skipped]]:
    skipped: list[Skipped] = []
    spans = _ranked_spans(catalog, texts, skipped)
    spans.sort(key=_RANK, reverse=True)  # the worst first: each card ends with its best span
    chosen: dict[str, tuple[Any, ...]] = {}
    for span in spans:
        chosen.update(dict.fromkeys(span[5], span))  # a word 40 cards share: one call, not 40
    info, by_place, by_id = _cards(catalog)
    best: dict[str, Found] = {}
    keys: list[int] = []  # one per card in `best`
    for card_id, (rank, word, where, offset, distance, _) in chosen.items():
        section, name, place = info[card_id]
        if section not in allowed:
            continue
        best[card_id] = _found((card_id, name, word, where, offset, 0, distance))
        keys.append(((rank[0] << 72) | rank[1]) << 32 | place)  # depth 0
    waiting = _hold(catalog, best, list(best), allowed) if catalog.owners else {}  # scoped, their character not (yet) found
    frontier = sorted(best, key=by_id.__getitem__)  # by id
    for depth in range(1, recursion + 1):
        fresh = _through_cards(catalog, info, frontier, depth, allowed, best, skipped)
        best.update(fresh)
        if catalog.owners:
            for card_id, found in _hold(catalog, best, list(fresh), allowed).items():
                waiting.setdefault(card_id, found)
                del fresh[card_id]
        through = (THROUGH << 8 | depth) << 96  # distance 0
        keys.extend(through | info[card_id].place for card_id in fresh)
        frontier = sorted(fresh, key=by_id.__getitem__)
        if not frontier:
            break
    if catalog.owners:
        keys = _scoped(catalog, info, best, waiting, keys, allowed)
    unique = {(s.id, s.key, s.reason): s for s in skipped}
    return [best[by_place[key & PLACE]] for key in sorted(keys)], sorted(unique.values(), key=lambda s: (s.id, s.key))


def _present(catalog: Catalog, best: dict[str, Found], allowed: set[str]) -> set[str]:
    """The cards in this prompt: those found, and the always-on ones of the sections the rules allow (an
    always-on character a world-only skill leaves out does not bring its book's entries)."""
    return set(best) | {i for i in catalog.always if catalog.sections.get(i) in allowed}


def _hold(catalog: Catalog, best: dict[str, Found], ids: list[str], allowed: set[str]) -> dict[str, Found]:
    """Take out of `best` the entries of `ids` whose book is scoped to characters not found so far: they
    bring nothing through recursion and come back only if their character is found after all."""
    present = _present(catalog, best, allowed)
    return {i: best.pop(i) for i in ids if i in catalog.owners and present.isdisjoint(catalog.owners[i])}


def _scoped(catalog: Catalog, info: dict[str, Card], best: dict[str, Found], waiting: dict[str, Found],
            keys: list[int], allowed: set[str]) -> list[int]:
    """A character-scoped book (context.md, Books) in this prompt: its entries found by their words count
    only when one of their characters is activated (or always on); the always-on entries of an activated
    character's book come in through that character, right after it. Changes `best`; the keys kept."""
    present = _present(catalog, best, allowed)
    for card_id, found in waiting.items():
        if card_id not in best and not present.isdisjoint(catalog.owners[card_id]):
            best[card_id] = found
    for owner in sorted((o for o in present if o in catalog.constant), key=lambda o: info[o].place):
        via = best.get(owner)
        depth = via.depth + 1 if via is not None else 1
        for card_id in catalog.constant[owner]:
            if card_id not in best and info[card_id].section in allowed:
                best[card_id] = _found((card_id, info[card_id].name, info[owner].name, f"card:{owner}", 0, depth, 0))
    return [((THROUGH << 8 | f.depth) << 96) | info[i].place if f.where.startswith("card:") else k
            for i, f, k in _keyed(best, keys, info)]


def _keyed(best: dict[str, Found], keys: list[int], info: dict[str, Card]) -> list[tuple[str, Found, int]]:
    """Each card kept in `best` with its key (its old one when it had one, else 0: made by the caller)."""
    old = {k & PLACE: k for k in keys}
    return [(i, f, old.get(info[i].place, 0)) for i, f in best.items()]
