"""The strong tier's vectors as stored (int8, one scale per row) and their in-memory copy for exact KNN.

Quantising is pure: `quantize` gives each unit row its own scale (its largest component over 127),
so a row keeps its direction to ~1e-4 of cosine whatever its spread; `dequantize` undoes it. The copy
keeps the int8 rows (a quarter of float32's memory) and scores them a block at a time."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

# the score of every row of a copy for one query, given the rows that compete (a `mask`): higher is
# better; recall/tiers.py makes it (the calibrated cross-language score, recall/rank.py `strong_scores`)
Scorer = Callable[["StrongVectors", np.ndarray], np.ndarray]
BLOCK = 4096  # rows turned into float32 at a time: 6 MB at 384 dimensions
# a query's scan: rows turned into float32 at a time, in one buffer that stays in the cache (768 KB at 384
# dimensions): ~35% less CPU than 4096-row blocks, each a fresh 6 MB array (10,000 rows, medians A/B)
SCAN_BLOCK = 512
MIN_CENTRE = 8  # the fewest rows of a language whose mean centres it (recall/calibrate.py MIN_POOL, alike)
MIN_SHARED = 3  # the fewest rows whose mean centres a language of fewer (of two, each is the other's opposite)
KEEP_MEANS = 100  # a patch of at most 1/KEEP_MEANS of the rows keeps the languages' means (`patched`)


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scale per row); a zero row, or one not finite, keeps scale 0 (no direction)."""
    matrix = np.asarray(vectors, np.float32)
    if not len(matrix):
        return np.zeros(matrix.shape, np.int8), np.zeros(0, np.float32)
    broken = ~np.isfinite(matrix).all(axis=1)
    if broken.any():  # a NaN or infinite row (a model gone wrong) is kept as a zero row: no direction
        matrix = np.where(broken[:, None], 0.0, matrix).astype(np.float32)
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


def _dots(rows: np.ndarray, q: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
    """Each int8 row (with `at`, the rows at those positions alone: in range, as `np.flatnonzero` gives them)
    times the float32 vector `q`, a block at a time (einsum: one thread). A row's product is its own: the
    same number whichever rows share its block."""
    n = len(rows) if at is None else len(at)
    out = np.empty(n, np.float32)
    buffer = np.empty((min(SCAN_BLOCK, n), rows.shape[1]), np.float32)
    picked = np.empty(buffer.shape, rows.dtype) if at is not None else None
    for a in range(0, n, SCAN_BLOCK):
        if picked is None:
            part = rows[a:a + SCAN_BLOCK]
        else:  # gathered into a buffer that stays in the cache, as the whole pass's blocks are
            where = at[a:a + SCAN_BLOCK]
            part = np.take(rows, where, axis=0, out=picked[:len(where)], mode="clip")
        block = buffer[:len(part)]
        np.copyto(block, part, casting="unsafe")
        out[a:a + len(block)] = np.einsum("ij,j->i", block, q)
    return out


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
                 factor: np.ndarray | None = None, zh: np.ndarray | None = None):
        self.tag, self.model = tag, model
        self.rowids, self.rows, self.scale = rowids, rows, scale
        self.factor = _factors(rows) if factor is None else factor
        self.zh = np.zeros(len(rowids), bool) if zh is None else zh  # which rows' texts are Chinese
        self._centring: tuple[dict[bool, np.ndarray], np.ndarray] | None = None
        # (the copy's tag it was patched from, the rowids written since): what a memo of the rows may patch too
        self.since: tuple[str, frozenset[int]] | None = None

    def patched(self, tag: str, written: frozenset[int], found: list[tuple[int, float, bytes]]) -> "StrongVectors":
        """A copy with the `written` rowids replaced by `found` (those gone dropped); this one is left as it is."""
        keep = ~np.isin(self.rowids, np.fromiter(written, np.int64, len(written)))
        fresh = StrongVectors.from_rows(tag, self.model, self.rows.shape[1], found)
        out = StrongVectors(tag, self.model, np.concatenate([self.rowids[keep], fresh.rowids]),
                            np.concatenate([self.rows[keep], fresh.rows]),
                            np.concatenate([self.scale[keep], fresh.scale]),
                            np.concatenate([self.factor[keep], fresh.factor]),
                            np.concatenate([self.zh[keep], fresh.zh]))
        out.since = (self.tag, written)
        if self._centring is not None and len(written) * KEEP_MEANS <= len(self.rowids):
            # a few rows of a large bank move its languages' means by next to nothing: the patched copy keeps
            # them (a save costs no pass over every row); a reload, or a larger change, makes them again
            means, lengths = self._centring
            out._centring = (means, np.concatenate([lengths[keep], self._lengths(means, fresh.rows, fresh.factor,
                                                                                 fresh.zh)]))
        return out

    @classmethod
    def from_rows(cls, tag: str, model: str, dim: int, found: list[tuple[Any, ...]]) -> "StrongVectors":
        """From (rowid, scale, int8 bytes[, zh]) rows."""
        if not found:
            return cls(tag, model, np.zeros(0, np.int64), np.zeros((0, dim), np.int8), np.zeros(0, np.float32))
        columns = list(zip(*found))
        zh = np.array(columns[3], bool) if len(columns) > 3 else None
        return cls(tag, model, np.array(columns[0], np.int64),
                   np.frombuffer(b"".join(columns[2]), np.int8).reshape(len(found), dim),
                   np.array(columns[1], np.float32), zh=zh)

    def __len__(self) -> int:
        return len(self.rowids)

    def mask(self, allowed: np.ndarray) -> np.ndarray:
        return np.isin(self.rowids, allowed)

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """Every row's cosine with `query` (0 for a zero row), a block at a time (einsum: one thread)."""
        q = np.asarray(query, np.float32)
        q = q / (np.float32(np.linalg.norm(q)) or np.float32(1.0))
        return _dots(self.rows, q) * self.factor

    def _centre(self) -> tuple[dict[bool, np.ndarray], np.ndarray]:
        """Each language's mean unit vector (keyed by `zh`), over every row with a direction (every row's mean for
        a language of fewer than MIN_CENTRE rows, zeros for a copy of fewer than MIN_SHARED), with each row's
        length once its mean is removed: made once per copy (a pass over the rows, as loading one is)."""
        if self._centring is None:
            dim = self.rows.shape[1]
            live = self.scale > 0
            weights = np.stack([self.zh & live, ~self.zh & live]).astype(np.float32) * self.factor  # 2 x rows
            sums = np.zeros((2, dim), np.float64)
            for a in range(0, len(self.rows), BLOCK):
                sums += np.einsum("kb,bd->kd", weights[:, a:a + BLOCK], self.rows[a:a + BLOCK].astype(np.float32))
            counts = weights.astype(bool).sum(axis=1)
            total = int(counts.sum())
            # a language of few rows is centred by every row's mean (by none in a bank of one or two rows): its
            # own mean would be those rows themselves (one memory's centred cosine: 0 for every query)
            shared = (sums.sum(axis=0) / total if total >= MIN_SHARED else np.zeros(dim)).astype(np.float32)
            means = {lang: (sums[i] / counts[i]).astype(np.float32) if counts[i] >= MIN_CENTRE else shared
                     for i, lang in ((0, True), (1, False))}
            self._centring = (means, self._lengths(means, self.rows, self.factor, self.zh))
        return self._centring

    @staticmethod
    def _lengths(means: dict[bool, np.ndarray], rows: np.ndarray, factor: np.ndarray, zh: np.ndarray) -> np.ndarray:
        """Each unit row's length once its language's mean is removed: |u - m|^2 = |u|^2 - 2 u.m + |m|^2."""
        both = np.stack([means[True], means[False]])  # 2 x dim
        lengths = np.empty(len(rows), np.float32)
        for a in range(0, len(rows), BLOCK):
            dots = np.einsum("bd,kd->bk", rows[a:a + BLOCK].astype(np.float32), both) * factor[a:a + BLOCK, None]
            own = np.where(zh[a:a + BLOCK], dots[:, 0], dots[:, 1])
            unit = (factor[a:a + BLOCK] > 0).astype(np.float32)
            square = unit - 2 * own + np.where(zh[a:a + BLOCK], both[0] @ both[0], both[1] @ both[1])
            lengths[a:a + BLOCK] = np.sqrt(np.maximum(square, 0.0))
        return lengths

    def centred_cosines(self, query: np.ndarray, query_zh: bool, at: np.ndarray | None = None) -> np.ndarray:
        """Every row's cosine with `query` once each language's mean is removed, from each row its own
        language's and from the query its language's (0 for a row with no direction left); with `at`
        (row positions), those rows' alone: the same numbers as the whole pass's at those rows (each row's
        product is its own), for a scan of a few rows (the cards') without one over every row."""
        means, lengths = self._centre()
        factor, zh = (self.factor, self.zh) if at is None else (self.factor[at], self.zh[at])
        if at is not None:
            lengths = lengths[at]
        q = np.asarray(query, np.float32)
        q = q / (np.float32(np.linalg.norm(q)) or np.float32(1.0)) - means[bool(query_zh)]
        q = q / (np.float32(np.linalg.norm(q)) or np.float32(1.0))
        dots = _dots(self.rows, q, at)
        dots *= factor
        dots -= np.where(zh, float(means[True] @ q), float(means[False] @ q)).astype(np.float32)
        return np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 1e-6)

    def nearest(self, query: np.ndarray, k: int, allowed: np.ndarray, scorer: Scorer | None = None
                ) -> list[tuple[int, float]]:
        """(rowid, 1 - score) of the k best rows among `allowed` (a `mask`), best first; ties by rowid.
        `scorer` scores the rows instead of the plain cosine with `query`. A zero row (no direction)
        never competes."""
        if k <= 0 or not len(self.rowids):
            return []
        allowed = allowed & (self.scale > 0)
        scores = self.cosines(query) if scorer is None else np.asarray(scorer(self, allowed), np.float32)
        scores = np.where(allowed, scores, -np.inf)
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
