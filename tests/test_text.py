"""Query text for FTS5: safe against operators, CJK-aware, no stopword noise."""

from __future__ import annotations

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
