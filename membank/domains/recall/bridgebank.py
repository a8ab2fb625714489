"""The name bridge's bank side (bridge.py): which cards each memory names, for the strong tier's copy.

A memory's names are found once per generation of the cards and version of the memory (its file's hash),
by a matcher over the cards' names and aliases alone (story/matching.py's rules; keys are triggers, not
names), built once per generation of the cards; the `Bridge` is made once per copy of the strong rows (a
pass over the memories' sets); a query then costs one scan of its own text and a few array writes.
Called where the strong tier scores (recall/tiers.py), under the index's lock, as the scoring is."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..story.cards import Catalog, catalog
from ..story.matching import Keyed, Matcher
from .bridge import Bridge

if TYPE_CHECKING:
    import numpy as np

    from ...index import Index
    from ...index.strongcopy import StrongVectors

_MEMORIES = ("SELECT rowid, hash FROM entries WHERE kind = 'memory' AND removed_at IS NULL AND deleted = 0"
             " AND shadowed = 0")


def evidence(index: Index, copy: StrongVectors, text: str) -> np.ndarray | None:
    """The name bridge's evidence of each of `copy`'s rows for a query `text` (bridge.py), or None when
    the query names no card some memory names (nothing to add)."""
    cat = catalog(index)
    if not cat.keyed or not text:
        return None
    state = cat.memo("recall.bridge", kept=1)
    matcher = state.get("matcher")
    if matcher is None:
        matcher = state["matcher"] = Matcher.build([Keyed(k.id, k.name, k.aliases) for k in cat.keyed])
    named = _named(matcher, text)
    if not named:
        return None
    made = index.caches.get("recall.bridge")
    if made is None or made[0] != copy.tag or made[1] is not cat:
        made = (copy.tag, cat, _bridge(index, cat, matcher, copy))
        index.caches["recall.bridge"] = made
    bridge: Bridge = made[2]
    return bridge.evidence(named)


def _named(matcher: Matcher, text: str) -> frozenset[str]:
    found, _ = matcher.mentions(text)
    return frozenset(m.id for m in found)


def _bridge(index: Index, cat: Catalog, matcher: Matcher, copy: StrongVectors) -> Bridge:
    """The bridge over `copy`'s rows: each live memory's names (kept per row and file hash for this
    generation of the cards: a memory saved re-matches itself, not the bank); other rows name nothing."""
    import numpy as np

    kept: dict[tuple[int, str], frozenset[str]] = cat.memo("recall.bridge.rows", kept=1)
    rows = index.db.execute(_MEMORIES).fetchall()
    if len(kept) > 2 * len(rows) + 64:  # versions since edited away
        kept.clear()
    missing = [r for r, h in rows if (r, h) not in kept]
    for at in range(0, len(missing), 512):
        for rowid, digest, record in index.db.execute(
                "SELECT rowid, hash, record FROM entries WHERE rowid IN (SELECT value FROM json_each(?))",
                (json.dumps(missing[at:at + 512]),)):
            kept[(rowid, digest)] = _named(matcher, _content(record))
    of_row = {r: kept.get((r, h), frozenset()) for r, h in rows}
    order = np.argsort(copy.rowids, kind="stable")
    named: list[frozenset[str]] = [frozenset()] * len(copy.rowids)
    counted = np.zeros(len(copy.rowids), bool)
    found = np.searchsorted(copy.rowids[order], np.array(list(of_row), np.int64))
    for (rowid, names), at in zip(of_row.items(), found):
        if at < len(order) and copy.rowids[order[at]] == rowid:
            named[order[at]] = names
            counted[order[at]] = True
    return Bridge.of(named, copy.zh, counted)


def _content(record: str) -> str:
    memory: Any = json.loads(record)
    return str(memory.get("content") or "") if isinstance(memory, dict) else ""
