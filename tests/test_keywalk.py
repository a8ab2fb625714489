"""The key words' walk (story.md, Matching): one walk over the whole text finds what scanning it line by line
would, around lone surrogates and characters that fold to several, with keys no walk can hold (a line break,
a surrogate) found or left out as before."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from membank.domains.story.keywalk import folded, stable
from membank.domains.story.matching import Keyed, Matcher, normalize

CARDS = [Keyed("maren", "Maren Voss", ("Maren",)), Keyed("lin", "林默", ("阿默", "默默")), Keyed("mo", "Mo"),
         Keyed("street", "STRASSE", ("ß",)), Keyed("odd", "a\ud800b"), Keyed("broken", "Maren\nVoss"),
         Keyed("fi", "ﬁsh", exclude_keys=("默默默",)), Keyed("sea", "sea", secondary_keys=("Mo", "gull"),
                                                           logic="and_all")]
PIECES = ["Maren", "maren's", "Voss", "林默", "默默默", "阿默", "Mo", "mo'", "straße", "STRASSE", "ß", "ﬁsh", "fish",
          "sea", "gull", "a\ud800b", "\ud800", "\udfff", "'s", "es", " ", "\n", "，", "_", "Ꭰ", "İ"]


def _rows(m: Matcher, text: str) -> list[tuple[int, int, str, str, str]]:
    return m.mention_rows(text)[0]


def test_a_lone_surrogate_is_walked_around_and_a_key_holding_one_is_found() -> None:
    m = Matcher.build(CARDS)
    text = "\ud800Maren\udfff a\ud800b 林默\ud800"  # JSON's "\ud800" reaches the sidecar as this
    assert [(a, card, word) for a, _, card, _, word in _rows(m, text)] == [
        (1, "maren", "Maren"), (8, "odd", "a\ud800b"), (12, "lin", "林默")]
    found, _ = m.activated(text, keep="first")
    assert list(found) == ["maren", "odd", "lin"]


def test_a_key_holding_a_line_break_matches_nowhere() -> None:
    m = Matcher.build(CARDS)
    assert "broken" not in m.activated("Maren\nVoss", keep="all")[0]
    assert "broken" not in m.activated("Maren\nVoss", keep="first")[0]


def test_cjk_words_overlap_and_every_one_is_found() -> None:
    m = Matcher.build(CARDS)
    assert [(a, -n, card) for a, n, card, _, _ in _rows(m, "默默默")] == [(0, 2, "lin"), (1, 2, "lin")]
    assert "fi" not in m.activated("ﬁsh 默默默", keep="first")[0]  # its exclude key, overlapping two of lin's


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24), st.sampled_from(["first", "last", "all"]))
def test_the_whole_text_finds_what_its_lines_find(pieces: list[str], keep: str) -> None:
    """Scanning the text once equals scanning each line alone, offsets moved by where the line starts (a key
    never spans a line break), for every `keep`, the secondary logic and exclude keys included."""
    m = Matcher.build(CARDS)
    text = "".join(pieces)
    rows, at = [], 0
    for line in text.split("\n"):
        rows.extend((a + at, n, card, key, word) for a, n, card, key, word in _rows(m, line))
        at += len(line) + 1
    assert _rows(m, text) == sorted(rows)
    whole, _ = m.activated(text, keep=keep)
    cards = {card for _, _, card, _, _ in rows}
    assert set(whole) <= cards
    for card, matches in whole.items():
        assert all(text[x.offset:x.offset + x.length] == x.word for x in matches)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24), st.lists(st.sampled_from(PIECES), max_size=24),
       st.sampled_from(["first", "last", "all"]))
def test_a_matcher_that_kept_some_lines_answers_as_a_fresh_one(seen: list[str], pieces: list[str], keep: str) -> None:
    """Lines a matcher scanned before are kept and the others walked together: a text sharing lines with the
    one before (a prompt's surrounding text moving down the chapter) answers what a fresh matcher answers."""
    used = Matcher.build(CARDS)
    before = "".join(seen)
    used.mention_rows(before)
    text = before[len(before) // 2:] + "".join(pieces) + "\n" + before
    fresh = Matcher.build(CARDS)
    assert _rows(used, text) == _rows(fresh, text)
    assert used.activated(text, keep=keep)[0] == fresh.activated(text, keep=keep)[0]
    assert used.spans(text, "first" if keep == "all" else keep) == fresh.spans(text, "first" if keep == "all" else keep)


STABLE_BLOCKS = [(0x3041, 0x3096), (0x30A1, 0x30FA), (0x3400, 0x9FFF), (0xAC00, 0xD7A3), (0x20000, 0x2F7FF),
                 (0x30000, 0x3134F)]


def test_the_blocks_folding_passes_by_fold_and_lower_to_themselves() -> None:
    for lo, hi in STABLE_BLOCKS:
        for code in range(lo, hi + 1):
            ch = chr(code)
            assert stable(ch) and normalize(ch) == ch and ch.lower() == ch, hex(code)
    for ch in ("\uf900", "\U0002f800", "\u3000", "\uff0c", "\u3131", "\u309b", "\uff76", "A", "é"):
        assert not stable(ch), hex(ord(ch))  # compatibility ideographs, full-width forms, jamo: NFKC maps them


def test_cjk_text_folds_character_by_character() -> None:
    # compatibility ideographs (豈 U+F900 -> 豈), full-width forms, … and ß (to several), an astral ideograph,
    # kana, Hangul, a Yijing hexagram, a lone surrogate amid Chinese
    text = "甄士隐\uf900．ＡＢ，“林默…”STRAẞE straße 𠀀ニ한\u4dc0\ud800默Σ。\u3000ﬁ"
    low, where = folded(text)
    pieces = [normalize(ch) if not ch.isascii() else ch.lower() for ch in text]
    assert low == "".join(pieces)
    assert [where[i] for i in range(len(low))] == [i for i, p in enumerate(pieces) for _ in p]


def test_a_compatibility_ideograph_in_the_text_names_the_card_of_its_unified_one() -> None:
    m = Matcher.build([Keyed("gai", "豈"), Keyed("lin", "林默")])
    assert [(a, card, word) for a, _, card, _, word in _rows(m, "说\uf900．林默…豈")] == [
        (1, "gai", "\uf900"), (3, "lin", "林默"), (6, "gai", "豈")]
