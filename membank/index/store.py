"""The index database: its connections and snapshots, transactions, meta, the generic tables (files,
entries, diagnostics, fts) with id clashes and tombstones, and the domain schemas registered with it."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterable, Iterator

import apsw

from ..files.records import Diagnostic
from ..kernel import callmemo
from .schema import SCHEMAS, DomainSchema, register
from .entries import EntryStore
from . import lexical
from .strongstore import StrongStore
from .vecstore import VectorStore

SCHEMA_VERSION = 9  # 5: entries.id_line; 6: card records carry the lines of their story values; 7: and of include; 8: diagnostics.code;
# 9: card records carry `match` and `minScore`

VIEWS_KEPT = 16  # views (read threads × data versions) a memo keeps before starting afresh
# SQLite's page cache of each read connection, in KiB (its default is ~2,000): the sidecar keeps four, all
# reading the one file the system caches already, so a miss costs a copy, not a disk read (measured: the
# sidecar ~6 MB smaller at 10,000 files, its read round trips unchanged; docs/performance.md)
READER_CACHE_KIB = 512
TOKENIZER = ("porter", "unicode61", "remove_diacritics", "2")  # FTS5's, for the index and for queries

_SCHEMA = f"""
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
CREATE INDEX entries_pending ON entries(rowid) WHERE embedded = 0 AND kind != 'skill' AND removed_at IS NULL;
CREATE TABLE diagnostics(source TEXT NOT NULL, origin TEXT NOT NULL, line INTEGER, severity TEXT, message TEXT,
                         code TEXT);
CREATE INDEX diagnostics_source ON diagnostics(source);
CREATE VIRTUAL TABLE fts USING fts5(body, names, contentless_delete=1, content='',
                                    tokenize='{" ".join(TOKENIZER)}');
"""



# `counts()` groups every entry (`membank status`): without this covering index it reads every record's
# JSON (~9 ms at 10,000 entries, the table's pages), with it a few pages of short keys (~1.5 ms). Registered
# as a domain's object is, so an index made before it gets it on open, without a rebuild or a re-read.
register(DomainSchema("index.counts", 1, "CREATE INDEX entries_counts ON entries(kind, deleted, removed_at)",
                      "DROP INDEX IF EXISTS entries_counts"))


class _ReadState(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.open: list[apsw.Connection] = []  # read connections with a snapshot open in this block
        # found once per block (a status asks ~10 times): by id(index) (index, connection); by id(connection) its view key
        self.conns: dict[int, tuple[Any, apsw.Connection]] = {}
        self.views: dict[int, tuple[int, int, int]] = {}


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
            _reading.conns.clear()
            _reading.views.clear()


def _file_identity(path: Path | None) -> tuple[int, int] | None:
    """(device, inode) of the index file, or None (in memory, or no file there now)."""
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class IndexError_(Exception):
    """The index could not be opened or written."""


class Index(EntryStore, VectorStore, StrongStore):
    """The derived index under `.writenow/.index/`. Safe to delete: a sync rebuilds it."""

    def __init__(self, path: Path | str):
        self.path = Path(path) if path != ":memory:" else None
        self.lock = threading.RLock()  # one writer; apsw serializes calls on a connection anyway
        self._generation = 0  # readers reconnect when it moves: after a rebuild's first commit
        self._reconnected = False
        self._readers: dict[int, tuple[apsw.Connection, int]] = {}  # thread -> read connection, generation
        self._readers_lock = threading.Lock()
        self._counts_cache: dict[int, tuple[apsw.Connection, int, dict[str, int]]] = {}  # thread -> snapshot's counts
        self._init_vectors()
        self._init_strong()
        self.caches: dict[str, Any] = {}  # the domains' caches of what this index's connections read
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
        else:
            self._domain_schemas()

    def _connect(self, path: Path | str, create: bool = True) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE
        if create:
            flags |= apsw.SQLITE_OPEN_CREATE
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        db = apsw.Connection(str(path), flags=flags)
        db.set_busy_timeout(5000)
        # fetched: apsw runs the statements after one that returns a row (journal_mode) only as it is read
        db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF").fetchall()
        db.execute("CREATE VIRTUAL TABLE temp.fts_vocab USING fts5vocab(main, fts, 'row')")  # per connection
        self.vec_error = _load_vec(db)
        self.caches.clear()  # keyed by connection: a new one may reuse an old one's id()
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
        self._domain_schemas()

    def _domain_schemas(self) -> None:
        """Create what the domains registered (index/schema.py); a domain schema whose version moved is
        dropped and made again, and the files it is derived from are forgotten, so the next sync re-reads
        those alone."""
        with self.db:
            for schema in SCHEMAS.values():
                key = f"schema:{schema.name}"
                if self.get_meta(key) == str(schema.version):
                    continue
                self.db.execute(schema.drop)
                self.db.execute(schema.create)
                for prefix in schema.derived_from:
                    self.db.execute("DELETE FROM files WHERE substr(source, 1, length(?)) = ?", (prefix, prefix))
                self.set_meta(key, str(schema.version))

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
        self._strong = None

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
        self._writer_file = _file_identity(self.path)

    def on_disk(self) -> bool:
        """Whether the file this writer writes is still the one at its path (not deleted or replaced)."""
        return self.path is None or _file_identity(self.path) == self._writer_file

    def _follow_replaced(self) -> None:
        """Another process rebuilt the index (`membank index --rebuild` beside a server): the path holds a
        new file, while this writer still writes the old one, unlinked, which nobody will read again. The
        writer moves to the new file (its readers at its first commit, as after a rebuild of our own)."""
        now = _file_identity(self.path)
        if self.path is None or now is None or now == self._writer_file or os.path.islink(self.path):
            return  # (a link put there: never written through; the runtime refuses the call, project.py)
        try:
            fresh = self._connect(self.path, create=False)
            ours = fresh.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION
        except apsw.Error:
            return  # not readable now: this writer goes on with its file
        if not ours:  # another version's index, or one being made: never reset under its writer
            fresh.close()
            return
        self._writer.close()
        self.db = fresh
        self._domain_schemas()

    @property
    def lock(self) -> Any:
        """The writer's lock; inside `reading()` a no-op: the reader's snapshot needs none."""
        if _reading.depth and self.path is not None:
            return _NO_LOCK
        return self._lock

    @lock.setter
    def lock(self, value: Any) -> None:
        self._lock = value

    def view_key(self) -> tuple[int, int, int] | None:
        """A key that moves whenever what this thread's connection sees may have changed: another
        connection committed (`PRAGMA data_version`) or this one wrote (`total_changes`, even a write
        rolled back). None in the middle of a write, where nothing read may be cached. Another
        connection's commit is looked for once per call in a `callmemo` scope (an assembly asks ~19 times);
        this connection's own writes are seen at once."""
        db = self.db
        if self.in_snapshot():  # a snapshot: what it sees cannot move before the block ends
            if id(db) not in _reading.views:
                _reading.views[id(db)] = (id(db), db.execute("PRAGMA data_version").fetchall()[0][0], db.total_changes())
            return _reading.views[id(db)]
        if not db.getautocommit():
            return None
        version = callmemo.kept(("data_version", id(db)), lambda: db.execute("PRAGMA data_version").fetchall()[0][0])
        return id(db), version, db.total_changes()

    def view_memo(self, name: str) -> dict[Any, Any] | None:
        """A dict for the memo `name`, kept while this thread's view of the index holds (`view_key`);
        None in the middle of a write, where nothing read may be kept. Each read thread has a view of
        its own, so each gets a dict of its own: a memo of one slot would be thrown away every time
        another read thread asked (measured in the sidecar: every prompt re-read Layer 3)."""
        key = self.view_key()
        if key is None:
            return None
        views = self.caches.setdefault(name, {})
        memo = views.get(key)
        if memo is None:
            if len(views) >= VIEWS_KEPT:
                views.clear()  # views of data since changed, or of connections since closed
            memo = views[key] = {}
        return memo  # type: ignore[no-any-return]

    def in_snapshot(self) -> bool:
        """Whether this thread reads inside `reading()`: its own connection, one snapshot."""
        return bool(_reading.depth and self.path is not None)

    def prepare_reader(self) -> None:
        """Give the calling thread its read connection now (a server warms its read threads so)."""
        if self.path is not None:
            self._reader_conn()

    def _open_reader(self) -> apsw.Connection:
        assert self.path is not None
        # a reader never makes the file (nor its folder): a project deleted under a server whose read
        # threads connect late must stay deleted; the writer made the file when the index opened
        conn = self._connect(self.path, create=False)
        conn.execute(f"PRAGMA query_only=1; PRAGMA cache_size=-{READER_CACHE_KIB}")
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
        found = _reading.conns.get(id(self))
        if found is not None and found[0] is self:
            return found[1]  # the block's snapshot of this index
        conn = self._reader_conn()
        if not any(c is conn for c in _reading.open):
            conn.execute("BEGIN")  # the snapshot starts at the first read and lasts for the block
            _reading.open.append(conn)
        _reading.conns[id(self)] = (self, conn)
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
                self._follow_replaced()
                db = self.db
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
        """`meta`'s value for `key`, read once per view of the index (an assembly asks ~10 times)."""
        memo = self.view_memo("index.meta")
        if memo is not None and key in memo:
            return memo[key]  # type: ignore[no-any-return]
        rows = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
        value = rows[0][0] if rows else None
        if memo is not None:
            memo[key] = value
        return value  # type: ignore[no-any-return]

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- files ------------------------------------------------------------------------------

    # -- entries ----------------------------------------------------------------------------

    def fts_tokens(self, text: str) -> list[str]:
        """The tokens FTS5 makes of `text` in a query (folded, stemmed): what `term_documents` counts."""
        tokenizer = self.db.fts5_tokenizer(TOKENIZER[0], list(TOKENIZER[1:]))
        return [t[2] for t in tokenizer(text.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None) if len(t) > 2]

    def term_documents(self, tokens: Iterable[str]) -> dict[str, int]:
        """How many entries hold each token (FTS5's vocabulary; 0 for none). Kept until the index
        changes: a session asks about the same words often."""
        memo = self.view_memo("index.term_documents")
        counts: dict[str, int] = memo.setdefault("counts", {}) if memo is not None else {}
        tokens = list(tokens)
        missing = sorted({t for t in tokens if t not in counts})
        if missing:
            found = dict(self.db.execute("SELECT term, doc FROM temp.fts_vocab WHERE term IN"
                                         " (SELECT value FROM json_each(?))", (json.dumps(missing),)).fetchall())
            counts.update({t: found.get(t, 0) for t in missing})
        return {t: counts[t] for t in tokens}

    def lexical(self, match: str, k: int) -> list[tuple[int, float]]:
        """(rowid, bm25) of the k best FTS5 matches; names weigh double. Kept until the index changes, and
        an OR of phrases made from each phrase's own rows where that is exact (index/lexical.py)."""
        return lexical.best(self, match, k)

    # -- reads ------------------------------------------------------------------------------

    def find(self, grp: str, id_: str) -> tuple[str, dict[str, Any], str] | None:
        """(bank, record, hash) of the live entry with this id; the project bank first."""
        rows = self.db.execute(
            "SELECT bank, record, hash FROM entries WHERE grp = ? AND bank IN ('project', 'global') AND id = ?"
            " AND removed_at IS NULL AND shadowed = 0 ORDER BY bank = 'global', source LIMIT 1",  # IN: entries_id
            (grp, id_)).fetchall()
        return (rows[0][0], json.loads(rows[0][1]), rows[0][2]) if rows else None

    def records(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        """The API records of these entries, by rowid."""
        if not rowids:
            return {}
        args = {f"r{i}": r for i, r in enumerate(rowids)}
        marks = ",".join(f":r{i}" for i in range(len(rowids)))
        return {rowid: json.loads(record) for rowid, record in
                self.db.execute(f"SELECT rowid, record FROM entries WHERE rowid IN ({marks})", args)}

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
        return [Diagnostic(s, line, sev, msg, code) for s, line, sev, msg, code in self.db.execute(
            "SELECT source, line, severity, message, code FROM diagnostics ORDER BY source, line, message")]


@functools.lru_cache(maxsize=1)
def vec_extension() -> str:
    """The sqlite-vec loadable extension: `vec0` in the `sqlite_vec` package, as its `loadable_path()`
    says, found without importing the package (its `__init__` imports numpy, ~30 ms that opening an
    index for `membank status` does not otherwise pay)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the sqlite_vec package is not installed")
    return os.path.normpath(os.path.join(spec.submodule_search_locations[0], "vec0"))


def _load_vec(db: apsw.Connection) -> str | None:
    """Load sqlite-vec into a connection; the reason it failed, or None."""
    try:
        db.enable_load_extension(True)
        db.load_extension(vec_extension())
        db.enable_load_extension(False)
    except Exception as e:  # ImportError, apsw.ExtensionLoadingError, OSError: all mean "no vectors"
        return f"sqlite-vec could not be loaded ({e.__class__.__name__})"
    return None
