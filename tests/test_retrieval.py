"""Semantic recall earns its keep on the labelled set: fused ranking far ahead of the deterministic order."""

from __future__ import annotations

from benchmarks.retrieval import evaluate


def test_fused_ranking_beats_deterministic_order_and_each_retriever_alone() -> None:
    results = evaluate()
    fused, deterministic = results["fused"]["all"], results["deterministic"]["all"]
    assert fused["queries"] >= 40
    assert fused["recall@5"] >= deterministic["recall@5"] + 0.5
    assert fused["mrr"] >= deterministic["mrr"] + 0.5
    for single in ("lexical", "vector"):
        assert fused["recall@5"] >= results[single]["all"]["recall@5"]
    assert results["fused"]["zh"]["recall@5"] >= 0.5  # Chinese queries find Chinese memories
