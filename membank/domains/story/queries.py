"""The story graph's read queries (the handlers of `channels.py`'s table, named there lazily so that a
command listing the catalog does not import the graph, the matcher and the consistency check)."""

from __future__ import annotations

import json
from typing import Any

from ...kernel import cancel, errors
from ...kernel.limits import MAX_LISTED, MAX_MENTIONS, MAX_PASSAGE_CHARS
from ...kernel.paths import document_path
from ..contract import Bank
from . import check as checking
from . import checkscenes, graph, positions, seen
from .cards import Catalog, catalog
from .manuscript import SEND_TEXT, read_document, unconflicted
from .matching import allowance_spent, call_allowance
from .order import StoryOrder
from .positions import known_position


def _graph(bank: Bank) -> tuple[Catalog, StoryOrder]:
    return catalog(bank.index), positions.story_order(bank)


def entity_list(bank: Bank, kind: str | None = None, at: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    position = known_position(order, at)
    cards = sorted((c for c in cat.cards.values()
                    if (kind is None or c["kind"] == kind) and not _later(c, order, position)),
                   key=lambda c: (c["section"], c["kind"], c["name"], c["id"]))
    places = seen.scenes(bank, cat) if cards else {}
    return positions.warned({"items": [{**graph.entity(c, cat, order, position),
                                        "lastSeen": seen.last_seen(order, places.get(c["id"], []), position)}
                                       for c in cards]}, order, position)


def _later(card: dict[str, Any], order: StoryOrder, position: str | None) -> bool:
    """Whether a list at `position` leaves the card out: its `introduced:` is a position of the story that
    comes after it (an app asking "who is in the story at chapter 3" must not learn of chapter 10's
    newcomer). An `introduced:` the order does not know keeps the card: doctor reports the typo."""
    start = card.get("introduced")
    return bool(position and start and order.knows(start) and not order.reached(start, position))


def entity_get(bank: Bank, id_: str | None = None, name: str | None = None, at: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    card, position = graph.find(cat, id_, name), known_position(order, at)
    return positions.warned({**graph.entity(card, cat, order, position, whole=True),
                             "lastSeen": seen.last_seen(order, seen.scenes(bank, cat).get(card["id"], []), position)},
                            order, position)


def relations(bank: Bank, id_: str | None = None, name: str | None = None, at: str | None = None,
              depth: int = 1) -> dict[str, Any]:
    if not 1 <= depth <= graph.MAX_DEPTH:
        raise errors.invalid("depth", f"`depth` is 1 to {graph.MAX_DEPTH}")
    cat, order = _graph(bank)
    card = graph.find(cat, id_, name)
    position = known_position(order, at)
    return positions.warned({"edges": [e.to_api() for e in graph.walk(cat, card["id"], order, position, depth)]},
                            order, position)


def state(bank: Bank, at: str, id_: str | None = None, name: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    card = graph.find(cat, id_, name)
    position = known_position(order, at)
    view = graph.entity(card, cat, order, position)
    now = view["state"]
    return positions.warned({"state": now["value"] if now else None, "facets": view["facets"],
                             "since": now["at"] if now else None, "source": now["source"] if now else None,
                             "line": now["line"] if now else None}, order, position)


def mentions(bank: Bank, text: str, document_id: str | None = None) -> dict[str, Any]:
    """Every mention in `text`, the first MAX_MENTIONS in full with the total beside them, and the regex
    keys that could not run (the first MAX_LISTED, and their total)."""
    cat = catalog(bank.index)
    with call_allowance():
        found, skipped = cat.matcher.mentions(text)
    return {"items": [{"id": m.id, "name": cat.cards[m.id]["name"], "match": m.word, "offset": m.offset,
                       "length": m.length} for m in found[:MAX_MENTIONS]], "total": len(found),
            "skipped": [{"id": s.id, "key": s.key, "reason": s.reason, "message": s.message}
                        for s in skipped[:MAX_LISTED]], "skippedTotal": len(skipped)}


def consistency_check(bank: Bank, document_id: str, text: str | None = None) -> dict[str, Any]:
    """The check of `text` (else of the document's file) at `documentId`'s position. A scene position
    (`chapters/ch03.md#进府`, `#2`) checks that scene, its text cut from the file when none is sent; a whole
    file is judged scene by scene (checkscenes.py)."""
    cat, order = _graph(bank)
    position = document_path(document_id)
    document, scene = order.locate(position) if "#" in position else (position, None)
    position = document if scene is None else position
    from_app = text is not None
    scenes, blank = None, 0  # blank: the blanked code points before a scene cut from its file
    if text is None:
        text = read_document(bank.root, document)
        if text is None:
            raise errors.invalid("documentId", f"there is no file {document}; {SEND_TEXT}")
        text = unconflicted(document, text)
        if scene is not None or (len(text) <= MAX_PASSAGE_CHARS and order.knows(document)):
            found = checkscenes.spans(document, text)
            if scene is not None:
                span = checkscenes.pick(document, scene, found)
                blank, text = span.start, checkscenes.in_place(text, span)
            elif len(found) > 1:
                scenes = checkscenes.positions(order, document, found)
    if len(text) - blank > MAX_PASSAGE_CHARS:  # a check is of a passage at one story position, not a whole book
        what = "the passage to check" if from_app else f"the {'document' if scene is None else 'scene'} {position}"
        raise errors.invalid("text" if from_app else "documentId",
                             f"{what} is {len(text) - blank:,} characters long, more than the {MAX_PASSAGE_CHARS:,} a "
                             "check reads at once; check a chapter or a scene at a time (a book in one file: "
                             "split it into chapter files, or send the passage as `text`)")
    known = order.knows(position)
    cancel.check()
    with call_allowance():  # every regex key of the call, over the passage then the facts, shares it
        data = checking.check(cat, order, position if known else None, text,
                              lambda: _facts(bank, cat, order, position, known), scenes if known else None)
    if known:  # the narrative flags (threads, scenes, reveals) read files of their own
        from .narrative import more_flags
        data = more_flags(bank, cat, order, position, text, from_app, data)
    return {**data, "documentId": position, "positionKnown": known}


FACT_KEYS = ("id", "content", "source", "scope", "documentId", "since", "until", "updatedAt")

# every live fact (a document's own ones are filtered per call)
_FACTS = ("SELECT rowid, hash FROM entries WHERE kind = 'memory' AND type = 'fact' AND removed_at IS NULL"
          " AND deleted = 0 AND shadowed = 0 ORDER BY rowid")


def _named(cat: Catalog, content: str) -> tuple[tuple[str, ...], bool]:
    """The cards a fact's text names, and whether every regex key was tried on it (not left for want of
    the call's time allowance)."""
    found, skipped = cat.matcher.mentions(content)
    return tuple(sorted({m.id for m in found})), not any(s.reason == "budget" for s in skipped)


def _facts(bank: Bank, cat: Catalog, order: StoryOrder, document: str, known: bool) -> checking.Facts:
    """The fact memories valid at the document's position (another document's own are not), each
    with the entities its text names, in id order: read and scanned once per fact and generation of
    the cards, listed once per view of the index. A fact whose regex keys the call's time allowance did
    not all reach is kept with what was found, and scanned again by later calls while they have time
    left (a hostile lorebook's facts do not cost every check a scan of them all)."""
    index = bank.index
    memo = index.caches.setdefault("story.facts", {})
    if memo.get("catalog") is not cat:
        memo.clear()
        memo.update(catalog=cat, facts={}, views={}, unsettled=set())
    facts: dict[tuple[int, str], tuple[dict[str, Any], tuple[str, ...]]] = memo["facts"]
    unsettled: set[tuple[int, str]] = memo["unsettled"]
    if unsettled and not allowance_spent():
        for found in sorted(unsettled):
            if allowance_spent():
                break
            fact = facts[found][0]
            named, settled = _named(cat, fact["content"] or "")
            facts[found] = (fact, named)
            if settled:
                unsettled.discard(found)
        memo["views"].clear()  # their lists hold what these facts named before
    key = index.view_key()
    view = memo["views"].get(key) if key is not None else None
    if view is None:
        rows = index.db.execute(_FACTS).fetchall()
        missing = [r for r, h in rows if (r, h) not in facts]
        if missing:
            for rowid, digest, record in index.db.execute(
                    "SELECT rowid, hash, record FROM entries WHERE rowid IN (SELECT value FROM json_each(?))",
                    (json.dumps(missing),)):
                memory = json.loads(record)
                named, settled = _named(cat, memory["content"])
                facts[(rowid, digest)] = ({k: memory.get(k) for k in FACT_KEYS}, named)  # memory:get has the rest
                if not settled:
                    unsettled.add((rowid, digest))
        view = {"rows": rows, "lists": {}}  # the lists: per story order and document, in this view
        if key is not None:
            if len(memo["views"]) >= 16:
                memo["views"].clear()
            memo["views"][key] = view
    wanted = (order, document, known)
    made: checking.Facts | None = view["lists"].get(wanted)
    if made is None:
        timed = positions.timed_memories(index)
        hidden = {r for r, (since, until) in timed.items() if not order.holds(since, until, document if known else None)}
        own = order.locate(document)[0] if "#" in document else document  # a scene's document
        out = []
        for rowid, digest in view["rows"]:
            found = facts.get((rowid, digest))
            if found is None or rowid in hidden:
                continue
            if found[0]["scope"] == "document" and found[0]["documentId"] != own:
                continue
            out.append(found)
        if len(view["lists"]) >= 8:
            view["lists"].clear()
        made = view["lists"][wanted] = checking.Facts.of(out)
    return made
