"""Every memory's eligibility key, kept for one view of the index (queries.py reads it once asked often).

The memories in `entries_eligible` with what ranking them needs (tokens, `recall.deterministic_key`) and
what decides whether a preview for a document with a hidden set may inject them (scope, document, type):
read in one covering scan of that index, then ELIGIBLE is applied in Python (`among`, a few rows) or numpy
(`eligible_array`, every row) with the same answers as SQL's, NULLs included."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from ...index import Index
from .order import KEY_SQL

if TYPE_CHECKING:
    import numpy as np

# the memories `entries_eligible` holds, whatever the document and hidden set (ELIGIBLE less those two)
BASE = "kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0 AND tokens > 0"
KEYS_AFTER = 4  # look-ups in one view of the index after which it reads every memory's key (`every_key`)
SLOTS_KEPT = 4  # threads' tables kept before those of other views are let go (a thread that ended keeps none)


def _memo(index: Index) -> dict[str, Any] | None:
    """This thread's memo for its current view of the index (`Index.view_key`), None mid-write: one slot
    per thread, not a view memo's sixteen (a table is ~35 MB at 100,000 memories; a stale view's goes)."""
    key = index.view_key()
    if key is None:
        return None
    slots = index.caches.setdefault("recall.every_key", {})
    me = threading.get_ident()
    found = slots.get(me)
    if found is None or found[0] != key:
        if len(slots) >= SLOTS_KEPT:  # threads gone or idle on an old view: their tables go, not a thread's own
            for ident in [i for i, (k, _) in list(slots.items()) if k != key and i != me]:
                slots.pop(ident, None)
        found = slots[me] = (key, {})
    return found[1]  # type: ignore[no-any-return]


def every_key(index: Index) -> dict[int, tuple[int, tuple[Any, ...], Any, Any, Any]] | None:
    """(tokens, key, scope, document, type) of every memory in `entries_eligible`, for this view of the
    index, once it has asked KEYS_AFTER times (the first preview after a save pays no scan; the next
    look up a dict instead of seeking each row, whose key columns lie past its record); None before."""
    memo = _memo(index)
    if memo is None:
        return None
    table = memo.get("table")
    if table is None:
        memo["asked"] = memo.get("asked", 0) + 1
        if memo["asked"] < KEYS_AFTER:
            return None
        rows = index.db.execute(f"SELECT rowid, tokens, scope, document, type, {KEY_SQL}"
                                f" FROM entries INDEXED BY entries_eligible WHERE {BASE}")
        table = memo["table"] = {row[0]: (row[1], row[5:], row[2], row[3], row[4]) for row in rows}
    return table  # type: ignore[no-any-return]


def eligible_array(index: Index, document: str | None, hidden: tuple[str, str]) -> np.ndarray | None:
    """queries.py `eligible_rowids` (in rowid order, not ORDER_SQL's) from the view's `every_key`, by numpy over
    columns coded once per view; None when the view has no such table yet."""
    every = every_key(index)
    memo = _memo(index)
    if every is None or memo is None:
        return None
    import numpy as np

    columns = memo.get("columns")
    if columns is None:
        rowids = np.fromiter(every, np.int64, len(every))
        docs: dict[Any, int] = {None: -1}
        kinds: dict[Any, int] = {None: -1}
        found = list(every.values())
        open_ = np.array([f[2] is not None and f[2] != "document" for f in found], bool)
        doc = np.array([docs.setdefault(f[3], len(docs)) for f in found], np.int64)
        type_ = np.array([kinds.setdefault(f[4], len(kinds)) for f in found], np.int64)
        columns = memo["columns"] = (rowids, open_, doc, type_, docs, kinds)
    rowids, open_, doc, type_, docs, kinds = columns
    hidden_rows, hidden_types = hidden_sets(index, hidden)
    ok = open_ | (doc == docs[document]) if document is not None and document in docs else open_.copy()
    if hidden_types:  # a NULL type fails NOT IN a non-empty list
        ok &= ~np.isin(type_, [-1, *(kinds[t] for t in hidden_types if t in kinds)])
    if hidden_rows:
        ok &= ~np.isin(rowids, np.fromiter(hidden_rows, np.int64, len(hidden_rows)))
    return rowids[ok]


def hidden_sets(index: Index, hidden: tuple[str, str]) -> tuple[frozenset[Any], frozenset[Any]]:
    """The hidden rowids and types (queries.py `hiding`, as JSON lists) as sets, the last ones parsed kept
    for this view."""
    memo = _memo(index)
    last = memo.get("hidden") if memo is not None else None
    if last is None or last[0] != hidden:
        last = (hidden, tuple(frozenset(json.loads(h)) for h in hidden))
        if memo is not None:
            memo["hidden"] = last
    return last[1]  # type: ignore[no-any-return]


def among(every: dict[int, tuple[int, tuple[Any, ...], Any, Any, Any]], rowids: list[int],
          document: str | None, hidden: tuple[frozenset[Any], frozenset[Any]]
          ) -> dict[int, tuple[int, tuple[Any, ...]]]:
    """queries.py ELIGIBLE applied in Python to `every`'s rows among `rowids` (SQL's NULLs too: a NULL scope or type
    against a test fails it)."""
    rows, types = hidden
    out = {}
    for r in rowids:
        found = every.get(r)
        if found is None or r in rows:
            continue
        tokens, key, scope, doc, type_ = found
        if not ((scope is not None and scope != "document") or (doc is not None and doc == document)):
            continue
        if types and (type_ is None or type_ in types):
            continue
        out[r] = (tokens, key)
    return out
