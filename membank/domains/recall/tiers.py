"""Which tier of vectors a query ranks with (recall.md, Tiers): the strong tier when it is on, can run
here and every memory the query may find has a strong vector of the current model; else the static
tier, with STRONG_VECTORS_PENDING when the strong one is merely incomplete. Off or unavailable is said
in `index:status`, never per query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...index.strongquery import StrongQuery, embed_query
from ..contract import Bank
from . import bridgebank, queries
from .rank import STRONG_VECTORS_PENDING, Reason, strong_scores

if TYPE_CHECKING:
    import numpy as np

    from ...index import Index
    from ...index.strongcopy import StrongVectors


@dataclass(frozen=True)
class StrongSide:
    """The strong tier's vector side of one query, or why the static tier ranks it."""

    nearest: list[tuple[int, float]] | None  # (rowid, 1 - score), best first; None: the static tier ranks
    keys: dict[int, tuple[int, tuple[Any, ...]]] = field(default_factory=dict)  # queries.eligible_keys
    reason: Reason | None = None  # STRONG_VECTORS_PENDING, when that is why
    # each ranked memory's centred strong cosine (its languages' means removed, before calibration): an
    # absolute measure of relevance, where the calibrated score only says how far it stands out of its pool
    centred: dict[int, float] = field(default_factory=dict)


def strong_query(bank: Bank, query_text: str) -> StrongQuery | None:
    """The query embedded by the strong model for this bank (`index.strongquery.embed_query`)."""
    return embed_query(bank.settings_files.embedding(), bank.memo, query_text)


def strong_side(bank: Bank, query: StrongQuery | None, k: int, document: str | None,
                static: np.ndarray | None = None) -> StrongSide:
    """The k best memories for `document` by the strong tier, under the index's lock (as `queries.candidates`),
    scored by `strong_scores` (calibrated across languages, with `static`, the query's static vector,
    for the static side of the blend; without it, the strong cosines alone)."""
    if query is None:
        return StrongSide(None)
    model = (query.encoder.name, query.encoder.dim)
    index = bank.index

    seen: dict[str, Any] = {}

    def scorer(copy: StrongVectors, allowed: np.ndarray) -> np.ndarray:
        # the competing rows alone (an assembly's are about half the copy: no cards, no preferences, no
        # document's own memories): the very numbers of a pass over every row, at those rows
        import numpy as np

        at = np.flatnonzero(allowed)
        centred = np.zeros(len(copy), np.float32)
        centred[at] = copy.centred_cosines(query.vector, query.zh, at)
        seen["copy"], seen["centred"] = copy, centred
        return strong_scores(centred, static_cosines(index, copy, static), copy.zh, query.zh, allowed,
                             bridgebank.evidence(index, copy, query.text))

    nearest, keys, missing, total = queries.strong_nearest(index, model, query.vector, k, document, scorer)
    if missing:
        return StrongSide(None, reason=Reason(
            STRONG_VECTORS_PENDING, f"{total - missing} of {total} memories have their strong vector; ranked with"
            " the static vectors until the rest are embedded in the background (by `membank serve`, `membank watch`"
            " or a program that keeps the project open)"))
    return StrongSide(nearest, keys, centred=_centred_of(seen, [r for r, _ in nearest]))


def _centred_of(seen: dict[str, Any], rowids: list[int]) -> dict[int, float]:
    if not rowids or "copy" not in seen:
        return {}
    import numpy as np

    copy = seen["copy"]
    at = np.flatnonzero(np.isin(copy.rowids, np.array(rowids, np.int64)))
    return {int(copy.rowids[i]): float(seen["centred"][i]) for i in at}


def static_rows(index: Index, copy: StrongVectors, static: Any) -> np.ndarray:
    """Where each of `copy`'s rows lies in the static copy `static` (-1: a row with no static vector), worked
    out once per pair of copies."""
    import numpy as np

    key = (copy.tag, static.tag)
    cached = index.caches.get("recall.strong_static")
    if cached is None or cached[0] != key:
        order = np.argsort(static.rowids, kind="stable")
        at = np.searchsorted(static.rowids[order], copy.rowids)
        at = np.minimum(at, len(order) - 1)
        found = static.rowids[order][at] == copy.rowids
        cached = (key, np.where(found, order[at], -1))
        index.caches["recall.strong_static"] = cached
    return cached[1]  # type: ignore[no-any-return]


def static_cosines(index: Index, copy: StrongVectors, vector: np.ndarray | None) -> np.ndarray:
    """The static cosine of each of `copy`'s rows with the query's static `vector` (0 for a row with no
    static vector, and for all without a query vector or a static copy). Where each strong row's static
    row lies is worked out once per pair of copies."""
    import numpy as np

    static = index.vector_copy() if vector is not None else None
    if static is None or not len(static) or vector is None:
        return np.zeros(len(copy), np.float32)
    where = static_rows(index, copy, static)
    q = np.asarray(vector, np.float32)
    q = q / (np.float32(np.linalg.norm(q)) or np.float32(1.0))
    every = np.einsum("ij,j->i", static.matrix, q) / np.where(static.norms > 0, static.norms, 1.0)
    return np.where(where >= 0, every[np.maximum(where, 0)], 0.0).astype(np.float32)
