"""The strong tier's table: one contextual vector per entry (memories, cards, world entries), int8 with a
scale per row, beside the static `vec` (issue 35).

A mixin of `Index`. A row is keyed by the entry's rowid and carries the hash of the file it was made
from: a vector is written only while its entry still holds that hash (a file saved again meanwhile
gets a fresh one), and an entry rewritten or removed loses its row in the same transaction
(`_drop_strong`, called where the static vector is dropped). The model the rows were made with is in
meta (`strong_model`): rows of another model are all dropped before the first of a new one is
written. Every change moves `strong_tag`, so each connection's in-memory copy knows when it is stale."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Iterable

import apsw

from .schema import DomainSchema, register
from .vecstore import PATCH_LIMIT, written_between  # the same write log as the static vectors

if TYPE_CHECKING:
    import numpy as np

    from .strongcopy import StrongVectors

register(DomainSchema(
    "index.strong", 2,  # 2: `zh`, the script of the entry's text (cross-language calibration pools by it)
    "CREATE TABLE strong_vec(rowid INTEGER PRIMARY KEY, hash TEXT NOT NULL, scale REAL NOT NULL, emb BLOB NOT NULL,"
    " zh INTEGER NOT NULL DEFAULT 0)",
    "DROP TABLE IF EXISTS strong_vec"))

# what the tier embeds: every live memory with text, card and world entry (skills are not searched); a card
# with a summary and no body counts no tokens and is still found by its name and summary
_LIVE = "kind != 'skill' AND removed_at IS NULL AND (tokens > 0 OR kind != 'memory')"


class StrongStore:
    """Strong vector reads and writes on the index's connection (`Index` mixes this in)."""

    db: apsw.Connection
    get_meta: Any
    set_meta: Any
    view_memo: Any

    def _init_strong(self) -> None:
        self._strong: StrongVectors | None = None
        self._strong_lock = threading.Lock()
        # this process's writes: tag before -> (tag after, rowids written or None for a reload), so a copy at
        # an older tag is patched by re-reading those rows (a save's one row) instead of reloaded (vecstore.py)
        self._strong_steps: dict[str | None, tuple[str, frozenset[int] | None]] = {}

    def strong_model(self) -> tuple[str, int] | None:
        """(model identity, dimension) the strong vectors were made with; None before the first."""
        name, dim = self.get_meta("strong_model"), self.get_meta("strong_dim")
        return (name, int(dim)) if name is not None and dim is not None else None

    def start_strong(self, model: str, dim: int) -> None:
        """Make the table hold `model`'s vectors: another model's are dropped (in the caller's transaction)."""
        if self.strong_model() == (model, int(dim)):
            return
        self.db.execute("DELETE FROM strong_vec")
        self.set_meta("strong_model", model)
        self.set_meta("strong_dim", str(int(dim)))
        self._strong_changed(None)

    def _strong_changed(self, rowids: Iterable[int] | None) -> None:
        import secrets  # here: `random` and its imports are for writes, not every command

        before, tag = self.get_meta("strong_tag"), secrets.token_hex(8)
        self.set_meta("strong_tag", tag)
        written = None if rowids is None else frozenset(rowids)
        steps = self._strong_steps
        steps.pop(before, None)  # a rolled-back step from the same tag is replaced
        steps[before] = (tag, written if written is not None and len(written) <= PATCH_LIMIT else None)
        while len(steps) > 64:
            del steps[next(iter(steps))]

    def _drop_strong(self, rowid: int) -> None:
        """An entry rewritten or removed: its strong vector goes with it (the caller's transaction)."""
        self.db.execute("DELETE FROM strong_vec WHERE rowid = ?", (rowid,))
        if self.db.changes():
            self._strong_changed((rowid,))

    def strong_pending(self, limit: int, after: tuple[int, int] = (0, 0)) -> list[tuple[int, str, str, str]]:
        """(rowid, kind, record JSON, hash) of live entries without a strong vector: memories first
        (what a prompt searches), then cards and world entries, each in rowid order; past `after`
        ((0, rowid) among memories, (1, rowid) among the others: where the last batch ended), so a
        large bank's fill reads each entry once, not once per batch."""
        rows: list[tuple[int, str, str, str]] = []
        for phase, which in ((0, "kind = 'memory'"), (1, "kind != 'memory'")):
            if phase < after[0]:
                continue
            start = after[1] if phase == after[0] else 0
            rows += self.db.execute(
                f"SELECT rowid, kind, record, hash FROM entries WHERE rowid > ? AND {which} AND {_LIVE}"
                " AND rowid NOT IN (SELECT rowid FROM strong_vec) ORDER BY rowid LIMIT ?",
                (start, limit - len(rows))).fetchall()
            if len(rows) >= limit:
                break
        return rows

    def strong_counts(self) -> tuple[int, int]:
        """(entries with a strong vector, entries the tier embeds). The count scans every entry (~20 ms at
        10,000 memories, on every `index:status`): kept until the index changes (`view_memo`)."""
        memo = self.view_memo("index.strong_counts")
        if memo is not None and "counts" in memo:
            return memo["counts"]  # type: ignore[no-any-return]
        done, total = self.db.execute(
            f"SELECT count(strong_vec.rowid), count(*) FROM entries LEFT JOIN strong_vec"
            f" ON strong_vec.rowid = entries.rowid WHERE {_LIVE.replace('kind', 'entries.kind')}").fetchall()[0]
        if memo is not None:
            memo["counts"] = (int(done), int(total))
        return int(done), int(total)

    def put_strong(self, rows: list[tuple[int, str]], vectors: np.ndarray, zh: list[bool] | None = None) -> int:
        """Store the vectors of (rowid, hash) rows, in the caller's transaction: a row whose entry is gone
        or now holds another hash (saved again since it was read) is skipped. `zh`: which rows' texts are
        Chinese (`kernel.text.script_language`; none when not given). Returns how many were stored."""
        from .strongcopy import quantize

        q, scale = quantize(vectors)
        flags = zh if zh is not None else [False] * len(rows)
        before = self.db.total_changes()
        self.db.executemany(
            "INSERT OR REPLACE INTO strong_vec(rowid, hash, scale, emb, zh) SELECT ?1, ?2, ?3, ?4, ?5"
            f" WHERE EXISTS (SELECT 1 FROM entries WHERE rowid = ?1 AND hash = ?2 AND {_LIVE})",
            [(int(rowid), hash_, float(scale[i]), q[i].tobytes(), int(bool(flags[i])))
             for i, (rowid, hash_) in enumerate(rows)])
        stored = self.db.total_changes() - before
        self._strong_changed(rowid for rowid, _ in rows)
        return stored

    def strong_copy(self) -> StrongVectors | None:
        """Every strong vector at this snapshot's `strong_tag`, kept in memory until the tag moves (then
        patched with the rows this process wrote since, or reloaded); None before the first one."""
        from .strongcopy import StrongVectors

        tag, model = self.get_meta("strong_tag"), self.strong_model()
        if tag is None or model is None:
            return None
        cached = self._strong
        if cached is None or cached.tag != tag or cached.model != model[0]:
            with self._strong_lock:
                cached = self._strong
                if cached is None or cached.tag != tag or cached.model != model[0]:
                    written = self._strong_since(cached.tag, tag) if cached is not None and cached.model == model[0] \
                        else None
                    if cached is not None and written is not None:
                        found = self.db.execute("SELECT rowid, scale, emb, zh FROM strong_vec WHERE rowid IN"
                                                " (SELECT value FROM json_each(?))", (json.dumps(sorted(written)),))
                        cached = cached.patched(tag, written, found.fetchall())
                    else:
                        found = self.db.execute("SELECT rowid, scale, emb, zh FROM strong_vec ORDER BY rowid")
                        cached = StrongVectors.from_rows(tag, model[0], model[1], found.fetchall())
                    self._strong = cached
        return cached

    def _strong_since(self, start: str, tag: str) -> frozenset[int] | None:
        """The rowids this process wrote between two tags, or None when its log cannot say."""
        return written_between(self._strong_steps, start, tag)
