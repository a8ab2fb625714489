"""Which tier of vectors a query ranks with (recall.md, Tiers): the strong tier when it is on, can run
here and every memory the query may find has a strong vector of the current model; else the static
tier, with STRONG_VECTORS_PENDING when the strong one is merely incomplete. Off or unavailable is said
in `index:status`, never per query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...index import strongload
from ..contract import Bank
from . import queries
from .rank import STRONG_VECTORS_PENDING, Reason, strong_scores

if TYPE_CHECKING:
    import numpy as np

    from ...index.strong import StrongEncoder


@dataclass(frozen=True)
class StrongQuery:
    encoder: StrongEncoder
    vector: np.ndarray  # the query, embedded by the strong model


@dataclass(frozen=True)
class StrongSide:
    """The strong tier's vector side of one query, or why the static tier ranks it."""

    nearest: list[tuple[int, float]] | None  # (rowid, 1 - score), best first; None: the static tier ranks
    keys: dict[int, tuple[int, tuple[Any, ...]]] = field(default_factory=dict)  # queries.eligible_keys
    reason: Reason | None = None  # STRONG_VECTORS_PENDING, when that is why


def strong_query(bank: Bank, query_text: str) -> StrongQuery | None:
    """The query embedded by the strong model (outside any lock: ~13 ms), or None when the tier is off,
    cannot run here, or the query embeds to nothing. Loads the model at the first query that needs it."""
    if not strongload.switched_on(bank.settings_files.embedding()):
        return None
    encoder = strongload.handle(bank.memo).get()
    if encoder is None:
        return None
    vector = encoder.queries([query_text])[0]
    return StrongQuery(encoder, vector) if vector.any() else None


def strong_side(bank: Bank, query: StrongQuery | None, k: int, document: str | None) -> StrongSide:
    """The k best memories for `document` by the strong tier, under the index's lock (as `queries.candidates`)."""
    if query is None:
        return StrongSide(None)
    model = (query.encoder.name, query.encoder.dim)
    nearest, keys, missing, total = queries.strong_nearest(bank.index, model, query.vector, k, document, strong_scores)
    if missing:
        return StrongSide(None, reason=Reason(
            STRONG_VECTORS_PENDING, f"{total - missing} of {total} memories have their strong vector; ranked with"
            " the static vectors until the rest are embedded in the background"))
    return StrongSide(nearest, keys)
