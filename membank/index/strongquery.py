"""A query embedded by the strong model (recall.md, Tiers), shared by every search that ranks with the
strong tier (the memories', the cards', the manuscript's): one embedding per query text, the encoder
keeping the last ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..kernel.text import script_language
from . import strongload
from ..kernel.log import log

if TYPE_CHECKING:
    import numpy as np

    from .strong import StrongEncoder


_FAILED: set[str] = set()  # the models whose query failed, logged once


@dataclass(frozen=True)
class StrongQuery:
    encoder: StrongEncoder
    vector: np.ndarray  # the query, embedded by the strong model
    zh: bool = False  # whether the query is Chinese (its script): which language's pool it belongs to
    text: str = ""  # as asked (the name bridge reads the names in it: recall/bridge.py)


def embed_query(embedding: dict[str, Any], memo: Any, query_text: str) -> StrongQuery | None:
    """The query embedded by the strong model (outside any lock: ~10 ms), or None when the tier is off
    (`embedding`: the project's `embedding` settings), cannot run here (`memo`: the project's, which holds
    its encoder), the query embeds to nothing (or to NaN), or the model fails on it (logged once per
    model). Loads the model at the first query that needs it."""
    if not strongload.switched_on(embedding):
        return None
    encoder = strongload.handle(memo).get()
    if encoder is None:
        return None
    import numpy as np

    try:
        vector = encoder.queries([query_text])[0]
    except Exception:  # a model that loaded and fails on text (a swapped model.onnx): never the caller's failure
        if encoder.name not in _FAILED:  # logged once per model, not at every query
            _FAILED.add(encoder.name)
            log.exception("the strong model failed on a query; the static tier ranks")
        return None
    if not vector.any() or not np.isfinite(vector).all():  # nothing known, or a model gone wrong: the static tier
        return None
    return StrongQuery(encoder, vector, script_language(query_text) == "zh", query_text)
