"""The preference-learning channels: feedback in, learned preferences cleared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from ...kernel import errors
from ...kernel.payload import Id, Tags
from ..contract import Bank, Channel, Lazy, ProjectOnly
from ..memories.channels import Memory

# The longest `evidenceRef` feedback may carry (characters): it is a learned preference's text.
EVIDENCE_LIMIT = 2000


@dataclass(frozen=True)
class PreferencesIngest:
    runId: Id
    skillId: Id
    action: Literal["accept", "reject", "partial"]
    evidenceRef: str
    projectId: Id | None = None
    tags: Tags | None = None


class PreferencesIngested(TypedDict):
    ignored: bool
    reason: NotRequired[Literal["EVIDENCE_TOO_SHORT", "LEARNING_DISABLED"]]
    signalKey: str  # `prefer:<hash>` or `avoid:<hash>`
    count: float  # the signal's weight since the last clear (a partial accept counts 0.5)
    threshold: int
    learned: NotRequired[Memory]  # the learned preference, when this feedback wrote or updated it


class PreferencesCleared(TypedDict):
    cleared: int  # learned preferences soft-deleted


def ingest(bank: Bank, run_id: str, skill_id: str, action: str, evidence_ref: str,
           tags: list[str] | None = None) -> dict[str, Any]:
    if len(evidence_ref) > EVIDENCE_LIMIT:  # it becomes a learned preference's text, injected into prompts
        raise errors.invalid("evidenceRef", f"`evidenceRef` is longer than {EVIDENCE_LIMIT} characters; send the "
                             "phrase the writer accepted or rejected, not the whole passage")
    from . import flows  # at the call: listing the channels must not import the learning flows

    return flows.ingest(bank, flows.Feedback(run_id, skill_id, action, evidence_ref, tuple(tags or ())))


CHANNELS = (
    Channel("memory:preferences:ingest", PreferencesIngest, PreferencesIngested, ingest, "write", "feedback",
            "Record accept/reject feedback; enough of the same becomes a learned preference.", "ingest_feedback",
            embeds=True),
    Channel("memory:preferences:clear", ProjectOnly, PreferencesCleared,
            Lazy("membank.domains.learning.flows", "clear"), "write", "clear-preferences",
            "Soft-delete every learned preference of the project and start the counts again.", "clear_preferences"),
)
