"""`manuscript:search`: passages ranked by the same fused relevance as memories (recall/rank.py `fuse`),
only from before a story position when one is given: a passage at or after it is never a candidate."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Iterator

from ...index.fusion import fuse
from ...kernel.text import fts_query
from ..contract import Bank
from ..story import positions
from ..story.positions import story_order
from . import store, strong, words
from .sync import documents

CANDIDATES = 50  # per side, before fusion
# positions whose allowed passages (and their kept positions, words.py `kept_for`) are kept per generation: a
# search before each of 100 chapters in turn must not clear them every 64 (~30 KB each at 1,000,000 code points)
WITHIN_KEPT = 256


@dataclass(frozen=True)
class Before:
    """Which passages lie strictly before a position (story/order.py): every one of `earlier` documents,
    and of `document` those whose scene number is below `scene_below`. A document alone is its start (none
    of it is before), an unknown scene its end (all of it); a document the order does not hold is after
    every known one."""

    earlier: tuple[str, ...]
    document: str | None
    scene_below: int


def limit_of(bank: Bank, before: str | None) -> Before | None:
    """INVALID_ARGUMENT for a `before` whose document the story order does not hold: it would count as after
    every chapter and open the whole story (a typo, or a chapter not yet listed in `chapters:`), as
    kg:entity:*'s `at` answers."""
    if before is None:
        return None
    order = story_order(bank)
    if not order.knows(before):
        raise store.unknown_position("before", before)
    walk = bank.memo.get("story.order", {}).get("walk")  # (documents' files: made afresh when the folder moved)
    kept = words.generation_memo(bank.index).setdefault("limits", {})
    found = kept.get(before)
    if found is not None and found[0] is order and found[1] is walk:  # held with it: ids are never reused
        return found[2]  # type: ignore[no-any-return]
    at, scene = order.rank(before)
    earlier = tuple(d for d in documents(bank) if order.rank(d)[0] < at)
    bound = Before(earlier, order.locate(before)[0], scene)
    if len(kept) >= WITHIN_KEPT:
        kept.clear()
    kept[before] = (order, walk, bound)
    return bound



@functools.lru_cache(maxsize=WITHIN_KEPT)
def _listed(documents: tuple[str, ...]) -> str:
    """The documents as a JSON list, for `json_each` (made once per position's earlier documents)."""
    return json.dumps(list(documents))


def _allowed_sql(limit: Before | None, document: str | None) -> tuple[str, list[Any]]:
    clauses, args = [], []
    if limit is not None:
        clauses.append("(p.document IN (SELECT value FROM json_each(?)) OR (p.document = ? AND p.scene_no < ?))")
        args += [_listed(limit.earlier), limit.document or "", limit.scene_below]
    if document is not None:
        clauses.append("p.document = ?")
        args.append(document)
    return (" AND ".join(clauses) or "1"), args


def _vectors(bank: Bank) -> tuple[Any, Any] | None:
    """(ids in order, their vectors as rows) of every embedded passage, kept per generation of the passages
    (store.GENERATION moves whenever one comes, goes or gets a vector): a memory written does not move it."""
    import numpy as np

    kept = words.generation_memo(bank.index)
    if "v" in kept:
        return kept["v"]  # type: ignore[no-any-return]
    rows = bank.index.db.execute("SELECT id, vec FROM manuscript_passages WHERE vec IS NOT NULL ORDER BY id").fetchall()
    got = None
    if rows:
        ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        got = (ids, matrix)
    kept["v"] = got
    return got


def _nearest(bank: Bank, query: str, within: list[int], exclude: frozenset[int], k: int) -> list[tuple[int, float]]:
    """(id, cosine distance) of the k nearest passages of `within` not in `exclude`; [] without a model or
    vectors of it."""
    import numpy as np

    got = _vectors(bank)
    if got is None or not within:
        return []
    model = bank.embedder()
    if model is None or bank.index.get_meta(store.MODEL) != model.name:
        return []
    ids, matrix = got
    rows = words.kept_positions(bank.index, ids, within, exclude)  # in the order of `within`
    if not len(rows):
        return []
    vector = model.encode_query(query)
    if not np.any(vector):
        return []
    # every row's product, then the allowed ones: the same products (one per row) without copying the rows
    sims = (matrix @ vector)[rows]
    if len(sims) > k:  # only those that may be among the k nearest are sorted (stable: the same order)
        near = np.flatnonzero(words.first_k(-sims, k))
        top = near[np.argsort(-sims[near], kind="stable")][:k]
    else:
        top = np.argsort(-sims, kind="stable")[:k]
    return list(zip(ids[rows[top]].tolist(), (1.0 - sims[top]).tolist()))  # float32 distances, as one by one


def _within(bank: Bank, where: str, args: list[Any], bound: Before | None, document_id: str | None) -> list[int]:
    """The ids of the passages `where` allows, kept per generation of the passages."""
    kept = words.generation_memo(bank.index).setdefault("within", {})
    key = (bound, document_id)
    found = kept.get(key)
    if found is None:
        found = [i for (i,) in bank.index.db.execute(f"SELECT p.id FROM manuscript_passages AS p WHERE {where}", args)]
        if len(kept) >= WITHIN_KEPT:
            kept.clear()
            # what words.kept_for made for those lists goes with them: it would keep them alive, unbounded
            words.generation_memo(bank.index).pop("positions", None)
        kept[key] = found
    return found  # type: ignore[no-any-return]


PASSAGES_KEPT = 2048  # passages kept per generation as the answers show them (a prompt's recall asks ~13)


def _passages(index: Any, ids: list[int]) -> dict[int, store.Stored]:
    """The passages with these ids, kept per generation of the passages: a passage's text, lines and scene
    move only in a write that moves the generation (sync.py `_write`)."""
    kept = words.generation_memo(index).setdefault("passages", {})
    got: dict[int, Any] = {i: kept.get(i) for i in ids}  # (another read thread may empty `kept`)
    missing = [i for i, p in got.items() if p is None]
    if missing:
        read = {p.id: p for p in store.passages(index, missing)}
        if len(kept) + len(read) > PASSAGES_KEPT:
            kept.clear()
        kept.update(read)
        got.update(read)
    return got


def search(bank: Bank, query_text: str, before: str | None = None, document_id: str | None = None,
           limit: int = 10) -> dict[str, Any]:
    items = answered(ranked(bank, query_text, before, document_id, limit)[0])
    return positions.warned({"items": items}, story_order(bank), before) if before else {"items": items}


def answered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`ranked`'s items as a search answers them: without the passage's row id."""
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


def ranked(bank: Bank, query_text: str, before: str | None, document_id: str | None, limit: int,
           exclude: frozenset[int] = frozenset(), embed: bool = True, windows: bool = True
           ) -> tuple[list[dict[str, Any]], Before | None]:
    """The items, best first, and the limit the position set. The passages' strong windows rank when every
    passage has them (strong.py), else the static vectors; `embed` False: the windows rank only when the
    query's strong vector is already made (no embedding is paid for here); `windows` False: never."""
    hits, side, bound = _hits(bank, query_text, before, document_id, limit, exclude, embed, windows)
    return list(_items(bank.index, hits, side, max(1, len(hits)))), bound


def ranked_items(bank: Bank, query_text: str, before: str | None, limit: int, exclude: frozenset[int],
                 windows: bool, batch: int) -> Iterator[dict[str, Any]]:
    """`ranked`'s items (with `embed` False) one by one, their passages read `batch` at a time: a caller that
    takes the first few (a prompt's recall takes k of k + 8) reads no more."""
    hits, side, _ = _hits(bank, query_text, before, None, limit, exclude, False, windows)
    return _items(bank.index, hits, side, max(1, batch))


def _hits(bank: Bank, query_text: str, before: str | None, document_id: str | None, limit: int,
          exclude: frozenset[int], embed: bool, windows: bool) -> tuple[list[Any], str, Before | None]:
    """The fused hits, best first (at most `limit`), which vectors ranked, and the limit the position set."""
    index = bank.index
    bound = limit_of(bank, before)
    where, args = _allowed_sql(bound, document_id)
    within = _within(bank, where, args, bound, document_id)
    if all(i in exclude for i in within):  # none allowed (the first one not excluded ends the look)
        return [], "vector", bound
    lexical: list[tuple[int, float]] = []
    match = fts_query(query_text)
    if match is not None:
        lexical = [(i, s) for i, s in words.best(index, match, where, args, within, CANDIDATES + len(exclude))
                   if i not in exclude]
    nearest = strong.nearest(bank, query_text, within, CANDIDATES, embed, exclude) if windows else None
    side = "vector" if nearest is None else "strong vector"
    if nearest is None:
        nearest = _nearest(bank, query_text, within, exclude, CANDIDATES)
    hits = sorted(fuse(nearest, lexical), key=lambda h: -round(h.fused, 9))
    return [h for h in hits if h.fused > 0][:limit], side, bound


def _items(index: Any, hits: list[Any], side: str, batch: int) -> Iterator[dict[str, Any]]:
    """Each hit as an item (its rank, its passage's text and place), the passages read `batch` at a time."""
    for at in range(0, len(hits), batch):
        part = hits[at:at + batch]
        rows = _passages(index, [h.rowid for h in part])
        for rank, h in enumerate(part, at + 1):
            p = rows[h.rowid]
            parts = [f"{side} #{h.vector_rank} ({h.similarity:.3f})" if h.vector_rank else f"no {side} match",
                     f"lexical #{h.lexical_rank}" if h.lexical_rank else "no word match"]
            yield {"source": p.document, "scene": p.scene, "line": p.line, "endLine": p.end_line, "text": p.text,
                   "score": round(h.fused, 6), "reason": f"rank {rank}: " + ", ".join(parts), "id": p.id}
