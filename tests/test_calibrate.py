"""The calibrated cross-language ranking (membank.domains.recall.calibrate), a pure function."""

from __future__ import annotations

import math

from membank.domains.recall.calibrate import MIN_POOL, Candidate, calibrate, script_language


def _pool(language: str, n: int, base: float, step: float = 0.01, start: int = 0) -> list[Candidate]:
    return [Candidate(f"{language}{start + i}", base + step * i, base + step * i, language) for i in range(n)]


def test_script_language() -> None:
    assert script_language("主角在河边的战斗中受伤了吗？") == "zh"
    assert script_language("Lin Mo 林默 was wounded") == "en"  # a Chinese name in English text
    assert script_language("沈青崖在 Fort Greywater 失去了两根手指") == "zh"  # English names in Chinese text
    assert script_language("The hero was wounded (林).") == "en"
    assert script_language("") == "en" and script_language("123 !?") == "en"


def test_an_other_language_answer_that_stands_out_wins_over_a_raw_score_bias() -> None:
    # English memories all score high (the query's language), none stands out; one Chinese memory
    # stands far out of its own pool although its raw cosine is below every English one
    english = _pool("en", 10, 0.60)
    chinese = _pool("zh", 9, 0.20, step=0.001) + [Candidate("answer", 0.45, 0.40, "zh")]
    ranked = calibrate(english + chinese, "en")
    assert ranked[0].key == "answer"
    assert ranked[0].language == "zh"


def test_an_unremarkable_other_language_memory_never_takes_a_same_language_place() -> None:
    # the English answer stands far out of its pool; the best Chinese memory is only the top of an
    # even spread: it follows every English candidate, though plain standardisation ranks it second
    english = _pool("en", 10, 0.30, step=0.01) + [Candidate("answer", 0.80, 0.70, "en")]
    chinese = _pool("zh", 10, 0.20, step=0.02)
    plain = calibrate(english + chinese, "en", gate=math.inf)
    assert plain[0].key == "answer" and plain[1].language == "zh"
    ranked = calibrate(english + chinese, "en")
    assert ranked[0].key == "answer"
    assert [c.language for c in ranked[:11]] == ["en"] * 11
    assert [c.key for c in ranked[11:]] == [f"zh{i}" for i in range(9, -1, -1)]  # own order kept
    assert all(c.competes for c in ranked[:11]) and not any(c.competes for c in ranked[11:])
    assert ranked[11].score > ranked[10].score  # its standing is kept; it just does not compete


def test_an_infinite_gate_is_plain_pool_standardisation() -> None:
    english = _pool("en", 10, 0.30, step=0.02)
    chinese = _pool("zh", 10, 0.10, step=0.02)
    ranked = calibrate(english + chinese, "en", gate=math.inf)
    assert {ranked[0].key, ranked[1].key} == {"en9", "zh9"}  # equal standing within their pools
    assert abs(ranked[0].score - ranked[1].score) < 1e-9


def test_a_small_pool_is_measured_against_all_candidates() -> None:
    # two Chinese memories only: too few to standardise, so they keep their raw standing (low)
    english = _pool("en", 10, 0.50, step=0.02)
    chinese = [Candidate("zh-a", 0.10, 0.10, "zh"), Candidate("zh-b", 0.12, 0.12, "zh")]
    assert MIN_POOL > 2
    ranked = calibrate(english + chinese, "en")
    assert [c.key for c in ranked[-2:]] == ["zh-b", "zh-a"]


def test_every_candidate_once_ties_in_input_order_and_empty() -> None:
    same = [Candidate(i, 0.5, 0.5, "en") for i in range(12)]
    ranked = calibrate(same, "en")
    assert [c.key for c in ranked] == list(range(12))
    assert all(c.score == 0.0 for c in ranked)
    assert calibrate([], "zh") == []


def test_weight_chooses_between_the_models() -> None:
    # a strong-model favourite against a static-model favourite, same language
    others = [Candidate(f"o{i}", 0.1, 0.1, "en") for i in range(MIN_POOL)]
    strong_pick, static_pick = Candidate("strong", 0.9, 0.1, "en"), Candidate("static", 0.1, 0.9, "en")
    assert calibrate(others + [strong_pick, static_pick], "en", weight=0.8)[0].key == "strong"
    assert calibrate(others + [strong_pick, static_pick], "en", weight=0.2)[0].key == "static"


def test_the_array_form_ranks_as_calibrate_does() -> None:
    import numpy as np

    from membank.domains.recall.calibrate import calibrated_arrays

    rng = np.random.default_rng(7)
    for query_language in ("en", "zh"):
        n = 40
        strong, static = rng.normal(0.3, 0.1, n), rng.normal(0.4, 0.1, n)
        langs = ["zh" if i % 4 == 0 else "en" for i in range(n)]
        ranked = calibrate([Candidate(i, strong[i], static[i], langs[i]) for i in range(n)], query_language)
        scores, competes = calibrated_arrays(strong, static, np.array([x == "zh" for x in langs]), query_language == "zh")
        assert np.allclose([c.score for c in sorted(ranked, key=lambda c: c.key)], scores)
        assert [c.competes for c in sorted(ranked, key=lambda c: c.key)] == list(competes)


def test_strong_scores_are_on_the_cosines_scale_and_rank_calibrated() -> None:
    """The product's strong score (recall/rank.py): the Chinese answer that stands out of its pool ranks
    first for an English query although its raw cosine is below every English memory's; an unremarkable
    other-language memory scores below every competing one; rows not allowed score 0; all in [0, 1]."""
    import numpy as np

    from membank.domains.recall.rank import strong_scores

    english = [0.60 + 0.01 * i for i in range(10)]
    chinese = [0.20 + 0.001 * i for i in range(9)] + [0.45]
    strong = np.array(english + chinese + [0.99])
    zh = np.array([False] * 10 + [True] * 10 + [False])
    allowed = np.array([True] * 20 + [False])  # the last: not eligible (another document's), never scored
    scores = strong_scores(strong, strong.copy(), zh, False, allowed)
    assert int(np.argmax(scores)) == 19 and scores[20] == 0.0
    assert ((scores >= 0) & (scores <= 1)).all()
    # a flat Chinese pool: its best does not compete, and follows every English memory above its pool's mean
    flat = np.array(english + [0.20 + 0.02 * i for i in range(10)] + [0.0])
    flat[9] = 0.95  # the English answer stands far out
    scores = strong_scores(flat, flat.copy(), zh, False, allowed)
    assert int(np.argmax(scores)) == 9
    assert scores[10:20].max() < min(s for s in scores[:10] if s > 0)


def test_only_the_best_cap_other_language_candidates_compete() -> None:
    # nothing stands out of the English pool, so every Chinese memory passes the gate: only the best `cap`
    # of them compete (ranked by score among the English ones); the rest follow every competing candidate
    english = _pool("en", 10, 0.30, step=0.001)
    chinese = _pool("zh", 10, 0.10, step=0.02)
    ranked = calibrate(english + chinese, "en", gate=math.inf, cap=2)
    competing = [c.key for c in ranked if c.competes and c.language == "zh"]
    assert competing == ["zh9", "zh8"]
    assert [c.key for c in ranked[-8:]] == [f"zh{i}" for i in range(7, -1, -1)]
    assert [c.language for c in ranked[:12]].count("zh") == 2
    assert not any(c.competes for c in calibrate(english + chinese, "en", gate=math.inf, cap=0) if c.language == "zh")
    # a bank with nothing in the query's language: every candidate competes, the cap keeps no place
    assert all(c.competes for c in calibrate(chinese, "en", cap=2))


def test_the_array_form_caps_as_calibrate_does() -> None:
    import numpy as np

    from membank.domains.recall.calibrate import calibrated_arrays

    rng = np.random.default_rng(11)
    n = 60
    strong, static = rng.normal(0.3, 0.1, n), rng.normal(0.4, 0.1, n)
    strong[[5, 7, 9]] = static[[5, 7, 9]] = 0.9  # the best three Chinese ones, tied: input order decides
    langs = ["zh" if i % 2 else "en" for i in range(n)]
    zh = np.array([x == "zh" for x in langs])
    assert calibrated_arrays(strong[zh], static[zh], zh[zh], False, cap=1)[1].all()  # nothing in English: no cap
    for cap in (0, 1, 3, 100):
        ranked = calibrate([Candidate(i, strong[i], static[i], langs[i]) for i in range(n)], "en", gate=math.inf, cap=cap)
        _, competes = calibrated_arrays(strong, static, zh, False, gate=math.inf, cap=cap)
        assert [c.competes for c in sorted(ranked, key=lambda c: c.key)] == list(competes)
        assert int((competes & zh).sum()) == min(cap, int(zh.sum()))
        if cap == 1:
            assert list(np.flatnonzero(competes & zh)) == [5]
