"""The memories of a prompt (context.md): Layer 3's preferences in append-friendly order, Layer 4's
most relevant other memories through the existing recall (with a relevance floor), and this
document's own memories. Memories valid for part of the story (`since`/`until`) only where they hold."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ..contract import Bank
from ..recall import terms
from ..recall.order import ORDER_SQL, deterministic_detail
from ..recall.queries import ELIGIBLE, eligible_args, hiding, lexical_eligible, nearest_eligible
from ..recall.rank import EMPTY_QUERY, QUERY_NOT_EMBEDDABLE, STRONG_VECTOR_WEIGHT, VECTOR_WEIGHT, Reason, fuse
from ..recall.readiness import semantic_problem
from ..recall.tiers import StrongQuery, strong_query, strong_side

# The least fused score (recall.rank.fuse: half cosine, half relative BM25) a memory needs to enter
# Layer 4 by relevance: below it, the memory is left out even when the budget has room. Chosen on
# the labelled set in fixtures/retrieval (benchmarks/relevance_floor.py; docs/context.md).
RELEVANCE_FLOOR = 0.35
# The strong tier's floor, on a memory's centred strong cosine (`relevant_enough`): measured the same
# way on the same set (docs/context.md).
STRONG_RELEVANCE_FLOOR = 0.15
CANDIDATES = 64  # at least this many neighbours are ranked before the floor and the filters cut
RECORDS_KEPT = 4096  # decoded records a view of the index keeps for the prompts it answers


class Found(NamedTuple):  # a tuple: a prompt makes dozens, and Layer 3 hundreds once per view
    rowid: int
    memory: dict[str, Any]
    tokens: int
    score: float | None
    reason: dict[str, Any]


def _preference_rows(bank: Bank) -> list[tuple[int, dict[str, Any], int]]:
    """Every live project and global preference not tied to a document, oldest first (createdAt,
    then id). Cached until the index changes."""
    index = bank.index
    memo = index.view_memo("context.preferences")
    if memo is None or "rows" not in memo:
        rows = index.db.execute(
            f"SELECT rowid, record, tokens FROM entries WHERE {ELIGIBLE} AND type = 'preference'"
            " AND scope != 'document'", eligible_args(None)).fetchall()
        found = [(rowid, json.loads(record), tokens) for rowid, record, tokens in rows]
        found.sort(key=lambda f: (f[1].get("createdAt") or "", f[1]["id"]))
        if memo is None:
            return found
        memo["rows"] = found
    return memo["rows"]  # type: ignore[no-any-return]


def preferences(bank: Bank, timed: set[int]) -> list[Found]:
    """Layer 3: every live project and global preference not tied to a document or to part of the
    story, oldest first (createdAt, then id): a new one lands at the end of the prefix."""
    return [Found(r, m, t, None, {"order": "createdAt, id"}) for r, m, t in _preference_rows(bank) if r not in timed]


def document_memories(bank: Bank, document: str | None, hidden: set[int], timed: set[int],
                      preferences: bool, others: bool) -> list[Found]:
    """This document's memories (scope document; its preferences with the `preferences` rule, the
    others with `memories`), then preferences valid at this point of the story only, in
    deterministic order. Kept for this view of the index: a session asks for the same few documents."""
    memo = bank.index.view_memo("context.document_memories")
    key = (document, frozenset(hidden), frozenset(timed), preferences, others)
    found = memo.get(key) if memo is not None else None
    if found is None:
        found = _document_memories(bank, document, hidden, timed, preferences, others)
        if memo is not None:
            if len(memo) >= 8:
                memo.clear()
            memo[key] = found
    return list(found)


def _document_memories(bank: Bank, document: str | None, hidden: set[int], timed: set[int],
                       preferences: bool, others: bool) -> list[Found]:
    out: list[Found] = []
    if document is not None:
        rows = bank.index.db.execute(f"SELECT rowid, record, tokens FROM entries INDEXED BY entries_document WHERE {ELIGIBLE} AND kind = 'memory'"
                                     f" AND scope = 'document' AND document = :doc ORDER BY {ORDER_SQL}",
                                     eligible_args(document))  # a few rows, then sorted
        out = [Found(r, m, t, None, {"scope": "document"}) for r, m, t in
               ((r, json.loads(rec), t) for r, rec, t in rows if r not in hidden)
               if (preferences if m["type"] == "preference" else others)]
    if not preferences:
        return out
    shown = {f.rowid for f in out}
    for rowid in sorted(timed - hidden - shown):
        for r, rec, t in bank.index.db.execute(
                f"SELECT rowid, record, tokens FROM entries WHERE rowid = :r AND {ELIGIBLE} AND type = 'preference'",
                eligible_args(document, r=rowid)):
            out.append(Found(r, json.loads(rec), t, None, {"scope": "story", "holds": "at this point of the story"}))
    return out


def relevant(bank: Bank, query: str, k: int, document: str | None, hidden: set[int]
             ) -> tuple[list[Found], list[Reason]]:
    """The k memories (not preferences, not this document's own) most relevant to `query`, above the
    relevance floor; in deterministic order with the reason when semantic recall cannot run."""
    if k <= 0:
        return [], []
    if not query.strip():
        problem: Reason | None = Reason(EMPTY_QUERY, "nothing to search with (no instruction, selection or "
                                        "queryText); memories are in deterministic order")
    else:
        problem = semantic_problem(bank)
        if problem is None:
            model = bank.embedder()
            assert model is not None
            vector = model.encode_query(query)
            if vector.any():
                return _semantic(bank, vector, query, k, hidden, strong_query(bank, query)), []
            problem = Reason(QUERY_NOT_EMBEDDABLE, "the query has no word the model knows; memories are in "
                             "deterministic order")
    return _deterministic(bank, k, document, hidden), [problem]


def ranked(bank: Bank, vector: Any, query: str, k: int, hidden: set[int],
           strong: StrongQuery | None = None) -> list[tuple[Any, int]]:
    """The k best memories for the query by fused score, before the floor: (the fused hit, its
    tokens), best first (`ranked_with_tier`'s hits)."""
    return ranked_with_tier(bank, vector, query, k, hidden, strong)[0]


def ranked_with_tier(bank: Bank, vector: Any, query: str, k: int, hidden: set[int],
                     strong: StrongQuery | None = None) -> tuple[list[tuple[Any, int]], dict[int, float] | None]:
    """The k best memories for the query by fused score, before the floor: (the fused hit, its
    tokens), best first, and, when the strong tier ranked them, each one's centred strong cosine
    (recall/tiers.py `StrongSide.centred`; None: the static tier ranked them). Preferences (Layer 3's)
    and document-scoped memories (`document_memories`') are left out in SQL, so both retrievers look
    for wanted memories alone, before the cut.

    `strong` (recall/tiers.py `strong_query`): the vector side is the strong tier's (calibrated scores)
    when every wanted memory has a strong vector; else the static tier's."""
    index = bank.index
    match = terms.match(index, query)
    want = max(CANDIDATES, k)
    with hiding(hidden, types=("preference",)):
        side = strong_side(bank, strong, want, None, vector)
        if side.nearest is not None:
            nearest, keys = side.nearest, dict(side.keys)
        else:
            nearest, keys = nearest_eligible(index, vector, want, None, masked=True) if index.has_vectors() else ([], {})
        lexical, more = lexical_eligible(index, match, want, None) if match else ([], {})
    keys.update(more)
    weight = STRONG_VECTOR_WEIGHT if side.nearest is not None else VECTOR_WEIGHT
    hits = best_first(fuse(nearest, lexical, weight), lambda h: keys[h.rowid][1], k)
    return [(h, keys[h.rowid][0]) for h in hits], side.centred if side.nearest is not None else None


APART = 1.5e-9  # two scores this far apart never round alike to 9 places (each moves at most half of 1e-9)


def best_first(hits: list[Any], tie: Any, k: int | None = None) -> list[Any]:
    """The first `k` (all: None) of `hits` as `sorted(hits, key=lambda h: (-round(h.fused, 9), tie(h)))`
    orders them, rounding only the scores close enough to another to round alike, each score once (a
    `round` to 9 places costs ~50 times a negation; a prompt sorts ~130 hits, ~40 of its first 50 close
    to another, most of them equal): rounding never reverses two scores and leaves scores further apart
    than APART apart, so the order is the scores' own but within a run of close ones, which alone is
    ordered by the rounded score, then `tie`, then the hits' order. Only the runs within the first `k`
    are ordered (and `tie` asked)."""
    size = len(hits)
    want = size if k is None else max(0, min(k, size))
    neg = [-h.fused for h in hits]
    if any(x != x for x in neg):  # a NaN score orders nothing: the sort it had, whatever it gives
        return sorted(hits, key=lambda h: (-round(h.fused, 9), tie(h)))[:want]
    order = sorted(range(size), key=neg.__getitem__)  # equal scores: in the hits' order
    scores = [neg[i] for i in order]
    out: list[int] = []
    j = 0
    while j < want:
        end = j
        while end + 1 < size and not scores[end + 1] - scores[end] > APART:  # inf - inf is NaN: close
            end += 1
        if end == j:
            out.append(order[j])
        else:
            run = order[j:end + 1]  # mostly a few scores, each many times (words alone, equal bm25)
            rounded = {score: -round(score, 9) for score in {hits[i].fused for i in run}}
            out += sorted(run, key=lambda i: (rounded[hits[i].fused], tie(hits[i]), i))
        j = end + 1
    return [hits[i] for i in out[:want]]


def _at_least(score: float, floor: float) -> bool:
    """`round(score, 9) >= floor` for a floor of at most 9 places, rounding only near it."""
    if score >= floor:
        return True
    return score > floor - APART and round(score, 9) >= floor


def relevant_enough(fused: float, centred: dict[int, float] | None, rowid: int) -> bool:
    """The relevance floor: with the static tier, on the fused score (RELEVANCE_FLOOR); with the strong
    tier, on the memory's centred strong cosine (STRONG_RELEVANCE_FLOOR), because its calibrated score is
    relative to the query's other candidates (the best of an unrelated query's still stands out of its
    pool); a hit the strong side did not rank (words alone) does not pass."""
    if centred is None:
        return _at_least(fused, RELEVANCE_FLOOR)
    return _at_least(centred.get(rowid, -1.0), STRONG_RELEVANCE_FLOOR)


def _semantic(bank: Bank, vector: Any, query: str, k: int, hidden: set[int],
              strong: StrongQuery | None = None) -> list[Found]:
    """Layer 4's hits above the relevance floor of the tier that ranked them."""
    found, centred = ranked_with_tier(bank, vector, query, k, hidden, strong)
    tier = "static" if centred is None else "strong"
    hits = [(h, tokens) for h, tokens in found if relevant_enough(h.fused, centred, h.rowid)]
    records = _records(bank, [h.rowid for h, _ in hits])
    return [Found(h.rowid, records[h.rowid], tokens, score,
                  {"mode": "semantic", "score": score,
                   "vector": None if h.similarity is None else round(h.similarity, 6),
                   "lexicalRank": h.lexical_rank, "tier": tier,
                   **({} if centred is None else {"centred": round(centred.get(h.rowid, -1.0), 6)})})
            for h, tokens, score in [(h, tokens, round(h.fused, 6)) for h, tokens in hits]]  # rounded once (~2 µs)


def _records(bank: Bank, rowids: list[int]) -> dict[int, dict[str, Any]]:
    """The records of these entries, decoded once per view of the index (a session's prompts keep
    finding the same memories). Read only: a record is shared by every prompt that finds it."""
    memo = bank.index.view_memo("context.records")
    if memo is None:
        return bank.index.records(rowids)
    missing = [r for r in rowids if r not in memo]
    if missing:
        if len(memo) + len(missing) > RECORDS_KEPT:
            memo.clear()  # a bound for a very large bank: the memo is a convenience, never the answer
        memo.update(bank.index.records(missing))
    return {r: memo[r] for r in rowids if r in memo}


def _deterministic(bank: Bank, k: int, document: str | None, hidden: set[int]) -> list[Found]:
    out = []
    rows = bank.index.db.execute(f"SELECT rowid, record, tokens FROM entries WHERE {ELIGIBLE}"
                                 f" AND type != 'preference' AND scope != 'document' ORDER BY {ORDER_SQL}",
                                 eligible_args(document))
    for rowid, record, tokens in rows:
        if rowid in hidden:
            continue
        memory = json.loads(record)
        out.append(Found(rowid, memory, tokens, None, {"mode": "deterministic", "rank": len(out) + 1,
                                                       "detail": deterministic_detail(memory)}))
        if len(out) == k:
            break
    return out
