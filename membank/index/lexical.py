"""An FTS5 query of several phrases answered from each phrase's own answer, where that is exact.

`Index.lexical` asks for the k best rows of `"a" OR "b" OR …` by bm25. FTS5 scores every row that
holds any phrase (~0.5 ms for the ~900 rows of a common word); a focused query (recall/terms.py) is
a few rare words and the instruction's, which a session asks again in new combinations, while the
rows of each phrase stay what they were. BM25 sums one term per phrase, in phrase order, from 0.0,
and a phrase a row does not hold adds exactly 0.0: a row that holds one phrase alone scores in the OR
query exactly what it scores in that phrase's own query. So when no row holds two of the phrases, the
query's rows are the phrases' rows with their own scores, in the order SQLite gives `ORDER BY score
LIMIT k` (the score, then the order FTS5 yields rows in: rowid). A row that holds two phrases sums
terms in an order a compiler may fuse into one rounding (fused multiply-add): that query goes to
FTS5, as does anything else (tests/test_recall_exact.py holds the two equal)."""

from __future__ import annotations

import re
from array import array
from itertools import chain
from operator import itemgetter
from typing import Any, Callable, Protocol


class Index(Protocol):  # what this module reads of `store.Index` (which imports it)
    db: Any

    def view_memo(self, name: str) -> dict[Any, Any] | None: ...


BM25 = "bm25(fts, 1.0, 2.0)"  # a row's FTS5 score: names weigh double
ANSWERS_KEPT = 64  # FTS5 answers a view of the index keeps (each at most 4 KB)
PHRASE = re.compile(r'"[^"]*\w[^"]*"')  # one quoted phrase with a word character in it
PHRASE_ROWS = 4096  # a phrase held by more rows is left to FTS5: listing them would cost more than it saves
ROWS_KEPT = 65_536  # the phrase rows a view of the index keeps (16 bytes each)
SORTED_IN_PYTHON = 256  # rows sorted as tuples; more go to numpy's lexsort
_TOTAL = ""  # the memo's key for the rows it holds (no phrase is empty)

Rows = list[tuple[int, float]]
_BY_SCORE = itemgetter(1, 0)
Fetch = Callable[[str, int], Rows]  # a phrase and a limit -> (rowid, bm25) of its rows, in FTS5's order (rowid)


def best(index: Index, match: str, k: int) -> Rows:
    """(rowid, bm25) of the k best FTS5 matches of `match`, best first, kept for this view of the index:
    a focused query is a few rare words (recall/terms.py), which a session's prompts ask again and again
    (its characters' names, the instruction), and BM25 scores every row holding one (~0.5 ms)."""
    memo = index.view_memo("index.lexical")
    kept = memo.get((match, k)) if memo is not None else None
    if kept is not None:
        return list(zip(*kept))
    phrases = index.view_memo("index.lexical.phrases")
    rows = composed(match, k, phrases, lambda phrase, limit: index.db.execute(
        f"SELECT rowid, {BM25} FROM fts WHERE fts MATCH ? LIMIT ?", (phrase, limit)).fetchall()) \
        if phrases is not None else None
    if rows is None:
        rows = index.db.execute(f"SELECT rowid, {BM25} AS score FROM fts WHERE fts MATCH ? ORDER BY score LIMIT ?",
                                (match, k)).fetchall()
    if memo is not None:
        if len(memo) >= ANSWERS_KEPT:
            memo.clear()
        # as two arrays, 16 bytes a row rather than ~100: the same integers and doubles come back
        memo[match, k] = (array("q", [r for r, _ in rows]), array("d", [score for _, score in rows]))
    return rows


def composed(match: str, k: int, kept: dict[Any, Any], fetch: Fetch) -> Rows | None:
    """The k best (rowid, bm25) of `match` as FTS5 ranks them, from each phrase's kept rows; None when
    that could differ from FTS5's answer (a row holds two phrases; not an OR of plain phrases) or a
    phrase holds too many rows."""
    phrases = match.split(" OR ")
    if k < 0 or not all(PHRASE.fullmatch(p) for p in phrases):
        return None
    parts = []
    for phrase in phrases:
        rows = _phrase_rows(phrase, kept, fetch)
        if rows is None:
            return None
        parts.append(rows)
    if len(parts) == 1:
        return list(zip(parts[0][0][:k], parts[0][1][:k]))  # kept in that order
    if sum(len(ids) for ids, _ in parts) <= SORTED_IN_PYTHON:
        if len(set().union(*(ids for ids, _ in parts))) < sum(len(ids) for ids, _ in parts):
            return None
        return sorted(chain.from_iterable(zip(ids, scores) for ids, scores in parts), key=_BY_SCORE)[:k]
    import numpy as np

    ids = np.concatenate([np.frombuffer(ids, np.int64) for ids, _ in parts])
    held = np.sort(ids)
    if (held[1:] == held[:-1]).any():
        return None
    scores = np.concatenate([np.frombuffer(scores, np.float64) for _, scores in parts])
    best = np.lexsort((ids, scores))[:k]  # by (bm25, rowid), as FTS5 ranks them
    return list(zip(ids[best].tolist(), scores[best].tolist()))


def _phrase_rows(phrase: str, kept: dict[Any, Any], fetch: Fetch) -> tuple[array[int], array[float]] | None:
    """The phrase's own rows by (bm25, rowid) as two arrays, kept for this view; None for too many."""
    found = kept.get(phrase)
    if found is None:
        rows = fetch(phrase, PHRASE_ROWS + 1)
        if len(rows) > PHRASE_ROWS:
            found = ()
        else:
            found = _by_score(rows)
        total = kept.get(_TOTAL, 0) + len(rows)
        if total > ROWS_KEPT:
            kept.clear()
            total = len(rows)
        kept[phrase], kept[_TOTAL] = found, total
    return found or None


def _by_score(rows: Rows) -> tuple[array[int], array[float]]:
    """The rows as two arrays ordered by (bm25, rowid): a common word's thousands sorted in C (as tuples
    they cost more than the rest of a prompt's word search), a few as tuples (numpy's calls cost more)."""
    if len(rows) <= SORTED_IN_PYTHON:
        rows.sort(key=_BY_SCORE)  # stable: FTS5 gives rowids in order
        return array("q", [r for r, _ in rows]), array("d", [s for _, s in rows])
    import numpy as np

    ids, scores = np.array([r for r, _ in rows], np.int64), np.array([s for _, s in rows], np.float64)
    order = np.lexsort((ids, scores))
    return array("q", ids[order].tobytes()), array("d", scores[order].tobytes())
