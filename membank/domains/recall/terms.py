"""The lexical half of a query: which words FTS5 is asked for.

A short query is asked as it is. A long one (a selection of a few hundred characters: a prompt's
default query) is focused on its rarest words. BM25 weighs a word by its rarity, and FTS5 reads
and scores every entry that holds any query word: twenty ordinary words make it score most of the
bank to rank it by the two or three rare ones. So a long query keeps at most `FOCUS` words, and
of those only the ones in at most `COMMON` of the entries (always its rarest `FLOOR`).
docs/recall.md gives the measured effect."""

from __future__ import annotations

from ...index import Index
from ...kernel.text import fts_terms

FOCUS = 8  # a query with more words than this is focused, to this many at most
COMMON = 0.05  # a share of the entries past which a word of a long query carries little
FLOOR = 2  # a long query keeps at least its rarest words, however common


def focus(terms: list[str], documents: list[int], total: int) -> list[str]:
    """The terms a query keeps, in their order, given how many entries hold each (0: none, which
    match nothing and are left out of a long query)."""
    if len(terms) <= FOCUS:
        return terms
    rarest = sorted((n, i) for i, n in enumerate(documents) if n > 0)[:FOCUS]
    kept = [i for n, i in rarest if n <= COMMON * total]
    if len(kept) < FLOOR:
        kept = [i for _, i in rarest[:FLOOR]]
    return [terms[i] for i in sorted(kept)]


def match(index: Index, text: str) -> str | None:
    """The FTS5 MATCH expression for `text` (any of its terms); None when nothing is searchable."""
    terms = fts_terms(text)
    if len(terms) > FOCUS:
        tokens = [index.fts_tokens(t.strip('"')) for t in terms]
        counts, total = index.term_documents(t for ts in tokens for t in ts)
        # a phrase is in no more entries than its rarest word; a term FTS5 makes nothing of, in none
        terms = focus(terms, [min((counts[t] for t in ts), default=0) for ts in tokens], total)
    return " OR ".join(terms) if terms else None
