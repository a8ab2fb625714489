"""Which past episodes are most like this run (episodes.md, `memory:episode:query`): pure.

Episodes of the asked sceneType come first; within each group, by semantic similarity of the
episode's text to the query, weighted by its decay score (similarity × decay; decay alone without
a query); then the newest, then by id, so equal scores always come out in the same order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .decay import level, scores

if TYPE_CHECKING:  # imported where it computes: neither listing the channels nor opening a project needs it
    import numpy as np

    from .candidates import Candidates


@dataclass(frozen=True)
class Ranked:
    id: str
    rank: int
    score: float
    decay: float
    similarity: float | None  # None without a query to compare with
    scene_match: bool

    def reason(self, scene: str | None) -> dict[str, Any]:
        parts = []
        if scene is not None:
            parts.append(f"sceneType {scene}" if self.scene_match else f"another sceneType than {scene}")
        parts.append(f"similarity {self.similarity:.2f} × decay {self.decay:.2f}" if self.similarity is not None
                     else f"decay {self.decay:.2f}")
        return {"rank": self.rank, "score": self.score, "decay": self.decay, "level": level(self.decay),
                "similarity": self.similarity, "sceneMatch": self.scene_match, "detail": " · ".join(parts)}


def rank(found: Candidates, similarity: np.ndarray | None, scene: str | None, now: float, limit: int) -> list[Ranked]:
    """The best `limit` episodes. `similarity` is each candidate's cosine to the query (0 for one with
    no vector), or None when there is no query."""
    import numpy as np

    live = found.live
    if not live:
        return []
    decay = scores(found.importance, found.since, found.recall_count, found.pinned, now)
    score = decay * np.clip(similarity, 0.0, 1.0) if similarity is not None else decay
    score = np.round(score, 6)
    match = found.scene_mask(scene)
    key = score + 2.0 * match  # the asked sceneType first, then the score
    if found.alive is not None:
        key = np.where(found.alive, key, -np.inf)  # an evicted episode's row, left in place: never chosen
    if live > limit:  # only the best (and whatever ties with the last of them) need sorting
        floor = np.partition(key, len(key) - limit)[len(key) - limit]
        pool = [int(i) for i in np.flatnonzero(key >= floor)]
    else:
        pool = list(range(len(key))) if found.alive is None else [int(i) for i in np.flatnonzero(found.alive)]
    pool.sort(key=lambda i: found.ids[i])
    pool.sort(key=lambda i: found.created[i], reverse=True)
    pool.sort(key=lambda i: -key[i])
    return [Ranked(found.ids[i], n, round(float(score[i]), 4), float(decay[i]),
                   None if similarity is None else round(float(similarity[i]), 4), bool(match[i]))
            for n, i in enumerate(pool[:limit], start=1)]
