"""Whether semantic recall can run now, and why not: the previews ask it before each search, and
`index:status` reports it without importing the recall stack (tests/test_startup.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..contract import Bank
from .rank import EMBEDDING_DIM_MISMATCH, MODEL_UNAVAILABLE, VEC_UNAVAILABLE, Reason

if TYPE_CHECKING:
    from ...index.embed import ModelInfo


def semantic_problem(bank: Bank, described: ModelInfo | str | None = None) -> Reason | None:
    """Why semantic recall cannot run now, or None when it can; with `described` (the model's files
    read, `Bank.model_info`), without loading the model."""
    if bank.index.vec_error is not None:
        return Reason(VEC_UNAVAILABLE, bank.index.vec_error + "; memories are in deterministic order")
    model: Any = described if described is not None else bank.embedder()
    if isinstance(model, str):
        return Reason(MODEL_UNAVAILABLE, f"{model}; memories are in deterministic order")
    if model is None:
        return Reason(MODEL_UNAVAILABLE, f"{bank.model.why() or 'no model'}; memories are in deterministic order")
    from ...index.embed import mismatch  # the model's code, at the call: the context channel imports this module

    why = mismatch(bank.index.vector_model(), model)
    if why is not None:
        return Reason(EMBEDDING_DIM_MISMATCH, f"{why}; run `membank index --rebuild`")
    return None
