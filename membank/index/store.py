"""The index database: one apsw connection, its schema, and the reads and writes the bank needs."""

from __future__ import annotations

import json
import secrets
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import apsw
import numpy as np

from ..files.frontmatter import iso_to_micros
from ..files.records import SCOPE_RANK, TYPE_RANK, Card, Diagnostic, Memory, Record, Skill
from ..kernel.text import estimate_tokens, fts_text
from .vectors import Vectors

SCHEMA_VERSION = 5  # 5: entries.id_line
VEC0_MAX_K = 4096  # the most neighbours sqlite-vec's own KNN returns
PATCH_LIMIT = 256  # rows re-read one by one to patch the in-memory vectors; more, and they are reloaded whole
_GROUP = {"memory": "memory", "character": "card", "world": "card", "skill": "skill"}

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE files(
    source TEXT PRIMARY KEY, bank TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE entries(
    rowid INTEGER PRIMARY KEY,
    source TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,              -- memory | character | world | skill
    grp TEXT NOT NULL,               -- ids are unique within (grp, bank)
    bank TEXT NOT NULL,              -- project | global
    id TEXT NOT NULL,
    type TEXT, scope TEXT, document TEXT, origin TEXT,
    scope_rank INTEGER, type_rank INTEGER, updated_us INTEGER,
    deleted INTEGER NOT NULL DEFAULT 0,
    removed_at TEXT,                 -- tombstone: the file was removed by hand
    shadowed INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    embedded INTEGER NOT NULL DEFAULT 0,  -- 1 once its vector is in `vec`
    id_line INTEGER NOT NULL DEFAULT 1,   -- the file line of its `id:`, where a clash is reported
    hash TEXT NOT NULL,
    record TEXT NOT NULL             -- the record as the API returns it (JSON)
);
CREATE INDEX entries_id ON entries(grp, bank, id);
CREATE INDEX entries_order ON entries(kind, scope_rank, type_rank, type, updated_us DESC, id);
CREATE INDEX entries_pending ON entries(rowid) WHERE embedded = 0 AND kind != 'skill' AND removed_at IS NULL;
-- the injectable memories in deterministic order with what fitting them needs: a preview reads this
-- index alone, and decodes only the records it keeps (see Index.fitting)
CREATE INDEX entries_eligible ON entries(scope_rank, type_rank, type, updated_us DESC, id, tokens, scope, document)
    WHERE kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0 AND tokens > 0;
CREATE TABLE diagnostics(source TEXT NOT NULL, origin TEXT NOT NULL, line INTEGER, severity TEXT, message TEXT);
CREATE INDEX diagnostics_source ON diagnostics(source);
CREATE TABLE events(              -- journal events that count: feedback, preferences-cleared, learned
    source TEXT NOT NULL, line INTEGER NOT NULL, at TEXT NOT NULL, event TEXT NOT NULL,
    key TEXT, weight REAL, run_id TEXT, evidence TEXT, tags TEXT
);
CREATE INDEX events_key ON events(key, at);
CREATE VIRTUAL TABLE fts USING fts5(body, names, contentless_delete=1, content='',
                                    tokenize='porter unicode61 remove_diacritics 2');
"""

# Injectable: a live memory with text that no other file shadows; document scope only for its document.
_ELIGIBLE = """kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0 AND tokens > 0
    AND (scope != 'document' OR (document IS NOT NULL AND document = :doc))"""
_ORDER = "scope_rank, type_rank, type, updated_us DESC, id"


class _ReadState(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.open: list[apsw.Connection] = []  # read connections with a snapshot open in this block


_reading = _ReadState()
_NO_LOCK = nullcontext()


@contextmanager
def reading() -> Iterator[None]:
    """Inside this block, this thread's Index reads go to a read-only connection of its own, one
    snapshot per index for the whole block: a read never waits behind a writer's transaction (WAL)
    and never sees half of one. Anything that tries to write in it fails loudly (query_only)."""
    _reading.depth += 1
    try:
        yield
    finally:
        _reading.depth -= 1
        if _reading.depth == 0:
            for conn in _reading.open:
                try:
                    conn.execute("ROLLBACK")
                except apsw.Error:  # closed or rebuilt meanwhile
                    pass
            _reading.open.clear()


class IndexError_(Exception):
    """The index could not be opened or written."""


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    hash: str


def _kind(record: Record) -> str:
    if isinstance(record, Memory):
        return "memory"
    if isinstance(record, Card):
        return "character" if record.section == "characters" else "world"
    return "skill"


class Index:
    """The derived index under `.writenow/.index/`. Safe to delete: a sync rebuilds it."""

    def __init__(self, path: Path | str):
        self.path = Path(path) if path != ":memory:" else None
        self.lock = threading.RLock()  # one writer; apsw serializes calls on a connection anyway
        self._generation = 0  # readers reconnect when it moves: after a rebuild's first commit
        self._reconnected = False
        self._readers: dict[int, tuple[apsw.Connection, int]] = {}  # thread -> read connection, generation
        self._readers_lock = threading.Lock()
        self._counts_cache: dict[int, tuple[apsw.Connection, int, dict[str, int]]] = {}  # thread -> snapshot's counts
        self._vectors: Vectors | None = None  # an in-memory copy of `vec` for KNN, valid for one `vec_tag`
        # this process's own writes to `vec`: tag before -> (tag after, rowids written, None for too many), so a
        # copy at an older tag can be patched by re-reading a few rows; the last few writes only
        self._vec_steps: dict[str | None, tuple[str, frozenset[int] | None]] = {}
        self._vectors_lock = threading.Lock()
        self._eligible_counts: dict[int, tuple[tuple[int, int, int], dict[str | None, int]]] = {}  # see eligible_count
        self.vec_error: str | None = None  # why sqlite-vec could not load, if it could not
        try:
            self._open()
        except apsw.Error:
            if self.path is None:
                raise
            # the index is derived: a damaged file is deleted and rebuilt by the next sync
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            try:
                self._open()
            except apsw.Error as e:
                raise IndexError_(f"the index cannot be opened ({e.__class__.__name__}); "
                                  "delete .writenow/.index/ and sync") from None

    def _open(self) -> None:
        self.db = self._connect(self.path or ":memory:")
        if self.db.execute("PRAGMA user_version").fetchall()[0][0] != SCHEMA_VERSION:
            self._reset()

    def _connect(self, path: Path | str) -> apsw.Connection:
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        db = apsw.Connection(str(path))
        db.set_busy_timeout(5000)
        db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF")
        self.vec_error = _load_vec(db)
        self._eligible_counts.clear()  # keyed by connection: a new one may reuse an old one's id()
        return db

    def _reset(self) -> None:
        """Start from an empty file with the current schema (an older index is simply rebuilt)."""
        if self.path is not None:
            self.db.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            self.db = self._connect(self.path)
        with self.db:
            self.db.execute(_SCHEMA)
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def rebuild(self) -> None:
        with self.lock:
            self._reset()

    def close(self) -> None:
        with self._readers_lock:
            readers, self._readers = list(self._readers.values()), {}
        for conn, _ in readers:
            conn.close()
        self._writer.close()
        self._vectors = None

    # -- the writer's connection, or this thread's reader inside `reading()` -----------------

    @property
    def db(self) -> apsw.Connection:
        if _reading.depth and self.path is not None:
            return self._reader()
        return self._writer

    @db.setter
    def db(self, conn: apsw.Connection) -> None:
        # a rebuild made a new file: readers stay on the old one (unlinked, still readable) until
        # the first transaction on the new file commits, so a read never sees it half-built
        self._writer = conn
        self._reconnected = True

    @property
    def lock(self) -> Any:
        """The writer's lock; inside `reading()` a no-op: the reader's snapshot needs none."""
        if _reading.depth and self.path is not None:
            return _NO_LOCK
        return self._lock

    @lock.setter
    def lock(self, value: Any) -> None:
        self._lock = value

    def prepare_reader(self) -> None:
        """Give the calling thread its read connection now (a server warms its read threads so)."""
        if self.path is not None:
            self._reader_conn()

    def _open_reader(self) -> apsw.Connection:
        assert self.path is not None
        conn = self._connect(self.path)
        conn.execute("PRAGMA query_only=1")
        return conn

    def _reader_conn(self) -> apsw.Connection:
        tid = threading.get_ident()
        with self._readers_lock:
            entry = self._readers.get(tid)
        if entry is not None and (entry[1] == self._generation or self._reconnected):
            return entry[0]  # during a rebuild: the old file, complete, rather than the new one half-built
        conn = self._open_reader()
        with self._readers_lock:
            self._readers[tid] = (conn, self._generation)
        return conn

    def _reader(self) -> apsw.Connection:
        conn = self._reader_conn()
        if not any(c is conn for c in _reading.open):
            conn.execute("BEGIN")  # the snapshot starts at the first read and lasts for the block
            _reading.open.append(conn)
        return conn

    def _moved_on(self) -> None:
        """The rebuilt file is committed: every reader thread gets a connection to it at once."""
        self._reconnected = False
        self._generation += 1
        with self._readers_lock:
            threads = list(self._readers)
        fresh = {tid: (self._open_reader(), self._generation) for tid in threads}
        with self._readers_lock:
            self._readers.update(fresh)  # the old connections close when their last read ends

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction. BEGIN IMMEDIATE takes SQLite's write lock up front, so another process
        holding it (a `membank index` beside the sidecar) is waited for (busy timeout), not failed on."""
        with self.lock:
            db = self.db
            if db.in_transaction:  # nested in a caller's transaction: a savepoint
                with db:
                    yield
            else:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
        if self._reconnected and not _reading.depth and not self._writer.in_transaction:
            self._moved_on()

    # -- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- files ------------------------------------------------------------------------------

    def file_states(self, bank: str, sources: Iterable[str] | None = None) -> dict[str, FileState]:
        """What the index last read of each file of a bank (or only of `sources`: a write or a watcher
        batch need not load 10,000 rows to look at one)."""
        if sources is None:
            return {s: FileState(size, mt, h) for s, size, mt, h in
                    self.db.execute("SELECT source, size, mtime_ns, hash FROM files WHERE bank = ?", (bank,))}
        wanted, out = sorted(set(sources)), {}
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            out.update({s: FileState(size, mt, h) for s, size, mt, h in self.db.execute(
                f"SELECT source, size, mtime_ns, hash FROM files WHERE bank = ? AND source IN ({','.join('?' * len(part))})",
                (bank, *part))})
        return out

    def put_file(self, source: str, bank: str, size: int, mtime_ns: int, hash_: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO files(source, bank, size, mtime_ns, hash) VALUES (?,?,?,?,?)",
                        (source, bank, size, mtime_ns, hash_))

    # -- entries ----------------------------------------------------------------------------

    def _old(self, source: str) -> tuple[int, str, str, str] | None:
        rows = self.db.execute("SELECT rowid, grp, bank, id FROM entries WHERE source = ?", (source,)).fetchall()
        return rows[0] if rows else None

    def put(self, bank: str, record: Record | None, source: str, hash_: str,
            diagnostics: tuple[Diagnostic, ...], id_line: int = 1) -> set[tuple[str, str, str]]:
        """Store what one file gave (its record may be None); returns the id keys whose clashes may have changed."""
        touched: set[tuple[str, str, str]] = set()
        old = self._old(source)
        if old is not None:
            touched.add((old[1], old[2], old[3]))
            self.db.execute("DELETE FROM fts WHERE rowid = ?", (old[0],))
            self._drop_vector(old[0])
        self.db.execute("DELETE FROM diagnostics WHERE source = ? AND origin = 'parse'", (source,))
        if diagnostics:
            self.db.executemany(
                "INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, 'parse', ?, ?, ?)",
                [(d.source, d.line, d.severity, d.message) for d in diagnostics])
        if record is None:
            if old is not None:
                self.db.execute("DELETE FROM entries WHERE rowid = ?", (old[0],))
            return touched
        kind = _kind(record)
        row = {**self._row(kind, bank, record, hash_), "id_line": id_line}
        if old is not None:
            self.db.execute(
                "UPDATE entries SET kind=:kind, grp=:grp, bank=:bank, id=:id, type=:type, scope=:scope, document=:document,"
                " origin=:origin, scope_rank=:scope_rank, type_rank=:type_rank, updated_us=:updated_us, deleted=:deleted,"
                " removed_at=NULL, shadowed=0, tokens=:tokens, embedded=0, id_line=:id_line, hash=:hash, record=:record"
                " WHERE rowid=:rowid",
                {**row, "rowid": old[0]})
            rowid = old[0]
        else:
            self.db.execute(
                "INSERT INTO entries(source, kind, grp, bank, id, type, scope, document, origin, scope_rank, type_rank,"
                " updated_us, deleted, tokens, id_line, hash, record) VALUES (:source, :kind, :grp, :bank, :id, :type,"
                " :scope, :document, :origin, :scope_rank, :type_rank, :updated_us, :deleted, :tokens, :id_line, :hash,"
                " :record)", row)
            rowid = self.db.last_insert_rowid()
        body, names = _fts_fields(record)
        self.db.execute("INSERT INTO fts(rowid, body, names) VALUES (?, ?, ?)", (rowid, fts_text(body), fts_text(names)))
        touched.add((row["grp"], bank, record.id))
        return touched

    @staticmethod
    def _row(kind: str, bank: str, record: Record, hash_: str) -> dict[str, Any]:
        row: dict[str, Any] = {
            "source": record.source, "kind": kind, "grp": _GROUP[kind], "bank": bank, "id": record.id,
            "type": None, "scope": None, "document": None, "origin": None, "scope_rank": None,
            "type_rank": None, "updated_us": None, "deleted": 0, "tokens": estimate_tokens(record.content),
            "hash": hash_, "record": json.dumps(record.to_api(), ensure_ascii=False, sort_keys=True),
        }
        if isinstance(record, Memory):
            row.update(type=record.type, scope=record.scope, document=record.document, origin=record.origin,
                       scope_rank=SCOPE_RANK[record.scope], type_rank=TYPE_RANK.get(record.type, 3),
                       updated_us=iso_to_micros(record.updated), deleted=int(record.deleted_at is not None))
        elif isinstance(record, Card):
            row.update(type=record.kind, updated_us=iso_to_micros(record.updated),
                       deleted=int(record.deleted_at is not None))
        return row

    def remove(self, source: str, at: str) -> set[tuple[str, str, str]]:
        """A file is gone: memories leave a tombstone row for audit, other kinds leave nothing."""
        self.db.execute("DELETE FROM files WHERE source = ?", (source,))
        self.db.execute("DELETE FROM diagnostics WHERE source = ?", (source,))
        self.db.execute("DELETE FROM events WHERE source = ?", (source,))
        old = self._old(source)
        if old is None:
            return set()
        self.db.execute("DELETE FROM fts WHERE rowid = ?", (old[0],))
        self._drop_vector(old[0])
        if old[1] == "memory":
            self.db.execute("UPDATE entries SET removed_at = ?, shadowed = 0 WHERE rowid = ?", (at, old[0]))
        else:
            self.db.execute("DELETE FROM entries WHERE rowid = ?", (old[0],))
        return {(old[1], old[2], old[3])}

    def drop_moved_tombstones(self, sources: Iterable[str]) -> int:
        """Tombstones among `sources` whose content lives on at another of `sources` in the same bank:
        the file was moved (a delete plus a create with the same hash), not removed. Returns how many."""
        names = json.dumps(sorted(set(sources)))
        if names == "[]":
            return 0
        self.db.execute(
            "DELETE FROM entries WHERE removed_at IS NOT NULL AND source IN (SELECT value FROM json_each(:s))"
            " AND EXISTS (SELECT 1 FROM entries AS live WHERE live.removed_at IS NULL AND live.bank = entries.bank"
            " AND live.hash = entries.hash AND live.source IN (SELECT value FROM json_each(:s)))", {"s": names})
        return self.db.changes()

    def settle_clashes(self, keys: set[tuple[str, str, str]]) -> None:
        """Two live files with one id: the smaller source wins, both get an error.

        One query reads the live rows of every key; only a key with a clash, a shadowed row or an
        old clash message is rewritten (a cold index touches every key, and nearly none clash)."""
        if not keys:
            return
        ordered = sorted(keys)
        rows_by_key: dict[tuple[str, str, str], list[tuple[int, str, int, int]]] = {k: [] for k in ordered}
        for i in range(0, len(ordered), 300):
            part = ordered[i:i + 300]
            for rowid, grp, bank, id_, source, shadowed, id_line in self.db.execute(
                    "SELECT rowid, grp, bank, id, source, shadowed, id_line FROM entries WHERE removed_at IS NULL"
                    f" AND (grp, bank, id) IN (VALUES {','.join('(?,?,?)' for _ in part)})", [x for k in part for x in k]):
                rows_by_key[(grp, bank, id_)].append((rowid, source, shadowed, id_line))
        flagged = {s for (s,) in self.db.execute("SELECT DISTINCT source FROM diagnostics WHERE origin = 'dup'")}
        for (grp, bank, id_) in ordered:
            found = sorted(rows_by_key[(grp, bank, id_)], key=lambda r: r[1])  # ORDER BY source (UTF-8 order)
            if len(found) == 1 and not found[0][2] and found[0][1] not in flagged:
                continue  # alone, not shadowed, no old message: nothing would change
            rows = [(rowid, source, id_line) for rowid, source, _, id_line in found]
            sources = [s for _, s, _ in rows]
            self.db.execute(
                f"DELETE FROM diagnostics WHERE origin = 'dup' AND source IN ({','.join('?' * len(sources))})", sources)
            for i, (rowid, source, id_line) in enumerate(rows):
                self.db.execute("UPDATE entries SET shadowed = ? WHERE rowid = ?", (int(i > 0), rowid))
                if len(rows) < 2:
                    continue
                others = ", ".join(s for s in sources if s != source)
                verdict = "this file is used until the clash is fixed" if i == 0 else f"{sources[0]} is used instead of this file"
                self.db.execute(
                    "INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, 'dup', ?, 'error', ?)",
                    (source, id_line, f"the id `{id_}` is also used by {others}; give each file its own id ({verdict})"))

    # -- journal events ---------------------------------------------------------------------

    def put_events(self, source: str, events: list[dict[str, Any]], diagnostics: tuple[Diagnostic, ...]) -> None:
        """Replace what one journal file contributes (its events are re-read whole when it changes)."""
        self.db.execute("DELETE FROM events WHERE source = ?", (source,))
        self.db.execute("DELETE FROM diagnostics WHERE source = ? AND origin = 'parse'", (source,))
        self.db.executemany(
            "INSERT INTO events(source, line, at, event, key, weight, run_id, evidence, tags)"
            " VALUES (:source, :line, :at, :event, :key, :weight, :run_id, :evidence, :tags)", events)
        self.db.executemany(
            "INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, 'parse', ?, ?, ?)",
            [(d.source, d.line, d.severity, d.message) for d in diagnostics])

    def last_event(self, event: str, key: str | None = None) -> str | None:
        """When the latest `event` (for `key`, if given) happened."""
        sql = "SELECT max(at) FROM events WHERE event = ?" + (" AND key = ?" if key is not None else "")
        return self.db.execute(sql, (event, key) if key is not None else (event,)).fetchall()[0][0]

    def signal(self, key: str, since: str | None) -> tuple[float, list[str], list[str]]:
        """(summed weight, run ids oldest first, tags) of the feedback for `key` after `since`."""
        rows = self.db.execute(
            "SELECT weight, run_id, tags FROM events WHERE event = 'feedback' AND key = ? AND at > ? ORDER BY at",
            (key, since or "")).fetchall()
        tags: list[str] = []
        for _, _, raw in rows:
            tags.extend(t for t in json.loads(raw or "[]") if t not in tags)
        return sum(w for w, _, _ in rows), [r for _, r, _ in rows if r], tags

    def signal_phrases(self, polarity: str, since: str | None) -> list[tuple[str, str]]:
        """(key, first evidence) of every signal of one polarity since `since` that has readable evidence."""
        rows = self.db.execute(
            "SELECT key, evidence, min(at) FROM events WHERE event = 'feedback' AND key LIKE ? AND at > ?"
            " AND evidence IS NOT NULL GROUP BY key ORDER BY key", (polarity + ":%", since or "")).fetchall()
        return [(key, evidence) for key, evidence, _ in rows]

    # -- vectors ----------------------------------------------------------------------------

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
        before, tag = self.get_meta("vec_tag"), secrets.token_hex(8)
        self.set_meta("vec_tag", tag)
        written = None if rowids is None else frozenset(rowids)
        steps = self._vec_steps
        steps.pop(before, None)
        steps[before] = (tag, written if written is None or len(written) <= PATCH_LIMIT else None)
        while len(steps) > 64:
            del steps[next(iter(steps))]

    def _drop_vector(self, rowid: int) -> None:
        if self.vec_error is None and self.has_vectors():
            self.db.execute("DELETE FROM vec WHERE rowid = ?", (rowid,))
            self._vectors_changed((rowid,))

    def pending_vectors(self, limit: int) -> list[tuple[int, str, str]]:
        """(rowid, kind, record JSON) of live memories and cards that have no vector yet."""
        return self.db.execute(
            "SELECT rowid, kind, record FROM entries WHERE embedded = 0 AND kind != 'skill' AND removed_at IS NULL"
            " ORDER BY rowid LIMIT ?", (limit,)).fetchall()

    def put_vectors(self, rowids: list[int], vectors: np.ndarray) -> None:
        """Delete + insert (vec0 has no upsert), in the caller's transaction."""
        rows = [(int(rowid), vector) for rowid, vector in zip(rowids, vectors)]
        self.db.executemany("DELETE FROM vec WHERE rowid = ?", [(rowid,) for rowid, _ in rows])
        self.db.executemany("INSERT INTO vec(rowid, emb) VALUES (?, ?)",  # a zero vector has no direction: not in KNN
                            [(rowid, vector.astype(np.float32).tobytes()) for rowid, vector in rows if np.any(vector)])
        self.db.executemany("UPDATE entries SET embedded = 1 WHERE rowid = ?", [(rowid,) for rowid, _ in rows])
        self._vectors_changed(rowid for rowid, _ in rows)

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors, nearest first.

        An exact brute-force scan like sqlite-vec's, but over an in-memory copy of `vec` in numpy
        (sqlite-vec reads and scores one row at a time: ~50 ms per 100,000 vectors here, numpy ~5).
        The copy is reloaded when `vec_tag` (read in this connection's snapshot) moves; without a tag,
        sqlite-vec answers."""
        cached = self._vector_copy()
        if cached is None:
            return self.db.execute("SELECT rowid, distance FROM vec WHERE emb MATCH ? AND k = ? ORDER BY distance",
                                   (vector.astype(np.float32).tobytes(), min(k, VEC0_MAX_K))).fetchall()
        return cached.nearest(vector, k)

    def _vector_copy(self) -> Vectors | None:
        """The in-memory copy of `vec` at this snapshot's `vec_tag`; None without a tag."""
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

    def nearest_eligible(self, vector: np.ndarray, k: int,
                         document: str | None) -> tuple[list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
        """The k nearest memories a preview for `document` may inject (rowid, distance), nearest first,
        with their `eligible_keys`: eligibility is applied before the cut, so a bank whose nearest
        entries are another document's, deleted or shadowed still yields its k nearest eligible ones.

        Neighbours are checked in growing rounds (2k, 8k, 32k ... by rowid, nearly always one round);
        once a round would reach a quarter of the vectors, the eligible rowids are read whole from
        `entries_eligible` and the KNN runs over those alone."""
        if k <= 0:
            return [], {}
        copy = self._vector_copy()
        found: list[tuple[int, float]] = []
        keys: dict[int, tuple[int, tuple[Any, ...]]] = {}
        want, seen = 2 * k, 0
        while True:
            ranked = self.nearest(vector, want)
            fresh = self.eligible_keys([r for r, _ in ranked[seen:]], document)
            keys.update(fresh)
            found.extend(hit for hit in ranked[seen:] if hit[0] in fresh)
            seen = len(ranked)
            if len(found) >= k or seen < want:  # enough, or every vector seen
                return found[:k], keys
            want *= 4
            if copy is None and want > VEC0_MAX_K:  # sqlite-vec alone (no copy) answers at most VEC0_MAX_K
                return found[:k], keys
            if copy is not None and want * 4 >= len(copy):
                allowed = np.array(self.eligible_rowids(document), np.int64)
                ranked = copy.nearest(vector, k, allowed)
                return ranked, self.eligible_keys([r for r, _ in ranked], document)

    def eligible_rowids(self, document: str | None) -> list[int]:
        """Every memory a preview for `document` may inject (one scan of `entries_eligible`)."""
        return [r for (r,) in self.db.execute(
            f"SELECT rowid FROM entries INDEXED BY entries_eligible WHERE {_ELIGIBLE}", {"doc": document})]

    def _written_since(self, start: str, tag: str) -> frozenset[int] | None:
        """The rowids this process wrote to `vec` between two tags, or None when its log cannot say
        (another process wrote, the log was trimmed, or too many rows changed)."""
        rows: set[int] = set()
        at: str | None = start
        for _ in range(len(self._vec_steps)):
            step = self._vec_steps.get(at)
            if step is None or step[1] is None:
                return None
            at, written = step
            rows |= written
            if len(rows) > PATCH_LIMIT:
                return None
            if at == tag:
                return frozenset(rows)
        return None

    def lexical(self, match: str, k: int) -> list[tuple[int, float]]:
        """(rowid, bm25) of the k best FTS5 matches; names weigh double."""
        return self.db.execute("SELECT rowid, bm25(fts, 1.0, 2.0) AS score FROM fts WHERE fts MATCH ?"
                               " ORDER BY score LIMIT ?", (match, k)).fetchall()

    def lexical_eligible(self, match: str, k: int,
                         document: str | None) -> tuple[list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
        """`lexical` for the memories a preview for `document` may inject, eligibility applied before
        the cut, with their `eligible_keys`: the best 4k matches are checked by rowid (a wider LIMIT
        costs FTS5 little); when fewer than k of them are eligible, FTS5 ranks the eligible ones
        alone (a join: every match is looked up, slower)."""
        if k <= 0:
            return [], {}
        rows = self.lexical(match, 4 * k)
        keys = self.eligible_keys([r for r, _ in rows], document)
        hits = [(r, score) for r, score in rows if r in keys]
        if len(hits) >= k or len(rows) < 4 * k:
            return hits[:k], keys
        rows = self.db.execute(
            "SELECT fts.rowid, bm25(fts, 1.0, 2.0) AS score FROM fts JOIN entries ON entries.rowid = fts.rowid"
            f" WHERE fts MATCH :match AND {_ELIGIBLE} ORDER BY score LIMIT :k",
            {"match": match, "k": k, "doc": document}).fetchall()
        return rows, self.eligible_keys([r for r, _ in rows], document)

    def eligible_by_rowid(self, rowids: list[int], document: str | None) -> dict[int, tuple[dict[str, Any], int]]:
        """The injectable memories among `rowids`, with their token estimates."""
        if not rowids:
            return {}
        args: dict[str, Any] = {"doc": document, **{f"r{i}": r for i, r in enumerate(rowids)}}
        marks = ",".join(f":r{i}" for i in range(len(rowids)))
        # NOT INDEXED: by rowid, not by walking entries_order past every memory to test each against the list
        sql = f"SELECT rowid, record, tokens FROM entries NOT INDEXED WHERE rowid IN ({marks}) AND {_ELIGIBLE}"
        return {rowid: (json.loads(record), tokens) for rowid, record, tokens in self.db.execute(sql, args)}

    # -- reads ------------------------------------------------------------------------------

    def memories(self, *, scope: str | None = None, type_: str | None = None, origin: str | None = None,
                 include_deleted: bool = False) -> list[dict[str, Any]]:
        where = ["kind = 'memory'", "removed_at IS NULL", "shadowed = 0"]
        args: list[Any] = []
        if not include_deleted:
            where.append("deleted = 0")
        for column, value in (("scope", scope), ("type", type_), ("origin", origin)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT record FROM entries WHERE {' AND '.join(where)} ORDER BY {_ORDER}"
        return [json.loads(r) for (r,) in self.db.execute(sql, args)]

    def find(self, grp: str, id_: str) -> tuple[str, dict[str, Any], str] | None:
        """(bank, record, hash) of the live entry with this id; the project bank first."""
        rows = self.db.execute(
            "SELECT bank, record, hash FROM entries WHERE grp = ? AND bank IN ('project', 'global') AND id = ?"
            " AND removed_at IS NULL AND shadowed = 0 ORDER BY bank = 'global', source LIMIT 1",  # IN: entries_id
            (grp, id_)).fetchall()
        return (rows[0][0], json.loads(rows[0][1]), rows[0][2]) if rows else None

    def eligible_count(self, document: str | None) -> int:
        """How many memories a preview for `document` could inject (what the budgets cut is this less the kept).

        Counting scans the whole of `entries_eligible` (~10 ms at 100,000 memories), so each connection
        keeps its counts until its view of the data moves: `PRAGMA data_version` (another connection
        committed) or its own `total_changes` (it wrote, even if it rolled back)."""
        db = self.db
        key = None
        if db.getautocommit() or (_reading.depth and self.path is not None):  # never mid-write
            key = (id(db), db.execute("PRAGMA data_version").fetchall()[0][0], db.total_changes())
            cached = self._eligible_counts.get(threading.get_ident())
            if cached is not None and cached[0] == key and document in cached[1]:
                return cached[1][document]
        n = db.execute(f"SELECT count(*) FROM entries INDEXED BY entries_eligible WHERE {_ELIGIBLE}",
                       {"doc": document}).fetchall()[0][0]
        if key is not None:
            cached = self._eligible_counts.get(threading.get_ident())
            counts = cached[1] if cached is not None and cached[0] == key and len(cached[1]) < 64 else {}
            counts[document] = n
            self._eligible_counts[threading.get_ident()] = (key, counts)
        return n

    def eligible_keys(self, rowids: list[int], document: str | None) -> dict[int, tuple[int, tuple[Any, ...]]]:
        """The injectable memories among `rowids`: (tokens, `recall.deterministic_key`) for each, from the
        columns alone, so ranking needs no record decoded (`records` fetches the ones kept)."""
        if not rowids:
            return {}
        # one JSON list, not one parameter each: a single statement, prepared once and cached, for any count
        sql = (f"SELECT rowid, tokens, scope_rank, type_rank, type, updated_us, id FROM entries NOT INDEXED"
               f" WHERE rowid IN (SELECT value FROM json_each(:rowids)) AND {_ELIGIBLE}")  # by rowid
        return {rowid: (tokens, (scope_rank, type_rank, type_ if type_rank == 3 else "", -updated_us, id_))
                for rowid, tokens, scope_rank, type_rank, type_, updated_us, id_ in
                self.db.execute(sql, {"doc": document, "rowids": json.dumps([int(r) for r in rowids])})}

    def candidates(self, vector: np.ndarray | None, match: str | None, k: int, document: str | None
                   ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], dict[int, tuple[int, tuple[Any, ...]]]]:
        """The k best eligible vector neighbours and the k best eligible FTS5 matches for `document`,
        best first, with `eligible_keys` for all of them (as `nearest_eligible`, `lexical_eligible`).

        A first round takes more of each than needed (a quarter more neighbours, half more matches)
        and checks them together, by rowid; on the benchmark corpus that is enough for nine queries
        in ten. A retriever still short (its best are another document's, deleted, shadowed, or
        cards: a character's name matches its card first) goes on alone in wider rounds."""
        if k <= 0:
            return [], [], {}
        first_v, first_l = k + k // 4, k + k // 2
        ranked_v = self.nearest(vector, first_v) if vector is not None else []
        ranked_l = self.lexical(match, first_l) if match else []
        keys = self.eligible_keys(sorted({r for r, _ in ranked_v} | {r for r, _ in ranked_l}), document)
        nearest = [hit for hit in ranked_v if hit[0] in keys]
        if vector is not None and len(nearest) < k and len(ranked_v) == first_v:
            nearest, more = self.nearest_eligible(vector, k, document)
            keys.update(more)
        lexical = [hit for hit in ranked_l if hit[0] in keys]
        if match and len(lexical) < k and len(ranked_l) == first_l:
            lexical, more = self.lexical_eligible(match, k, document)
            keys.update(more)
        return nearest[:k], lexical[:k], keys

    def records(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        """The API records of these entries, by rowid."""
        if not rowids:
            return {}
        args = {f"r{i}": r for i, r in enumerate(rowids)}
        marks = ",".join(f":r{i}" for i in range(len(rowids)))
        return {rowid: json.loads(record) for rowid, record in
                self.db.execute(f"SELECT rowid, record FROM entries WHERE rowid IN ({marks})", args)}

    def fitting(self, document: str | None, max_items: int, token_budget: int) -> list[tuple[dict[str, Any], int]]:
        """What `recall.fit` keeps of `ordered(document)`, with their token estimates, in order.

        The same greedy rule, run on the token counts in `entries_eligible`: the head of the order
        first, then only the later rows small enough for what is left (nothing larger can fit once
        `left` tokens remain). Only the kept records are decoded."""
        from ..domains.recall.rank import fit

        sql = f"SELECT rowid, tokens FROM entries INDEXED BY entries_eligible WHERE {_ELIGIBLE}"
        head_size = 128 + 2 * max(0, max_items)
        head = self.db.execute(f"{sql} ORDER BY {_ORDER} LIMIT :n", {"doc": document, "n": head_size}).fetchall()
        kept = list(fit(head, max_items, token_budget))
        if len(head) == head_size and len(kept) < max_items:
            left = token_budget - sum(t for _, t in kept)
            seen = {rowid for rowid, _ in head}
            later = ((r, t) for r, t in self.db.execute(f"{sql} AND tokens <= :left ORDER BY {_ORDER}",
                                                        {"doc": document, "left": left}) if r not in seen)
            kept.extend(fit(later, max_items - len(kept), left))
        records = self.records([r for r, _ in kept])
        return [(records[r], t) for r, t in kept]

    def ordered(self, document: str | None) -> Iterator[tuple[dict[str, Any], int]]:
        """Injectable memories in deterministic order, with their token estimates, read lazily."""
        sql = f"SELECT record, tokens FROM entries WHERE {_ELIGIBLE} ORDER BY {_ORDER}"
        for record, tokens in self.db.execute(sql, {"doc": document}):
            yield json.loads(record), tokens

    def cards(self, kind: str | None = None) -> list[dict[str, Any]]:
        where = "kind IN ('character', 'world')" if kind is None else "kind = ?"
        args = () if kind is None else (kind,)
        sql = f"SELECT record FROM entries WHERE {where} AND removed_at IS NULL AND shadowed = 0 ORDER BY kind, id"
        return [json.loads(r) for (r,) in self.db.execute(sql, args)]

    def skills(self) -> list[dict[str, Any]]:
        return [json.loads(r) for (r,) in self.db.execute(
            "SELECT record FROM entries WHERE kind = 'skill' AND shadowed = 0 ORDER BY bank = 'global', id")]

    def _snapshot(self) -> tuple[int, apsw.Connection, int] | None:
        """Inside `reading()`: (thread, its read connection, the snapshot's data_version), a key that
        moves whenever another connection commits. None for the writer, whose own commits it misses."""
        if not (_reading.depth and self.path is not None):
            return None
        db = self.db
        return threading.get_ident(), db, db.execute("PRAGMA data_version").fetchall()[0][0]

    def counts(self) -> dict[str, int]:
        snapshot = self._snapshot()  # counting scans every entry: a reader reuses its count until a commit
        cached = self._counts_cache.get(snapshot[0]) if snapshot else None
        if snapshot and cached and cached[0] is snapshot[1] and cached[1] == snapshot[2]:
            return dict(cached[2])
        out = self._count()
        if snapshot:
            self._counts_cache[snapshot[0]] = (snapshot[1], snapshot[2], dict(out))
        return out

    def _count(self) -> dict[str, int]:
        out = {"memories": 0, "deleted": 0, "tombstones": 0, "characters": 0, "world": 0, "skills": 0}
        for kind, deleted, removed, n in self.db.execute(
                "SELECT kind, deleted, removed_at IS NOT NULL, count(*) FROM entries GROUP BY 1, 2, 3"):
            if removed:
                out["tombstones"] += n
            elif kind == "memory":
                out["deleted" if deleted else "memories"] += n
            else:
                out["characters" if kind == "character" else "world" if kind == "world" else "skills"] += n
        return out

    def error_count(self) -> int:
        """Files with at least one error."""
        return self.db.execute("SELECT count(DISTINCT source) FROM diagnostics WHERE severity = 'error'").fetchall()[0][0]

    def diagnostics(self) -> list[Diagnostic]:
        return [Diagnostic(s, line, sev, msg) for s, line, sev, msg in self.db.execute(
            "SELECT source, line, severity, message FROM diagnostics ORDER BY source, line, message")]

    def set_link_diagnostics(self, diagnostics: list[Diagnostic], sources: Iterable[str] | None = None) -> None:
        """Problems found by the walk itself (links out of the bank, files that are not ordinary files, names
        that are not UTF-8): replaced wholesale by a full sync, or only those of `sources` (sync_paths)."""
        if sources is None:
            self.db.execute("DELETE FROM diagnostics WHERE origin = 'scan'")
        else:
            self.db.executemany("DELETE FROM diagnostics WHERE origin = 'scan' AND source = ?", [(s,) for s in sources])
        self.db.executemany(
            "INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, 'scan', ?, ?, ?)",
            [(d.source, d.line, d.severity, d.message) for d in diagnostics])


def _load_vec(db: apsw.Connection) -> str | None:
    """Load sqlite-vec into a connection; the reason it failed, or None."""
    try:
        import sqlite_vec

        db.enable_load_extension(True)
        db.load_extension(sqlite_vec.loadable_path())
        db.enable_load_extension(False)
    except Exception as e:  # ImportError, apsw.ExtensionLoadingError, OSError: all mean "no vectors"
        return f"sqlite-vec could not be loaded ({e.__class__.__name__})"
    return None


def embed_text(kind: str, record: dict[str, Any]) -> str:
    """What a memory or card is embedded as."""
    if kind == "memory":
        return str(record["content"])
    parts = [record["name"], *record["aliases"], record["summary"], record.get("state") or "", record["content"]]
    return "\n".join(p for p in parts if p)


def _fts_fields(record: Record) -> tuple[str, str]:
    if isinstance(record, Memory):
        return record.content, " ".join(record.tags)
    if isinstance(record, Card):
        body = " ".join(filter(None, (record.summary, record.state or "", record.content)))
        return body, " ".join((record.name, *record.aliases, *record.keys))
    assert isinstance(record, Skill)
    return record.content, record.name
