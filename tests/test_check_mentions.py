"""The consistency check's mentions by card (story/check.py `mentioned`, over `Matcher.word_spans`): the
same cards, mentions (in `mention_rows`' order) and named cards as reading every row of `mention_rows` —
shared names and aliases, a card two words bring, regex keys, folding that changes lengths, `mention_keys`
and switched-off cards."""

from __future__ import annotations

import random
from typing import Any

from membank.domains.story.cards import build
from membank.domains.story.check import mention_words, mentioned


def _card(card_id: str, name: str, aliases: tuple[str, ...] = (), keys: tuple[str, ...] = (),
          **more: Any) -> dict[str, Any]:
    return {"id": card_id, "name": name, "aliases": list(aliases), "keys": list(keys), "kind": "character",
            "section": "characters", "source": f".writenow/characters/{card_id}.md", "content": "", **more}


CARDS = [_card("maren", "Maren Voss", ("Maren", "the keeper")), _card("twin", "Maren", ("Voss",)),
         _card("lin", "Lin Mo", ("林默",), ("lamp",)), _card("mo", "Mo", keys=("Maren",)),
         _card("street", "Straße", keys=("/Str\\w+/",)), _card("rx", "Ada", keys=("/Ad[a-z]/", "/Mar\\w+/")),
         _card("keyed", "Petra", keys=("lamp", "tide"), metadata={"mention_keys": True}),
         _card("off", "Maren", ("lamp",), include="never")]
WORDS = ["Maren", "Voss", "Maren Voss", "the keeper", "Lin Mo", "林默", "lamp", "lamps", "Mo", "STRASSE",
         "straße", "Strasse", "Ada", "Adam", "Petra", "tide", "ﬁ", "x", "Maren's", "MAREN"]


def _rows_way(cat: Any, text: str) -> tuple[dict[str, list[tuple[int, int, str]]], set[str]]:
    """What the check read before: every row of `mention_rows`, in order."""
    by_card: dict[str, list[tuple[int, int, str]]] = {}
    named: set[str] = set()
    rows, _ = cat.matcher.mention_rows(text)
    for offset, length, card_id, key, word in rows:
        words = mention_words(cat.cards[card_id])
        if words is not None and not words:
            continue
        if words is None or key in words:
            named.add(card_id)
        by_card.setdefault(card_id, []).append((offset, length, word))
    return by_card, named


def test_the_mentions_by_card_are_those_every_row_gives() -> None:
    cat = build(CARDS)
    rng = random.Random(33)
    for _ in range(300):
        text = "".join(rng.choice(WORDS) + rng.choice([" ", ", ", "\n", "\n\n", ""]) for _ in range(rng.randint(0, 30)))
        spans, regex_rows, _ = cat.matcher.word_spans(text)
        assert mentioned(cat, spans, regex_rows) == _rows_way(cat, text), text


def test_a_card_two_words_bring_has_both_in_order() -> None:
    cat = build(CARDS)
    spans, regex_rows, _ = cat.matcher.word_spans("Voss met Maren Voss, then Maren.")
    by_card, named = mentioned(cat, spans, regex_rows)
    assert by_card["twin"] == [(0, -4, "Voss"), (9, -5, "Maren"), (15, -4, "Voss"), (26, -5, "Maren")]
    assert by_card["maren"] == [(9, -10, "Maren Voss"), (9, -5, "Maren"), (26, -5, "Maren")]
    assert by_card["mo"] == by_card["rx"] == [(9, -5, "Maren"), (26, -5, "Maren")]  # a key; a regex key
    assert "off" not in by_card and named == {"maren", "twin"}  # Mo's and Ada's keys are evidence, not mentions


def test_a_regex_key_matching_where_a_word_of_its_card_is_is_one_mention() -> None:
    cat = build(CARDS)
    rows, _ = cat.matcher.mention_rows("Ada and Adam")
    assert [(offset, length, card_id, word) for offset, length, card_id, _, word in rows] == [
        (0, -3, "rx", "Ada"), (8, -3, "rx", "Ada")]  # the name once; "Adam" is no name, its regex match is
    spans, regex_rows, _ = cat.matcher.word_spans("Ada and Adam")
    assert mentioned(cat, spans, regex_rows) == ({"rx": [(0, -3, "Ada"), (8, -3, "Ada")]}, {"rx"})
