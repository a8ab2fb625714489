"""Matching (story.md): whole words in Latin script, substrings in CJK, NFKC + case folding, regex keys
with a time limit, exclude keys and secondary logic — one automaton over every card."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from membank.domains.story.matching import Keyed, Match, Matcher

CARDS = [Keyed("maren", "Maren Voss", ("Maren",)), Keyed("lin", "林默", ("阿默", "Lin Mo")), Keyed("mo", "Mo"),
         Keyed("gull", "gull", ("box",)), Keyed("street", "STRASSE")]


def _found(text: str, cards: list[Keyed] = CARDS) -> list[tuple[str, str, int, int]]:
    matches, _ = Matcher.build(cards).mentions(text)
    return [(m.id, m.word, m.offset, m.length) for m in matches]


def test_whole_words_plural_endings_and_cjk_substrings() -> None:
    assert _found("Maren's lamp") == [("maren", "Maren's", 0, 7)]
    assert _found("a Moment, Lin Mo") == [("lin", "Lin Mo", 10, 6), ("mo", "Mo", 14, 2)]
    assert _found("gulls and boxes, not gullible") == [("gull", "gulls", 0, 5), ("gull", "boxes", 10, 5)]
    assert _found("林默说：阿默来了") == [("lin", "林默", 0, 2), ("lin", "阿默", 4, 2)]


def test_nfkc_and_case_folding_with_offsets_in_the_original_text() -> None:
    assert _found("ＭＡＲＥＮ and MAREN") == [("maren", "ＭＡＲＥＮ", 0, 5), ("maren", "MAREN", 10, 5)]
    assert _found("ﬁ straße") == [("street", "straße", 2, 6)]  # ﬁ folds to two letters before it
    greek = [Keyed("o", "Οδυσσευς")]  # a final Σ folds to σ, as a key's ς does
    assert _found("ΟΔΥΣΣΕΥΣ 林默", greek) == [("o", "ΟΔΥΣΣΕΥΣ", 0, 8)]
    assert _found("林默 οδυσσευς", greek) == [("o", "οδυσσευς", 3, 8)]
    assert _found("他说：林默，阿默。", [Keyed("pair", "林默,阿默")]) == [("pair", "林默，阿默", 3, 5)]
    m = Matcher.build(CARDS)
    text = "Maren and\nLin Mo\nLin\nMo, MAREN"  # a key never spans a line break
    assert m.mentions(text) == m.mentions(text)  # the second time from the lines kept
    assert [(x.word, x.offset) for x in m.mentions(text)[0]] == [("Maren", 0), ("Lin Mo", 10), ("Mo", 14),
                                                                 ("Mo", 21), ("MAREN", 25)]


WORDS = ["Maren", "MAREN", "ＭＡＲＥＮ，", "林默。", "ΟΔΥΣΣΕΥΣ", "ﬁ", "straße", "gulls", "x", "Ꭰ", "İ"]


@given(st.lists(st.sampled_from(WORDS), max_size=6), st.lists(st.sampled_from(WORDS), max_size=6),
       st.sampled_from([" ", "\n", "\n\n"]))
def test_what_is_found_in_one_part_does_not_depend_on_the_other(a: list[str], b: list[str], gap: str) -> None:
    cards = [*CARDS, Keyed("o", "Οδυσσευς"), Keyed("ch", "Ꭰ")]
    left, right = " ".join(a), " ".join(b)
    shift = len(left) + len(gap)
    assert _found(f"{left}{gap}{right}", cards) == sorted(
        _found(left, cards) + [(i, w, o + shift, n) for i, w, o, n in _found(right, cards)],
        key=lambda m: (m[2], -m[3]))


def test_exclude_keys_and_the_four_logics() -> None:
    base = dict(id="w", name="wreck", secondary_keys=("alma", "schooner"))
    for logic, expect in (("and_any", [False, True, True]), ("and_all", [False, False, True]),
                          ("not_any", [True, False, False]), ("not_all", [True, True, False])):
        m = Matcher.build([Keyed(**base, logic=logic)])
        got = ["w" in m.activated(t)[0] for t in ("a wreck", "a wreck of the alma", "wreck, alma, schooner")]
        assert got == expect, logic
    ex = Matcher.build([Keyed("s", "storm", exclude_keys=("calm",))])
    assert "s" in ex.activated("the storm")[0] and "s" not in ex.activated("storm, then calm")[0]


LOGIC_CARDS = [Keyed("ship", "red", keys=("big red ship", "/sh[io]p/")), Keyed("maren", "Maren", ("Maren Voss",)),
               Keyed("w", "wreck", secondary_keys=("alma", "storm"), logic="and_all"),
               Keyed("n", "net", secondary_keys=("alma", "storm"), logic="not_all"),
               Keyed("x", "gull", exclude_keys=("calm",)), Keyed("m", "Voss")]
LOGIC_WORDS = ["big", "red", "ship", "shop", "Maren", "Voss", "wreck", "alma", "storm", "net", "gull", "calm", "the"]


def _ends(m: Match) -> tuple[int, int]:
    return m.offset + m.length, -m.offset


@given(st.lists(st.sampled_from(LOGIC_WORDS), max_size=14))
def test_first_and_last_keep_one_match_of_the_same_cards(words: list[str]) -> None:
    m = Matcher.build(LOGIC_CARDS)
    text = " ".join(words)
    every = m.activated(text)[0]
    for keep in ("first", "last"):
        one = m.activated(text, keep=keep)[0]
        assert one.keys() == every.keys()  # secondary logics and exclude keys decide alike
        for card, matches in one.items():
            best = min(every[card], key=lambda x: (x.offset, -x.length)) if keep == "first" else \
                max(every[card], key=_ends)
            assert len(matches) == 1 and (matches[0].offset, matches[0].length) == (best.offset, best.length)


def test_first_keeps_the_match_that_starts_first_last_the_one_that_ends_last() -> None:
    m = Matcher.build([Keyed("ship", "red", keys=("big red ship",))])
    text = "a big red ship, a red one"
    assert [(x.word, x.offset) for x in m.activated(text, keep="first")[0]["ship"]] == [("big red ship", 2)]
    assert [(x.word, x.offset) for x in m.activated(text, keep="last")[0]["ship"]] == [("red", 18)]
    both = Matcher.build([Keyed("w", "wreck", secondary_keys=("alma", "storm"), logic="and_all")])
    assert "w" in both.activated("storm, wreck, alma, wreck", keep="first")[0]


def test_regex_keys_time_limit_and_invalid_ones_are_skipped() -> None:
    m = Matcher.build([Keyed("g", "x", keys=("/gale[s]?/i",)), Keyed("bad", "y", keys=("/(/",)),
                       Keyed("slow", "z", keys=("/(a|aa)+$/",)), Keyed("maren", "Maren")],
                      regex_timeout=0.005)
    hits, skipped = m.activated("GALES hit Maren " + "a" * 40 + "b")  # ~2^40 ways to fail: only the limit ends it
    assert set(hits) == {"g", "maren"}
    reasons = {s.id: s.reason for s in skipped}
    assert reasons["bad"] == "invalid" and reasons["slow"] == "timeout"
    assert all("/" in s.message and s.message.endswith("skipped") for s in skipped)


def test_thousands_of_cards_in_one_pass() -> None:
    rng = random.Random(7)
    cards = [Keyed(f"c{i}", f"name{i}", keys=tuple(f"key{i}x{j}" for j in range(4))) for i in range(2000)]
    words = [f"key{rng.randrange(2000)}x{rng.randrange(4)}" for _ in range(300)]
    text = " filler ".join(words)
    hits, _ = Matcher.build(cards).activated(text)
    assert set(hits) == {f"c{w[3:].split('x')[0]}" for w in words}


@settings(max_examples=15, deadline=None)
@given(st.permutations(CARDS), st.sampled_from(["Maren's Lin Mo gulls", "林默 and ＭＡＲＥＮ", "boxes of Mo"]))
def test_the_order_of_cards_changes_nothing(cards: list[Keyed], text: str) -> None:
    assert _found(text, list(cards)) == _found(text)
