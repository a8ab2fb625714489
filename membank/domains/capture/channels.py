"""The capture channels (capture.md): prepare a chapter for a model, propose the model's changes (each op
checked, the valid ones kept in `.writenow/proposals/<document>.md`), and every document's capture state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

from ...kernel.payload import DocPath, Id, Most
from ..contract import Channel, Lazy, ProjectOnly

MAX_OPS = 1_000  # shapes.MAX_OPS (not imported: listing the catalog must not import the flows)


@dataclass(frozen=True)
class CapturePrepare:
    documentId: DocPath
    projectId: Id | None = None
    documentText: Annotated[str, Most(chars=200_000)] | None = None  # the app's unsaved text


@dataclass(frozen=True)
class CapturePropose:
    documentId: DocPath
    chapterHash: Annotated[str, Most(chars=100)]
    ops: Annotated[list[dict[str, Any]], Most(items=MAX_OPS)]
    projectId: Id | None = None
    by: Annotated[str, Most(chars=64)] | None = None  # who proposed (a model's name, an agent, writer)


class Part(TypedDict):
    scene: str  # the first scene it holds
    line: int
    endLine: int
    prompt: str


class Prepared(TypedDict):
    documentId: str
    chapterHash: str  # sha256: of the chapter text as prepared; propose sends it back
    at: str  # "before <document>": every state is as it stood just before the chapter
    prompt: Optional[str]  # the whole chapter's prompt (null when it comes in parts)
    parts: list[Part]  # a chapter longer than the skill's budget, in scene-sized parts (else empty)
    schema: dict[str, Any]  # the JSON Schema of a proposal
    skill: str  # the skill's source
    entities: list[dict[str, Any]]  # kg:entity:get's shape, with relations, as of just before the chapter
    threads: list[dict[str, Any]]  # story:threads' shape: the threads open just before the chapter
    facts: list[dict[str, Any]]  # the fact memories in force there that name a mentioned entity


class OpResult(TypedDict):
    index: int
    id: str  # the op's stable id in the proposal file (p-…)
    op: str
    status: str  # pending (stored) | duplicate (the file holds it already) | refused (not stored)
    reason: Optional[str]  # a refusal's code, or the first flag of a stored op
    message: str
    flags: list[str]  # UNKNOWN_ENTITY | AMBIGUOUS | EVIDENCE_NOT_FOUND | CONTRADICTS_LATER | UNKNOWN_FACT | …
    notes: list[str]
    line: Optional[int]  # the evidence's line in the chapter


class Proposed(TypedDict):
    documentId: str
    chapterHash: str
    proposal: str  # the proposal file (.writenow/proposals/…)
    written: bool  # false: nothing new, the file was left as it was
    ops: list[OpResult]
    counts: dict[str, int]


@dataclass(frozen=True)
class Decision:
    id: Annotated[str, Most(chars=40)]  # the op's id in the proposal file (p-…)
    decision: Literal["accept", "reject", "patch"] | None = None  # patch: accept with `patch` applied
    action: Literal["accept", "reject", "patch"] | None = None  # capture.md's name for `decision`
    patch: dict[str, Any] | None = None  # the op's fields to change before it is applied


@dataclass(frozen=True)
class CaptureReview:
    documentId: DocPath
    decisions: Annotated[list[Decision], Most(items=MAX_OPS)] | None = None  # null: the ones made in the file
    projectId: Id | None = None


@dataclass(frozen=True)
class CapturePending:
    documentId: DocPath
    projectId: Id | None = None


class PendingOp(TypedDict):
    id: str
    op: str
    status: str  # pending | accepted (decided in the file) | stale
    fields: dict[str, Any]  # the op as the file holds it
    evidence: str
    where: Optional[str]  # <document>:<line>
    flags: list[str]
    notes: list[str]


class Interrupted(TypedDict):
    """A review killed midway (a crash): the accepted ops its files hold, and those they do not."""
    applied: list[str]
    notApplied: list[str]


class Pending(TypedDict):
    documentId: str
    proposal: str
    items: list[PendingOp]
    interrupted: NotRequired[Interrupted]  # a review killed midway, finished by the next review


class Reviewed(TypedDict):
    documentId: str
    proposal: str
    ops: list[dict[str, Any]]  # each decided op: id, op, status (applied | rejected)
    written: list[str]  # the files written (cards, the proposal file), all or none
    counts: dict[str, int]
    resumed: NotRequired[Interrupted]  # a review killed midway, finished (or reported) before this one


class DocumentCapture(TypedDict):
    documentId: str
    state: str  # none | pending | stale | reviewed
    pending: int
    accepted: int  # decided in the file, not applied yet (`membank review D --apply`)
    applied: int
    rejected: int
    stale: int
    problems: list[dict[str, Any]]  # sections of the proposal file that cannot be read (line, message)


class CaptureStatus(TypedDict):
    items: list[DocumentCapture]


CHANNELS = (
    Channel("capture:prepare", CapturePrepare, Prepared, Lazy("membank.domains.capture.flows", "prepare"),
            "read", "capture",
            "Prepare a chapter for a model: the prompt, the cards it mentions as of just before it, the schema.",
            "capture_prepare"),
    Channel("capture:propose", CapturePropose, Proposed, Lazy("membank.domains.capture.flows", "propose"),
            "write", "propose",
            "Check a model's proposed updates op by op; keep the valid ones in the chapter's proposal file.",
            "capture_propose"),
    Channel("capture:review", CaptureReview, Reviewed, Lazy("membank.domains.capture.review", "review"),
            "write", "review",
            "Apply the writer's decisions on a chapter's proposed updates, together: accepted ones into cards, facts, threads and scenes.",
            "capture_review"),
    Channel("capture:pending", CapturePending, Pending, Lazy("membank.domains.capture.review", "pending"),
            "read", "review",
            "The ops of a chapter's proposal file still to review: pending, accepted in the file, stale.",
            "capture_pending"),
    Channel("capture:status", ProjectOnly, CaptureStatus, Lazy("membank.domains.capture.flows", "status"),
            "read", "capture",
            "Every document in story order with its capture state: none, pending, stale or reviewed.",
            "capture_status"),
)
