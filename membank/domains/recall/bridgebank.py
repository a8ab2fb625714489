"""The name bridge's bank side (bridge.py): which cards each memory names, for the strong tier's copy.

A memory's names are found by a matcher over the cards' names and aliases alone (story/matching.py's
rules; keys are triggers, not names), built once per generation of those names, and kept per memory and
file hash, with its folded text: a memory saved has only itself matched; a card whose name or aliases
changed (or that came or went) has the memories matched again against a matcher of the changed cards
alone, and only those whose folded text holds one of their words (bridgenames.py); a card edit that changes
no name or alias keeps everything (one comparison of the names). The `Bridge` follows the strong rows'
copy: made at the first query naming a card, then patched as the copy is (a save: its rows only). A query
costs one scan of its own text and, per card it names, one pass over the rows at its first query on this
bridge. Called where the strong tier scores (recall/tiers.py): on the write lane under the index's lock, on
a read thread outside it, so the caches are shared by threads: what a step walks is copied first (one C-level
copy), and a bridge is patched in place only when its names know every row (`_renamed`)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ..story.cards import catalog
from ..story.matching import Keyed, folded_text
from . import bridgenames
from .bridge import Bridge

if TYPE_CHECKING:
    import numpy as np

    from ...index import Index
    from ...index.strongcopy import StrongVectors

_LIVE = "kind = 'memory' AND removed_at IS NULL AND deleted = 0 AND shadowed = 0"
_NONE: frozenset[str] = frozenset()
Names = dict[int, frozenset[str]]  # a live memory's rowid -> the cards its text names
Key = tuple[int, str]  # a memory's rowid and file hash
_NUMBERS = itertools.count(1)  # the generations' numbers (next() is one C call: two threads get two)


@dataclass(frozen=True)
class _Generation:
    """One generation of the cards' names: the matcher of them, and the names of each memory version read
    (grown as memories are saved; a read thread may add the same entries meanwhile)."""

    spelled: bridgenames.Spelled
    matcher: bridgenames.Matchers
    names: dict[Key, frozenset[str]]
    number: int = 0  # this generation's (unique in the process)
    since: tuple[int, frozenset[Key]] | None = None  # the generation it was derived from, the versions changed


class _Made(NamedTuple):
    """The bridge kept for one strong copy and one generation of the cards' names."""

    tag: str  # the strong copy's
    gen: _Generation
    names: Names
    bridge: Bridge
    rowids: np.ndarray  # the copy's rows, in the bridge's order
    hashes: dict[int, str]  # each live memory's file hash when its names were read


def evidence(index: Index, copy: StrongVectors, text: str) -> np.ndarray | None:
    """The name bridge's evidence of each of `copy`'s rows for a query `text` (bridge.py), or None when
    the query names no card some memory names (nothing to add)."""
    cat = catalog(index)
    if not cat.keyed or not text:
        return None
    state = cat.memo("recall.bridge", kept=1)
    gen = state.get("generation")
    if gen is None:
        gen = state["generation"] = _generation(index, cat.keyed)
    named = gen.matcher.named(text)
    if not named:
        return None
    made: _Made | None = index.caches.get("recall.bridge")
    if made is not None and made.gen is not gen and gen.since is not None and gen.since[0] == made.gen.number:
        made = _renamed(gen, made)  # the names changed: the memories that may name those cards looked up again
        if made is not None:
            index.caches["recall.bridge"] = made  # else every query made the same renaming again
    if made is None or made.tag != copy.tag or made.gen is not gen:
        since = copy.since
        bridge = names = None
        if made is not None and made.gen is gen and since is not None and since[0] == made.tag:
            names, hashes = _patched(index, gen, made.names, made.hashes, since[1])  # a save: its rows only
            bridge = _bridge_patched(made.bridge, made.rowids, since[1], copy, names)
        elif made is not None and made.tag == copy.tag:  # the cards' names changed: the same rows
            names, hashes = _again(gen, made.hashes), made.hashes
        if names is None:
            names, hashes = _every(index, gen)
        if bridge is None:
            rowids = copy.rowids.tolist()
            bridge = Bridge.of([names.get(r, _NONE) for r in rowids], copy.zh, _memories(rowids, names),
                               sets=None if made is None else made.bridge.sets)  # the sets numbered: looked up
        made = _Made(copy.tag, gen, names, bridge, copy.rowids, hashes)
        index.caches["recall.bridge"] = made
    return made.bridge.evidence(named)


def _generation(index: Index, keyed: tuple[Keyed, ...]) -> _Generation:
    """The names of this generation of the cards: the last generation's when no name or alias changed,
    else the last's memories' names with the changed cards matched again (bridgenames.py)."""
    spelled = bridgenames.spelled(keyed)
    last: _Generation | None = index.caches.get("recall.bridge.generation")
    if last is not None and last.spelled == spelled:
        return last
    if last is None:
        return _keep(index, _Generation(spelled, bridgenames.Matchers.of(keyed), {}))
    gone = bridgenames.changed(last.spelled, spelled)
    matcher, small = last.matcher.changed(keyed, gone)
    names, picked = bridgenames.rematched(last.spelled, gone, small, dict(last.names),  # dict(): one C-level
                                          _folded(index), lambda keys: _texts(index, keys))  # copy (read threads)
    return _keep(index, _Generation(spelled, matcher, names, since=(last.number, frozenset(picked))))


def _keep(index: Index, gen: _Generation) -> _Generation:
    gen = replace(gen, number=next(_NUMBERS))
    index.caches["recall.bridge.generation"] = gen
    return gen


def _folded(index: Index) -> bridgenames.Folded:
    """Each memory version's text as the matcher folds it, kept across generations of the cards."""
    found = index.caches.get("recall.bridge.folded")
    if found is None:
        found = index.caches["recall.bridge.folded"] = bridgenames.Folded()
    return found  # type: ignore[no-any-return]


def _every(index: Index, gen: _Generation) -> tuple[Names, dict[int, str]]:
    """Every live memory's names, and its file hash: those kept for its rowid and hash, the others read
    and matched."""
    kept = gen.names
    rows = index.db.execute(f"SELECT rowid, hash FROM entries WHERE {_LIVE}").fetchall()
    if len(kept) > 2 * len(rows) + 64:  # versions since edited away
        live = set(rows)
        folded = _folded(index)
        for key in [k for k in list(kept) if k not in live]:  # list(): a read thread may add meanwhile
            kept.pop(key, None)
            folded.drop(key)
    _read(index, gen, [r for r in rows if r not in kept])
    return {r: kept.get((r, h), _NONE) for r, h in rows}, dict(rows)


def _again(gen: _Generation, hashes: dict[int, str]) -> Names | None:
    """The names of the memories `hashes` in this generation, None if one was not matched in it."""
    out = {}
    for rowid, digest in hashes.items():
        found = gen.names.get((rowid, digest))
        if found is None:
            return None
        out[rowid] = found
    return out


def _renamed(gen: _Generation, made: _Made) -> _Made | None:
    """`made` (names and bridge of the generation `gen` was derived from) for `gen`, over the same rows:
    the memories whose names may have changed looked up again, their rows renumbered (None: one was not
    matched in `gen`)."""
    import numpy as np

    names: Names = dict(made.names)
    hashes = made.hashes
    assert gen.since is not None
    if not hashes.items() <= gen.names.keys():  # a version a read thread on an older view read after `gen`
        return None  # was derived: its names are the old cards' (not among those looked up again)
    rows = sorted(r for r, h in gen.since[1] if hashes.get(r) == h)
    for rowid in rows:
        found = gen.names.get((rowid, hashes[rowid]))
        if found is None:
            return None
        names[rowid] = found
    at = np.flatnonzero(np.isin(made.rowids, np.array(rows, np.int64)))
    return made._replace(gen=gen, names=names,
                         bridge=made.bridge.renamed(at, [names[r] for r in made.rowids[at].tolist()]))


def _patched(index: Index, gen: _Generation, names: Names, hashes: dict[int, str],
             written: frozenset[int]) -> tuple[Names, dict[int, str]]:
    """`names` and `hashes` after the `written` rows changed: those read again (a memory removed is gone)."""
    out = {r: s for r, s in names.items() if r not in written}
    now = {r: h for r, h in hashes.items() if r not in written}
    rows = index.db.execute(f"SELECT rowid, hash FROM entries WHERE {_LIVE} AND rowid IN (SELECT value FROM json_each(?))",
                            (json.dumps(sorted(written)),)).fetchall()
    _read(index, gen, [r for r in rows if r not in gen.names])
    out.update((r, gen.names.get((r, h), _NONE)) for r, h in rows)
    now.update(rows)
    return out, now


def _read(index: Index, gen: _Generation, keys: list[Key]) -> None:
    folded = _folded(index)
    for key, text in _texts(index, keys):
        gen.names[key] = gen.matcher.named(text)
        folded.add(key, folded_text(text))


def _texts(index: Index, keys: list[Key]) -> list[tuple[Key, str]]:
    """The content of each of the memory versions `keys` still held (a version edited away is not)."""
    wanted = set(keys)
    rowids = sorted({r for r, _ in keys})
    out = []
    for at in range(0, len(rowids), 512):
        for rowid, digest, record in index.db.execute(
                "SELECT rowid, hash, record FROM entries WHERE rowid IN (SELECT value FROM json_each(?))",
                (json.dumps(rowids[at:at + 512]),)):
            if (rowid, digest) in wanted:
                out.append(((rowid, digest), _content(record)))
    return out


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
