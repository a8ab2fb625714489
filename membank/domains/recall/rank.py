"""Ranking what goes into a prompt: score fusion, the semantic ranking, the items and reasons given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from ...kernel.budget import fit
from ...index.fusion import VECTOR_WEIGHT as VECTOR_WEIGHT, Hit as Hit, fuse as fuse
from .calibrate import calibrated_arrays, vector_scores
from .order import deterministic_detail

if TYPE_CHECKING:
    import numpy as np

# Degradation reason codes (api.md): the call still succeeds and says why it fell back.
EMPTY_QUERY = "EMPTY_QUERY"
VEC_UNAVAILABLE = "VEC_UNAVAILABLE"
MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
EMBEDDING_DIM_MISMATCH = "EMBEDDING_DIM_MISMATCH"
QUERY_NOT_EMBEDDABLE = "QUERY_NOT_EMBEDDABLE"
INJECTION_DISABLED = "INJECTION_DISABLED"
# not a degradation: semantic recall runs on the static tier while the strong one is being filled
STRONG_VECTORS_PENDING = "STRONG_VECTORS_PENDING"


@dataclass(frozen=True)
class Reason:
    code: str
    message: str

    def to_api(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def item(memory: dict[str, Any], tokens: int, reason: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": memory["id"],
        "type": memory["type"],
        "scope": memory["scope"],
        "origin": memory["origin"],
        "content": memory["content"],
        "source": memory["source"],
        "tokens": tokens,
        "reason": reason,
    }


def deterministic_items(candidates: Iterable[tuple[dict[str, Any], int]], max_items: int, token_budget: int) -> list[dict[str, Any]]:
    return [
        item(memory, tokens, {"mode": "deterministic", "rank": rank, "detail": deterministic_detail(memory)})
        for rank, (memory, tokens) in enumerate(fit(candidates, max_items, token_budget), start=1)
    ]


# Weight of the vector side in the fused score for the strong tier's calibrated scores (`strong_scores`;
# the static tier's is index/fusion.py VECTOR_WEIGHT): the words then mostly add noise (a
# look-alike shares the answer's names; an other-language answer shares no word), and on the same set
# 0.8 scores best (benchmarks/retrieval.py, docs/recall.md): 0.5 there drops en→zh recall@5 to 0.07.
STRONG_VECTOR_WEIGHT = 0.8


def strong_scores(centred: np.ndarray, static: np.ndarray, zh: np.ndarray, query_zh: bool,
                  allowed: np.ndarray, evidence: np.ndarray | None = None) -> np.ndarray:
    """The strong tier's score of each memory for a query, higher is better, in [0, 1] as a cosine is:
    the one place the strong tier's ranking is decided. Per row of the bank's strong vectors: `centred`,
    its strong cosine with each language's mean removed; `static`, its static cosine; `zh`, whether its
    text is Chinese; `allowed`, the rows that compete (the others score 0). The competing rows are
    calibrated together (recall/calibrate.py: per-language pools standardised, strong and static
    blended, the other language gated; `evidence`, the name bridge's of each row, recall/bridge.py, lifts an
    other-language row that names a card the query names), then put on the cosine's scale (`vector_scores`),
    so `fuse` takes 1 - score as it takes the static tier's cosine distance and the fused score stays in [0, 1]."""
    import numpy as np

    out = np.zeros(len(centred), np.float64)
    if allowed.any():
        scores, competes = calibrated_arrays(centred[allowed], static[allowed], zh[allowed], query_zh,
                                             evidence=None if evidence is None else evidence[allowed])
        out[allowed] = vector_scores(scores, competes)
    return out


def rank_semantic(hits: list[Hit], eligible: dict[int, tuple[int, tuple[Any, ...]]], max_items: int,
                  token_budget: int) -> list[tuple[Hit, int]]:
    """The hits a semantic preview keeps, best first, with their tokens. `eligible` maps a rowid to its
    (tokens, `deterministic_key`); hits not in it are left out. Equal fused scores (rounded, so float
    noise cannot decide) go by the deterministic order."""
    ranked = sorted((h for h in hits if h.rowid in eligible), key=lambda h: (-round(h.fused, 9), eligible[h.rowid][1]))
    return list(fit(((h, eligible[h.rowid][0]) for h in ranked), max_items, token_budget))


def semantic_items_for(chosen: list[tuple[Hit, int]], records: dict[int, dict[str, Any]],
                       tier: str = "static") -> list[dict[str, Any]]:
    """Preview items for `rank_semantic`'s choice, with their scores and reasons; `tier`: which vectors
    the vector side used (`static` or `strong`)."""
    items = []
    side = "strong vector" if tier == "strong" else "vector"
    for rank, (h, tokens) in enumerate(chosen, start=1):
        score = {"fused": round(h.fused, 6), "vector": _round(h.similarity), "vectorRank": h.vector_rank,
                 "lexical": _round(-h.bm25 if h.bm25 is not None else None), "lexicalRank": h.lexical_rank,
                 "tier": tier}
        parts = [f"{side} #{h.vector_rank} ({h.similarity:.3f})" if h.vector_rank else f"no {side} match",
                 f"lexical #{h.lexical_rank}" if h.lexical_rank else "no word match"]
        items.append(item(records[h.rowid], tokens, {"mode": "semantic", "rank": rank, "score": score,
                                                     "detail": ", ".join(parts) + "; ties by deterministic order"}))
    return items


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
