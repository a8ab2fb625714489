"""Recall's channels: the injection preview."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from ...kernel.payload import DocPath, Id, QueryText
from ..contract import Channel, Lazy
from ..manuscript.channels import PassageItem


@dataclass(frozen=True)
class InjectionPreview:
    projectId: Id | None = None
    queryText: QueryText | None = None
    documentId: DocPath | None = None


class ReasonInfo(TypedDict):
    """Why recall degraded (or injection is off): a stable code and a readable message."""

    code: Literal["EMPTY_QUERY", "VEC_UNAVAILABLE", "MODEL_UNAVAILABLE", "EMBEDDING_DIM_MISMATCH",
                  "QUERY_NOT_EMBEDDABLE", "INJECTION_DISABLED", "STRONG_VECTORS_PENDING"]
    message: str


class PreviewScore(TypedDict):
    fused: float
    vector: float | None
    vectorRank: int | None
    lexical: float | None
    lexicalRank: int | None
    tier: NotRequired[Literal["static", "strong"]]  # which vectors the vector side used (recall.md, Tiers)


class PreviewReason(TypedDict):
    mode: Literal["deterministic", "semantic"]
    rank: int
    detail: str
    score: NotRequired[PreviewScore]  # semantic mode only


class PreviewItem(TypedDict):
    id: str
    type: str
    scope: Literal["project", "document", "global"]
    origin: Literal["manual", "learned"]
    content: str
    source: str
    tokens: int
    reason: PreviewReason


class PreviewCard(TypedDict):
    """A character or world entry the query finds: listed beside the memories, never injected by the
    preview (a card reaches a prompt by activation)."""

    kind: Literal["character", "world"]
    id: str
    name: str
    type: str  # the card's own kind (character, place, item ...)
    summary: str
    source: str
    line: int | None  # of its name in `source`
    include: Literal["always", "auto", "never"]
    reason: PreviewReason


class PreviewDiagnostics(TypedDict):
    degraded: bool
    reasons: list[ReasonInfo]
    truncated: int
    tokens: int
    tookMs: float


class Preview(TypedDict):
    items: list[PreviewItem]
    cards: list[PreviewCard]  # with a query: the cards and world entries it finds, best first
    mode: Literal["deterministic", "semantic"]
    diagnostics: PreviewDiagnostics
    passages: list[PassageItem]  # with a query and a document: the passages before it the query finds, best first


CHANNELS = (
    Channel("memory:injection:preview", InjectionPreview, Preview, Lazy("membank.domains.recall.preview", "preview"),
            "read", "preview", "What would go into the prompt, in order, with reasons.", "preview"),
)
