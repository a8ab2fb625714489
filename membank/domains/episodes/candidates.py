"""Every live episode as columns for ranking many at once (`memory:episode:query`, Layer 4).

Read whole once, then kept per generation of the episodes (store.GENERATION). A generation that
only recalled or re-weighed some episodes is applied by re-reading just those rows (the index logs
which ids each generation changed), so a query, which journals a recall, does not make the next
query read thousands of rows again."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ...index import Index
from . import store

KEPT = 4  # tables kept: read threads may see a generation or two behind the writer


@dataclass(frozen=True)
class Candidates:
    ids: list[str]
    scenes: list[str | None]
    since: np.ndarray  # seconds since the epoch of the last recall, or of the creation
    recall_count: np.ndarray
    importance: np.ndarray
    pinned: np.ndarray
    created: list[str]
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))  # a row per episode
    generation: int = 0
    masks: dict[str | None, np.ndarray] = field(default_factory=dict, compare=False)  # sceneType → rows of it

    def scene_mask(self, scene: str | None) -> np.ndarray:
        mask = self.masks.get(scene)
        if mask is None:
            mask = self.masks[scene] = np.fromiter((scene is not None and s == scene for s in self.scenes),
                                                   dtype=bool, count=len(self.ids))
        return mask

    def similarity(self, vector: np.ndarray) -> np.ndarray:
        """Each episode's cosine to a unit vector (0 for one without text, or embedded by another model)."""
        if self.matrix.shape[0] != len(self.ids) or self.matrix.shape[1] != vector.shape[0]:
            return np.zeros(len(self.ids), dtype=np.float32)
        return self.matrix @ vector


_COLUMNS = "id, scene_type, since, recall_count, importance, pinned, created_at, vec"


def _read(index: Index, generation: int) -> Candidates:
    rows = index.db.execute(f"SELECT {_COLUMNS} FROM episodes WHERE evicted = 0 ORDER BY id").fetchall()
    cols = list(zip(*rows)) if rows else [()] * 8
    sizes = [len(v) for v in cols[7] if v]
    size = max(set(sizes), key=sizes.count) if sizes else 0  # two models' vectors before a rebuild: the most
    zero = bytes(size)
    blob = b"".join(v if v and len(v) == size else zero for v in cols[7])
    matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), size // 4) if size else \
        np.zeros((len(rows), 0), dtype=np.float32)
    return Candidates(list(cols[0]), list(cols[1]), np.asarray(cols[2], dtype=np.float64),
                      np.asarray(cols[3], dtype=np.float64), np.asarray(cols[4], dtype=np.float64),
                      np.asarray(cols[5], dtype=np.int64), list(cols[6]), matrix, generation)


def _patched(index: Index, base: Candidates, ids: set[str], generation: int) -> Candidates:
    """`base` with the rows of `ids` read again (recall counts, times, importance, pins)."""
    at = {episode_id: i for i, episode_id in enumerate(base.ids)}
    since, recalls, importance, pinned = (base.since.copy(), base.recall_count.copy(), base.importance.copy(),
                                          base.pinned.copy())
    wanted = [i for i in ids if i in at]
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        for episode_id, s, n, imp, pin in index.db.execute(
                "SELECT id, since, recall_count, importance, pinned FROM episodes WHERE id IN "
                f"({','.join('?' * len(part))})", part).fetchall():
            row = at[episode_id]
            since[row], recalls[row], importance[row], pinned[row] = s, n, imp, pin
    return dataclasses.replace(base, since=since, recall_count=recalls, importance=importance, pinned=pinned,
                               generation=generation, masks=base.masks)


def table(index: Index) -> Candidates:
    """The ranking table at the index's current generation."""
    generation = store.generation(index)
    memo: dict[int, Candidates] = index.caches.setdefault("episodes.candidates", {})
    found = memo.get(generation)
    if found is not None:
        return found
    behind = [g for g in memo if g < generation]
    found = None
    if behind:
        base = memo[max(behind)]
        steps = store.changes(index, base.generation, generation)
        if steps is not None and not any(structural for _, structural in steps):
            found = _patched(index, base, {i for ids, _ in steps for i in ids}, generation)
    if found is None:
        found = _read(index, generation)
    if len(memo) >= KEPT:
        for old in sorted(memo)[:len(memo) - KEPT + 1]:
            memo.pop(old, None)
    memo[generation] = found
    return found
