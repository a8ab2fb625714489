"""The strong tier's vectors as stored (int8, one scale per row) and their in-memory copy for exact KNN.

Quantising is pure: `quantize` gives each unit row its own scale (its largest component over 127),
so a row keeps its direction to ~1e-4 of cosine whatever its spread; `dequantize` undoes it. The copy
keeps the int8 rows (a quarter of float32's memory) and scores them a block at a time."""

from __future__ import annotations

from typing import Callable

import numpy as np

# the score of each row for a query from its plain cosine: (query, cosines, rowids) -> scores, higher is
# better; recall/rank.py `strong_scores` is the one place that chooses it (a calibration plugs in there)
Scorer = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
BLOCK = 4096  # rows turned into float32 at a time: 6 MB at 384 dimensions


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scale per row); a zero row keeps scale 0 (it has no direction)."""
    matrix = np.asarray(vectors, np.float32)
    if not len(matrix):
        return np.zeros(matrix.shape, np.int8), np.zeros(0, np.float32)
    peak = np.abs(matrix).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 0.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0)[:, None]
    return np.clip(np.rint(matrix / safe), -127, 127).astype(np.int8), scale


def dequantize(rows: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return rows.astype(np.float32) * np.asarray(scale, np.float32)[:, None]


def cosine(query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Plain cosine of a unit query with each row (rows need not be unit: int8 rounding moves the length)."""
    norms = np.linalg.norm(rows, axis=1)
    return np.einsum("ij,j->i", rows, np.asarray(query, np.float32)) / np.where(norms > 0, norms, 1.0)


def _factors(rows: np.ndarray) -> np.ndarray:
    """1 / each int8 row's length (0 for a zero row): its cosine with a unit query is row . query x this."""
    lengths = np.empty(len(rows), np.float32)
    for a in range(0, len(rows), BLOCK):
        block = rows[a:a + BLOCK].astype(np.float32)
        lengths[a:a + BLOCK] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0)


class StrongVectors:
    """Every stored strong vector of one model, as read at one `strong_tag`. Each row's cosine with a
    query is its int8 row times the query, times a factor made once (its scale over its length)."""

    def __init__(self, tag: str, model: str, rowids: np.ndarray, rows: np.ndarray, scale: np.ndarray,
                 factor: np.ndarray | None = None):
        self.tag, self.model = tag, model
        self.rowids, self.rows, self.scale = rowids, rows, scale
        self.factor = _factors(rows) if factor is None else factor

    def patched(self, tag: str, written: frozenset[int], found: list[tuple[int, float, bytes]]) -> "StrongVectors":
        """A copy with the `written` rowids replaced by `found` (those gone dropped); this one is left as it is."""
        keep = ~np.isin(self.rowids, np.fromiter(written, np.int64, len(written)))
        fresh = StrongVectors.from_rows(tag, self.model, self.rows.shape[1], found)
        return StrongVectors(tag, self.model, np.concatenate([self.rowids[keep], fresh.rowids]),
                             np.concatenate([self.rows[keep], fresh.rows]),
                             np.concatenate([self.scale[keep], fresh.scale]),
                             np.concatenate([self.factor[keep], fresh.factor]))

    @classmethod
    def from_rows(cls, tag: str, model: str, dim: int, found: list[tuple[int, float, bytes]]) -> "StrongVectors":
        if not found:
            return cls(tag, model, np.zeros(0, np.int64), np.zeros((0, dim), np.int8), np.zeros(0, np.float32))
        rowids, scale, blobs = zip(*found)
        return cls(tag, model, np.array(rowids, np.int64), np.frombuffer(b"".join(blobs), np.int8).reshape(len(found), dim),
                   np.array(scale, np.float32))

    def __len__(self) -> int:
        return len(self.rowids)

    def mask(self, allowed: np.ndarray) -> np.ndarray:
        return np.isin(self.rowids, allowed)

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """Every row's cosine with `query` (0 for a zero row), a block at a time (einsum: one thread)."""
        q = np.asarray(query, np.float32)
        q = q / (np.float32(np.linalg.norm(q)) or np.float32(1.0))
        out = np.empty(len(self.rows), np.float32)
        for a in range(0, len(self.rows), BLOCK):
            out[a:a + BLOCK] = np.einsum("ij,j->i", self.rows[a:a + BLOCK].astype(np.float32), q)
        return out * self.factor

    def nearest(self, query: np.ndarray, k: int, allowed: np.ndarray, scorer: Scorer | None = None
                ) -> list[tuple[int, float]]:
        """(rowid, 1 - score) of the k best rows among `allowed` (a `mask`), best first; ties by rowid.
        `scorer` turns the plain cosines into the scores ranked (None: the cosine itself). A zero row
        (no direction) never competes."""
        if k <= 0 or not len(self.rowids):
            return []
        scores = self.cosines(query)
        if scorer is not None:
            scores = np.asarray(scorer(query, scores, self.rowids), np.float32)
        scores = np.where(allowed & (self.scale > 0), scores, -np.inf)
        k = min(k, int(np.isfinite(scores).sum()))
        if k <= 0:
            return []
        if k < len(scores):
            part = np.argpartition(-scores, k - 1)[:k]
            part = np.flatnonzero(scores >= scores[part].min())  # every row tied with the k-th: ties by rowid
        else:
            part = np.flatnonzero(np.isfinite(scores))
        order = part[np.lexsort((self.rowids[part], -scores[part]))][:k]
        return [(int(r), float(1.0 - sc)) for r, sc in zip(self.rowids[order], scores[order])]
