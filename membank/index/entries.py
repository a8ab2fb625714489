"""The generic tables of the index: files (what was last read of each), entries (one row per memory,
card and skill), their FTS rows and diagnostics, id clashes and tombstones.

A mixin of `Index` (it uses the index's connection); a domain adds the columns of its own kinds of
record through the schema registry (`row_columns`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

import apsw

from ..files.frontmatter import iso_to_micros
from ..files.intake import Prepared, prepare
from ..files.records import Card, Diagnostic, Memory, Record
from .schema import SCHEMAS, row_columns

NARROW_FROM = 1000  # touched keys: above this, `settle_clashes` first asks which can need settling at all
_GROUP = {"memory": "memory", "character": "card", "world": "card", "skill": "skill"}


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    hash: str


def entry_kind(record: Record) -> str:
    """An entry's `kind` column: memory | character | world | skill."""
    if isinstance(record, Memory):
        return "memory"
    if isinstance(record, Card):
        return "character" if record.section == "characters" else "world"
    return "skill"


class EntryStore:
    """Writes of the generic tables (`Index` mixes this in)."""

    db: apsw.Connection
    _drop_vector: Any

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

    def file_stamps(self, bank: str) -> dict[str, tuple[int, int]]:
        """Each file's (size, mtime_ns) as the index last read it: all a sync's plan compares (a
        FileState a row was ~15 ms of every command's sync at 10,000 files)."""
        return {s: (size, mt) for s, size, mt in
                self.db.execute("SELECT source, size, mtime_ns FROM files WHERE bank = ?", (bank,))}

    def put_file(self, source: str, bank: str, size: int, mtime_ns: int, hash_: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO files(source, bank, size, mtime_ns, hash) VALUES (?,?,?,?,?)",
                        (source, bank, size, mtime_ns, hash_))

    def _old(self, source: str) -> tuple[int, str, str, str] | None:
        rows = self.db.execute("SELECT rowid, grp, bank, id FROM entries WHERE source = ?", (source,)).fetchall()
        return rows[0] if rows else None

    def is_empty(self) -> bool:
        """Nothing read yet: no file, no entry, no tombstone (a cold index)."""
        return not self.db.execute("SELECT EXISTS(SELECT 1 FROM files) OR EXISTS(SELECT 1 FROM entries)").fetchall()[0][0]

    def put(self, bank: str, record: Record | None, source: str, hash_: str,
            diagnostics: tuple[Diagnostic, ...], id_line: int = 1, new: bool = False,
            prepared: Prepared | None = None) -> set[tuple[str, str, str]]:
        """Store what one file gave (its record may be None); returns the id keys whose clashes may have
        changed. `new`: the caller knows the index holds nothing of this source (a cold index), so the
        lookups for an old row and old diagnostics are skipped. `prepared`: the record's JSON and search
        texts when the caller has them already (computed where the file was parsed)."""
        touched: set[tuple[str, str, str]] = set()
        old = None if new else self._old(source)
        if old is not None:
            touched.add((old[1], old[2], old[3]))
            self.db.execute("DELETE FROM fts WHERE rowid = ?", (old[0],))
            self._drop_vector(old[0])
            _clear_derived(self.db, old[0])
        if not new:
            self.db.execute("DELETE FROM diagnostics WHERE source = ? AND origin = 'parse'", (source,))
        if diagnostics:
            self.db.executemany(
                "INSERT INTO diagnostics(source, origin, line, severity, message, code) VALUES (?, 'parse', ?, ?, ?, ?)",
                [(d.source, d.line, d.severity, d.message, d.code) for d in diagnostics])
        if record is None:
            if old is not None:
                self.db.execute("DELETE FROM entries WHERE rowid = ?", (old[0],))
            return touched
        kind = entry_kind(record)
        prepared = prepared if prepared is not None else prepare(record)
        row = {**self._row(kind, bank, record, hash_, prepared), "id_line": id_line}
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
        self.db.execute("INSERT INTO fts(rowid, body, names) VALUES (?, ?, ?)", (rowid, prepared.fts_body, prepared.fts_names))
        for schema in SCHEMAS.values():
            derived = schema.rows(record) if schema.rows is not None else ()
            if derived:
                self.db.executemany(schema.insert, [(rowid, *r) for r in derived])
        touched.add((row["grp"], bank, record.id))
        return touched

    @staticmethod
    def _row(kind: str, bank: str, record: Record, hash_: str, prepared: Prepared) -> dict[str, Any]:
        row: dict[str, Any] = {
            "source": record.source, "kind": kind, "grp": _GROUP[kind], "bank": bank, "id": record.id,
            "type": None, "scope": None, "document": None, "origin": None, "scope_rank": None,
            "type_rank": None, "updated_us": None, "deleted": 0, "tokens": prepared.tokens,
            "hash": hash_, "record": prepared.record_json,
        }
        row.update(row_columns(record))  # what a domain registered for this kind (the order's columns)
        if isinstance(record, Card):
            row.update(type=record.kind, updated_us=iso_to_micros(record.updated),
                       deleted=int(record.deleted_at is not None))
        return row

    def remove(self, source: str, at: str) -> set[tuple[str, str, str]]:
        """A file is gone: memories leave a tombstone row for audit, other kinds leave nothing."""
        self.db.execute("DELETE FROM files WHERE source = ?", (source,))
        self.db.execute("DELETE FROM diagnostics WHERE source = ?", (source,))
        for schema in SCHEMAS.values():  # what a domain derived from the file goes with it
            if callable(schema.forget):
                schema.forget(self, source)
            elif schema.forget:
                self.db.execute(schema.forget, (source,))
        old = self._old(source)
        if old is None:
            return set()
        self.db.execute("DELETE FROM fts WHERE rowid = ?", (old[0],))
        self._drop_vector(old[0])
        _clear_derived(self.db, old[0])
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
        old clash message is rewritten. A cold index touches every key and nearly none clash: above
        NARROW_FROM keys, one pass over the index first says which those are."""
        if not keys:
            return
        if len(keys) > NARROW_FROM:
            keys = keys & self._unsettled()
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

    def _unsettled(self) -> set[tuple[str, str, str]]:
        """Every key the loop of `settle_clashes` would not skip: one with two live rows, a shadowed row
        or a file with a clash message. One pass over the index instead of a lookup per key (a cold
        index touches them all)."""
        return {(g, b, i) for g, b, i in self.db.execute(
            "SELECT grp, bank, id FROM entries WHERE removed_at IS NULL GROUP BY grp, bank, id"
            " HAVING count(*) > 1 OR max(shadowed) = 1"
            " OR max(source IN (SELECT source FROM diagnostics WHERE origin = 'dup')) = 1")}

    def set_link_diagnostics(self, diagnostics: list[Diagnostic], sources: Iterable[str] | None = None) -> None:
        """Problems found by the walk itself (links out of the bank, files that are not ordinary files, names
        that are not UTF-8): replaced wholesale by a full sync, or only those of `sources` (sync_paths)."""
        if sources is None:
            self.db.execute("DELETE FROM diagnostics WHERE origin = 'scan'")
        else:
            self.db.executemany("DELETE FROM diagnostics WHERE origin = 'scan' AND source = ?", [(s,) for s in sources])
        self.db.executemany(
            "INSERT INTO diagnostics(source, origin, line, severity, message, code) VALUES (?, 'scan', ?, ?, ?, ?)",
            [(d.source, d.line, d.severity, d.message, d.code) for d in diagnostics])


def _clear_derived(db: apsw.Connection, rowid: int) -> None:
    for schema in SCHEMAS.values():
        if schema.clear:
            db.execute(schema.clear, (rowid,))
