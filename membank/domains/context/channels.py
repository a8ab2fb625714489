"""The context channel: `context:assemble`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from ...kernel.payload import DeadlineMs, DocPath, Id, Most, QueryText
from ...index import StorageError
from ..contract import Channel

MAX_DOCUMENT_CHARS = 4_000_000


@dataclass(frozen=True)
class Selection:
    """Either `start`/`end` (code-point offsets into the document text) or `text` (the selected text)."""

    start: int | None = None
    end: int | None = None
    text: str | None = None


@dataclass(frozen=True)
class ContextAssemble:
    skillId: Id
    projectId: Id | None = None
    documentId: DocPath | None = None
    documentText: Annotated[str, Most(chars=MAX_DOCUMENT_CHARS)] | None = None
    selection: Selection | None = None
    instruction: QueryText | None = None
    queryText: QueryText | None = None
    sessionId: Id | None = None
    runId: Id | None = None
    sceneType: Annotated[str, Most(chars=64)] | None = None  # the kind of scene: alike past episodes first
    deadlineMs: DeadlineMs | None = None


class Block(TypedDict):
    layer: int
    name: Literal["identity", "skill", "project", "preferences", "retrieved", "immediate"]
    text: str
    tokens: int
    hash: str


class Item(TypedDict):
    layer: int
    kind: str
    id: str | None
    source: str | None
    line: NotRequired[int]
    tokens: int
    reason: Any
    score: NotRequired[float]


class Reason(TypedDict):
    code: str
    message: str


class Dropped(TypedDict):
    layer: int
    kind: str
    id: str | None
    source: str | None
    tokens: int
    reason: str


class Hidden(TypedDict):
    progressions: int
    relations: int
    memories: int


class Diagnostics(TypedDict):
    degraded: bool
    reasons: list[Reason]
    dropped: list[Dropped]
    hidden: int
    hiddenDetail: Hidden
    truncated: int
    prefixTokens: int
    prefixCacheable: bool
    hardCut: list[Literal["before", "after"]]
    memoryDegraded: bool
    tookMs: float


class Assembled(TypedDict):
    runId: str
    skillId: str
    systemPrompt: str
    userContent: str
    stablePrefixHash: str
    blocks: list[Block]
    cacheBreakpoints: list[int]
    items: list[Item]
    diagnostics: Diagnostics


def context_assemble(bank: Any, skill_id: str, document_id: str | None = None, document_text: str | None = None,
                     selection: dict[str, Any] | None = None, instruction: str | None = None,
                     query_text: str | None = None, session_id: str | None = None, run_id: str | None = None,
                     scene_type: str | None = None) -> dict[str, Any]:
    from . import degraded  # here, not at the top: every command lists the catalog, few assemble a prompt
    from .assemble import Request, assemble

    sel = selection or {}  # the checked payload's nested fields arrive as a mapping
    req = Request(skill_id, document_id, document_text, sel.get("start"), sel.get("end"), sel.get("text"),
                  instruction, query_text, run_id, scene_type, session_id)
    try:
        return assemble(bank, req)
    except StorageError as e:  # the index cannot be read: the skill still runs, on the default rules
        return degraded.assemble(bank, req, e.__class__.__name__)


CHANNELS = (
    Channel("context:assemble", ContextAssemble, Assembled, context_assemble, "read", "context",
            "The prompt for a skill here: six layers, a byte-stable prefix, every piece cited.",
            "assemble_context", embeds=True),
)
