"""Every live episode as columns for ranking many at once (`memory:episode:query`, Layer 4).

Read whole once, then kept per generation of the episodes (store.GENERATION). A later generation
is applied by re-reading just the rows it changed (the index logs which ids each generation
changed), so neither a query (which journals a recall) nor a new episode makes the next query read
thousands of rows again."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

import numpy as np

from ...index import Index
from . import store

KEPT = 4  # tables kept: read threads may see a generation or two behind the writer


@dataclass(frozen=True)
class Candidates:
    """The live episodes as columns. An episode evicted since the table was read stays in its row, marked
    dead in `alive`, until too many are (COMPACT): a new episode is a row added, not the table copied."""
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
    alive: np.ndarray | None = None  # the rows still live; None: all of them
    grown: list[int] = field(default_factory=lambda: [-1], compare=False)  # rows of matrix.base in use, shared

    @property
    def live(self) -> int:
        """How many episodes the table holds (dead rows left out)."""
        return len(self.ids) if self.alive is None else int(np.count_nonzero(self.alive))

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
COMPACT = 1 / 8  # dead rows beyond this share of the table: it is read whole again


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


def _grown(base: Candidates, added: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """`base.matrix` with `added` rows after it. Written into the room left after it in the array it is a
    view of, when no later table took that room; else copied once into an array with room to grow."""
    matrix, n = base.matrix, base.matrix.shape[0]
    room = matrix.base if isinstance(matrix.base, np.ndarray) and matrix.base.ndim == 2 else None
    if room is not None and base.grown[0] == n and room.shape[0] >= n + len(added) and room.shape[1] == added.shape[1]:
        room[n:n + len(added)] = added
        base.grown[0] = n + len(added)
        return room[:n + len(added)], base.grown
    room = np.empty((n + len(added) + max(64, n // 4), added.shape[1]), dtype=np.float32)
    room[:n] = matrix if matrix.shape[1] == added.shape[1] else 0  # a first vector's size (no rows yet)
    room[n:n + len(added)] = added
    return room[:n + len(added)], [n + len(added)]


def _patched(index: Index, base: Candidates, ids: set[str], generation: int) -> Candidates | None:
    """`base` with the rows of `ids` read again: changed in place, added at the end, or marked dead when
    gone or evicted. None when it cannot be patched (a vector of another size, too many dead rows): read
    it whole."""
    found: dict[str, tuple] = {}
    wanted = sorted(ids)
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        found.update((r[0], r) for r in index.db.execute(
            f"SELECT {_COLUMNS}, evicted FROM episodes WHERE id IN ({','.join('?' * len(part))})", part).fetchall())
    size = base.matrix.shape[1] * 4
    at = base.row_of()
    scenes, created = base.scenes, base.created  # copied before the first change
    since, recalls, importance, pinned = (base.since.copy(), base.recall_count.copy(), base.importance.copy(),
                                          base.pinned.copy())
    alive = base.alive.copy() if base.alive is not None else np.ones(len(base.ids), dtype=bool)
    rows_changed: dict[int, bytes | None] = {}
    added: list[tuple] = []
    masks = base.masks
    for episode_id in wanted:
        row = found.get(episode_id)
        if row is None or row[8]:  # gone, or evicted
            if episode_id in at:
                alive[at[episode_id]] = False
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
        alive[i] = True
        if scenes[i] != row[1]:
            scenes, masks = list(scenes) if scenes is base.scenes else scenes, {}
            scenes[i] = row[1]
        if created[i] != row[6]:
            created = list(created) if created is base.created else created
            created[i] = row[6]
        since[i], recalls[i], importance[i], pinned[i] = row[2], row[3], row[4], row[5]
        if vec != (base.matrix[i].tobytes() if size else None):
            rows_changed[i] = vec
    if len(alive) - np.count_nonzero(alive) > COMPACT * len(alive):
        return None
    matrix, grown = base.matrix, base.grown
    if rows_changed:  # an episode's text changed: a copy, since older tables share the rows
        matrix, grown = matrix.copy(), [-1]
        for i, vec in rows_changed.items():
            matrix[i] = np.frombuffer(vec, dtype=np.float32) if vec else 0
    rows = at
    if added:
        matrix, grown = _grown(replace(base, matrix=matrix, grown=grown), _matrix([r[7] for r in added], size))
        masks = {scene: np.concatenate([mask, [scene is not None and r[1] == scene for r in added]])
                 for scene, mask in masks.items()}
        rows = dict(at)
        rows.update((r[0], len(base.ids) + n) for n, r in enumerate(added))
        scenes, created = scenes + [r[1] for r in added], created + [r[6] for r in added]
        since = np.concatenate([since, [r[2] for r in added]])
        recalls = np.concatenate([recalls, [r[3] for r in added]])
        importance = np.concatenate([importance, [r[4] for r in added]])
        pinned = np.concatenate([pinned, np.asarray([r[5] for r in added], dtype=np.int64)])
        alive = np.concatenate([alive, np.ones(len(added), dtype=bool)])
    ids_ = base.ids + [r[0] for r in added] if added else base.ids
    return Candidates(ids_, scenes, since, recalls, importance, pinned, created, matrix, generation, masks, rows,
                      None if alive.all() else alive, grown)


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
