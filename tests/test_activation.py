"""Activation (context.md) decided span by span gives what deciding card by card gives: the plain rule
below (each text's `Matcher.activated`, then each card's best key, then the cards' texts) against
`activate` on random cards and texts, with shared aliases, exclude and secondary keys, regex keys,
sections left out and recursion."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from membank.domains.context.activation import TIERS, Found, activate
from membank.domains.story.cards import Catalog, build
from membank.domains.story.matching import Keyed, Matcher, Skipped

WORDS = ["Maren", "Voss", "Maren Voss", "Lin Mo", "Mo", "林默", "默", "gull", "gulls", "storm", "calm", "wreck",
         "ship", "the"]  # few, overlapping: keys that end or start together, shared by several cards
SEPARATORS = [" ", " ", ", ", ". ", "\n", "\n\n", "'s "]


def _plain(catalog: Catalog, texts: dict[str, str], allowed: set[str], recursion: int
           ) -> tuple[list[Found], list[Skipped]]:
    """Activation as first written: every card's match per text from `activated`, the best key kept."""
    chosen: dict[str, tuple[tuple[Any, ...], str, Any, int]] = {}
    skipped: list[Skipped] = []
    for where in ("selection", "instruction", "before", "after"):
        text = texts.get(where) or ""
        if not text:
            continue
        hits, problems = catalog.matcher.activated(text, keep="last" if where == "before" else "first")
        skipped.extend(problems)
        tier = TIERS[where]
        for card_id, matches in hits.items():
            if catalog.sections.get(card_id) not in allowed:
                continue
            m = matches[0]
            distance = len(text) - (m.offset + m.length) if where == "before" else m.offset
            key = (tier, 0, distance if tier != 1 else 0, catalog.cards[card_id]["name"], card_id)
            if card_id not in chosen or key < chosen[card_id][0]:
                chosen[card_id] = (key, where, m, distance)
    keys = {card_id: found[0] for card_id, found in chosen.items()}
    best = {card_id: Found(card_id, catalog.cards[card_id]["name"], m.word, where, m.offset, 0, distance)
            for card_id, (_, where, m, distance) in chosen.items()}
    frontier = sorted(best)
    for depth in range(1, recursion + 1):
        fresh: dict[str, Found] = {}
        seen = set(best)
        for source in frontier:
            named = catalog.named_in(source)
            skipped.extend(named.skipped)
            for other in sorted(named.ids - seen):
                seen.add(other)
                if catalog.sections.get(other) in allowed:
                    m = named.first[other]
                    fresh[other] = Found(other, catalog.cards[other]["name"], m.word, f"card:{source}", m.offset,
                                         depth, 0)
        best.update(fresh)
        keys.update((f.id, f.key()) for f in fresh.values())
        frontier = sorted(fresh)
        if not frontier:
            break
    unique = {(s.id, s.key, s.reason): s for s in skipped}
    return sorted(best.values(), key=lambda f: keys[f.id]), sorted(unique.values(), key=lambda s: (s.id, s.key))


_word = st.sampled_from(WORDS)
_card = st.fixed_dictionaries({
    "name": _word, "aliases": st.lists(_word, max_size=2), "keys": st.lists(st.sampled_from(
        [*WORDS, "/sh[io]p/", "/(/", "/gal(e|es)/i"]), max_size=2),
    "excludeKeys": st.lists(_word, max_size=1), "secondaryKeys": st.lists(_word, max_size=2),
    "logic": st.sampled_from(["and_any", "and_all", "not_any", "not_all"]),
    "section": st.sampled_from(["characters", "world"]), "include": st.sampled_from([None, None, "never", "always"]),
    "content": st.lists(_word, max_size=6).map(" ".join)})
_text = st.lists(st.tuples(_word, st.sampled_from(SEPARATORS)), max_size=8).map(
    lambda parts: "".join(w + s for w, s in parts))


def _catalog(cards: list[dict[str, Any]]) -> Catalog:
    records = []
    for i, c in enumerate(cards):
        kind = "character" if c["section"] == "characters" else "world"
        records.append({**c, "id": f"{c['section']}/c{i}", "kind": kind, "summary": "",
                        "source": f".writenow/{c['section']}/c{i}.md", "lines": {"name": 2, "body": 9}})
    return build(records)


@settings(max_examples=500, deadline=None)
@given(st.lists(_card, min_size=1, max_size=8), st.fixed_dictionaries(
    {"selection": _text, "instruction": _text, "before": _text, "after": _text}),
       st.sampled_from([{"characters", "world"}, {"characters"}, {"world"}]), st.integers(0, 2))
def test_activation_by_span_is_activation_by_card(cards: list[dict[str, Any]], texts: dict[str, str],
                                                   allowed: set[str], recursion: int) -> None:
    catalog = _catalog(cards)
    assert activate(catalog, texts, allowed, recursion) == _plain(catalog, texts, allowed, recursion)


LOGIC_CARDS = [Keyed("ship", "red", keys=("big red ship", "/sh[io]p/")), Keyed("maren", "Maren", ("Maren Voss",)),
               Keyed("w", "wreck", secondary_keys=("alma", "/stor(m|ms)/"), logic="and_all"),
               Keyed("n", "net", secondary_keys=("alma", "storm"), logic="not_all"),
               Keyed("x", "gull", exclude_keys=("calm", "/lull/")), Keyed("m", "Voss", ("Maren",)),
               Keyed("all", "the", ("Maren", "gull"))]
LOGIC_WORDS = ["big", "red", "ship", "shop", "Maren", "Voss", "wreck", "alma", "storm", "net", "gull", "calm", "lull",
               "the", "Maren's"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LOGIC_WORDS), st.sampled_from(SEPARATORS)), max_size=16))
def test_spans_decide_what_activated_decides(parts: list[tuple[str, str]]) -> None:
    m = Matcher.build(LOGIC_CARDS)
    text = "".join(w + s for w, s in parts)
    for keep in ("first", "last"):
        hits, skipped = m.activated(text, keep=keep)
        spans, skipped_too = m.spans(text, keep)
        assert skipped_too == skipped
        rank = (lambda a, b: (a, -b)) if keep == "first" else (lambda a, b: (-b, a))  # the longer on a tie
        best: dict[str, tuple[int, int]] = {}
        for a, b, cards in spans:
            for card in cards:  # a card's match: the best of its spans
                if card not in best or rank(a, b) < rank(*best[card]):
                    best[card] = (a, b)
        assert best == {card: (ms[0].offset, ms[0].offset + ms[0].length) for card, ms in hits.items()}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LOGIC_WORDS), st.sampled_from(SEPARATORS)), max_size=16))
def test_mentions_are_every_match_of_every_card(parts: list[tuple[str, str]]) -> None:
    plain = [c for c in LOGIC_CARDS if not c.exclude_keys and not c.secondary_keys]  # activated's logic aside
    m = Matcher.build(plain)
    text = "".join(w + s for w, s in parts)
    mentions, _ = m.mentions(text)
    every = [x for matches in m.activated(text)[0].values() for x in matches]
    assert mentions == sorted(every, key=lambda x: (x.offset, -x.length, x.id, x.key))
    assert [(x.offset, -x.length, x.id, x.key, x.word) for x in mentions] == m.mention_rows(text)[0]
