"""The words of a query: FTS5 terms, and an expensive query focused on its rarest words."""

from __future__ import annotations

from pathlib import Path

import membank
from membank.domains.recall import terms
from membank.domains.recall.terms import FOCUS, POSTINGS, focus
from membank.kernel.text import fts_terms

from .helpers import write_memory


def test_terms_are_quoted_and_each_is_asked_once() -> None:
    assert fts_terms("Storm, storm and the STORM; 林默说") == ['"Storm"', '"林 默"', '"默 说"']
    assert fts_terms("the of a") == ['"the"', '"of"']  # stopwords alone are kept


def test_a_cheap_query_is_asked_whole() -> None:
    words = [f'"w{i}"' for i in range(20)]
    assert focus(words, [POSTINGS // 40] * 20) == words
    assert focus(words[:2], [POSTINGS, 0]) == words[:2]


def test_an_expensive_query_keeps_its_rarest_words_in_their_order() -> None:
    words = ['"sea"', '"Wanderer12"', '"ship"', '"unknown"', '"gull"']
    counts = [POSTINGS, 1, POSTINGS // 2, 0, POSTINGS // 4]
    assert focus(words, counts) == ['"Wanderer12"', '"ship"', '"gull"']  # within POSTINGS, never 'unknown'
    assert focus(words, [POSTINGS * 3, POSTINGS * 2, 0, 0, POSTINGS * 5]) == ['"Wanderer12"']  # the rarest, always
    many = [f'"w{i}"' for i in range(FOCUS * 2)]
    assert len(focus(many, [POSTINGS // (FOCUS * 2) + 1] * len(many))) <= FOCUS


def test_the_index_counts_stemmed_words(sample: Path) -> None:
    write_memory(sample, "runner.md", "Running and runs: the runner ran.", id="m-run", type="note")
    bank = membank.open(sample)
    try:
        with bank.index.lock:
            assert bank.index.fts_tokens("Running Storms") == ["run", "storm"]
            counts = bank.index.term_documents(["run", "zzzzqx"])
            assert counts["run"] >= 1 and counts["zzzzqx"] == 0
            assert terms.match(bank.index, "") is None
            assert terms.match(bank.index, "running wild") == '"running" OR "wild"'
    finally:
        bank.close()
