"""The `vec` table (sqlite-vec) and its in-memory copy: the vector half of the index.

A mixin of `Index`: it uses the index's connection and meta. Every write to `vec` moves `vec_tag`,
so each connection's copy (vectors.py) knows when it is stale, and this process's own writes are
logged so a copy can be patched instead of reloaded. numpy is imported by what computes with vectors:
every project opens an index, and a command that reads no vector (`membank status`) does not need it."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Iterable

import apsw

if TYPE_CHECKING:
    import numpy as np

    from .vectors import Vectors

VEC0_MAX_K = 4096  # the most neighbours sqlite-vec's own KNN returns
ROOMY_CACHE_KIB = 16384  # a large sync's page cache (`page_cache`): 16 MB cost as 64 did at 10,000 files
# live memories and cards without a vector, in rowid order, above a rowid (the `entries_pending` index)
_PENDING = ("FROM entries WHERE embedded = 0 AND kind != 'skill' AND removed_at IS NULL AND rowid > ?"
            " ORDER BY rowid LIMIT ?")
PATCH_LIMIT = 256  # rows re-read one by one to patch the in-memory vectors; more, and they are reloaded whole


class VectorStore:
    """Vector reads and writes on the index's connection (`Index` mixes this in)."""

    db: apsw.Connection
    vec_error: str | None
    get_meta: Any
    set_meta: Any
    _drop_strong: Any

    def _init_vectors(self) -> None:
        self._vectors: Vectors | None = None  # an in-memory copy of `vec` for KNN, valid for one `vec_tag`
        # this process's own writes to `vec`: tag before -> (tag after, rowids written, None for too many), so a
        # copy at an older tag can be patched by re-reading a few rows; the last few writes only
        self._vec_steps: dict[str | None, tuple[str, frozenset[int] | None]] = {}
        self._vectors_lock = threading.Lock()

    def vector_model(self) -> tuple[str, int] | None:
        """(model identity, dimension) the vectors were made with; None before the first vector."""
        name, dim = self.get_meta("embed_model"), self.get_meta("embed_dim")
        return (name, int(dim)) if name is not None and dim is not None else None

    def has_vectors(self) -> bool:
        return bool(self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec'").fetchall())

    def start_vectors(self, model: str, dim: int) -> None:
        """Create the vector table for a model (the index holds one model's vectors at a time)."""
        self.db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vec USING vec0(emb float[{int(dim)}] distance_metric=cosine)")
        self.set_meta("embed_model", model)
        self.set_meta("embed_dim", str(dim))
        self._vectors_changed(None)

    def _vectors_changed(self, rowids: Iterable[int] | None) -> None:
        """Every write to `vec` goes through here: a new tag tells every connection's `nearest` that its
        in-memory copy is stale (a random tag, so a rebuilt index or a rolled-back write never matches).

        Each change is logged as a step from the tag before to the new one with the rowids written, so
        a copy at an older tag can be patched (those rows re-read) instead of reloaded. A rolled-back
        step is overwritten by the next one from the same tag; `None` (a new table) means reload."""
        import secrets  # here: `random` and its imports are for writes, not every command

        before, tag = self.get_meta("vec_tag"), secrets.token_hex(8)
        self.set_meta("vec_tag", tag)
        written = None if rowids is None else frozenset(rowids)
        steps = self._vec_steps
        steps.pop(before, None)
        steps[before] = (tag, written if written is None or len(written) <= PATCH_LIMIT else None)
        while len(steps) > 64:
            del steps[next(iter(steps))]

    def _drop_vector(self, rowid: int) -> None:
        self._drop_strong(rowid)  # the strong tier's vector goes with the static one (strongstore.py)
        if self.vec_error is None and self.has_vectors():
            self.db.execute("DELETE FROM vec WHERE rowid = ?", (rowid,))
            self._vectors_changed((rowid,))

    def pending_vectors(self, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        """(rowid, kind, record JSON) of live memories and cards that have no vector yet (of rowids
        above `after` only: what a sync has not handed to its embedding yet)."""
        return self.db.execute(f"SELECT rowid, kind, record {_PENDING}", (after, limit)).fetchall()

    def page_cache(self, size: int) -> int:
        """Set the writer's page cache (SQLite's `cache_size`: pages, or KiB when negative) and return the
        size it had. A large sync raises it to ROOMY_CACHE_KIB while it writes vectors between other rows
        (vec0's chunk blobs stay in memory instead of being read back each batch: ~5x the cost in the
        default 2 MB) and puts it back after, which frees the pages over it."""
        before = int(self.db.execute("PRAGMA cache_size").fetchall()[0][0])
        self.db.execute(f"PRAGMA cache_size={int(size)}")
        return before

    def unembedded(self, limit: int, after: int = 0) -> list[tuple[int, str]]:
        """(rowid, citation) of the entries `pending_vectors` gives, without their records."""
        return self.db.execute(f"SELECT rowid, source {_PENDING}", (after, limit)).fetchall()

    def put_vectors(self, rowids: list[int], vectors: np.ndarray, new: bool = False) -> None:
        """Delete + insert (vec0 has no upsert), in the caller's transaction. `new`: the caller knows none
        of `rowids` has a vector (a table it made in this transaction), so the deletes are skipped (in a
        cold 10,000-file index they were ~12% of SQLite's time: vec0 looks each missing rowid up)."""
        import numpy as np

        ids = [int(rowid) for rowid in rowids]
        matrix = np.asarray(vectors, dtype=np.float32)
        directed = np.any(matrix, axis=1)  # a zero vector has no direction: not in KNN
        if not new:
            self.db.executemany("DELETE FROM vec WHERE rowid = ?", [(rowid,) for rowid in ids])
        self.db.executemany("INSERT INTO vec(rowid, emb) VALUES (?, ?)",
                            [(rowid, matrix[i].tobytes()) for i, rowid in enumerate(ids) if directed[i]])
        self.db.executemany("UPDATE entries SET embedded = 1 WHERE rowid = ?", [(rowid,) for rowid in ids])
        self._vectors_changed(ids)

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors, nearest first.

        An exact brute-force scan like sqlite-vec's, but over an in-memory copy of `vec` in numpy
        (sqlite-vec reads and scores one row at a time: ~50 ms per 100,000 vectors here, numpy ~5).
        The copy is reloaded when `vec_tag` (read in this connection's snapshot) moves; without a tag,
        sqlite-vec answers."""
        import numpy as np

        cached = self.vector_copy()
        if cached is None:
            return self.db.execute("SELECT rowid, distance FROM vec WHERE emb MATCH ? AND k = ? ORDER BY distance",
                                   (vector.astype(np.float32).tobytes(), min(k, VEC0_MAX_K))).fetchall()
        return cached.nearest(vector, k)

    def vector_copy(self) -> Vectors | None:
        """The in-memory copy of `vec` at this snapshot's `vec_tag`; None without a tag."""
        from .vectors import Vectors

        tag = self.get_meta("vec_tag")
        if tag is None:
            return None
        cached = self._vectors
        if cached is None or cached.tag != tag:
            with self._vectors_lock:
                cached = self._vectors
                if cached is None or cached.tag != tag:
                    written = self._written_since(cached.tag, tag) if cached is not None else None
                    cached = cached.patched(self.db, tag, written) if cached is not None and written is not None \
                        else Vectors.load(self.db, tag)
                    self._vectors = cached
        return cached

    def _written_since(self, start: str, tag: str) -> frozenset[int] | None:
        """The rowids this process wrote to `vec` between two tags, or None when its log cannot say
        (another process wrote, the log was trimmed, or too many rows changed)."""
        return written_between(self._vec_steps, start, tag)


def written_between(steps: dict[str | None, tuple[str, frozenset[int] | None]], start: str, tag: str
                    ) -> frozenset[int] | None:
    """The rowids written between two tags of a write log (`steps`: tag -> the next tag and the rows that
    write changed, None when it cannot say), or None when the log cannot say or more than PATCH_LIMIT
    rows changed: the caller reloads its copy instead of patching it."""
    rows: set[int] = set()
    at: str | None = start
    for _ in range(len(steps)):
        step = steps.get(at)
        if step is None or step[1] is None:
            return None
        at, written = step
        rows |= written
        if len(rows) > PATCH_LIMIT:
            return None
        if at == tag:
            return frozenset(rows)
    return None
