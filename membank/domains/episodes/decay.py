"""How an episode fades (episodes.md, Lifecycle): pure, reproducible from the journal at a given time.

score = importance boost × exp(−λ · days since the last recall, or since creation)
        × (1 + RECALL_BOOST × recallCount), clamped to 0..1

A fresh episode of middling importance (0.5) starts at 1.0 and stays `active` for about two weeks,
`decaying` until about seven weeks, `to_compress` until about fourteen; each recall restarts the clock
and raises the score. A pinned episode does not fade."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where it computes: neither listing the channels nor opening a project needs it
    import numpy as np

HALF_LIFE_DAYS = 30.0
LAMBDA = math.log(2) / HALF_LIFE_DAYS
RECALL_BOOST = 0.2
ACTIVE, DECAYING, TO_COMPRESS, TO_EVICT = "active", "decaying", "to_compress", "to_evict"
LEVELS = ((0.7, ACTIVE), (0.3, DECAYING), (0.1, TO_COMPRESS))


def importance_boost(importance: float) -> float:
    """0.6 at importance 0, 1.0 at 0.5, 1.4 at 1: importance stretches an episode's life."""
    return 0.6 + 0.8 * min(1.0, max(0.0, importance))


def seconds(iso: str) -> float:
    """An ISO time as membank writes it (`2026-11-23T10:00:00.000000Z`) in seconds since the epoch."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def days_between(earlier: str, later: datetime) -> float:
    """Days from an ISO time to `later`; never negative."""
    return max(0.0, (later.timestamp() - seconds(earlier)) / 86400)


def score(importance: float, created_at: str, last_recalled_at: str | None, recall_count: int, now: datetime,
          pinned: bool = False) -> float:
    if pinned:
        return 1.0
    days = days_between(last_recalled_at or created_at, now)
    value = importance_boost(importance) * math.exp(-LAMBDA * days) * (1 + RECALL_BOOST * max(0, recall_count))
    # as numpy's round (`scores`): times 10^4, to the nearest integer (halves to even), divided back;
    # Python's round(x, 4) decides halves on x's exact binary value and disagreed on some (0.00375)
    return round(min(1.0, max(0.0, value)) * 10_000) / 10_000


def level(value: float) -> str:
    for floor, name in LEVELS:
        if value >= floor:
            return name
    return TO_EVICT


def scores(importance: np.ndarray, since: np.ndarray, recall_count: np.ndarray, pinned: np.ndarray,
           now: float) -> np.ndarray:
    """`score` for many episodes at once: `since` is the last recall or the creation, in seconds since
    the epoch, as `now`. Equal to `score` (tests hold them so), fast enough for thousands per query."""
    import numpy as np

    days = np.maximum(0.0, (now - since) / 86400)
    boost = 0.6 + 0.8 * np.clip(importance, 0.0, 1.0)
    value = boost * np.exp(-LAMBDA * days) * (1 + RECALL_BOOST * np.maximum(0, recall_count))
    return np.where(pinned != 0, 1.0, np.round(np.clip(value, 0.0, 1.0), 4))
