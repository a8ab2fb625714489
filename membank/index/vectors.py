"""The in-memory copy of the index's vectors, for exact KNN in numpy (see `Index.nearest`)."""

from __future__ import annotations

import apsw
import numpy as np

from ..kernel import heap


def _norms(matrix: np.ndarray) -> np.ndarray:
    """Row lengths for the cosine; a zero row (never stored) counts as 1 so it cannot divide by zero."""
    norms = np.linalg.norm(matrix, axis=1).astype(np.float32) if len(matrix) else np.zeros(0, np.float32)
    return np.where(norms > 0, norms, np.float32(1.0))


class Vectors:
    """Every vector of `vec` in one float32 matrix, for exact brute-force KNN in numpy."""

    def __init__(self, tag: str, rowids: np.ndarray, matrix: np.ndarray, norms: np.ndarray | None = None):
        self.tag = tag
        self.rowids = rowids
        self.matrix = matrix
        self.norms = _norms(matrix) if norms is None else norms
        self._spans: tuple[np.ndarray, _Spans | None] | None = None  # of the last mask given

    @classmethod
    def load(cls, db: apsw.Connection, tag: str) -> "Vectors":
        """Read sqlite-vec's chunk tables directly (a row-by-row scan of `vec` is ~15x slower); that layout
        is sqlite-vec 0.1's, so it is checked against the table, and any doubt falls back to the scan.
        One chunk (~1 MB) is read at a time, straight into the matrix, and the C heap is released after:
        holding every chunk at once left ~25 MB resident in the sidecar that nothing used."""
        try:
            return cls._load(db, tag)
        finally:
            heap.release()

    @classmethod
    def _load(cls, db: apsw.Connection, tag: str) -> "Vectors":
        dim = int(db.execute("SELECT value FROM meta WHERE key = 'embed_dim'").fetchall()[0][0])
        try:
            version = dict(db.execute("SELECT key, value FROM vec_info").fetchall()).get("CREATE_VERSION_MAJOR")
            chunks = []  # (chunk id, slots, which slots hold a vector, their rowids)
            for chunk_id, size, validity, rowids in db.execute(
                    "SELECT chunk_id, size, validity, rowids FROM vec_chunks ORDER BY chunk_id"):
                valid = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:size].astype(bool)
                chunks.append((chunk_id, size, valid, np.frombuffer(rowids, np.int64)[:size][valid]))
            rowids_ = np.concatenate([ids for *_, ids in chunks]) if chunks else np.zeros(0, np.int64)
            matrix = np.empty((len(rowids_), dim), np.float32)
            at = 0
            for chunk_id, size, valid, ids in chunks:
                blob = db.execute("SELECT vectors FROM vec_vector_chunks00 WHERE rowid = ?", (chunk_id,)).fetchall()[0][0]
                matrix[at:at + len(ids)] = np.frombuffer(blob, np.float32).reshape(size, dim)[valid]
                at += len(ids)
            total = db.execute("SELECT count(*) FROM vec").fetchall()[0][0]
            ok = version == 0 and len(rowids_) == total == len(set(rowids_.tolist()))
            for i in (0, len(rowids_) // 2, len(rowids_) - 1) if ok and len(rowids_) else ():
                row = db.execute("SELECT emb FROM vec WHERE rowid = ?", (int(rowids_[i]),)).fetchall()
                ok = ok and bool(row) and np.frombuffer(row[0][0], np.float32).tobytes() == matrix[i].tobytes()
            if ok:
                return cls(tag, rowids_, matrix)
        except (apsw.Error, KeyError, ValueError, IndexError):
            pass
        rows = db.execute("SELECT rowid, emb FROM vec").fetchall()
        return cls(tag, np.array([r for r, _ in rows], np.int64),
                   np.frombuffer(b"".join(e for _, e in rows), np.float32).reshape(len(rows), dim).copy())

    def patched(self, db: apsw.Connection, tag: str, rowids: frozenset[int]) -> "Vectors":
        """A copy with `rowids` re-read from `vec` (gone ones dropped); this one is left as it is."""
        wanted = sorted(rowids)
        fresh: dict[int, bytes] = {}
        for rowid in wanted:  # one point query each: vec0 scans the whole table for `rowid IN (...)`
            fresh.update(db.execute("SELECT rowid, emb FROM vec WHERE rowid = ?", (rowid,)).fetchall())
        keep = ~np.isin(self.rowids, np.array(wanted, np.int64))
        new_ids = np.array(list(fresh), np.int64)
        dim = self.matrix.shape[1]
        new_rows = np.frombuffer(b"".join(fresh.values()), np.float32).reshape(len(fresh), dim)
        if keep.all():
            rowids, matrix, norms = self.rowids, self.matrix, self.norms
        else:
            rowids, matrix, norms = self.rowids[keep], self.matrix[keep], self.norms[keep]
        return Vectors(tag, np.concatenate([rowids, new_ids]), np.concatenate([matrix, new_rows]),
                        np.concatenate([norms, _norms(new_rows)]))

    def __len__(self) -> int:
        return len(self.rowids)

    def mask(self, allowed: np.ndarray) -> np.ndarray:
        """Which rows are among the `allowed` rowids, for `nearest` (in this copy's row order)."""
        return np.isin(self.rowids, allowed)

    def nearest(self, vector: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """sqlite-vec's cosine distance, 1 - a.b / (|a| |b|); ties by rowid. With `allowed` (rowids,
        or a `mask`), only those rows compete."""
        if k <= 0 or not len(self.rowids):
            return []
        q = np.asarray(vector, np.float32)
        qn = np.float32(np.linalg.norm(q)) or np.float32(1.0)
        keep = None if allowed is None else allowed if allowed.dtype == np.bool_ else self.mask(allowed)
        spans = None
        if keep is not None:
            last = self._spans  # a view's queries come with the one mask it keeps (recall/queries.py)
            spans = last[1] if last is not None and last[0] is keep else _Spans.of(keep)
            self._spans = (keep, spans)
        # a rough pass (`_rough`: faster than the einsum, but not its bits), then the einsum's own distance for
        # the rows that pass could still put among the k nearest: the answer is the einsum's, to the bit
        if spans is None:
            distance = 1.0 - _rough(self.matrix, q) / (self.norms * qn)
            if keep is not None:
                distance = np.where(keep, distance, np.inf)  # the others sort last
            rows = None
        else:  # the rows the allowed ones lie in alone, the others among them sorting last
            distance = spans.distances(self.matrix, self.norms, q, qn)
            rows = spans.rows
        if keep is not None:
            k = min(k, int(np.isfinite(distance).sum()))
            if k <= 0:
                return []
        if k < len(distance):
            rough = float(np.partition(distance, k - 1)[k - 1])
            part = np.flatnonzero(distance <= rough + 2 * slack(len(q)))
        else:
            part = np.arange(len(distance))
        if rows is not None:
            part = rows[part]  # in row order, as the spans are
        exact = 1.0 - np.einsum("ij,j->i", self.matrix[part], q) / (self.norms[part] * qn)
        if k < len(exact):
            tied = exact <= np.partition(exact, k - 1)[k - 1]  # every row tied with the k-th: ties go by rowid
            part, exact = part[tied], exact[tied]
        order = np.lexsort((self.rowids[part], exact))[:k]
        return [(int(r), float(d)) for r, d in zip(self.rowids[part[order]], exact[order])]


# numpy 2's vecdot: a BLAS dot a row (one thread: a row is far under OpenBLAS's threading size; a matrix
# product, gemv, starts threads that spin: tens of ms a call on a busy machine), ~40% under the einsum's time
_rough = getattr(np, "vecdot", None) or (lambda matrix, q: np.einsum("ij,j->i", matrix, q))


def slack(dim: int) -> float:
    """How far two float32 cosine distances of the same rows may differ when their dot products were summed
    in different orders (BLAS, einsum): each dot is within gamma = n u / (1 - n u) of |q| |x| of the exact
    one (any order, u = 2**-24), the division and the subtraction add a few units in the last place; twice
    that. A row the rough pass puts farther than the k-th nearest plus twice this is never among the k."""
    u = 2.0 ** -24
    gamma = dim * u / (1 - dim * u)
    return 2 * (2 * gamma + 8 * u)


SPAN_GAP = 64  # rows between two allowed ones read through rather than start another span (64 KB at 256 dimensions)
SPANS = 16  # more spans than this, or most rows in them, and every row is read: one pass is as cheap


def _spans(keep: np.ndarray) -> list[tuple[int, int]] | None:
    """The row ranges that hold every allowed row, with gaps under SPAN_GAP read through; None when they
    would save little. Rows are (nearly) in rowid order, which follows the files' order when they were
    indexed, so a mask that leaves out a type or the cards (an assembly's) is a few long runs: reading
    the vectors is most of a KNN's cost (11.8 MB at 11,500 rows), and it pushes what the rest of the
    call uses out of the processor's caches."""
    edges = np.flatnonzero(np.diff(keep.view(np.int8), prepend=0, append=0))
    if not len(edges):
        return []
    starts, ends = edges[0::2], edges[1::2]
    far = np.flatnonzero(starts[1:] - ends[:-1] >= SPAN_GAP)
    starts = np.concatenate([starts[:1], starts[far + 1]])
    ends = np.concatenate([ends[far], ends[-1:]])
    if len(starts) > SPANS or int((ends - starts).sum()) > 0.9 * len(keep):
        return None
    return list(zip(starts.tolist(), ends.tolist()))


class _Spans:
    """A mask's spans (`_spans`) and what a query over them needs that the mask alone decides, made once
    per mask: the rows the spans hold (in row order) and which of them the mask leaves out. A query then
    works on those rows alone, never on an array of every row (a view's mask is asked again and again)."""

    def __init__(self, spans: list[tuple[int, int]], keep: np.ndarray):
        self.spans = spans
        self.rows = np.concatenate([np.arange(a, b) for a, b in spans]) if spans else np.zeros(0, np.int64)
        self.out = np.flatnonzero(~keep[self.rows])  # positions among `rows`

    @classmethod
    def of(cls, keep: np.ndarray) -> "_Spans | None":
        spans = _spans(keep)
        return None if spans is None else cls(spans, keep)

    def distances(self, matrix: np.ndarray, norms: np.ndarray, q: np.ndarray, qn: np.float32) -> np.ndarray:
        """The rough distance of each of `rows` (`nearest`'s), inf for those the mask leaves out."""
        distance = np.empty(len(self.rows), np.float32)
        at = 0
        for a, b in self.spans:
            distance[at:at + b - a] = 1.0 - _rough(matrix[a:b], q) / (norms[a:b] * qn)
            at += b - a
        distance[self.out] = np.inf
        return distance
