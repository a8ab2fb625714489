"""Query text for FTS5: safe against operators, CJK-aware, no stopword noise."""

from __future__ import annotations

from hypothesis import given, strategies as st

from membank import Bank
from membank.kernel.text import estimate_tokens, fts_query


def test_queries_keep_content_words_and_cjk_pairs() -> None:
    assert fts_query("is the hero injured?") == '"hero" OR "injured"'
    assert fts_query("林默的伤") == '"林 默" OR "默 的" OR "的 伤"'
    assert fts_query("who is she") == '"who" OR "is" OR "she"'  # stopwords only: kept
    assert fts_query("  ?! ") is None


def test_operators_and_quotes_in_the_writer_text_cannot_break_a_query(bank: Bank) -> None:
    for text in ('"NEAR(a b)', "AND OR NOT *", "col:value ^start", "a\"b'c"):
        preview = bank.preview(query_text=text)  # an FTS5 syntax error would raise here
        assert preview["mode"] == "semantic" and preview["items"]


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("林默受伤") == 4


@given(st.text(alphabet=st.sampled_from(list("ab .\n") + ["林", "默", "が", "한", "é", "😀", "𠀀"]), max_size=60))
def test_token_estimate_is_a_token_per_cjk_character_and_per_four_others(text: str) -> None:
    cjk = sum(1 for ch in text if ch in "林默が한𠀀")
    assert estimate_tokens(text) == (0 if not text else max(1, cjk + -(-(len(text) - cjk) // 4)))


@given(st.lists(st.sampled_from([0x41, 0xE9, 0x2014, 0x303F, 0x3040, 0x30FF, 0x3100, 0x3400, 0x4DBF, 0x4DC0, 0x4E00,
                                 0x9FFF, 0xA000, 0xAC00, 0xD7AF, 0xD7B0, 0xD800, 0xF900, 0xFAFF, 0xFB00, 0x1F600,
                                 0x20000, 0x2FFFF, 0x30000]), min_size=1, max_size=40))
def test_a_long_texts_estimate_counts_the_same_cjk(points: list[int]) -> None:
    import numpy  # noqa: F401  (loaded, as in a process that assembles prompts: the long text's vectorised count)

    text = "".join(map(chr, points)) * (3000 // len(points) + 1)  # over 2,048 code points, a lone surrogate too
    cjk = sum(1 for ch in text if any(a <= ord(ch) <= b for a, b in ((0x3040, 0x30FF), (0x3400, 0x4DBF),
              (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x2FFFF))))
    assert estimate_tokens(text) == max(1, cjk + -(-(len(text) - cjk) // 4))


def test_the_terms_of_a_text_asked_again_are_the_same_and_the_caller_s_own() -> None:
    from membank.kernel.text import fts_terms

    first = fts_terms("Storm over the storm gull 灯塔")
    assert first == ['"Storm"', '"gull"', '"灯 塔"']
    first.append('"x"')  # a caller changing its list changes no later answer
    assert fts_terms("Storm over the storm gull 灯塔") == ['"Storm"', '"gull"', '"灯 塔"']
    long = "灯塔" * 6_000  # over what is kept: tokenized again, the same terms
    assert fts_terms(long) == fts_terms(long) == ['"灯 塔"', '"塔 灯"']
