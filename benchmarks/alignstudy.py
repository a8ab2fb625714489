"""A supervised cross-language map of e5's vectors: the calibration study's rows (issue 35; a study only).

The unsupervised transforms of the strong vectors (calibration.py: LSAR, INLP, cov-diff, CORAL, ...) knew only
the bank's own vectors and their scripts. Here a map from Chinese onto English is learned from parallel text
(scripts/build_alignment.py: graded HSK sentences with their translations, CC-CEDICT headwords with their
glosses; never the fixture's memories or questions) and applied after the centring step: each language's
mean memory vector removed, then every Chinese vector (memory or question) multiplied by

    M = (1 - a) I + a W

before the cosine, for pairs across languages only (`cross only`: a question and a memory of one language keep
their cosine; with an orthogonal W, `procrustes`, that is no change at all) or for every pair (`everywhere`: the
ridge maps, and the Procrustes blends below a 1, which are not orthogonal: a same-language cosine moves). Each row
is then ranked under the shipped rule (pools standardised, 0.7 e5 / 0.3 static, the name bridge's lift, gate 0.8,
cap 3); the Procrustes maps at a 0.25 and 0.5 also under other gates and caps, with the gate's statistic taken
from the plain score (`opened`), and as the plain scores handed out again in the map's order (`reordered`: the
gate sees the numbers it saw without a map).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks.usestudy import gated, standardised
from membank.domains.recall.calibrate import CAP, GATE, LIFT, STRONG_WEIGHT

BLENDS = (0.25, 0.5, 0.75, 1.0)


def read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    data = np.load(path, allow_pickle=False)
    return {k: data[k].astype(np.float64) for k in data.files if k != "counts"}, json.loads(str(data["counts"]))


def rows(measure: Callable[..., None], path: Path, centre: Callable[[dict[str, np.ndarray]], np.ndarray],
         cen: np.ndarray, static: np.ndarray, zh: np.ndarray, qzh: list[bool], bridge: np.ndarray,
         gates: tuple[tuple[float, int], ...] = ((0.6, 3), (0.7, 3), (1.0, 3), (0.8, 2), (0.6, 2))) -> None:
    """`centre(transform)`: the calibration study's centred cosine (queries x memories) with each language's
    matrix applied after the centring; `cen` the plain one; `bridge` the name bridge's evidence."""
    maps, _ = read(path)
    other = np.array([[z != q for z in zh] for q in qzh])
    lift = LIFT * bridge * other
    z_static = standardised(static, zh)
    eye = np.eye(next(iter(maps.values())).shape[0])
    best: list[tuple[str, np.ndarray]] = []
    for name, w in maps.items():
        for a in BLENDS if name.startswith("procrustes") else (0.5, 1.0):
            mapped = centre({"zh": (1 - a) * eye + a * w, "en": eye})
            for where, strong in (("cross only", np.where(other, mapped, cen)), ("everywhere", mapped)):
                if where == "everywhere" and name.startswith("procrustes") and a == 1.0:
                    continue  # W orthogonal: the same numbers as cross only (a blend below 1 is not orthogonal)
                blend = STRONG_WEIGHT * standardised(strong, zh) + (1 - STRONG_WEIGHT) * z_static + lift
                label = f"map {name}, a {a}, {where}"
                measure(label + ", + shipped", gated(blend, zh, qzh), blend)
                if where == "cross only" and a in (0.25, 0.5) and name.startswith("procrustes"):
                    best.append((label, blend))
    plain = STRONG_WEIGHT * standardised(cen, zh) + (1 - STRONG_WEIGHT) * z_static + lift
    for label, blend in best:
        for gate, cap in gates:
            measure(f"{label}, gate {gate}, cap {cap}", gated(blend, zh, qzh, gate, cap), blend)
        measure(f"{label}, the plain score's gate opens, the map orders", opened(plain, blend, zh, qzh), blend)
        swapped = reordered(plain, blend, zh, qzh)
        measure(f"{label}, the plain scores reordered by the map", gated(swapped, zh, qzh), swapped)


def reordered(plain: np.ndarray, mapped: np.ndarray, zh: np.ndarray, qzh: list[bool]) -> np.ndarray:
    """The plain scores, the other language's handed out again in the map's order: its best memory by the map
    takes the pool's best plain score, and so on. The gate, the cap and every same-language score see the very
    numbers they saw without a map (a monolingual question's ranking keeps its shape); only which
    other-language memory holds each place moves."""
    out = plain.copy()
    for qi, question_zh in enumerate(qzh):
        pool = np.flatnonzero(zh != question_zh)
        by_map = pool[np.lexsort((pool, -mapped[qi, pool]))]
        out[qi, by_map] = np.sort(plain[qi, pool])[::-1]
    return out


def opened(plain: np.ndarray, mapped: np.ndarray, zh: np.ndarray, qzh: list[bool], gate: float = GATE,
           cap: int = CAP) -> Callable[[int], list[int]]:
    """The gate's statistic from the plain score (does the other language's best stand out within `gate` of the
    question's own best?), the map's score for which of the other language's memories compete (its best `cap`
    within `gate` by the mapped score) and for their order."""
    def rank(qi: int) -> list[int]:
        same = zh == qzh[qi]
        row = mapped[qi]
        if not same.any():
            return list(np.argsort(-row, kind="stable"))
        competes = same.copy()
        if (~same).any() and plain[qi][~same].max() >= plain[qi][same].max() - gate:
            within = np.flatnonzero(~same & (row >= row[same].max() - gate))
            competes[within[np.lexsort((within, -row[within]))[:cap]]] = True
        return list(np.lexsort((-row, ~competes)))
    return rank
