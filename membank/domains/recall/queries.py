"""Recall's SQL: which entries a preview may inject (eligibility), and its candidates, budgets and order.

Every query here reads the generic `entries` table through the index; the partial index
`entries_eligible` that makes them fast is recall's own and is registered with the index's schema
registry (a change to it rebuilds that index alone)."""

from __future__ import annotations

import contextlib
import contextvars
import json
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ...index import Index
from ...index.schema import DomainSchema, register
from ...index.vecstore import VEC0_MAX_K
from ...kernel.budget import fit
from . import census, keytable
from .order import KEY_SQL, ORDER_SQL

if TYPE_CHECKING:  # imported where it computes: neither listing the channels nor opening a project needs it
    import numpy as np

# Injectable: a live memory with text that no other file shadows; document scope only for its document.
# ELIGIBLE is made of the parts the census counts apart (`_SHARED_SQL`, `_OWN_SQL`): one rule, not two
# copies that could drift (a census counting other rows would give `fitting` a wrong floor).
_LIVE = "kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0 AND tokens > 0"
_SHOWN = """rowid NOT IN (SELECT value FROM json_each(:hidden))
    AND type NOT IN (SELECT value FROM json_each(:hidden_types))"""
ELIGIBLE = f"""{_LIVE}
    AND (scope != 'document' OR (document IS NOT NULL AND document = :doc))
    AND {_SHOWN}"""

# Memories the story has not reached at this position (or no longer holds): story.md. A preview or
# an assembly at a position sets them for the queries it runs (`hiding`); every query here leaves
# them out, before any cut, as it leaves out deleted ones. An assembly also leaves out whole types
# (preferences, which have a layer of their own).
_hidden: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar("recall_hidden", default=("[]", "[]"))


@contextlib.contextmanager
def hiding(rowids: Iterable[int], types: Iterable[str] = ()) -> Iterator[None]:
    token = _hidden.set((json.dumps(sorted(int(r) for r in rowids)), json.dumps(sorted(types))))
    try:
        yield
    finally:
        _hidden.reset(token)


def eligible_args(document: str | None, **more: Any) -> dict[str, Any]:
    rowids, types = _hidden.get()
    return {"doc": document, "hidden": rowids, "hidden_types": types, **more}

# the injectable memories in deterministic order with what fitting them needs: a preview reads this
# index alone, and decodes only the records it keeps (see `fitting`)
register(DomainSchema(
    "recall.eligible", 1,
    f"CREATE INDEX entries_eligible ON entries({ORDER_SQL}, tokens, scope, document)"
    " WHERE kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0 AND tokens > 0",
    "DROP INDEX IF EXISTS entries_eligible"))


# ELIGIBLE cut in two disjoint halves (recall/census.py): every scope but `document`, by one scan of
# `entries_eligible`; a document's own, by `entries_document` (a few rows)
_SHARED_SQL = (f"SELECT count(*), min(tokens) FROM entries INDEXED BY entries_eligible"
               f" WHERE {_LIVE} AND scope != 'document' AND {_SHOWN}")
_OWN_SQL = (f"SELECT count(*), min(tokens) FROM entries INDEXED BY entries_document"
            f" WHERE document = :doc AND scope = 'document' AND {_LIVE} AND {_SHOWN}")
_CENSUS_KEPT = 256  # a view's own censuses (one per document and hidden set) before they are dropped


def eligible_census(index: Index, document: str | None) -> census.Census:
    """How many memories a preview for `document` could inject, and the fewest tokens one takes.

    The shared half scans the whole of `entries_eligible` (~1.3 ms at 10,000 memories, ~10 ms at
    100,000), so it is made once per view of the index (`view_memo`: another connection committed,
    or this one wrote) and hidden set, whatever the document; a document's own half is a few rows."""
    memo = index.view_memo("recall.census")
    hidden = _hidden.get()
    shared = memo.get(hidden) if memo is not None else None
    if shared is None:
        shared = census.of_row(*index.db.execute(_SHARED_SQL, eligible_args(None)).fetchall()[0])
        if memo is not None:
            _keep(memo, hidden, shared)
    if document is None:
        return shared
    own = memo.get((document, hidden)) if memo is not None else None
    if own is None:
        own = census.of_row(*index.db.execute(_OWN_SQL, eligible_args(document)).fetchall()[0])
        if memo is not None:
            _keep(memo, (document, hidden), own)
    return census.combine(shared, own)


def _keep(memo: dict[Any, census.Census], key: Any, found: census.Census) -> None:
    """Keep a census in a view's memo, dropping them all once it holds `_CENSUS_KEPT` (a document's own
    too: a status over every document of a large project must not grow it without bound)."""
    if len(memo) >= _CENSUS_KEPT:
        memo.clear()
    memo[key] = found


def eligible_count(index: Index, document: str | None) -> int:
    """How many memories a preview for `document` could inject (what the budgets cut is this less the kept)."""
    return eligible_census(index, document).count


def eligible_table(index: Index, document: str | None) -> dict[int, tuple[int, tuple[Any, ...]]] | None:
    """`eligible_keys` of every memory a preview for `document` (and the hidden set) may inject, read in
    one scan of `entries_eligible` and kept for this view of the index: a caller that ranks against
    every eligible row (an assembly's masked KNN) then looks its candidates up instead of asking SQLite
    twice per prompt. None in the middle of a write."""
    memo = index.view_memo("recall.eligible_table")
    if memo is None:
        return None
    key = (document, _hidden.get())
    table = memo.get(key)
    if table is None:
        rows = index.db.execute(f"SELECT rowid, tokens, {KEY_SQL} FROM entries INDEXED BY entries_eligible"
                                f" WHERE {ELIGIBLE}", eligible_args(document))
        table = {row[0]: (row[1], row[2:]) for row in rows}
        if len(memo) >= 4:
            memo.clear()  # one per document and hidden set: a session works in a few
        memo[key] = table
    return table  # type: ignore[no-any-return]


def eligible_keys(index: Index, rowids: list[int], document: str | None) -> dict[int, tuple[int, tuple[Any, ...]]]:
    """The injectable memories among `rowids`: (tokens, `recall.deterministic_key`) for each, from the
    columns alone, so ranking needs no record decoded (`records` fetches the ones kept). From the
    view's `eligible_table` when one was made, else one statement."""
    if not rowids:
        return {}
    memo = index.view_memo("recall.eligible_table")
    table = memo.get((document, _hidden.get())) if memo is not None else None
    if table is not None:
        return {r: table[r] for r in rowids if r in table}
    every = keytable.every_key(index)
    if every is not None:
        return keytable.among(every, rowids, document, keytable.hidden_sets(index, _hidden.get()))
    # one JSON list, not one parameter each: a single statement, prepared once and cached, for any count
    sql = (f"SELECT rowid, tokens, {KEY_SQL} FROM entries NOT INDEXED"
           f" WHERE rowid IN (SELECT value FROM json_each(:rowids)) AND {ELIGIBLE}")  # by rowid
    rows = index.db.execute(sql, eligible_args(document, rowids=json.dumps([int(r) for r in rowids])))
    return {row[0]: (row[1], row[2:]) for row in rows}  # the key, made by SQLite as `key_of` makes it


def eligible_rowids(index: Index, document: str | None) -> list[int]:
    """Every memory a preview for `document` may inject, in no promised order (one scan of
    `entries_eligible`, or the view's table of every key once it has one)."""
    found = keytable.eligible_array(index, document, _hidden.get())
    if found is not None:
        return found.tolist()  # type: ignore[no-any-return]
    return [r for (r,) in index.db.execute(
        f"SELECT rowid FROM entries INDEXED BY entries_eligible WHERE {ELIGIBLE}", eligible_args(document))]


def eligible_by_rowid(index: Index, rowids: list[int], document: str | None) -> dict[int, tuple[dict[str, Any], int]]:
    """The injectable memories among `rowids`, with their token estimates."""
    if not rowids:
        return {}
    args: dict[str, Any] = eligible_args(document, **{f"r{i}": r for i, r in enumerate(rowids)})
    marks = ",".join(f":r{i}" for i in range(len(rowids)))
    # NOT INDEXED: by rowid, not by walking entries_order past every memory to test each against the list
    sql = f"SELECT rowid, record, tokens FROM entries NOT INDEXED WHERE rowid IN ({marks}) AND {ELIGIBLE}"
    return {rowid: (json.loads(record), tokens) for rowid, record, tokens in index.db.execute(sql, args)}


def nearest_eligible(index: Index, vector: np.ndarray, k: int, document: str | None, masked: bool = False
                     ) -> tuple[list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
    """The k nearest memories a preview for `document` may inject (rowid, distance), nearest first,
    with their `eligible_keys`: eligibility is applied before the cut, so a bank whose nearest
    entries are another document's, deleted or shadowed still yields its k nearest eligible ones.

    Neighbours are checked in growing rounds (2k, 8k, 32k ... by rowid, nearly always one round);
    once a round would reach a quarter of the vectors, the eligible rowids are read whole from
    `entries_eligible` and the KNN runs over those alone; that mask is kept for this view of the
    index, document and hidden set, so the next query goes straight to it. `masked`: go to the mask
    at once (a caller that hides whole types, where most neighbours are not eligible)."""
    if k <= 0:
        return [], {}
    copy = index.vector_copy()
    masks = index.view_memo("recall.eligible_mask")
    mask_key = (copy.tag if copy is not None else None, document, _hidden.get())
    if copy is not None and masks is not None and mask_key in masks:
        ranked = copy.nearest(vector, k, masks[mask_key])  # the eligible rows were masked for this view before
        return ranked, eligible_keys(index, [r for r, _ in ranked], document)
    found: list[tuple[int, float]] = []
    keys: dict[int, tuple[int, tuple[Any, ...]]] = {}
    want, seen = (len(copy), 0) if masked and copy is not None else (2 * k, 0)
    while True:
        if copy is not None and want * 4 >= len(copy):
            break
        ranked = index.nearest(vector, want)
        fresh = eligible_keys(index, [r for r, _ in ranked[seen:]], document)
        keys.update(fresh)
        found.extend(hit for hit in ranked[seen:] if hit[0] in fresh)
        seen = len(ranked)
        if len(found) >= k or seen < want:  # enough, or every vector seen
            return found[:k], keys
        want *= 4
        if copy is None and want > VEC0_MAX_K:  # sqlite-vec alone (no copy) answers at most VEC0_MAX_K
            return found[:k], keys
    assert copy is not None
    table = eligible_table(index, document)  # the same scan as `eligible_rowids`, kept with the keys
    rowids = list(table) if table is not None else eligible_rowids(index, document)
    import numpy as np

    mask = copy.mask(np.array(rowids, np.int64))
    if masks is not None:  # kept for this view: the next query skips the rounds
        if len(masks) >= 4:
            masks.clear()  # one mask per document and hidden set: a session works in a few
        masks[mask_key] = mask
    ranked = copy.nearest(vector, k, mask)
    return ranked, eligible_keys(index, [r for r, _ in ranked], document)


def lexical_eligible(index: Index, match: str, k: int,
                     document: str | None) -> tuple[list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
    """`lexical` for the memories a preview for `document` may inject, eligibility applied before
    the cut, with their `eligible_keys`: the best 4k matches are checked by rowid (a wider LIMIT
    costs FTS5 little); when fewer than k of them are eligible, FTS5 ranks the eligible ones
    alone (a join: every match is looked up, slower)."""
    if k <= 0:
        return [], {}
    rows = index.lexical(match, 4 * k)
    memo = index.view_memo("recall.eligible_table")
    table = memo.get((document, _hidden.get())) if memo is not None else None
    if table is not None:  # the view's eligible rows: the best k of them looked up, not all 4k
        hits, keys = [], {}
        for r, score in rows:
            found = table.get(r)
            if found is not None:
                hits.append((r, score))
                keys[r] = found
                if len(hits) == k:
                    return hits, keys
    else:
        keys = eligible_keys(index, [r for r, _ in rows], document)
        hits = [(r, score) for r, score in rows if r in keys]
    if len(hits) >= k or len(rows) < 4 * k:
        return hits[:k], keys
    return _lexical_joined(index, match, k, document)


def _lexical_joined(index: Index, match: str, k: int,
                    document: str | None) -> tuple[list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
    """The k best FTS5 matches among the eligible memories alone, in one statement joined with
    `entries` (every match is looked up)."""
    if k <= 0:
        return [], {}
    rows = index.db.execute(
        "SELECT fts.rowid, bm25(fts, 1.0, 2.0) AS score FROM fts JOIN entries ON entries.rowid = fts.rowid"
        f" WHERE fts MATCH :match AND {ELIGIBLE} ORDER BY score LIMIT :k",
        eligible_args(document, match=match, k=k)).fetchall()
    return rows, eligible_keys(index, [r for r, _ in rows], document)


def candidates(index: Index, vector: np.ndarray | None, match: str | None, k: int, document: str | None
               ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
    """The k best eligible vector neighbours and the k best eligible FTS5 matches for `document`,
    best first, with `eligible_keys` for all of them (as `nearest_eligible`, `lexical_eligible`).

    A first round takes more of each than needed (a quarter more neighbours, half more matches)
    and checks them together, by rowid; on the benchmark corpus that is enough for nine queries
    in ten. A retriever still short (its best are another document's, deleted, shadowed, or
    cards: a character's name matches its card first) goes on alone in wider rounds."""
    if k <= 0:
        return [], [], {}
    first_v, first_l = k + k // 4, k + k // 2
    ranked_v = index.nearest(vector, first_v) if vector is not None else []
    ranked_l = index.lexical(match, first_l) if match else []
    keys = eligible_keys(index, sorted({r for r, _ in ranked_v} | {r for r, _ in ranked_l}), document)
    nearest = [hit for hit in ranked_v if hit[0] in keys]
    if vector is not None and len(nearest) < k and len(ranked_v) == first_v:
        nearest, more = nearest_eligible(index, vector, k, document)
        keys.update(more)
    lexical = [hit for hit in ranked_l if hit[0] in keys]
    if match and len(lexical) < k and len(ranked_l) == first_l:
        lexical, more = lexical_eligible(index, match, k, document)
        keys.update(more)
    return nearest[:k], lexical[:k], keys


def fitting(index: Index, document: str | None, max_items: int, token_budget: int) -> list[tuple[dict[str, Any], int]]:
    """What `recall.fit` keeps of `ordered(document)`, with their token estimates, in order.

    The same greedy rule, run on the token counts in `entries_eligible`: the head of the order
    first, then only the later rows small enough for what is left (nothing larger can fit once
    `left` tokens remain). Rows are read only while one could still fit: no eligible memory takes
    fewer tokens than the census's fewest (`census.may_fit`). Only the kept records are decoded."""
    found = eligible_census(index, document)
    fewest = found.fewest
    if fewest is None:
        return []
    sql = f"SELECT rowid, tokens FROM entries INDEXED BY entries_eligible WHERE {ELIGIBLE}"
    head_size = 128 + 2 * max(0, max_items)
    cursor = index.db.execute(f"{sql} ORDER BY {ORDER_SQL} LIMIT :n", eligible_args(document, n=head_size))
    head: list[tuple[int, int]] = []
    kept = list(fit(_pulled(cursor, head), max_items, token_budget, fewest))
    cursor.close()
    left = token_budget - sum(t for _, t in kept)
    if len(head) == head_size and len(kept) < max_items and census.may_fit(found, left):
        seen = {rowid for rowid, _ in head}
        later = ((r, t) for r, t in index.db.execute(f"{sql} AND tokens <= :left ORDER BY {ORDER_SQL}",
                                                    eligible_args(document, left=left)) if r not in seen)
        kept.extend(fit(later, max_items - len(kept), left, fewest))
    records = index.records([r for r, _ in kept])
    return [(records[r], t) for r, t in kept]


def _pulled(rows: Iterable[tuple[int, int]], into: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """`rows` as they are read, each also appended to `into`."""
    for row in rows:
        into.append(row)
        yield row


def ordered(index: Index, document: str | None) -> Iterator[tuple[dict[str, Any], int]]:
    """Injectable memories in deterministic order, with their token estimates, read lazily."""
    sql = f"SELECT record, tokens FROM entries WHERE {ELIGIBLE} ORDER BY {ORDER_SQL}"
    for record, tokens in index.db.execute(sql, eligible_args(document)):
        yield json.loads(record), tokens


# strong masks a view keeps, one per document and hidden set (a writer moves between many documents;
# a mask is one bool per strong vector: 10 KB at 10,000 memories)
STRONG_MASKS = 64


def strong_nearest(index: Index, model: tuple[str, int], vector: np.ndarray, k: int, document: str | None,
                   scorer: Any) -> tuple[list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]], int, int]:
    """The strong tier's k best memories a preview for `document` may inject (rowid, 1 - score), best
    first, with their `eligible_keys`, scored by `scorer` (recall/tiers.py's, `strong_scores`) over every eligible
    memory: the strong tier searches them all (its candidates are not the static tier's).

    Also (missing, eligible): how many of those memories have no strong vector of `model` yet. When
    any is missing the caller ranks with the static tier (STRONG_VECTORS_PENDING) and nothing is
    ranked here: a memory without a strong vector could not compete."""
    import numpy as np

    copy = index.strong_copy()
    fresh = copy is not None and index.strong_model() == model
    masks = index.view_memo("recall.strong_mask")
    key = (copy.tag if copy is not None else None, document, _hidden.get())
    kept = masks.get(key) if masks is not None and fresh else None
    if kept is None:
        memo = index.view_memo("recall.eligible_table")
        table = memo.get((document, _hidden.get())) if memo is not None else None  # an assembly's, when made
        rowids = np.array(list(table) if table is not None else eligible_rowids(index, document), np.int64)
        if copy is None or not fresh:
            return [], {}, len(rowids), len(rowids)
        kept = (copy.mask(rowids), len(rowids))
        if masks is not None:  # kept for this view: the next query skips the scan
            if len(masks) >= STRONG_MASKS:
                masks.clear()
            masks[key] = kept
    assert copy is not None
    mask, eligible = kept
    missing = eligible - int(mask.sum())
    if missing or k <= 0:
        return [], {}, missing, eligible
    ranked = copy.nearest(vector, k, mask, scorer)
    return ranked, eligible_keys(index, [r for r, _ in ranked], document), 0, eligible
