"""The manuscript channels (docs/manuscript.md): spoiler-safe search over the manuscript's passages, and each
document's state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypedDict

from ...kernel.payload import DocPath, Id, Most, Within
from ..contract import Channel, Lazy, ProjectOnly

Position = Annotated[str, Most(chars=1300)]  # a document path, optionally `#scene`


@dataclass(frozen=True)
class ManuscriptSearch:
    queryText: Annotated[str, Most(chars=10_000)]
    projectId: Id | None = None
    before: Position | None = None  # only passages strictly before this story position
    documentId: DocPath | None = None  # only passages of this document
    limit: Annotated[int, Within(1, 50)] = 10


class PassageItem(TypedDict):
    source: str  # the document; cite it as `source:line`
    scene: str  # the heading's text, or `#n`
    line: int
    endLine: int
    text: str
    score: float  # the fused relevance (recall/rank.py)
    reason: str


class PassageItems(TypedDict):
    items: list[PassageItem]
    warnings: NotRequired[list[str]]  # `before` names a scene its document lacks: its end is the bound


class DocumentState(TypedDict):
    source: str
    passages: int
    scenes: list[str]
    codePoints: int
    characters: list[str]  # the characters mentioned in it (names and aliases, as kg:appearances counts)
    problem: str | None  # why the document is not indexed (too large, not UTF-8, not a file ...)
    summary: Literal["none", "current", "stale"]  # its chapter summary (.writenow/summaries/)


@dataclass(frozen=True)
class AppearancesGet:
    projectId: Id | None = None
    id: Annotated[str, Most(chars=300)] | None = None
    name: Annotated[str, Most(chars=300)] | None = None


class Appearance(TypedDict):
    source: str
    scene: str
    count: int
    firstLine: int
    lastLine: int


class Appearances(TypedDict):
    id: str
    name: str
    items: list[Appearance]  # per document and scene, in story order
    first: str | None  # the first and last positions it is mentioned at (`document#scene`)
    last: str | None
    total: int


@dataclass(frozen=True)
class SummaryPut:
    of: Annotated[str, Most(chars=2700)]  # a document, a scene position, or an arc `first..last`
    level: Annotated[str, Most(chars=16)]  # scene | chapter | arc
    text: Annotated[str, Most(chars=100_000)]
    projectId: Id | None = None
    sourceHash: Annotated[str, Most(chars=100)] | None = None  # computed from the summarised text when omitted
    by: Annotated[str, Most(chars=64)] | None = None  # who wrote it (writer | app | any word)


@dataclass(frozen=True)
class SummaryList:
    projectId: Id | None = None
    before: Position | None = None  # only summaries of what lies strictly before this position


class SummaryItem(TypedDict):
    of: str
    level: str
    text: str
    source: str  # the summary file, .writenow/summaries/…
    sourceHash: str | None
    by: str | None
    stale: bool  # the summarised text changed since the summary was written


class SummaryItems(TypedDict):
    items: list[SummaryItem]


class ManuscriptStatus(TypedDict):
    items: list[DocumentState]
    passages: int
    embedded: int


CHANNELS = (
    Channel("manuscript:search", ManuscriptSearch, PassageItems, Lazy("membank.domains.manuscript.search", "search"),
            "read", "search", "Search the manuscript's passages (only before a story position with `before`).",
            "search_manuscript"),
    Channel("manuscript:status", ProjectOnly, ManuscriptStatus, Lazy("membank.domains.manuscript.status", "status"),
            "read", "manuscript", "Each manuscript document in story order: passages, scenes, problems.",
            "manuscript_status"),
    Channel("kg:appearances", AppearancesGet, Appearances, Lazy("membank.domains.manuscript.mentions", "appearances"),
            "read", "appearances", "Where a character or world entry is mentioned in the manuscript, chapter by chapter.",
            "appearances"),
    Channel("summary:put", SummaryPut, SummaryItem, Lazy("membank.domains.manuscript.summaries", "put"), "write",
            "summary", "Write or replace the summary of a scene, chapter or arc (.writenow/summaries/).",
            "put_summary"),
    Channel("summary:list", SummaryList, SummaryItems, Lazy("membank.domains.manuscript.summaries", "list_"), "read",
            "summaries", "The summaries in story order, each saying whether its text has changed since (stale).",
            "list_summaries"),
)


# `lastSeen` in kg:entity:list/get: the story domain asks the manuscript's mention index through this
