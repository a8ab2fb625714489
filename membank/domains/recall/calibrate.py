"""Calibrated cross-language ranking for one query (issue 35, point 2): pure, no I/O.

Every model's raw cosine favours memories in the query's own language, so a Chinese memory that
answers an English question loses to unrelated English ones. The rule, chosen on the retrieval
fixture by benchmarks/calibration.py:

1. each language's candidates form a pool; within each pool, per query, the strong cosine (each
   language's mean vector removed: `strong`) and the static cosine (`static`) are each standardised
   (mean 0, deviation 1), then blended (`weight` on the strong one): scores comparable across languages;
2. a candidate in the other language competes at that score only when it stands out of its pool nearly
   as far as the best same-language candidate does (within `gate` deviations); the rest follow every
   competing candidate, in their own order. So an unrelated other-language memory, the best of a pool
   in which nothing stands out, does not take a place from a same-language answer;
3. of the other-language candidates within the gate, only the best `cap` compete: a question is seldom
   answered by more than a few memories of the other language, and a query whose gate lets a whole
   pool in (nothing in its own language stands out) cannot fill its top 5 with the other language
   (a query with no candidate in its own language has nothing to keep places for: every one competes).

4. (the name bridge, bridge.py) an other-language candidate that names a card the query names gets
   `lift` times its evidence added to its score, before the gate and the cap.

A pool too small to standardise (fewer than MIN_POOL candidates) is measured against all candidates
together instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

from typing import TYPE_CHECKING

from ...kernel.text import script_language as script_language  # re-exported: the rule's languages

if TYPE_CHECKING:
    import numpy as np

STRONG_WEIGHT = 0.7
GATE = 0.8  # deviations below the best same-language candidate an other-language one may stand
CAP = 3  # the most other-language candidates that compete for one query
# (GATE and CAP chosen together on half the fixture's queries, measured on the other half:
# benchmarks/calibration.py --split; docs/recall.md)
MIN_POOL = 8
# deviations an other-language candidate gains per unit of name-bridge evidence (bridge.py; chosen on half
# the fixture's queries, measured on the other half: benchmarks/calibration.py, docs/recall.md)
LIFT = 1.0
# the vector side of the fused score from a calibrated one: SCALE deviations above its pool's mean count
# as a cosine of 1 (the fused score, and the relevance floor on it, stay in [0, 1]); an other-language
# candidate below the gate keeps OUTSIDE of its value, so it still follows the competing ones
SCALE = 4.0
OUTSIDE = 0.01


@dataclass(frozen=True)
class Candidate:
    key: Hashable  # the caller's id for it (a memory id, a row number)
    strong: float  # strong-model cosine, languages' means removed
    static: float  # static-model cosine
    language: str  # "zh" or "en" (script_language of its text)
    evidence: float = 0.0  # the name bridge's (bridge.py): counts for an other-language candidate only


@dataclass(frozen=True)
class Calibrated:
    key: Hashable
    score: float  # standardised blend: deviations above its language pool's mean
    language: str
    competes: bool  # False: an other-language candidate below the gate, ranked after every competing one


def _stats(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return mean, math.sqrt(var)


def _standardised(values: list[float], languages: list[str]) -> list[float]:
    overall = _stats(values)
    pools: dict[str, list[float]] = {}
    for v, lang in zip(values, languages):
        pools.setdefault(lang, []).append(v)
    stats = {lang: _stats(vs) if len(vs) >= MIN_POOL else overall for lang, vs in pools.items()}
    out = []
    for v, lang in zip(values, languages):
        mean, deviation = stats[lang]
        out.append((v - mean) / deviation if deviation > 1e-9 else 0.0)
    return out


def calibrate(candidates: Sequence[Candidate], query_language: str, *, weight: float = STRONG_WEIGHT,
              gate: float = GATE, cap: int = CAP, lift: float = LIFT) -> list[Calibrated]:
    """The candidates best first, each with its calibrated score; ties keep the input order."""
    if not candidates:
        return []
    languages = [c.language for c in candidates]
    strong = _standardised([c.strong for c in candidates], languages)
    static = _standardised([c.static for c in candidates], languages)
    scores = [weight * a + (1.0 - weight) * b + (lift * c.evidence if c.language != query_language else 0.0)
              for a, b, c in zip(strong, static, candidates)]
    same = [s for s, lang in zip(scores, languages) if lang == query_language]
    bar = max(same) - gate if same else -math.inf
    within = sorted((i for i, (s, lang) in enumerate(zip(scores, languages)) if lang != query_language and s >= bar),
                    key=lambda i: -scores[i])
    admitted = set(within[:max(cap, 0)] if same else within)  # no candidate in the query's language: no cap
    out = [Calibrated(c.key, s, c.language, c.language == query_language or i in admitted)
           for i, (c, s) in enumerate(zip(candidates, scores))]
    order = sorted(range(len(out)), key=lambda i: (not out[i].competes, -out[i].score))
    return [out[i] for i in order]


def _standardised_array(values: np.ndarray, zh: np.ndarray) -> np.ndarray:
    import numpy as np

    out = np.zeros(len(values), np.float64)
    overall = (float(values.mean()), float(values.std())) if len(values) else (0.0, 0.0)
    for pool in (zh, ~zh):
        n = int(pool.sum())
        if not n:
            continue
        mean, deviation = (float(values[pool].mean()), float(values[pool].std())) if n >= MIN_POOL else overall
        out[pool] = (values[pool] - mean) / deviation if deviation > 1e-9 else 0.0
    return out


def calibrated_arrays(strong: np.ndarray, static: np.ndarray, zh: np.ndarray, query_zh: bool, *,
                      weight: float = STRONG_WEIGHT, gate: float = GATE, cap: int = CAP,
                      evidence: np.ndarray | None = None, lift: float = LIFT) -> tuple[np.ndarray, np.ndarray]:
    """`calibrate` over arrays, for a whole bank's candidates at once: (score, competes) of each
    candidate, in the input's order. `strong`: centred strong cosines; `static`: static cosines; `zh`:
    which candidates are Chinese (the others English); `evidence`: the name bridge's (None: none)."""
    import numpy as np

    zh = np.asarray(zh, bool)
    scores = weight * _standardised_array(np.asarray(strong, np.float64), zh) \
        + (1.0 - weight) * _standardised_array(np.asarray(static, np.float64), zh)
    same = zh if query_zh else ~zh
    if evidence is not None:
        scores = scores + np.where(same, 0.0, lift * np.asarray(evidence, np.float64))
    bar = float(scores[same].max()) - gate if same.any() else -math.inf
    within = np.flatnonzero(~same & (scores >= bar))
    if same.any() and len(within) > max(cap, 0):  # the best `cap` (ties: input order, as `calibrate`'s sort)
        within = within[np.lexsort((within, -scores[within]))[:max(cap, 0)]]
    competes = same.copy()
    competes[within] = True
    return scores, competes


def vector_scores(scores: np.ndarray, competes: np.ndarray) -> np.ndarray:
    """The vector side of the fused score (as a cosine is, higher better, in [0, 1]) from calibrated
    scores: score / SCALE, clipped; one that does not compete keeps OUTSIDE of it, so it ranks after
    every competing candidate with a positive score, in its own order, and adds next to nothing."""
    import numpy as np

    value = np.clip(np.asarray(scores, np.float64) / SCALE, 0.0, 1.0)
    return np.where(competes, value, OUTSIDE * value)
