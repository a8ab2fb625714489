"""The channels of runs, traces and episodes (episodes.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from ...kernel import errors
from ...kernel.payload import DeadlineMs, DocPath, Id, Most, QueryText, Tags, Within
from ..contract import Bank, Channel, Lazy
from ..learning.channels import EVIDENCE_LIMIT, PreferencesIngested
from .signal import EDITED_ACCEPT, HEAVY_ABOVE, LIGHT_BELOW, WEIGHTS, edited_weight

# The flows (and numpy with them) are imported in each handler, at its first call: every CLI command
# lists the channels, few run one of these.

LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 3, 5, 5  # the episodes a query returns (episodes.md: `limit: 3–5`)

SceneType = Annotated[str, Most(chars=64)]  # a free lower-case word: action, dialogue, … (`Action` is read as it)


def _scene(value: str | None) -> str | None:
    """A sceneType as membank keeps it: trimmed and lower-cased, none when blank."""
    return value.strip().lower() or None if value is not None else None
Summary = Annotated[str, Most(chars=2000)]  # the app's one-line summary of a run: not the passage
SignalName = Literal["DIRECT_ACCEPT", "LIGHT_EDIT", "EDITED_ACCEPT", "HEAVY_REWRITE", "FULL_REJECT",
                     "UNDO_AFTER_ACCEPT", "REPEATED_SCENE_SKILL"]
Unit = Annotated[float, Within(0, 1)]
Count = Annotated[int, Within(0, 1000)]


@dataclass(frozen=True)
class TraceGet:
    runId: Id
    projectId: Id | None = None


@dataclass(frozen=True)
class TraceFeedback:
    runId: Id
    verdict: Literal["correct", "incorrect"]
    reason: Summary | None = None
    projectId: Id | None = None


@dataclass(frozen=True)
class SkillFeedback:
    runId: Id
    action: Literal["accept", "reject", "partial", "undo"]
    projectId: Id | None = None
    evidenceRef: Annotated[str, Most(chars=EVIDENCE_LIMIT)] | None = None
    tags: Tags | None = None
    selectedIndex: Count | None = None
    candidates: Count | None = None  # how many candidates the writer was shown
    editDistance: Unit | None = None
    sceneType: SceneType | None = None
    summary: Summary | None = None
    chapterId: DocPath | None = None


@dataclass(frozen=True)
class EpisodeRecord:
    projectId: Id | None = None
    runId: Id | None = None
    chapterId: DocPath | None = None
    sceneType: SceneType | None = None
    skillUsed: Id | None = None
    action: Literal["accept", "partial", "reject"] = "accept"
    selectedIndex: Count | None = None
    candidates: Count | None = None
    editDistance: Unit | None = None
    implicitSignal: SignalName | None = None
    signalWeight: Annotated[float, Within(-2, 2)] | None = None
    importance: Unit | None = None
    pinned: bool = False
    summary: Summary | None = None
    tags: Tags | None = None
    wait: bool = False


@dataclass(frozen=True)
class EpisodeQuery:
    projectId: Id | None = None
    sceneType: SceneType | None = None
    queryText: QueryText | None = None
    limit: Annotated[int, Within(LIMIT_MIN, LIMIT_MAX)] = LIMIT_DEFAULT
    deadlineMs: DeadlineMs | None = None


class Piece(TypedDict):  # as journaled; a value of the wrong type (a hand edit) reads as null
    layer: int | None
    kind: str | None
    id: str | None
    source: str | None
    tokens: int | None
    score: float | None


class TraceItem(TypedDict):
    kind: Literal["verdict", "skill", "preference", "episode", "undo", "update"]
    at: str | None
    source: str  # the journal line: `.writenow/journal/2026-11.jsonl#L120`
    verdict: NotRequired[Literal["correct", "incorrect"] | None]
    reason: NotRequired[str | None]
    action: NotRequired[str | None]
    signalKey: NotRequired[str | None]
    ignored: NotRequired[str | None]
    episodeId: NotRequired[str | None]
    signal: NotRequired[str | None]
    weight: NotRequired[float | None]


class Trace(TypedDict):
    runId: str
    at: str | None
    source: str  # the run's journal line
    skillId: str | None
    documentId: str | None
    stablePrefixHash: str | None
    pieces: list[Piece]
    feedback: list[TraceItem]  # oldest first


class Verdict(TypedDict):
    runId: str
    verdict: str
    reason: str | None
    at: str
    source: str


class Episode(TypedDict):
    id: str
    projectId: str | None
    runId: str | None
    chapterId: str | None
    sceneType: str | None
    skillUsed: str | None
    action: str | None
    selectedIndex: int | None
    candidates: int | None
    editDistance: float | None
    implicitSignal: str | None
    signalWeight: float
    importance: float
    recallCount: int
    lastRecalledAt: str | None
    compressed: bool
    pinned: bool
    createdAt: str
    undoneAt: str | None
    summary: str | None  # the app's summary (left out in privacy mode)
    tags: list[str]
    source: str  # the journal line that recorded it
    decay: float | None  # 0..1, as of the last daily lifecycle trigger (docs/lifecycle.md)
    level: Literal["active", "decaying", "to_compress", "to_evict"] | None


class SignalOut(TypedDict):
    name: str
    weight: float  # with the repeat bonus
    base: float
    repeats: int  # earlier runs of this skill on this sceneType counted (REPEATED_SCENE_SKILL)
    replaced: bool  # an undo within 30 s replaced the accept's signal


class SkillFeedbackOut(TypedDict):
    episode: Episode
    signal: SignalOut
    preference: PreferencesIngested | None  # None for an undo that took nothing back


class Recorded(TypedDict):
    accepted: bool
    id: str
    episode: NotRequired[Episode]  # with `wait: true`


class Reason(TypedDict):
    rank: int
    score: float
    decay: float
    level: Literal["active", "decaying", "to_compress", "to_evict"]
    similarity: float | None
    sceneMatch: bool
    detail: str


class Ranked(Episode):
    reason: Reason


class Problem(TypedDict):
    code: Literal["EMPTY_QUERY", "MODEL_UNAVAILABLE", "QUERY_NOT_EMBEDDABLE", "EMBEDDING_DIM_MISMATCH",
                  "RECALL_NOT_JOURNALED", "MEMORY_DEGRADED"]
    message: str


class EpisodeItems(TypedDict):
    items: list[Ranked]
    reasons: list[Problem]
    memoryDegraded: bool  # the index could not be read: no items, and the built-in default rules instead
    defaultRules: list[str]  # empty unless memoryDegraded


def trace_feedback(bank: Bank, run_id: str, verdict: str, reason: str | None = None) -> dict[str, Any]:
    from . import flows

    return flows.verdict(bank, run_id, verdict, reason)


def skill_feedback(bank: Bank, run_id: str, action: str, evidence_ref: str | None = None,
                   tags: list[str] | None = None, selected_index: int | None = None, candidates: int | None = None,
                   edit_distance: float | None = None, scene_type: str | None = None, summary: str | None = None,
                   chapter_id: str | None = None) -> dict[str, Any]:
    from . import flows

    fields = flows.Fields(chapter_id=chapter_id, scene_type=_scene(scene_type), selected_index=selected_index,
                          candidates=candidates, edit_distance=edit_distance, summary=summary)
    return flows.skill_feedback(bank, run_id, action, fields, evidence_ref, tuple(tags or ()))


def episode_record(bank: Bank, run_id: str | None = None, chapter_id: str | None = None, scene_type: str | None = None,
                   skill_used: str | None = None, action: str = "accept", selected_index: int | None = None,
                   candidates: int | None = None, edit_distance: float | None = None,
                   implicit_signal: str | None = None, signal_weight: float | None = None,
                   importance: float | None = None, pinned: bool = False, summary: str | None = None,
                   tags: list[str] | None = None, wait: bool = False) -> dict[str, Any]:
    if implicit_signal is None and signal_weight is not None:
        raise errors.invalid("signalWeight", "`signalWeight` needs the `implicitSignal` it weighs "
                             f"({', '.join(WEIGHTS)}); leave both out to have membank derive them")
    if implicit_signal == EDITED_ACCEPT and signal_weight is None:
        if edit_distance is None or not LIGHT_BELOW <= edit_distance <= HEAVY_ABOVE:
            raise errors.invalid("signalWeight", "`EDITED_ACCEPT` has no weight of its own: give `signalWeight`, "
                                 f"or an `editDistance` from {LIGHT_BELOW} to {HEAVY_ABOVE} to weigh it by")
        signal_weight = round(edited_weight(edit_distance), 3)
    from . import flows

    fields = flows.Fields(run_id, chapter_id, _scene(scene_type), skill_used, action, selected_index, candidates,
                          edit_distance, implicit_signal, signal_weight, importance, pinned, summary, tuple(tags or ()))
    return flows.record(bank, fields, wait)


def episode_query(bank: Bank, scene_type: str | None = None, query_text: str | None = None,
                  limit: int = LIMIT_DEFAULT) -> dict[str, Any]:
    from . import flows

    return flows.query(bank, _scene(scene_type), query_text, limit)


CHANNELS = (
    Channel("memory:trace:get", TraceGet, Trace, Lazy("membank.domains.episodes.traces", "trace"), "read", "trace",
            "One run: what its prompt held (every piece, with layer, source, tokens and score) and all feedback on it.",
            "trace"),
    Channel("memory:trace:feedback", TraceFeedback, Verdict, trace_feedback, "write", "trace-feedback",
            "Say whether a run's prompt held the right things (correct / incorrect, with a reason).", "trace_feedback"),
    Channel("ai:skill:feedback", SkillFeedback, SkillFeedbackOut, skill_feedback, "write", "skill-feedback",
            "What the writer did with a run's output: records the episode, its implicit signal and the preference "
            "signal in one call.", "skill_feedback", embeds=True),
    Channel("memory:episode:record", EpisodeRecord, Recorded, episode_record, "write", "episode-record",
            "Record an episode: accepted at once and written in the background (retried), or at once with --wait.",
            "record_episode", embeds=True),
    Channel("memory:episode:query", EpisodeQuery, EpisodeItems, episode_query, "write", "episodes",
            "The 3-5 past episodes most like this run: same sceneType first, then similarity weighted by decay.",
            "query_episodes", embeds=True),
)
