"""`memory:injection:preview`: what would go into the prompt, in order, with the reasons given."""

from __future__ import annotations

import time
from typing import Any

from ...kernel.paths import document_path
from ..contract import Bank
from ..story import positions
from . import cards as bank_cards, passages as bank_passages, queries, terms, tiers
from .rank import (EMPTY_QUERY, INJECTION_DISABLED, QUERY_NOT_EMBEDDABLE,
                   STRONG_VECTOR_WEIGHT, VECTOR_WEIGHT, Reason, deterministic_items, fuse, rank_semantic, semantic_items_for)
from .readiness import semantic_problem

# How many eligible neighbours each retriever proposes (at least; injectionMaxItems if larger)
# before the budgets cut them down.
CANDIDATES = 256


def preview(bank: Bank, query_text: str | None = None, document_id: str | None = None) -> dict[str, Any]:
    """The preview at the document's story position: memories the story has not reached there (or
    that no longer hold) are left out, as in `context:assemble`; without a document, only timeless ones.
    With a query, the cards and world entries it finds (`cards`) and the passages before the document
    (`passages`) are listed too."""
    started = time.perf_counter()
    document = document_path(document_id) if document_id is not None else None
    with bank.index.lock:
        hidden = positions.hidden_memories(bank.index, positions.story_order(bank), document)
    with queries.hiding(hidden):
        answer = _preview_at(bank, query_text, document, started)
    # the manuscript's passages before the document (recall/passages.py), found when the cards are
    answer["passages"] = bank_passages.search(bank, query_text, document, answer["mode"] == "semantic") \
        if query_text and bank.settings_files.memory()["injectionEnabled"] else []
    answer["diagnostics"]["tookMs"] = round((time.perf_counter() - started) * 1000, 3)
    return answer


def _preview_at(bank: Bank, query_text: str | None, document: str | None, started: float) -> dict[str, Any]:
    memory = bank.settings_files.memory()
    reasons: list[Reason] = []
    if not memory["injectionEnabled"]:
        reasons.append(Reason(INJECTION_DISABLED, "injection is turned off in settings (memory.injectionEnabled)"))
        return _preview([], "deterministic", reasons, 0, started, degraded=False)
    found: list[dict[str, Any]] = []  # the cards and world entries the query finds (by their words alone here)
    if query_text is not None and not query_text.strip():
        reasons.append(Reason(EMPTY_QUERY, "the query is empty; memories are in deterministic order"))
    elif query_text is not None:
        problem = semantic_problem(bank)
        if problem is None:
            model = bank.embedder()
            assert model is not None
            vector = model.encode([query_text])[0]
            if not vector.any():
                problem = Reason(QUERY_NOT_EMBEDDABLE, "the query has no word the model knows; "
                                 "memories are in deterministic order")
            else:
                return _semantic(bank, vector, query_text, document, memory, started)
        reasons.append(problem)
        with bank.index.lock:
            match = terms.match(bank.index, query_text)
            found = bank_cards.search(bank.index, None, match) if match else []
    with bank.index.lock:
        eligible = queries.eligible_count(bank.index, document)
        items = deterministic_items(queries.fitting(bank.index, document, memory["injectionMaxItems"],
                                                       memory["injectionTokenBudget"]),
                                    memory["injectionMaxItems"], memory["injectionTokenBudget"])
    return _preview(items, "deterministic", reasons, eligible - len(items), started, degraded=bool(reasons),
                    cards=found)


def _semantic(bank: Bank, vector: Any, query_text: str, document: str | None, memory: dict[str, Any],
              started: float) -> dict[str, Any]:
    """Vector neighbours fused with FTS5 matches, eligible memories only: each retriever proposes
    its best eligible candidates (eligibility before the cut), at least as many as may be kept. The
    vector side is the strong tier's when it can rank (tiers.py), else the static tier's."""
    want = max(CANDIDATES, memory["injectionMaxItems"])
    index = bank.index
    strong = tiers.strong_query(bank, query_text)
    with index.lock:
        match = terms.match(index, query_text)
        side = tiers.strong_side(bank, strong, want, document, vector)
        if side.nearest is not None:
            _, lexical, keys = queries.candidates(index, None, match or None, want, document)
            nearest = side.nearest
            keys.update(side.keys)
        else:
            nearest, lexical, keys = queries.candidates(index, vector if index.has_vectors() else None, match or None,
                                                        want, document)
        eligible = queries.eligible_count(index, document)
        weight = STRONG_VECTOR_WEIGHT if side.nearest is not None else VECTOR_WEIGHT
        chosen = rank_semantic(fuse(nearest, lexical, weight), keys, memory["injectionMaxItems"],
                               memory["injectionTokenBudget"])
        records = index.records([h.rowid for h, _ in chosen])  # only the kept ones are decoded
        found = bank_cards.search(index, vector, match or None, strong=strong)
    items = semantic_items_for(chosen, records, "strong" if side.nearest is not None else "static")
    reasons = [side.reason] if side.reason is not None else []
    return _preview(items, "semantic", reasons, eligible - len(items), started, degraded=False, cards=found)


def _preview(items: list[dict[str, Any]], mode: str, reasons: list[Reason], truncated: int, started: float,
             degraded: bool, cards: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`items`: the memories the prompt would take; `cards`: with a query, the characters and world entries
    it finds too (listed, not injected: cards reach a prompt by activation, context.md)."""
    return {
        "items": items,
        "cards": cards or [],
        "mode": mode,
        "diagnostics": {
            "degraded": degraded,
            "reasons": [r.to_api() for r in reasons],
            "truncated": truncated,
            "tokens": sum(i["tokens"] for i in items),
            "tookMs": round((time.perf_counter() - started) * 1000, 3),
        },
    }
