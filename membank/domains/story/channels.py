"""The story channels (story.md): the graph read at a story position, the consistency check, and a
progression written into a card. Each handler reads the card catalog and the story order; the
answers are `graph`'s and `check`'s."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Optional, TypedDict

from ...kernel import cancel, errors
from ...kernel.paths import document_path
from ...kernel.payload import DeadlineMs, Id, Most
from ..contract import Bank, Channel
from . import check as checking
from . import graph, positions
from .cards import Catalog, catalog
from .manuscript import read_document
from .order import StoryOrder
from .progress import update_state

Name = Annotated[str, Most(chars=500)]
Position = Annotated[str, Most(chars=1000)]


@dataclass(frozen=True)
class EntityList:
    projectId: Id | None = None
    kind: Name | None = None
    at: Position | None = None


@dataclass(frozen=True)
class EntityGet:
    projectId: Id | None = None
    id: Name | None = None
    name: Name | None = None
    at: Position | None = None


@dataclass(frozen=True)
class RelationsGet:
    projectId: Id | None = None
    id: Name | None = None
    name: Name | None = None
    at: Position | None = None
    depth: int = 1


@dataclass(frozen=True)
class StateGet:
    at: Position
    projectId: Id | None = None
    id: Name | None = None
    name: Name | None = None


@dataclass(frozen=True)
class StateUpdate:
    at: Position
    projectId: Id | None = None
    id: Name | None = None
    name: Name | None = None
    state: Annotated[str, Most(chars=2000)] | None = None
    set: dict[str, Any] | None = None
    expectedRevision: int | None = None


@dataclass(frozen=True)
class MentionsGet:
    text: Annotated[str, Most(chars=2_000_000)]
    projectId: Id | None = None
    documentId: Position | None = None


@dataclass(frozen=True)
class ConsistencyCheck:
    documentId: Position
    projectId: Id | None = None
    text: Annotated[str, Most(chars=2_000_000)] | None = None
    deadlineMs: DeadlineMs | None = None


class Cited(TypedDict):
    value: Any
    source: str
    line: int
    at: str | None


# `from` is a Python keyword: the functional form
Edge = TypedDict("Edge", {
    "from": str,  # the entity it is seen from
    "to": Optional[str],  # the other entity's id; null when the name resolves to no card (or to several)
    "name": str,  # the other end as written
    "type": str,
    "direction": str,  # out: written on `from`; in: written on the other card about `from`
    "since": Optional[str],
    "until": Optional[str],
    "note": Optional[str],
    "source": str,
    "line": int,
    "depth": int,
})


class Entity(TypedDict, total=False):
    id: str
    name: str
    kind: str
    section: str
    aliases: list[str]
    summary: str
    source: str
    line: int
    introduced: dict[str, Any] | None
    state: Cited | None
    facets: dict[str, Cited]
    hidden: int
    progressions: list[dict[str, Any]]
    relations: list[Edge]
    timeline: list[str]  # kg:entity:get: the positions where something about it happens, in story order
    mentions: list[dict[str, Any]]


class Entities(TypedDict):
    items: list[Entity]


class Edges(TypedDict):
    edges: list[Edge]


class State(TypedDict):
    state: str | None
    facets: dict[str, Cited]
    since: str | None
    source: str | None
    line: int | None


class Mention(TypedDict):
    id: str
    name: str
    match: str
    offset: int
    length: int


class Mentions(TypedDict):
    items: list[Mention]


class Flag(TypedDict):
    code: str  # NOT_YET_INTRODUCED | NOT_ALIVE
    entity: str
    message: str
    evidence: list[dict[str, Any]]


class Fact(TypedDict):
    id: str
    content: str
    source: str
    scope: str
    documentId: str | None
    since: str | None
    until: str | None
    updatedAt: str
    entities: list[str]  # the mentioned entities it names


class Checked(TypedDict):
    documentId: str
    positionKnown: bool
    entities: list[Entity]
    facts: list[Fact]
    flags: list[Flag]
    skipped: list[dict[str, Any]]


def _graph(bank: Bank) -> tuple[Catalog, StoryOrder]:
    return catalog(bank.index), positions.story_order(bank)


def _at(order: StoryOrder, at: str | None) -> str | None:
    """A position the story order holds; INVALID_ARGUMENT for one it does not (a typo would otherwise
    answer with nothing but timeless values)."""
    if at is None:
        return None
    path = document_path(at, "at")
    if not order.knows(path):
        raise errors.invalid("at", f"`{at}` is not a position of the story: list it in project.yaml `chapters:` "
                             "(or, without that list, create the file)")
    return path


def entity_list(bank: Bank, kind: str | None = None, at: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    position = _at(order, at)
    cards = sorted((c for c in cat.cards.values() if kind is None or c["kind"] == kind),
                   key=lambda c: (c["section"], c["kind"], c["name"], c["id"]))
    return {"items": [graph.entity(c, cat, order, position) for c in cards]}


def entity_get(bank: Bank, id_: str | None = None, name: str | None = None, at: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    return graph.entity(graph.find(cat, id_, name), cat, order, _at(order, at), whole=True)


def relations(bank: Bank, id_: str | None = None, name: str | None = None, at: str | None = None,
              depth: int = 1) -> dict[str, Any]:
    if not 1 <= depth <= graph.MAX_DEPTH:
        raise errors.invalid("depth", f"`depth` is 1 to {graph.MAX_DEPTH}")
    cat, order = _graph(bank)
    card = graph.find(cat, id_, name)
    return {"edges": [e.to_api() for e in graph.walk(cat, card["id"], order, _at(order, at), depth)]}


def state(bank: Bank, at: str, id_: str | None = None, name: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    card = graph.find(cat, id_, name)
    view = graph.entity(card, cat, order, _at(order, at))
    now = view["state"]
    return {"state": now["value"] if now else None, "facets": view["facets"], "since": now["at"] if now else None,
            "source": now["source"] if now else None, "line": now["line"] if now else None}


def mentions(bank: Bank, text: str, document_id: str | None = None) -> dict[str, Any]:
    cat = catalog(bank.index)
    found, _ = cat.matcher.mentions(text)
    return {"items": [{"id": m.id, "name": cat.cards[m.id]["name"], "match": m.word, "offset": m.offset,
                       "length": m.length} for m in found]}


def consistency_check(bank: Bank, document_id: str, text: str | None = None) -> dict[str, Any]:
    cat, order = _graph(bank)
    document = document_path(document_id)
    if text is None:
        text = read_document(bank.root, document)
        if text is None:
            raise errors.invalid("documentId", f"there is no file {document}; send its text as `text`")
    known = order.knows(document)
    cancel.check()
    data = checking.check(cat, order, document if known else None, text, _facts(bank, cat, order, document, known))
    return {**data, "documentId": document, "positionKnown": known}


FACT_KEYS = ("id", "content", "source", "scope", "documentId", "since", "until", "updatedAt")

# every live fact (a document's own ones are filtered per call)
_FACTS = ("SELECT rowid, hash FROM entries WHERE kind = 'memory' AND type = 'fact' AND removed_at IS NULL"
          " AND deleted = 0 AND shadowed = 0 ORDER BY rowid")


def _facts(bank: Bank, cat: Catalog, order: StoryOrder, document: str, known: bool
           ) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """The fact memories valid at the document's position (another document's own are not), each
    with the entities its text names, in id order: read and scanned once per fact and generation of
    the cards, listed once per view of the index."""
    index = bank.index
    timed = positions.timed_memories(index)
    hidden = {r for r, (since, until) in timed.items() if not order.holds(since, until, document if known else None)}
    memo = index.caches.setdefault("story.facts", {})
    if memo.get("catalog") is not cat:
        memo.clear()
        memo.update(catalog=cat, facts={}, views={})
    facts: dict[tuple[int, str], tuple[dict[str, Any], tuple[str, ...]]] = memo["facts"]
    key = index.view_key()
    rows = memo["views"].get(key) if key is not None else None
    if rows is None:
        rows = index.db.execute(_FACTS).fetchall()
        missing = [r for r, h in rows if (r, h) not in facts]
        if missing:
            for rowid, digest, record in index.db.execute(
                    "SELECT rowid, hash, record FROM entries WHERE rowid IN (SELECT value FROM json_each(?))",
                    (json.dumps(missing),)):
                memory = json.loads(record)
                named = tuple(sorted({m.id for m in cat.matcher.mentions(memory["content"])[0]}))
                facts[(rowid, digest)] = ({k: memory.get(k) for k in FACT_KEYS}, named)  # memory:get has the rest
        if key is not None:
            if len(memo["views"]) >= 16:
                memo["views"].clear()
            memo["views"][key] = rows
    out = []
    for rowid, digest in rows:
        found = facts.get((rowid, digest))
        if found is None or rowid in hidden:
            continue
        if found[0]["scope"] == "document" and found[0]["documentId"] != document:
            continue
        out.append(found)
    return out


CHANNELS = (
    Channel("kg:entity:list", EntityList, Entities, entity_list, "read", "story",
            "Characters and world entries with their state at a story position (the timeline of one with NAME).",
            "entities"),
    Channel("kg:entity:get", EntityGet, Entity, entity_get, "read", "story",
            "One entity: its state, facets, progressions and relations at a position (all without one).",
            "entity"),
    Channel("kg:relations", RelationsGet, Edges, relations, "read", "relations",
            "An entity's relations that hold at a position, to depth 1-3, both directions, no loops.",
            "relations"),
    Channel("kg:state", StateGet, State, state, "read", "state",
            "An entity's state and facets at a story position, with source and line.", "state_at"),
    Channel("kg:state:update", StateUpdate, Entity, update_state, "write", "progress",
            "Write a progression (state, facets) at a position into the card file, keeping its comments.",
            "update_state"),
    Channel("kg:mentions", MentionsGet, Mentions, mentions, "read", "mentions",
            "Which characters and world entries a text names, where (code points).", "mentions"),
    Channel("kg:consistency:check", ConsistencyCheck, Checked, consistency_check, "read", "check",
            "Evidence for a passage at its position (entities, state, relations, facts) and what contradicts it.",
            "check_consistency"),
)
