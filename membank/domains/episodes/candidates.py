"""Every live episode as columns for ranking many at once (`memory:episode:query`, Layer 4).

Read whole once, then kept per generation of the episodes (store.GENERATION). A later generation
is applied by re-reading just the rows it changed (the index logs which ids each generation
changed), so neither a query (which journals a recall) nor a new episode makes the next query read
thousands of rows again."""

from __future__ import annotations

import threading
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
    rows: dict[str, int] = field(default_factory=dict, compare=False)  # id → row, made when first needed

    def row_of(self) -> dict[str, int]:
        if len(self.rows) != len(self.ids):
            self.rows.update((episode_id, i) for i, episode_id in enumerate(self.ids))
        return self.rows

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


def _matrix(vectors: list[bytes | None], size: int) -> np.ndarray:
    zero = bytes(size)
    blob = b"".join(v if v and len(v) == size else zero for v in vectors)
    return np.frombuffer(blob, dtype=np.float32).reshape(len(vectors), size // 4) if size else \
        np.zeros((len(vectors), 0), dtype=np.float32)


def _read(index: Index, generation: int) -> Candidates:
    rows = index.db.execute(f"SELECT {_COLUMNS} FROM episodes WHERE evicted = 0 ORDER BY id").fetchall()
    cols = list(zip(*rows)) if rows else [()] * 8
    sizes = [len(v) for v in cols[7] if v]
    size = max(set(sizes), key=sizes.count) if sizes else 0  # two models' vectors before a rebuild: the most
    return Candidates(list(cols[0]), list(cols[1]), np.asarray(cols[2], dtype=np.float64),
                      np.asarray(cols[3], dtype=np.float64), np.asarray(cols[4], dtype=np.float64),
                      np.asarray(cols[5], dtype=np.int64), list(cols[6]), _matrix(list(cols[7]), size), generation)


def _patched(index: Index, base: Candidates, ids: set[str], generation: int) -> Candidates | None:
    """`base` with the rows of `ids` read again: changed in place, added at the end, or taken out when
    gone or evicted. None when a row cannot be patched in (a vector of another size): read whole."""
    found: dict[str, tuple] = {}
    wanted = sorted(ids)
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        found.update((r[0], r) for r in index.db.execute(
            f"SELECT {_COLUMNS}, evicted FROM episodes WHERE id IN ({','.join('?' * len(part))})", part).fetchall())
    size = base.matrix.shape[1] * 4
    at = base.row_of()
    ids_, scenes, created = list(base.ids), list(base.scenes), list(base.created)
    since, recalls, importance, pinned = (base.since.copy(), base.recall_count.copy(), base.importance.copy(),
                                          base.pinned.copy())
    keep = np.ones(len(ids_), dtype=bool)
    rows_changed: dict[int, bytes | None] = {}
    added: list[tuple] = []
    masks = base.masks
    for episode_id in wanted:
        row = found.get(episode_id)
        if row is None or row[8]:  # gone, or evicted
            if episode_id in at:
                keep[at[episode_id]] = False
            continue
        vec = row[7]
        if vec and len(vec) != size:
            if size or base.ids:
                return None
            size = len(vec)
        if episode_id not in at:
            added.append(row)
            continue
        i = at[episode_id]
        if scenes[i] != row[1]:
            masks = {}
        scenes[i], since[i], recalls[i], importance[i], pinned[i], created[i] = row[1], row[2], row[3], row[4], \
            row[5], row[6]
        if vec != (base.matrix[i].tobytes() if size else None):
            rows_changed[i] = vec
    matrix = base.matrix
    if rows_changed or added or not keep.all():
        kept = np.flatnonzero(keep)
        width = size // 4
        matrix = np.empty((len(kept) + len(added), width), dtype=np.float32)  # one copy, whatever changed
        if width == base.matrix.shape[1]:
            matrix[:len(kept)] = base.matrix[kept]
        else:
            matrix[:len(kept)] = 0
        moved = None if len(kept) == len(keep) else {int(old): n for n, old in enumerate(kept)}
        for i, vec in rows_changed.items():
            row = i if moved is None else moved.get(i)
            if row is not None:
                matrix[row] = np.frombuffer(vec, dtype=np.float32) if vec else 0
        if added:
            matrix[len(kept):] = _matrix([r[7] for r in added], size)
        if not keep.all():
            masks = {}
            ids_ = [x for x, k in zip(ids_, keep) if k]
            scenes = [x for x, k in zip(scenes, keep) if k]
            created = [x for x, k in zip(created, keep) if k]
            since, recalls, importance, pinned = since[keep], recalls[keep], importance[keep], pinned[keep]
        if added:
            masks = {scene: np.concatenate([mask[keep] if len(mask) == len(keep) else mask,
                                            [scene is not None and r[1] == scene for r in added]])
                     for scene, mask in masks.items()}
            ids_ += [r[0] for r in added]
            scenes += [r[1] for r in added]
            created += [r[6] for r in added]
            since = np.concatenate([since, [r[2] for r in added]])
            recalls = np.concatenate([recalls, [r[3] for r in added]])
            importance = np.concatenate([importance, [r[4] for r in added]])
            pinned = np.concatenate([pinned, np.asarray([r[5] for r in added], dtype=np.int64)])
    rows = dict(at) if keep.all() else {}
    return Candidates(ids_, scenes, since, recalls, importance, pinned, created, matrix, generation, masks, rows)


_LOCK = threading.Lock()  # the sidecar's read threads share the tables: one builds, the others wait


def table(index: Index) -> Candidates:
    """The ranking table at the index's current generation."""
    generation = store.generation(index)
    with _LOCK:
        return _table(index, generation)


def _table(index: Index, generation: int) -> Candidates:
    memo: dict[int, Candidates] = index.caches.setdefault("episodes.candidates", {})
    found = memo.get(generation)
    if found is not None:
        return found
    behind = [g for g in memo if g < generation]
    found = None
    if behind:
        base = memo[max(behind)]
        steps = store.changes(index, base.generation, generation)
        if steps is not None and not any(unlisted for _, unlisted in steps):
            found = _patched(index, base, {i for ids, _ in steps for i in ids}, generation)
    if found is None:
        found = _read(index, generation)
    if len(memo) >= KEPT:
        for old in sorted(memo)[:len(memo) - KEPT + 1]:
            memo.pop(old, None)
    memo[generation] = found
    return found
