"""`kg:appearances` (docs/manuscript.md, "Where a character appears"): where each live card is mentioned in
the manuscript, per document and scene, in story order. The same matching as activation (story/matching.py),
names and aliases only, a card's keys too when it asks with `mention_keys: true`. Counted over the kept
passages once per generation of the passages and of the cards, kept while both hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...kernel import cancel
from ..contract import Bank
from ..story import graph
from ..story.cards import Catalog, catalog
from ..story.names import normalize
from ..story.positions import story_order
from ..story.seen import position as where
from . import store


@dataclass
class Seen:
    count: int
    first_line: int
    last_line: int


def _counted_keys(card: dict[str, Any]) -> frozenset[str] | None:
    """The written forms a mention of `card` may be (None: any of its keys, `mention_keys: true`)."""
    meta = card.get("metadata")
    if card.get("mention_keys") is True or (isinstance(meta, dict) and meta.get("mention_keys") is True):
        return None
    return frozenset(normalize(str(n).strip()) for n in (card.get("name"), *(card.get("aliases") or ())) if n)


def table(bank: Bank, cat: Catalog) -> dict[str, dict[tuple[str, int], tuple[str, Seen]]]:
    """card id -> (document, scene number) -> (scene label, what was seen there). Each passage's mentions are
    kept by its text's hash for this generation of the cards: a chapter saved re-matches its own passages,
    not the whole manuscript."""
    index = bank.index
    memo = cat.memo("manuscript.appearances", store.generation(index), kept=2)
    made = memo.get("table")
    if made is not None:
        return made  # type: ignore[no-any-return]
    by_text = _by_text(cat, index.db.execute("SELECT count(*) FROM manuscript_passages").fetchall()[0][0])
    out: dict[str, dict[tuple[str, int], tuple[str, Seen]]] = {}
    for pid, doc, scene, scene_no, line, digest in index.db.execute(
            "SELECT id, document, scene, scene_no, line, hash FROM manuscript_passages ORDER BY document, ordinal"):
        found = by_text.get(digest)
        if found is None:
            cancel.check()
            rows = index.db.execute("SELECT text FROM manuscript_passages WHERE id = ?", (pid,)).fetchall()
            found = by_text[digest] = _mentions(cat, rows[0][0] if rows else "")
        for lines, card_id in found:
            at = line + lines
            place = out.setdefault(card_id, {})
            got = place.get((doc, scene_no))
            if got is None:
                place[(doc, scene_no)] = (scene, Seen(1, at, at))
            else:
                seen = got[1]
                seen.count += 1
                seen.first_line, seen.last_line = min(seen.first_line, at), max(seen.last_line, at)
    memo["table"] = out
    return out


def _by_text(cat: Catalog, passages: int) -> dict[str, tuple[tuple[int, str], ...]]:
    """Passage text hash -> its counted mentions, for these cards; emptied once it holds twice the passages
    there are (texts since edited away)."""
    kept: dict[str, tuple[tuple[int, str], ...]] = cat.memo("manuscript.mentions_by_text", kept=1)
    if len(kept) > 2 * passages + 64:
        kept.clear()
    return kept


def _mentions(cat: Catalog, text: str) -> tuple[tuple[int, str], ...]:
    """(lines from the passage's first, card id) of each counted mention in `text`, in order."""
    allowed = cat.memo("manuscript.counted_keys", kept=1)
    if "keys" not in allowed:
        allowed["keys"] = {card_id: _counted_keys(card) for card_id, card in cat.cards.items()}
    counted = allowed["keys"]
    out = []
    rows, _ = cat.matcher.mention_rows(text)
    ends: dict[str, int] = {}  # per card, the furthest end of its words so far (rows: by offset, longest first)
    for offset, length, card_id, key, _ in rows:
        end, reached = offset - length, ends.get(card_id, -1)
        ends[card_id] = max(end, reached)
        if end <= reached:
            continue  # inside a word of the same card: 宝玉 in 贾宝玉 is one mention, in its key 通灵宝玉 none
        keys = counted.get(card_id, frozenset())
        if keys is not None and normalize(key.strip()) not in keys:
            continue
        out.append((text.count("\n", 0, offset), card_id))
    return tuple(out)


def appearances(bank: Bank, id_: str | None = None, name: str | None = None) -> dict[str, Any]:
    cat = catalog(bank.index)
    card = graph.find(cat, id_, name)
    order = story_order(bank)
    found = table(bank, cat).get(card["id"], {})
    keys = sorted(found, key=lambda k: (order.rank(k[0])[0], k[0], k[1]))
    items = [{"source": doc, "scene": found[(doc, no)][0], "count": found[(doc, no)][1].count,
              "firstLine": found[(doc, no)][1].first_line, "lastLine": found[(doc, no)][1].last_line}
             for doc, no in keys]
    position = [where(order, doc, no, found[(doc, no)][0]) for doc, no in keys]
    return {"id": card["id"], "name": card["name"], "items": items, "first": position[0] if position else None,
            "last": position[-1] if position else None, "total": sum(i["count"] for i in items)}


def seen(bank: Bank, cat: Catalog) -> dict[str, list[tuple[str, int, str]]]:
    """story/seen.py's provider: card id -> [(document, scene number, scene label)] it is mentioned in."""
    return {card_id: [(doc, no, label) for (doc, no), (label, _) in places.items()]
            for card_id, places in table(bank, cat).items()}
