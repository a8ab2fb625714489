"""The passages' word matches (`manuscript:search` and `context_rules.recall`'s lexical side): the k best
passages of `"a" OR "b" OR …` by FTS5's bm25, answered from each phrase's own rows where that is exact.

A prompt's default query is the instruction and the selection: twenty to forty ordinary words, most of
them held by most passages, so FTS5 scores nearly the whole manuscript for each prompt (~10 ms at
1,000,000 code points), while the rows of each word stay what they were until the manuscript moves. BM25
sums one term per phrase, in phrase order, from 0.0, and a phrase a row does not hold adds exactly 0.0;
a phrase's term in a row is the same in its own query as in the OR (its rarity counts rows over the
whole table, whichever phrases are asked with it). So a row's score in the OR query is the sum, in
phrase order, of its scores in each phrase's query, as long as SQLite adds each term after rounding it
(a compiler may fuse the multiply and the add into one rounding: the first composed answer in a process
is compared with FTS5's, and on any difference FTS5 is asked from then on). Each phrase's rows are kept
per generation of the passages (store.GENERATION), not per view of the index: writing a memory does not
move them."""

from __future__ import annotations

import re
from typing import Any

from ...index import Index
from . import store

PHRASE = re.compile(r'"[^"]*\w[^"]*"')  # one quoted phrase with a word character in it
ROWS_KEPT = 500_000  # phrase rows kept (12 bytes each)
GENERATIONS_KEPT = 2  # read threads may stand on two generations at once
SQL_BM25 = "bm25(manuscript_fts)"

Rows = list[tuple[int, float]]
_exact: dict[str, bool] = {}  # "equal": whether the first composed answer compared was FTS5's


def best(index: Index, match: str, where: str, args: list[Any], allowed: list[int], k: int) -> Rows:
    """(id, bm25) of the k best passages matching `match` among those `where` allows (`allowed`: their ids),
    best first, ties by id: what `… WHERE manuscript_fts MATCH ? AND {where} ORDER BY bm25 LIMIT k` gives."""
    made = None if _exact.get("equal") is False else composed(index, match, allowed, k)
    if made is not None and _exact.get("equal"):
        return made
    asked = _fts(index, match, where, args, k)
    if made is not None and " OR " in match and asked:  # the first such in this process: compare
        _exact["equal"] = made == asked
    return asked


def _fts(index: Index, match: str, where: str, args: list[Any], k: int) -> Rows:
    return [(int(i), float(s)) for i, s in index.db.execute(
        f"SELECT f.rowid, {SQL_BM25} FROM manuscript_fts AS f JOIN manuscript_passages AS p ON p.id = f.rowid"
        f" WHERE manuscript_fts MATCH ? AND {where} ORDER BY 2, 1 LIMIT ?", [match, *args, k])]


def composed(index: Index, match: str, allowed: list[int], k: int) -> Rows | None:
    """The answer from each phrase's kept rows; None for what is not an OR of plain phrases."""
    import numpy as np

    phrases = match.split(" OR ")
    if k <= 0 or not all(PHRASE.fullmatch(p) for p in phrases):
        return None
    kept = _kept(index)
    ids = kept["ids"]
    found = [_phrase(index, kept, phrase) for phrase in phrases]
    at = np.concatenate([a for a, _ in found])
    # bincount adds its weights one by one in their order, from 0.0: each row's terms in the query's phrase order,
    # the same additions in the same order as FTS5's (no row twice within one phrase)
    total = np.bincount(at, weights=np.concatenate([s for _, s in found]), minlength=len(ids))
    held = np.zeros(len(ids), dtype=bool)
    held[at] = True
    rows = np.flatnonzero(held & allowed_mask(index, ids, allowed))
    scores = total[rows]
    if len(rows) > k:  # only those that may be among the k best are sorted
        near = first_k(scores, k)
        rows, scores = rows[near], scores[near]
    order = rows[np.lexsort((ids[rows], scores))][:k]
    return list(zip(ids[order].tolist(), total[order].tolist()))


def first_k(values: Any, k: int) -> Any:
    """A mask of the values that may be among the k smallest: every one not above the k-th smallest (ties
    with it too), so sorting only them gives the same first k as sorting all (by value, then as before).
    All of them when that value is NaN (fewer than k that are not)."""
    import numpy as np

    kth = np.partition(values, k - 1)[k - 1]
    return values <= kth if kth == kth else np.ones(len(values), dtype=bool)


def positions(ids: Any, wanted: list[int]) -> Any:
    """The positions in `ids` (sorted) of the ids in `wanted`, in their order; an id not there left out."""
    import numpy as np

    asked = np.asarray(wanted, dtype=np.int64)
    at = np.searchsorted(ids, asked)
    known = at < len(ids)
    known[known] = ids[at[known]] == asked[known]
    return at[known]


def kept_positions(index: Index, ids: Any, allowed: list[int], exclude: frozenset[int] = frozenset()) -> Any:
    """`positions(ids, [i for i in allowed if i not in exclude])`, the positions of `allowed` kept while the
    passages' generation holds: `ids` and `allowed` are this generation's own kept arrays (`_kept`,
    search.py `_vectors` and `_within`), so each is known by identity (it stays alive in the memo with its
    answer). A prompt's recall and a search ask the same few positions again; the excluded few (Layer 5's
    passages) are taken out of the kept answer."""
    import numpy as np

    found = kept_for(index, "positions", ids, allowed, lambda: positions(ids, allowed))
    if exclude:  # a mask over `ids` of the excluded: what `np.isin(…, invert=True)` keeps, at half its cost
        gone = np.zeros(len(ids), dtype=bool)
        gone[positions(ids, list(exclude))] = True
        found = found[~gone[found]]
    return found


def allowed_mask(index: Index, ids: Any, allowed: list[int]) -> Any:
    """A read-only mask over `ids` of those in `allowed`, kept as `kept_positions` is."""
    import numpy as np

    def make() -> Any:
        mask = np.zeros(len(ids), dtype=bool)
        mask[kept_positions(index, ids, allowed)] = True
        mask.flags.writeable = False
        return mask

    return kept_for(index, "mask", ids, allowed, make)


POSITIONS_KEPT = 2048  # answers of `kept_positions`, `allowed_mask` and strong.py's runs kept per generation: a
# few for each of search.py's WITHIN_KEPT positions (fewer cleared them all on every search of a 100-chapter walk)


def kept_for(index: Index, kind: str, ids: Any, allowed: list[int], make: Any) -> Any:
    """`make()` (a numpy array, made read-only) kept per generation for this `ids` and `allowed`, both known
    by identity (strong.py keeps its runs of windows here: its `ids` come with their windows)."""
    kept = generation_memo(index).setdefault("positions", {})
    key = (kind, id(ids), id(allowed))
    found = kept.get(key)
    if found is None or found[0] is not ids or found[1] is not allowed:  # held with its answer: ids never reused
        if len(kept) >= POSITIONS_KEPT:
            kept.clear()
        made = make()
        made.flags.writeable = False
        found = kept[key] = (ids, allowed, made)
    return found[2]


def generation_memo(index: Index) -> dict[str, Any]:
    """A memo kept while the passages' generation (store.GENERATION) holds: it moves whenever a passage
    comes, goes or gets a vector (at the end of the write that moved it), and a rebuild empties `index.caches`. Read threads standing on two
    generations at once each find theirs."""
    view = index.view_key()
    if view is None:
        return {}  # in the middle of a write (the generation moves at its end): nothing read may be kept
    memos: dict[Any, Any] = index.caches.setdefault("manuscript.generation", {})
    last = memos.get("view")  # the view last asked for: the same view, the same generation (a prompt asks ~9 times)
    if last is not None and last[0] == view:
        return last[1]  # type: ignore[no-any-return]
    generation = store.generation(index)
    kept = memos.get(generation)
    if kept is None:
        if len(memos) >= GENERATIONS_KEPT + 1:
            memos.clear()
        kept = memos[generation] = {}
    memos["view"] = (view, kept)  # one assignment: another read thread sees the pair whole
    return kept


def _kept(index: Index) -> dict[str, Any]:
    """This generation's word memo: the passages' ids in order, and each phrase's rows asked so far."""
    import numpy as np

    memo = generation_memo(index)
    kept = memo.get("words")
    if kept is None:
        ids = np.asarray([i for (i,) in index.db.execute("SELECT id FROM manuscript_passages ORDER BY id")],
                         dtype=np.int64)
        kept = memo["words"] = {"ids": ids, "phrases": {}, "rows": 0}
    return kept  # type: ignore[no-any-return]


TERMS_KEPT = 8192  # phrases whose tokens are kept (`_term`), each of at most TERM_CHARS_KEPT code points
TERM_CHARS_KEPT = 64
_terms: dict[str, Any] = {}  # phrase -> the tokens FTS5 looks up for it (one tokenizer, FTS5's, in every process)


def _term(index: Index, phrase: str) -> Any:
    """What a phrase's rows are kept under: the tokens FTS5 makes of it ("Storm", "storm" and "storms" are all
    `storm`: one term, one doclist, the same bm25 in a query of its own), the phrase itself without any."""
    found = _terms.get(phrase)
    if found is None:
        found = tuple(index.fts_tokens(phrase[1:-1])) or phrase
        if len(phrase) <= TERM_CHARS_KEPT:  # (a 100,000-letter word is tokenized again: never held 8,192 times)
            if len(_terms) >= TERMS_KEPT:
                _terms.clear()
            _terms[phrase] = found
    return found


def _phrase(index: Index, kept: dict[str, Any], phrase: str) -> tuple[Any, Any]:
    """(positions in `kept["ids"]`, bm25) of the passages holding `phrase`, kept under its tokens (`_term`)."""
    import numpy as np

    key = _term(index, phrase)
    found = kept["phrases"].get(key)
    if found is None:
        ids = kept["ids"]
        rows = index.db.execute(f"SELECT rowid, {SQL_BM25} FROM manuscript_fts WHERE manuscript_fts MATCH ?",
                                (phrase,)).fetchall()
        rowids = np.asarray([r for r, _ in rows], dtype=np.int64)
        scores = np.asarray([s for _, s in rows], dtype=np.float64)
        at = np.searchsorted(ids, rowids)
        known = at < len(ids)
        known[known] = ids[at[known]] == rowids[known]  # a word row without its passage: the join drops it
        found = (at[known], scores[known])
        if kept["rows"] + len(rows) > ROWS_KEPT:
            kept["phrases"].clear()
            kept["rows"] = 0
        kept["phrases"][key] = found
        kept["rows"] += len(rows)
    return found  # type: ignore[no-any-return]
