"""Near-duplicates by meaning (issue 33.6): two facts (or two cards) whose stored vectors point the same
way, whatever their words or language. Pure: unit rows in, pairs out; no model is loaded (the index's
vectors are the ones the entries were stored with, `duplicatefiles.py` reads them).

Each language's mean vector is removed from its rows first (as recall's calibration does, calibrate.py):
a multilingual model puts every Chinese text near every other, so a raw cosine across languages is not
comparable with one within a language. Each row is then compared with its NEIGHBOURS nearest (blocked
products: bounded memory, n² dot products at most), and a pair at or above the tier's threshold is
suggested. The thresholds were measured on written paraphrases (both languages, across them, real
红楼梦 cards) against look-alike facts of the retrieval fixture (benchmarks/duplicates.py): the
highest recall at precision 1.0 on that set, a little above it (a suggestion a writer dismisses is noise)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import numpy as np

STRONG = 0.82  # centred strong cosine (e5-small) at or above which two facts say the same thing
STATIC = 0.78  # the same for the static tier's vectors (the strong tier off, or not every row embedded yet)
NEIGHBOURS = 4  # the nearest rows each row is compared with
BLOCK = 512  # rows multiplied at a time: a 512 x n float32 block (20 MB at 10,000 rows)
MIN_CENTRE = 8  # fewer rows of a language, and the mean of every row centres it (strongcopy.py alike)


def centred(unit: np.ndarray, zh: np.ndarray, means_of: np.ndarray | None = None,
            zh_of: np.ndarray | None = None) -> np.ndarray:
    """The rows with their language's mean removed, at unit length again (a row with no direction stays
    zero). The means are those of `means_of` / `zh_of` (the whole bank's rows) when given, else of `unit`."""
    import numpy as np

    rows = np.asarray(unit, np.float32)
    zh = np.asarray(zh, bool)
    base = rows if means_of is None else np.asarray(means_of, np.float32)
    base_zh = zh if zh_of is None else np.asarray(zh_of, bool)
    live = np.linalg.norm(base, axis=1) > 0
    shared = base[live].mean(axis=0) if live.any() else np.zeros(rows.shape[1], np.float32)
    out = rows.copy()
    for lang in (True, False):
        pool = live & (base_zh == lang)
        mean = base[pool].mean(axis=0) if int(pool.sum()) >= MIN_CENTRE else shared
        mine = (zh == lang) & (np.linalg.norm(rows, axis=1) > 0)
        out[mine] -= mean
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 1e-6)


def close_pairs(unit: np.ndarray, threshold: float, neighbours: int = NEIGHBOURS,
                block: int = BLOCK) -> list[tuple[int, int, float]]:
    """(i, j, cosine) with i < j for each pair of unit rows at or above `threshold` where one is among
    the other's `neighbours` nearest; by i then j. Cosines are rounded to 2 places."""
    import numpy as np

    rows = np.ascontiguousarray(unit, np.float32)
    n = len(rows)
    k = min(max(neighbours, 0), n - 1)
    if k <= 0:
        return []
    found: dict[tuple[int, int], float] = {}
    for a in range(0, n, block):
        sims = rows[a:a + block] @ rows.T
        b = len(sims)
        sims[np.arange(b), np.arange(a, a + b)] = -np.inf  # not with itself
        near = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        scores = np.take_along_axis(sims, near, axis=1)
        for r, c in zip(*np.nonzero(scores >= threshold)):
            i, j = a + int(r), int(near[r, c])
            found[(min(i, j), max(i, j))] = round(float(scores[r, c]), 2)
    return sorted((i, j, s) for (i, j), s in found.items())


def merged(by_words: Sequence[tuple[str, str, float]], by_meaning: Sequence[tuple[str, str, float]]
           ) -> list[tuple[str, str, float, str]]:
    """One suggestion per pair of ids: (a, b, score, "words" | "meaning"), a < b; a pair both rules find
    is "words" (the plainer reason, with its share of trigrams), by a then b."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for a, b, score in by_meaning:
        out[(min(a, b), max(a, b))] = (score, "meaning")
    for a, b, score in by_words:
        out[(min(a, b), max(a, b))] = (score, "words")
    return [(a, b, s, how) for (a, b), (s, how) in sorted(out.items())]
