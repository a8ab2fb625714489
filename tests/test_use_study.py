"""The full-USE study's ranking (benchmarks/usestudy.py): its gate and cap over a blend of any number of
signals is the shipped rule's (membank/domains/recall/calibrate.py) when given the shipped blend."""

from __future__ import annotations

import numpy as np

from benchmarks.usestudy import gated, standardised
from membank.domains.recall.calibrate import calibrated_arrays


def test_the_study_gate_ranks_the_shipped_blend_as_the_shipped_rule_does() -> None:
    rng = np.random.default_rng(7)
    strong, static = rng.normal(size=(30, 40)), rng.normal(size=(30, 40))
    evidence = np.where(rng.random((30, 40)) < 0.1, rng.random((30, 40)), 0.0)
    zh = np.arange(40) % 3 == 0
    qzh = [bool(i % 2) for i in range(30)]
    other = np.array([[z != q for z in zh] for q in qzh])
    blend = 0.7 * standardised(strong, zh) + 0.3 * standardised(static, zh) + evidence * other
    rank = gated(blend, zh, qzh)
    for qi in range(30):
        scores, competes = calibrated_arrays(strong[qi], static[qi], zh, qzh[qi], evidence=evidence[qi])
        assert rank(qi) == list(np.lexsort((-scores, ~competes)))


def test_an_other_language_memory_below_the_gate_or_past_the_cap_follows_every_competing_one() -> None:
    zh = np.array([False, False, True, True, True, True, True])
    scores = np.array([[1.0, 0.0, 2.0, 1.5, 1.4, 0.3, 0.9]])  # an English question
    assert gated(scores, zh, [False], gate=0.8, cap=3)(0) == [2, 3, 4, 0, 1, 6, 5]
    assert gated(scores, zh, [False], gate=0.8, cap=1)(0) == [2, 0, 1, 3, 4, 6, 5]
    assert gated(scores, zh, [False], gate=0.0, cap=3)(0) == [2, 3, 4, 0, 1, 6, 5]
    assert gated(scores, zh, [False], gate=-1.5, cap=3)(0) == [0, 1, 2, 3, 4, 6, 5]


def test_a_bank_with_nothing_in_the_questions_language_ranks_every_memory_by_its_score() -> None:
    zh = np.array([True, True, True])
    assert gated(np.array([[0.1, 0.9, 0.5]]), zh, [False])(0) == [1, 2, 0]
