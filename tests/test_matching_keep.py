"""Matching (story.md): `activated(keep="first" | "last")`, which reads each word's cards once, picks what
the scan of every match (`keep="all"`) holds: the same cards, in the same order, each with its best match."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from membank.domains.story.matching import Keyed, Match, Matcher
from membank.domains.story.matchrules import best_of, better, secondary_ok

WORDS = ["Maren", "Maren Voss", "Voss", "Mar", "林默", "默", "Lin Mo", "Mo", "Gull", "boxes", "box", ".net",
         "/ma.en/i", "/vo(ss)?/", "STRASSE", "ﬁsh"]
TEXT = ["Maren", "maren's", "Voss", "Mar", "林默说", "Lin Mo", "mo", "gulls", "boxes", "asp.net", ".net", "straße",
        "ﬁsh", "ＭＡＲＥＮ", "Mo", " ", ", ", "\n", "。", "—", "vo"]
PICK = {"first": lambda m: (m.offset, -m.length), "last": lambda m: (-(m.offset + m.length), m.offset)}


def _cards(drawn: list) -> list[Keyed]:
    return [Keyed(f"c{i}", words[0], tuple(words[1:2]), tuple(words[2:]), tuple(ex), tuple(sec), logic)
            for i, (words, ex, sec, logic) in enumerate(drawn)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
                          st.lists(st.sampled_from(WORDS), max_size=1),
                          st.lists(st.sampled_from(WORDS), max_size=2),
                          st.sampled_from(["and_any", "and_all", "not_any", "not_all"])), min_size=1, max_size=6),
       st.lists(st.sampled_from(TEXT), max_size=25), st.sampled_from(["first", "last"]))
def test_the_kept_match_is_the_best_of_every_match(drawn: list, pieces: list[str], keep: str) -> None:
    matcher = Matcher.build(_cards(drawn))
    text = "".join(pieces)
    every, skipped = matcher.activated(text, "all")
    kept, skipped_kept = matcher.activated(text, keep)
    assert list(kept) == list(every) and skipped_kept == skipped
    for card_id, matches in kept.items():
        assert len(matches) == 1 and matches[0] in every[card_id]
        assert PICK[keep](matches[0]) == min(map(PICK[keep], every[card_id]))


def test_excluded_and_secondary_cards_are_left_out_as_with_every_match() -> None:
    cards = [Keyed("a", "Maren", exclude_keys=("Voss",)), Keyed("b", "Mo", secondary_keys=("Lin",)),
             Keyed("c", "Gull", secondary_keys=("/bo+x/",), logic="and_all"), Keyed("d", "/ma.en/i")]
    matcher = Matcher.build(cards)
    text = "Maren Voss met Mo and a gull by the box, then Lin; Maren again"
    for keep in ("first", "last"):
        found, _ = matcher.activated(text, keep)
        assert {k: [(m.word, m.offset) for m in v] for k, v in found.items()} == {
            "b": [("Mo", 15)], "c": [("gull", 24)],
            "d": [("Maren", 0) if keep == "first" else ("Maren", 51)]}


def test_which_span_a_keep_prefers_and_the_logics() -> None:
    assert better("first", 3, 5, 4, 9) and better("first", 3, 6, 3, 5) and not better("first", 3, 5, 3, 5)
    assert better("last", 4, 9, 3, 8) and better("last", 2, 9, 4, 9) and not better("last", 1, 5, 3, 8)
    m = [Match("c", "b", "x", 4, 2), Match("c", "a", "x", 4, 2), Match("c", "a", "xyz", 1, 3)]
    assert best_of(m, "first") == [m[2]] and best_of(m, "last") == [m[1]]  # a tie: the first key
    card = Keyed("c", "C", secondary_keys=("a", "b", "b", " "), logic="and_all")
    assert secondary_ok(card, {"a", "b"}) and not secondary_ok(card, {"a"})
    assert secondary_ok(Keyed("c", "C", secondary_keys=("a",), logic="nonsense"), {"a"})  # and_any


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(TEXT[:-1] + ["\n", "\n"]), max_size=12), min_size=2, max_size=5),
       st.sampled_from(["first", "last"]))
def test_lines_seen_before_elsewhere_give_what_a_first_scan_gives(texts: list[list[str]], keep: str) -> None:
    cards = [Keyed("a", "Maren", ("Voss",)), Keyed("b", "Mo", keys=("gull", "林默")), Keyed("c", "box", keys=("ﬁsh",)),
             Keyed("d", "/ma.en/i"), Keyed("e", "Mar", exclude_keys=("straße",))]
    warm = Matcher.build(cards)  # keeps each line's spans from one text to the next
    for pieces in texts:
        text = "".join(pieces)
        for mode in (keep, "first" if keep == "last" else "last"):
            assert warm.activated(text, mode) == Matcher.build(cards).activated(text, mode)
            assert warm.spans(text, mode) == Matcher.build(cards).spans(text, mode)


def test_a_word_on_several_lines_keeps_its_first_or_last_span_in_the_whole_text() -> None:
    matcher = Matcher.build([Keyed("a", "Maren"), Keyed("b", "Mo")])
    text = "Mo met Maren.\nMaren, Maren.\nNo one.\nMo saw Maren"
    for _ in range(2):  # cold, then every line kept
        first, _ = matcher.activated(text, "first")
        last, _ = matcher.activated(text, "last")
        assert [(k, v[0].offset) for k, v in first.items()] == [("b", 0), ("a", 7)]
        assert [(k, v[0].offset) for k, v in last.items()] == [("b", 36), ("a", 43)]
        assert [(a, b) for a, b, _ in matcher.spans(text, "first")[0]] == [(0, 2), (7, 12)]
        assert [(a, b) for a, b, _ in matcher.spans(text, "last")[0]] == [(36, 38), (43, 48)]
    assert matcher.activated("Maren.\nMo", "first")[0]["a"][0].offset == 0  # the same lines elsewhere


def test_more_new_lines_than_a_matcher_keeps_and_threads_scanning_together_give_the_same_spans() -> None:
    import threading

    from membank.domains.story import matching

    cards = [Keyed("a", "Maren"), Keyed("b", "林默"), Keyed("c", "Voss")]
    texts = ["\n".join(f"{i} Maren 林默说 {i % 7} Voss" if i % 3 else f"line {i}" for i in range(start, start + n))
             for start, n in ((0, matching.LINES_KEPT + 5), (100, 300), (7, 40))]
    want = {(t, keep): Matcher.build(cards).spans(t, keep) for t in texts for keep in ("first", "last")}
    shared = Matcher.build(cards)
    got: dict[tuple[str, str], object] = {}
    errors: list[BaseException] = []

    def scan(order: list[tuple[str, str]]) -> None:
        try:
            for _ in range(3):
                for t, keep in order:
                    assert shared.spans(t, keep) == want[(t, keep)]
                    got[(t, keep)] = True
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    keys = list(want)
    threads = [threading.Thread(target=scan, args=(keys[i:] + keys[:i],)) for i in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and len(got) == len(want)
