"""The story channels (story.md): the graph read at a story position, the consistency check, and a
progression written into a card. Each handler reads the card catalog and the story order; the
answers are `graph`'s and `check`'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Optional, TypedDict

from ...kernel.limits import MAX_PASSAGE_CHARS
from ...kernel.payload import DeadlineMs, Id, Most
from ..contract import Channel, Lazy, ProjectOnly

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
    text: Annotated[str, Most(chars=MAX_PASSAGE_CHARS)]
    projectId: Id | None = None
    documentId: Position | None = None


@dataclass(frozen=True)
class ConsistencyCheck:
    documentId: Position
    projectId: Id | None = None
    text: Annotated[str, Most(chars=MAX_PASSAGE_CHARS)] | None = None
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
    mentions: list[dict[str, Any]]  # kg:consistency:check: the first 200 (kernel/limits.py MAX_LISTED)
    mentionsTotal: int
    lastSeen: str | None  # kg:entity:list/get: the last scene at or before `at` it is mentioned in (`doc#scene`)
    warnings: list[str]  # kg:entity:get: `at` names a scene its document lacks: answered at the document's end


class Entities(TypedDict):
    items: list[Entity]
    warnings: NotRequired[list[str]]  # `at` names a scene its document lacks: answered at the document's end


class Edges(TypedDict):
    edges: list[Edge]
    warnings: NotRequired[list[str]]  # `at` names a scene its document lacks: answered at the document's end


class State(TypedDict):
    state: str | None
    facets: dict[str, Cited]
    since: str | None
    source: str | None
    line: int | None
    warnings: NotRequired[list[str]]  # `at` names a scene its document lacks: answered at the document's end


class Mention(TypedDict):
    id: str
    name: str
    match: str
    offset: int
    length: int


class Skip(TypedDict):
    id: str  # the card
    key: str  # the regex key as the card writes it
    reason: str  # invalid | bounds (never compiled) | timeout | budget (the call's 50 ms were spent)
    message: str


class Mentions(TypedDict):
    items: list[Mention]  # the first 10,000 (kernel/limits.py MAX_MENTIONS)
    total: int
    skipped: list[Skip]  # regex keys that could not run: the first 200
    skippedTotal: int


class Flag(TypedDict):
    # NOT_YET_INTRODUCED | NOT_ALIVE | LOCATION_MISMATCH | MAY_NOT_KNOW | BEFORE_REVEAL | FACTS_DISAGREE
    # | THREAD_ABANDONED
    code: str
    entity: str  # a card's id; a fact's id (BEFORE_REVEAL), a thread's (THREAD_ABANDONED), the subject (FACTS_DISAGREE)
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
    entities: list[Entity]  # each list: the first 200 (kernel/limits.py MAX_LISTED), its total beside it
    entitiesTotal: int
    facts: list[Fact]
    factsTotal: int
    flags: list[Flag]
    flagsTotal: int
    skipped: list[Skip]
    skippedTotal: int


@dataclass(frozen=True)
class ThreadsGet:
    projectId: Id | None = None
    at: Position | None = None
    status: Annotated[str, Most(chars=20)] | None = None  # open | resolved | dropped


class ThreadItem(TypedDict, total=False):
    id: str  # "threads/ruby"
    title: str
    status: str  # open | resolved | dropped, at the position
    opened: str
    resolved: str  # only where the thread is resolved at the position
    dropped: str
    keys: list[str]
    entities: list[str]
    note: str
    source: str
    line: int


class Problem(TypedDict):
    source: str
    line: int
    message: str


class Threads(TypedDict):
    at: Optional[str]
    items: list[ThreadItem]  # the first 200, in the order they were opened
    total: int
    problems: list[Problem]  # thread files that are not threads (no `opened:`, bad YAML)
    warnings: NotRequired[list[str]]  # `at` names a scene its document lacks: answered at the document's end


@dataclass(frozen=True)
class SceneGet:
    at: Position  # a document, or `document#heading` for one of its scenes
    projectId: Id | None = None


class SceneValue(TypedDict):
    value: Any
    at: str  # the position it was set at
    source: str
    line: int


class SceneView(TypedDict):
    title: str  # the section's heading ("" for a whole document)
    line: int
    source: str
    values: dict[str, Any]


class Scene(TypedDict):
    at: str
    state: dict[str, SceneValue]  # pov, location, date (carried), present (this scene's), other facets
    line: str  # the state as Layer 4's one line
    scene: Optional[SceneView]  # the scene in force: the named one, else the document's last
    scenes: list[SceneView]  # the document's own scenes
    problems: list[Problem]
    warnings: NotRequired[list[str]]  # `at` names a scene its document lacks: answered at the document's end


@dataclass(frozen=True)
class ReaderGet:
    at: Position
    projectId: Id | None = None


class KnownFact(TypedDict):
    id: str
    content: str
    source: str
    revealed: Optional[str]  # None: known from the start
    keys: list[str]


class Reader(TypedDict):
    at: str
    items: list[KnownFact]  # the first 200, by id
    total: int
    warnings: NotRequired[list[str]]  # `at` names a scene its document lacks: answered at the document's end


class Where(TypedDict):
    source: str
    line: int


class Duplicate(TypedDict):
    kind: str  # card | fact
    name: Optional[str]  # the name or alias the cards share (by name); null by meaning or words
    ids: list[str]
    score: Optional[float]  # the share of words in common (by words), the cosine (facts by meaning), how well
    # each card's sentences are said again by the other's (cards by meaning); null by name
    by: str  # name | meaning (cards); words | meaning (facts)
    sources: list[Where]
    message: str


class Duplicates(TypedDict):
    items: list[Duplicate]  # the first 200
    total: int


CHANNELS = (
    Channel("kg:entity:list", EntityList, Entities, Lazy("membank.domains.story.queries", "entity_list"),
            "read", "story",
            "Characters and world entries with their state at a story position (the timeline of one with NAME).",
            "entities"),
    Channel("kg:entity:get", EntityGet, Entity, Lazy("membank.domains.story.queries", "entity_get"), "read", "story",
            "One entity: its state, facets, progressions and relations at a position (all without one).",
            "entity"),
    Channel("kg:relations", RelationsGet, Edges, Lazy("membank.domains.story.queries", "relations"),
            "read", "relations",
            "An entity's relations that hold at a position, to depth 1-3, both directions, no loops.",
            "relations"),
    Channel("kg:state", StateGet, State, Lazy("membank.domains.story.queries", "state"), "read", "state",
            "An entity's state and facets at a story position, with source and line.", "state_at"),
    Channel("kg:state:update", StateUpdate, Entity, Lazy("membank.domains.story.progress", "update_state"),
            "write", "progress",
            "Write a progression (state, facets) at a position into the card file, keeping its comments.",
            "update_state"),
    Channel("kg:mentions", MentionsGet, Mentions, Lazy("membank.domains.story.queries", "mentions"),
            "read", "mentions",
            "Which characters and world entries a text names, where (code points).", "mentions"),
    Channel("kg:consistency:check", ConsistencyCheck, Checked,
            Lazy("membank.domains.story.queries", "consistency_check"), "read", "check",
            "Evidence for a passage at its position (entities, state, relations, facts) and what contradicts it.",
            "check_consistency"),
    Channel("story:threads", ThreadsGet, Threads, Lazy("membank.domains.story.threadfiles", "list_threads"),
            "read", "threads",
            "The plot threads at a story position: open, resolved or dropped there (nothing opened later).",
            "threads"),
    Channel("story:scene", SceneGet, Scene, Lazy("membank.domains.story.scenefiles", "get_scene"),
            "read", "scene",
            "Who is here, where and when at a story position (pov, present, location, date), each value cited.",
            "scene"),
    Channel("story:reader", ReaderGet, Reader, Lazy("membank.domains.story.factfiles", "reader"),
            "read", "reader",
            "What the reader knows at a story position: the facts revealed there or before (or never hidden).",
            "reader"),
    Channel("story:duplicates", ProjectOnly, Duplicates, Lazy("membank.domains.story.duplicatefiles", "find"),
            "read", "duplicates",
            "Near-duplicate cards (a shared name or alias, or the same sentences) and facts (nearly the same words"
            " or meaning), with both sources.",
            "duplicates", snapshot=True),
)
