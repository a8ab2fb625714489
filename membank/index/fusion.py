"""Score fusion of a vector search and a word search (recall.md, Ranking): every hybrid search of the
bank (memories, cards, manuscript passages) fuses its two lists with this one rule."""

from __future__ import annotations

import functools
from typing import NamedTuple


# Weight of the vector side in the fused score; the word side gets the rest. Measured on the
# labelled set in fixtures/retrieval (benchmarks/retrieval.py): equal weights score best there,
# and better than reciprocal-rank fusion, which throws the size of the score gaps away.
VECTOR_WEIGHT = 0.5


class Hit(NamedTuple):  # a tuple: a prompt fuses a hundred and keeps a few
    rowid: int
    vector_rank: int | None
    similarity: float | None  # cosine similarity, 1 - distance
    lexical_rank: int | None
    bm25: float | None  # FTS5 bm25: lower (more negative) is better
    fused: float


_hit = functools.partial(tuple.__new__, Hit)  # without NamedTuple's __new__, a Python function: half the cost


def fuse(nearest: list[tuple[int, float]], lexical: list[tuple[int, float]], weight: float | None = None) -> list[Hit]:
    """Score fusion of vector neighbours (rowid, cosine distance) and FTS5 hits (rowid, bm25).

    fused = w * cosine + (1 - w) * bm25 / best bm25: the best word match scores 1 on its side, and
    a hit missing from one list scores 0 on that side. Both lists hold eligible rows, best first. `weight`:
    w (VECTOR_WEIGHT unless given; the strong tier's is STRONG_VECTOR_WEIGHT)."""
    w = VECTOR_WEIGHT if weight is None else weight
    vector = {rowid: (rank, 1.0 - float(distance)) for rank, (rowid, distance) in enumerate(nearest, start=1)}
    words = {rowid: (rank, float(score)) for rank, (rowid, score) in enumerate(lexical, start=1)}
    best = min((float(score) for _, score in lexical), default=-1.0) or -1.0
    hits = []
    for rowid, v in vector.items():  # the vector side's rows first
        lx = words.get(rowid)
        hits.append(_hit((rowid, v[0], v[1], lx[0] if lx else None, lx[1] if lx else None,
                          w * v[1] + (1 - w) * (lx[1] / best if lx else 0.0))))
    for rowid, lx in words.items():  # `w * 0.0 +`: the float the one expression for both sides gave (a -0.0
        if rowid not in vector:  # words side sums to 0.0, a w of inf or NaN makes NaN), not a simpler one
            hits.append(_hit((rowid, None, None, lx[0], lx[1], w * 0.0 + (1 - w) * (lx[1] / best))))
    return hits
