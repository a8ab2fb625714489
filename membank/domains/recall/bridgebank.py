"""The name bridge's bank side (bridge.py): which cards each memory names, for the strong tier's copy.

A memory's names are found by a matcher over the cards' names and aliases alone (story/matching.py's
rules; keys are triggers, not names), built once per generation of the cards, and kept per memory and file
hash for that generation: a card changed has every memory matched again (as story facts are), a memory
saved only itself. The `Bridge` follows the strong rows' copy: made at the first query naming a card, then
patched as the copy is (a save: its rows only). A query costs one scan of its own text and, per card it
names, one pass over the rows at its first query on this bridge. Called where the strong tier scores
(recall/tiers.py), under the index's lock, as the scoring is."""

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

_LIVE = "kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0"
_NONE: frozenset[str] = frozenset()
Names = dict[int, frozenset[str]]  # a live memory's rowid -> the cards its text names


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
        since = copy.since
        bridge = None
        if made is not None and made[1] is cat and since is not None and since[0] == made[0]:
            names = _patched(index, cat, matcher, made[2], since[1])  # a save: its rows only
            bridge = _bridge_patched(made[3], made[4], since[1], copy, names)
        else:
            names = _every(index, cat, matcher)
        if bridge is None:
            rowids = copy.rowids.tolist()
            bridge = Bridge.of([names.get(r, _NONE) for r in rowids], copy.zh, _memories(rowids, names))
        made = (copy.tag, cat, names, bridge, copy.rowids)
        index.caches["recall.bridge"] = made
    return made[3].evidence(named)  # type: ignore[no-any-return]


def _named(matcher: Matcher, text: str) -> frozenset[str]:
    spans, _ = matcher.spans(text, "first")  # one span per word, with the cards it names (no keys here)
    return frozenset(card for _, _, cards in spans for card in cards)


def _kept(cat: Catalog) -> dict[tuple[int, str], frozenset[str]]:
    """(rowid, file hash) -> its names, for this generation of the cards."""
    return cat.memo("recall.bridge.rows", kept=1)


def _every(index: Index, cat: Catalog, matcher: Matcher) -> Names:
    """Every live memory's names: those kept for its rowid and hash, the others read and matched."""
    kept = _kept(cat)
    rows = index.db.execute(f"SELECT rowid, hash FROM entries WHERE {_LIVE}").fetchall()
    if len(kept) > 2 * len(rows) + 64:  # versions since edited away
        kept.clear()
    _read(index, matcher, kept, [r for r, h in rows if (r, h) not in kept])
    return {r: kept.get((r, h), _NONE) for r, h in rows}


def _patched(index: Index, cat: Catalog, matcher: Matcher, names: Names, written: frozenset[int]) -> Names:
    """`names` after the `written` rows changed: those read again (a memory removed is gone)."""
    out = {r: s for r, s in names.items() if r not in written}
    kept = _kept(cat)
    rows = index.db.execute(f"SELECT rowid, hash FROM entries WHERE {_LIVE} AND rowid IN (SELECT value FROM json_each(?))",
                            (json.dumps(sorted(written)),)).fetchall()
    _read(index, matcher, kept, [r for r, h in rows if (r, h) not in kept])
    out.update((r, kept.get((r, h), _NONE)) for r, h in rows)
    return out


def _read(index: Index, matcher: Matcher, kept: dict[tuple[int, str], frozenset[str]], rowids: list[int]) -> None:
    for at in range(0, len(rowids), 512):
        for rowid, digest, record in index.db.execute(
                "SELECT rowid, hash, record FROM entries WHERE rowid IN (SELECT value FROM json_each(?))",
                (json.dumps(rowids[at:at + 512]),)):
            kept[(rowid, digest)] = _named(matcher, _content(record))


def _memories(rowids: list[int], names: Names) -> np.ndarray:
    """Which rows are live memories: the rows counted for a card's rarity (not the cards' own)."""
    import numpy as np

    return np.fromiter((r in names for r in rowids), bool, len(rowids))


def _bridge_patched(bridge: Bridge, before: np.ndarray, written: frozenset[int], copy: StrongVectors,
                    names: Names) -> Bridge | None:
    """`bridge` (over the rows `before`) for `copy`, patched from that copy by the `written` rows: its kept
    rows first, the rows written after them (strongcopy.py `patched`); None if the copy is not laid out so."""
    import numpy as np

    keep = ~np.isin(before, np.fromiter(written, np.int64, len(written)))
    kept = int(keep.sum())
    if len(copy.rowids) < kept or not np.array_equal(copy.rowids[:kept], before[keep]):
        return None
    fresh = copy.rowids[kept:].tolist()
    counted = np.concatenate([bridge.counted[keep], _memories(fresh, names)])
    return bridge.patched(keep, [names.get(r, _NONE) for r in fresh], copy.zh, counted)


def _content(record: str) -> str:
    memory: Any = json.loads(record)
    return str(memory.get("content") or "") if isinstance(memory, dict) else ""
