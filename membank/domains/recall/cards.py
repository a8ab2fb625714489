"""Cards and world entries found by meaning: the bank's search (the preview with a query) reaches the
characters and world entries as well as the memories.

Cards are embedded with the memories (the same `vec` store, keyed by their `entries` rowid: name,
aliases, summary, state and body, `files/intake.py embed_text`), so a card search is the memories'
fused ranking (`rank.fuse`: half cosine, half BM25 relative to the best word match) over the card rows
alone: one KNN over the vector copy masked to the cards, one FTS5 query joined to the card rows.

When the strong tier ranks the query (recall/tiers.py `strong_query`) and every card has a strong vector of
its model, the vector side is the strong tier's, scored as the memories are (rank.py `strong_scores`:
calibrated across languages, here among the cards), and a card is listed when its centred strong cosine
reaches STRONG_CARD_FLOOR; else the static tier's, with CARD_FLOOR on the fused score."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from ...index import Index
from ...index.vecstore import VEC0_MAX_K
from .rank import STRONG_VECTOR_WEIGHT, Hit, fuse, strong_scores
from .tiers import StrongQuery, static_rows

if TYPE_CHECKING:
    import numpy as np

    from ...index.strongcopy import StrongVectors

# A live character or world entry; a book's own `book.md` is the book, not an entry.
CARD_ROWS = ("kind IN ('character', 'world') AND removed_at IS NULL AND deleted = 0 AND shadowed = 0"
             " AND source NOT LIKE '%/book.md'")
CARDS_SHOWN = 5  # the most cards and entries a preview lists
CANDIDATES = 32  # per side, before fusion
WIDE = 384  # word matches of every kind looked at first: the preview's first round (recall/queries.py `candidates`)
# The least fused score a card needs to be listed: the relevance floor of Layer 4's memories
# (context/memories.py), so that a card listed here is as relevant as a memory a prompt would take.
CARD_FLOOR = 0.35
# The strong tier's floor, on a card's centred strong cosine (its language's mean removed, as the query's):
# the calibrated score only says how far a card stands out of the others, and raw e5 cosines bunch at
# 0.7-0.9 for anything. Measured on real cards (the two MIT cards, 红楼梦 characters, the sample's and the
# retrieval set's) with related and unrelated questions in both languages (docs/recall.md).
STRONG_CARD_FLOOR = 0.17


def card_rowids(index: Index) -> frozenset[int]:
    """Every card and world entry a search may find, by rowid; kept for this view of the index."""
    memo = index.view_memo("recall.card_rowids")
    if memo is not None and "rows" in memo:
        return memo["rows"]  # type: ignore[no-any-return]
    rows = frozenset(r for (r,) in index.db.execute(f"SELECT rowid FROM entries WHERE {CARD_ROWS}"))
    if memo is not None:
        memo["rows"] = rows
    return rows


def nearest_cards(index: Index, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine distance) of the k cards nearest to `vector`, nearest first (ties by rowid)."""
    rowids = card_rowids(index)
    if k <= 0 or not rowids or not index.has_vectors():
        return []
    import numpy as np

    copy = index.vector_copy()
    if copy is not None:
        memo = index.view_memo("recall.card_mask")
        key = copy.tag
        mask = memo.get(key) if memo is not None else None
        if mask is None:
            mask = copy.mask(np.fromiter(rowids, np.int64, len(rowids)))
            if memo is not None:
                memo.clear()
                memo[key] = mask
        return copy.nearest(vector, k, mask)
    # sqlite-vec alone: the nearest of everything, the cards among them
    return [hit for hit in index.nearest(vector, VEC0_MAX_K) if hit[0] in rowids][:k]


def strong_cards(index: Index, query: StrongQuery, static: np.ndarray | None, k: int,
                 also: Iterable[int] = ()) -> tuple[list[tuple[int, float]], dict[int, float]] | None:
    """(rowid, 1 - score) of the k best cards by the strong tier, best first (ties by rowid), with the centred
    strong cosine of each of those and of the cards `also` names (the word matches); None when the strong
    vectors are of another model or a card has none yet (the static tier then). Only the cards' rows are
    scored: no second pass over every memory, and no matrix product (OpenBLAS's threads would spin on the
    cores the query's model needs next)."""
    copy = index.strong_copy()
    if copy is None or index.strong_model() != (query.encoder.name, query.encoder.dim):
        return None
    at = _strong_rows(index, copy)
    if at is None:
        return None
    import numpy as np

    centred = copy.centred_cosines(query.vector, query.zh, at)
    scores = strong_scores(centred, _static_rows(index, copy, at, static), copy.zh[at], query.zh,
                           np.ones(len(at), bool))
    rowids = copy.rowids[at]
    best = np.lexsort((rowids, -scores))[:k]
    wanted = np.fromiter(set(also), np.int64)
    told = np.union1d(best, np.flatnonzero(np.isin(rowids, wanted))) if len(wanted) else best
    return [(int(rowids[i]), float(1.0 - scores[i])) for i in best], {int(rowids[i]): float(centred[i]) for i in told}


def _strong_rows(index: Index, copy: StrongVectors) -> np.ndarray | None:
    """Where the cards lie in `copy`, kept for this view of the index; None when a card has no strong vector
    yet. A card whose vector is a zero row (text the model has nothing for) is left out: it never competes."""
    import numpy as np

    memo = index.view_memo("recall.card_strong_rows")
    kept = memo.get(copy.tag) if memo is not None else None
    if kept is None:
        rowids = card_rowids(index)
        present = copy.mask(np.fromiter(rowids, np.int64, len(rowids)))
        kept = (np.flatnonzero(present & (copy.scale > 0)), int(present.sum()) == len(rowids))
        if memo is not None:
            memo.clear()
            memo[copy.tag] = kept
    return kept[0] if kept[1] else None


def _static_rows(index: Index, copy: StrongVectors, at: np.ndarray, vector: np.ndarray | None) -> np.ndarray:
    """The static cosine of each of the cards at `copy`'s rows `at` with the query's static `vector` (0 for
    a card with no static vector, and for all without one): a one-thread product over the cards' static
    rows alone, the same numbers as the memories' (recall/tiers.py `static_cosines`). Where each card's static
    row lies is kept for this view of the index and these two copies."""
    import numpy as np

    static = index.vector_copy() if vector is not None else None
    out = np.zeros(len(at), np.float32)
    if static is None or vector is None or not len(static):
        return out
    memo = index.view_memo("recall.card_static_rows")
    key = (copy.tag, static.tag, len(at))
    where = memo.get(key) if memo is not None else None
    if where is None:
        mine = static_rows(index, copy, static)[at]  # (the memories' mapping, tiers.py: -1 where none)
        hit = np.flatnonzero(mine >= 0)
        where = (hit, mine[hit])  # (positions among the cards, rows of the static copy)
        if memo is not None:
            memo.clear()
            memo[key] = where
    cards, rows = where
    q = np.asarray(vector, np.float32)
    q = q / (np.float32(np.linalg.norm(q)) or np.float32(1.0))
    norms = static.norms[rows]
    out[cards] = np.einsum("ij,j->i", static.matrix[rows], q) / np.where(norms > 0, norms, 1.0)
    return out


def lexical_cards(index: Index, match: str, k: int) -> list[tuple[int, float]]:
    """(rowid, bm25) of the k best FTS5 matches among the cards (names weigh double, as for memories).

    The best `WIDE` matches of every kind first: the very answer the preview's own first round asks for,
    kept for this view of the index (`Index.lexical`), so this costs a lookup; only when those hold fewer
    than k cards and there are more matches does FTS5 rank the cards alone (a join: every match is
    looked up, ~1.5 ms at 10,000 entries)."""
    if k <= 0:
        return []
    rows = index.lexical(match, WIDE)
    cards = card_rowids(index)
    hits = [(r, score) for r, score in rows if r in cards]
    if len(hits) >= k or len(rows) < WIDE:
        return hits[:k]
    return index.db.execute(
        "SELECT fts.rowid, bm25(fts, 1.0, 2.0) AS score FROM fts JOIN entries ON entries.rowid = fts.rowid"
        f" WHERE fts MATCH :match AND {CARD_ROWS} ORDER BY score, fts.rowid LIMIT :k",
        {"match": match, "k": k}).fetchall()


def ranked_cards(hits: list[Hit], names: dict[int, tuple[str, str, str]], floor: float, k: int) -> list[Hit]:
    """The best k hits at or above `floor`, best first; equal fused scores (rounded: float noise never
    decides) by section, then name, then id (`names`: rowid -> (section, name, id))."""
    kept = [h for h in hits if round(h.fused, 9) >= floor and h.rowid in names]
    kept.sort(key=lambda h: (-round(h.fused, 9), names[h.rowid]))
    return kept[:k]


def card_item(record: dict[str, Any], hit: Hit, rank: int, tier: str = "static") -> dict[str, Any]:
    """A preview's card or world entry: what it is, where it is written (`source`, `line` of its name),
    and why it was found (`tier`: which vectors the vector side used)."""
    lines = record.get("lines") if isinstance(record.get("lines"), dict) else {}
    score = {"fused": round(hit.fused, 6), "vector": _round(hit.similarity), "vectorRank": hit.vector_rank,
             "lexical": _round(-hit.bm25 if hit.bm25 is not None else None), "lexicalRank": hit.lexical_rank,
             "tier": tier}
    side = "strong vector" if tier == "strong" else "vector"
    parts = [f"{side} #{hit.vector_rank} ({hit.similarity:.3f})" if hit.vector_rank and hit.similarity is not None
             else f"no {side} match", f"lexical #{hit.lexical_rank}" if hit.lexical_rank else "no word match"]
    return {"kind": "character" if record.get("section") == "characters" else "world",
            "id": record["id"], "name": record["name"], "type": record.get("kind") or "",
            "summary": record.get("summary") or "", "source": record["source"], "line": lines.get("name"),
            "include": record.get("include") or "auto",
            "reason": {"mode": "semantic", "rank": rank, "score": score, "detail": ", ".join(parts)}}


def search(index: Index, vector: np.ndarray | None, match: str | None, k: int = CARDS_SHOWN,
           floor: float = CARD_FLOOR, strong: StrongQuery | None = None,
           strong_floor: float = STRONG_CARD_FLOOR) -> list[dict[str, Any]]:
    """The cards and world entries most relevant to a query (its static vector, its FTS5 MATCH, its strong
    query when the strong tier ranks), best first."""
    if k <= 0 or not card_rowids(index):
        return []
    lexical = lexical_cards(index, match, CANDIDATES) if match else []
    ranked = strong_cards(index, strong, vector, CANDIDATES, (r for r, _ in lexical)) if strong is not None else None
    if ranked is not None:
        nearest, centred = ranked
        hits = [h._replace(fused=h.fused if round(centred.get(h.rowid, -1.0), 9) >= strong_floor else -1.0)
                for h in fuse(nearest, lexical, STRONG_VECTOR_WEIGHT)]
        floor, tier = 0.0, "strong"  # a card below the centred floor (or found by words alone) is not listed
    else:
        nearest = nearest_cards(index, vector, CANDIDATES) if vector is not None else []
        hits, tier = fuse(nearest, lexical), "static"
    hits = [h for h in hits if round(h.fused, 9) >= floor]
    if not hits:
        return []
    records = index.records([h.rowid for h in hits])  # only those above the floor are decoded
    names = {r: (rec.get("section") or "", rec.get("name") or "", rec["id"]) for r, rec in records.items()}
    chosen = ranked_cards(hits, names, floor, k)
    return [card_item(records[h.rowid], h, rank, tier) for rank, h in enumerate(chosen, start=1)]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
