"""The lexical half of a query: which words FTS5 is asked for.

FTS5 reads every entry that holds any query word and scores each of them (BM25): a query of
twenty ordinary words, such as a prompt's default query (the instruction and a selection of a
few hundred characters), makes it score most of the bank, and BM25 ranks by the rare words
anyway, since it weighs each word by its rarity. So a query whose words are held by more than
`POSTINGS` entries between them is focused: its rarest words are kept while they stay within
that (always the rarest one, at most `FOCUS`). A query of specific words is asked as it is.
docs/recall.md gives the measured effect."""

from __future__ import annotations

from ...index import Index
from ...kernel.text import fts_terms

POSTINGS = 1_000  # entries a query's words may be held by, between them, before it is focused
FOCUS = 8  # the most words a focused query keeps


def focus(terms: list[str], documents: list[int]) -> list[str]:
    """The terms a query keeps, in their order, given how many entries hold each (0: none; such
    a term matches nothing and a focused query leaves it out)."""
    if sum(documents) <= POSTINGS:
        return terms
    kept: list[int] = []
    held = 0
    for n, i in sorted((n, i) for i, n in enumerate(documents) if n > 0)[:FOCUS]:
        if kept and held + n > POSTINGS:
            break
        kept.append(i)
        held += n
    return [terms[i] for i in sorted(kept)]


TOKENS_KEPT = 8192  # terms whose FTS5 tokens an index keeps


def _tokens(index: Index, term: str) -> tuple[str, ...]:
    """`index.fts_tokens(term)`, kept: the tokenizer's answer never changes, and a session's queries
    repeat most of their words (each asked afresh costs a tokenizer made for it)."""
    kept: dict[str, tuple[str, ...]] = index.caches.setdefault("recall.term_tokens", {})
    found = kept.get(term)
    if found is None:
        found = tuple(index.fts_tokens(term))
        if len(kept) >= TOKENS_KEPT:
            kept.clear()
        kept[term] = found
    return found


def match(index: Index, text: str) -> str | None:
    """The FTS5 MATCH expression for `text` (any of its terms); None when nothing is searchable."""
    terms = fts_terms(text)
    if len(terms) > 1:
        tokens = [_tokens(index, t.strip('"')) for t in terms]
        counts = index.term_documents(t for ts in tokens for t in ts)
        # a phrase is in no more entries than its rarest word; a term FTS5 makes nothing of, in none
        terms = focus(terms, [min((counts[t] for t in ts), default=0) for ts in tokens])
    return " OR ".join(terms) if terms else None
