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
   in which nothing stands out, does not take a place from a same-language answer.

A pool too small to standardise (fewer than MIN_POOL candidates) is measured against all candidates
together instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

STRONG_WEIGHT = 0.7
GATE = 0.6  # deviations below the best same-language candidate an other-language one may stand
MIN_POOL = 8


@dataclass(frozen=True)
class Candidate:
    key: Hashable  # the caller's id for it (a memory id, a row number)
    strong: float  # strong-model cosine, languages' means removed
    static: float  # static-model cosine
    language: str  # "zh" or "en" (script_language of its text)


@dataclass(frozen=True)
class Calibrated:
    key: Hashable
    score: float  # standardised blend: deviations above its language pool's mean
    language: str
    competes: bool  # False: an other-language candidate below the gate, ranked after every competing one


def script_language(text: str) -> str:
    """"zh" when at least 30% of the letters are CJK ideographs (or kana), else "en"."""
    letters = cjk = 0
    for ch in text:
        if ch.isalpha():
            letters += 1
            o = ord(ch)
            if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x3040 <= o <= 0x30FF:
                cjk += 1
    return "zh" if letters and cjk / letters >= 0.3 else "en"


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
              gate: float = GATE) -> list[Calibrated]:
    """The candidates best first, each with its calibrated score; ties keep the input order."""
    if not candidates:
        return []
    languages = [c.language for c in candidates]
    strong = _standardised([c.strong for c in candidates], languages)
    static = _standardised([c.static for c in candidates], languages)
    scores = [weight * a + (1.0 - weight) * b for a, b in zip(strong, static)]
    same = [s for s, lang in zip(scores, languages) if lang == query_language]
    bar = max(same) - gate if same else -math.inf
    out = [Calibrated(c.key, s, c.language, c.language == query_language or s >= bar)
           for c, s in zip(candidates, scores)]
    order = sorted(range(len(out)), key=lambda i: (not out[i].competes, -out[i].score))
    return [out[i] for i in order]
