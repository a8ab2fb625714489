"""The strong tier's vectors as stored (int8, one scale per row) and their in-memory copy for exact KNN.

Quantising is pure: `quantize` gives each unit row its own scale (its largest component over 127),
so a row keeps its direction to ~1e-4 of cosine whatever its spread; `dequantize` undoes it. The copy
keeps the int8 rows (a quarter of float32's memory) and scores them a block at a time."""

from __future__ import annotations

from typing import Callable

import numpy as np

# scores for (query, candidate rows as float32) -> one score per row, higher is better: plain cosine by
# default, a calibration later (recall/rank.py `strong_scores` is the one place that chooses)
Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]
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


class StrongVectors:
    """Every stored strong vector of one model, as read at one `strong_tag`."""

    def __init__(self, tag: str, model: str, rowids: np.ndarray, rows: np.ndarray, scale: np.ndarray):
        self.tag, self.model = tag, model
        self.rowids, self.rows, self.scale = rowids, rows, scale

    @classmethod
    def from_rows(cls, tag: str, model: str, dim: int, found: list[tuple[int, float, bytes]]) -> "StrongVectors":
        rowids = np.array([r for r, _, _ in found], np.int64)
        scale = np.array([s for _, s, _ in found], np.float32)
        rows = np.frombuffer(b"".join(b for _, _, b in found), np.int8).reshape(len(found), dim).copy()
        return cls(tag, model, rowids, rows, scale)

    def __len__(self) -> int:
        return len(self.rowids)

    def mask(self, allowed: np.ndarray) -> np.ndarray:
        return np.isin(self.rowids, allowed)

    def covers(self, rowids: np.ndarray) -> int:
        """How many of `rowids` have a vector here."""
        return int(np.isin(rowids, self.rowids).sum())

    def nearest(self, query: np.ndarray, k: int, allowed: np.ndarray, scorer: Scorer = cosine) -> list[tuple[int, float]]:
        """(rowid, 1 - score) of the k best rows among `allowed` (a `mask`), best first; ties by rowid.
        A zero row (no direction) never competes."""
        picked = np.flatnonzero(allowed & (self.scale > 0))
        if k <= 0 or not len(picked):
            return []
        scores = np.empty(len(picked), np.float32)
        for a in range(0, len(picked), BLOCK):
            at = picked[a:a + BLOCK]
            scores[a:a + BLOCK] = scorer(query, dequantize(self.rows[at], self.scale[at]))
        order = np.lexsort((self.rowids[picked], -scores))[:k]
        return [(int(self.rowids[picked[i]]), float(1.0 - scores[i])) for i in order]
