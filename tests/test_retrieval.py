"""Semantic recall earns its keep on the labelled set: fused ranking far ahead of the deterministic order;
the set itself stays well formed, and the benchmark's per-group figures count what they say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.retrieval import groups_of, lookalike_first, other_language, score

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "retrieval"


def test_fused_ranking_beats_deterministic_order_and_each_retriever_alone() -> None:
    from benchmarks.retrieval import evaluate

    results = evaluate()
    assert results["fused"]["all"]["queries"] >= 200
    # same-language questions (every answer in the query's language): where both retrievers can help
    fused, deterministic = results["fused"]["monolingual"], results["deterministic"]["monolingual"]
    assert fused["queries"] >= 90
    assert fused["recall@5"] >= deterministic["recall@5"] + 0.5
    assert fused["mrr"] >= deterministic["mrr"] + 0.5
    for single in ("lexical", "vector"):
        assert fused["recall@5"] >= results[single]["monolingual"]["recall@5"]
    assert results["fused"]["zh"]["recall@5"] >= 0.5  # Chinese queries find Chinese memories
    for group in ("en-zh", "zh-en", "paraphrase", "distractor"):
        assert results["fused"][group]["queries"] >= 17
    assert 0 <= results["fused"]["monolingual"]["other@5"] <= 5


def test_the_fixture_is_well_formed_and_hard_paraphrases_share_no_content_word() -> None:
    done = subprocess.run([sys.executable, str(FIXTURE / "validate.py"), "--structure"],
                          capture_output=True, text=True, encoding="utf-8")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout


def test_groups_of_a_query() -> None:
    assert groups_of({"lang": "en", "relevant": ["a"], "monolingual": True}) == ["en", "monolingual"]
    assert groups_of({"lang": "en", "relevant": ["a"], "cross": True, "cross_all": True}) == ["en-zh"]
    assert groups_of({"lang": "zh", "relevant": ["a"], "cross": True, "cross_all": True,
                      "hard": True, "distractors": ["b"]}) == ["zh-en", "distractor"]
    assert groups_of({"lang": "zh", "relevant": ["a"], "cross": True}) == ["zh"]  # mixed answers
    assert groups_of({"lang": "zh", "relevant": ["a"], "monolingual": True, "paraphrase": True}) == \
        ["zh", "paraphrase", "monolingual"]


def test_other_language_counts_only_unrelated_memories_in_the_other_language_in_the_top_5() -> None:
    langs = {"e1": "en", "e2": "en", "z1": "zh", "z2": "zh", "z3": "zh", "z4": "zh"}
    query = {"lang": "en", "relevant": ["e1", "z1"]}
    assert other_language(["z1", "z2", "e2", "z3", "e1", "z4"], query, langs) == 2  # z4 is 6th; z1 relevant
    assert other_language([], query, langs) == 0


def test_lookalike_first_and_score() -> None:
    query = {"relevant": ["a"], "distractors": ["d"]}
    assert lookalike_first(["x", "d", "a"], query)
    assert not lookalike_first(["a", "d"], query)
    assert not lookalike_first(["x"], query)
    assert score(["x", "a", "b"], {"a", "b"}) == (1.0, 0.5)
    assert score(["x"] * 5 + ["a"], {"a"}) == (0.0, 1 / 6)


def test_the_strong_tier_is_left_out_when_it_cannot_run_and_ranked_by_cosine_when_it_can(monkeypatch) -> None:
    import numpy as np

    from benchmarks import retrieval
    from membank.index import strong

    def unavailable(folder: object = None) -> strong.StrongEncoder:
        raise strong.StrongUnavailable("no strong model here")

    monkeypatch.setattr(strong, "load_strong", unavailable)
    assert retrieval.strong_rankers({"a": "x"}) == {}  # the tier cannot run: the table shows the static tier only

    class Letters:  # a text's vector: its first letter, one-hot
        def encode(self, texts: list[str], query: bool) -> np.ndarray:
            rows = np.zeros((len(texts), 26), dtype=np.float32)
            for i, t in enumerate(texts):
                rows[i, ord(t[0]) - ord("a")] = 1.0
            return rows

    monkeypatch.setattr(strong, "load_strong", lambda folder=None: strong.StrongEncoder("letters", 26, Letters()))
    rank = retrieval.strong_rankers({"m1": "apple", "m2": "banana", "m3": "avocado"})["vector"]
    assert rank("bread") == ["m2", "m1", "m3"]
    assert rank("ant")[:2] == ["m1", "m3"]
