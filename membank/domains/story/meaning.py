"""Near-duplicates by meaning (issue 33.6): two facts whose stored vectors point the same way, whatever
their words. Pure: unit rows in, pairs out; no model is loaded (the index's
vectors are the ones the entries were stored with, `duplicatefiles.py` reads them).

Each language's mean vector is removed from its rows first (as recall's calibration does, calibrate.py):
a multilingual model puts every Chinese text near every other, so a raw cosine across languages is not
comparable with one within a language. Each row is then compared with its NEIGHBOURS nearest (blocked
products: bounded memory, n² dot products at most), and a pair at or above the tier's threshold is
suggested. The thresholds were measured on written paraphrases (Chinese facts of the real 红楼梦 excerpt,
English ones of the fixture's novel, and across the two languages) against every pair of the retrieval
fixture's facts and written look-alikes (benchmarks/duplicates.py): a step above the lowest threshold
with precision 1.0 on that set, at the same recall (a suggestion a writer dismisses is noise). A fact and
its translation stay below it (centred cosines 0.14-0.56): across languages only the words' rule and
the cards' names find twins.

Two cards are compared by their sentences (`cover`), not by one vector for the whole card: generated
cards written from one vocabulary point the same way as a whole (0.97), as far as any twin does; a twin
says each thing the other says, sentence by sentence (benchmarks/duplicatestudy.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import numpy as np

STRONG = 0.82  # centred strong cosine (e5-small) at or above which two facts say the same thing
STATIC = 0.78  # the same for the static tier's vectors (the strong tier off, or not every row embedded yet)
NEIGHBOURS = 4  # the nearest rows each row is compared with
BLOCK = 512  # rows multiplied at a time: a 512 x n float32 block (20 MB at 10,000 rows)
EXACT = 2000  # rows compared every one with every other; more, and within groups (`groups`)
PROBES = 3  # the groups each row joins
ROUNDS = 3  # k-means rounds that place the groups' centres
MIN_CENTRE = 8  # fewer rows of a language, and the mean of every row centres it (strongcopy.py alike)
COVER = 0.80  # two cards' `cover` (static sentence vectors, centred) at or above which they are one entity
CARD_NEIGHBOURS = 1  # the cards (nearest by their stored vectors) each card's sentences are compared with:
# each written twin was the other's nearest of 177 cards (benchmarks/duplicatestudy.py)
MIN_SENTENCE = 6  # pieces of fewer letters ("Dead.", "🙂🙂🙂🙂🙂🙂.", "1.5") say too little to match
TEMPLATE = 3  # a sentence written word for word in this many cards is a template's, not what a card says
CARD_SENTENCES = 512  # a card's first sentences compared (and kept in the index): a 300,000-character card
# of 30,000 sentences made a 3.6 GB product with its twin and 30 MB of kept vectors; the bench's longest has 27
LANGUAGE_CHARS = 64  # a text's language is told by its start (the whole of 3,000 long facts: 1.8 s)
_LETTER = re.compile(r"[^\W\d_]")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]")
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*")
_LETTERS = re.compile(r"[^\W\d_](?:[\W\d_]*[^\W\d_]){%d}" % (MIN_SENTENCE - 1))  # MIN_SENTENCE letters


def sentences(text: str) -> list[str]:
    """`text` cut after each sentence's end (Latin or CJK), pieces of fewer than MIN_SENTENCE letters dropped."""
    return [s for s in (p.strip() for p in _SENTENCE.split(text or "")) if _LETTERS.search(s)]


def is_chinese(text: str) -> bool:
    """kernel.text.script_language's rule (30% of the letters CJK) by two regular expressions: ~10x faster."""
    letters = len(_LETTER.findall(text))
    return bool(letters) and len(_CJK.findall(text)) / letters >= 0.3


def untemplated(said: list[list[str]]) -> list[list[str]]:
    """Each card's sentences less those written word for word (spaces and case aside) in TEMPLATE cards or
    more: two stubs made of one template's lines ("Age: unknown.") say nothing of their own."""
    return [[ss[i] for i in at] for ss, at in zip(said, own(said))]


def own(said: list[list[str]]) -> list[list[int]]:
    """The positions of the sentences `untemplated` keeps of each card."""
    from collections import Counter

    key = [[" ".join(s.casefold().split()) for s in ss] for ss in said]
    counts = Counter(k for ks in key for k in set(ks))
    return [[i for i, k in enumerate(ks) if counts[k] < TEMPLATE] for ks in key]


def cover(a: np.ndarray, b: np.ndarray) -> float:
    """How well one card's sentences (unit rows) are each said again by the other's: the mean, over the
    card with fewer sentences, of each one's best cosine with the other's (0.0 when either has none),
    rounded to 2 places; with as many sentences each, the lower of the two. A twin says each thing again;
    a card about a neighbour shares a sentence or two."""
    import numpy as np

    if not len(a) or not len(b):
        return 0.0
    sims = np.asarray(a, np.float32) @ np.asarray(b, np.float32).T
    said = [float(np.add.reduce(best) / len(best)) for best in  # .mean()'s sum, without its Python (~2,700 calls)
            ([sims.max(axis=1)] if len(a) < len(b) else [sims.max(axis=0)] if len(a) > len(b) else
             [sims.max(axis=1), sims.max(axis=0)])]
    return round(min(said), 2)  # with as many sentences each, the same either way round


def centred(unit: np.ndarray, zh: np.ndarray) -> np.ndarray:
    """The rows with their language's mean (over these rows) removed, at unit length again (a row with no
    direction stays zero; a language of fewer than MIN_CENTRE rows is centred by every row's mean)."""
    import numpy as np

    rows = np.asarray(unit, np.float32)
    zh = np.asarray(zh, bool)
    live = np.linalg.norm(rows, axis=1) > 0
    shared = rows[live].mean(axis=0) if live.any() else np.zeros(rows.shape[1], np.float32)
    out = rows.copy()
    for lang in (True, False):
        pool = live & (zh == lang)
        mean = rows[pool].mean(axis=0) if int(pool.sum()) >= MIN_CENTRE else shared
        out[pool] -= mean
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 1e-6)


def close_pairs(unit: np.ndarray, threshold: float, neighbours: int = NEIGHBOURS,
                block: int = BLOCK) -> list[tuple[int, int, float]]:
    """(i, j, cosine) with i < j for each pair of unit rows at or above `threshold` where one is among
    the other's `neighbours` nearest; by i then j. Cosines are rounded to 2 places. Up to EXACT rows every
    row is compared with every other; more, and with the rows of the GROUPS it lies nearest to (`groups`)."""
    import numpy as np

    rows = np.ascontiguousarray(unit, np.float32)
    found: dict[tuple[int, int], float] = {}
    for members in groups(rows) if len(rows) > EXACT else [np.arange(len(rows))]:
        for i, j, score in _exact(rows[members], threshold, neighbours, block):
            a, b = int(members[i]), int(members[j])
            found[(min(a, b), max(a, b))] = score
    return sorted((i, j, s) for (i, j), s in found.items())


def groups(rows: np.ndarray, probes: int = PROBES, rounds: int = ROUNDS) -> list[np.ndarray]:
    """The rows (positions) of each of about sqrt(n) groups, each row in the `probes` groups whose centres
    lie nearest it: two rows that point nearly the same way share one (a coarse k-means, its first centres
    rows spread evenly through the input: the same input, the same groups). Comparing within groups costs
    about probes x n^1.5 products instead of n^2."""
    import numpy as np

    n = len(rows)
    count = max(1, int(round(np.sqrt(n))))
    centres = rows[np.linspace(0, n - 1, count).astype(np.int64)].copy()
    for _ in range(rounds):
        nearest = np.argmax(rows @ centres.T, axis=1)
        order = np.argsort(nearest, kind="stable")
        held, starts = np.unique(nearest[order], return_index=True)
        sums = np.zeros_like(centres)
        sums[held] = np.add.reduceat(rows[order], starts, axis=0)
        lengths = np.linalg.norm(sums, axis=1, keepdims=True)
        centres = np.where(lengths > 1e-6, sums / np.maximum(lengths, 1e-6), centres).astype(np.float32)
    p = min(probes, count)
    top = np.argpartition(-(rows @ centres.T), p - 1, axis=1)[:, :p] if p < count else \
        np.tile(np.arange(count), (n, 1))
    order = np.argsort(top.ravel(), kind="stable")
    owners = (order // p).astype(np.int64)
    cuts = np.flatnonzero(np.diff(top.ravel()[order])) + 1
    return [g for g in np.split(owners, cuts) if len(g) > 1]


def _exact(rows: np.ndarray, threshold: float, neighbours: int, block: int) -> list[tuple[int, int, float]]:
    """close_pairs over every pair of `rows` (blocked products)."""
    import numpy as np

    n = len(rows)
    k = min(max(neighbours, 0), n - 1)
    if k <= 0:
        return []
    out = []
    for a in range(0, n, block):
        sims = rows[a:a + block] @ rows.T
        b = len(sims)
        sims[np.arange(b), np.arange(a, a + b)] = -np.inf  # not with itself
        near = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        scores = np.take_along_axis(sims, near, axis=1)
        hit_r, hit_c = np.nonzero(scores >= threshold)
        found = zip((hit_r + a).tolist(), near[hit_r, hit_c].tolist(), scores[hit_r, hit_c].astype(float).tolist())
        out.extend((i, j, round(s, 2)) for i, j, s in found)
    return out


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
