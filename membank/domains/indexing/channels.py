"""The index channels: sync, status, diagnostics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from ...kernel.payload import DeadlineMs, Id
from ..contract import Channel, Lazy, ProjectOnly
from ..recall.channels import ReasonInfo

# by name, imported at the first call: the report needs episodes, lifecycle, recall and the story's checks
refresh = Lazy("membank.domains.indexing.refresh", "refresh")
status = Lazy("membank.domains.indexing.report", "status")
diagnostics = Lazy("membank.domains.indexing.report", "diagnostics")


@dataclass(frozen=True)
class IndexSync:
    projectId: Id | None = None
    rebuild: bool = False
    deadlineMs: DeadlineMs | None = None


class IndexCounts(TypedDict):
    memories: int
    deleted: int
    tombstones: int
    characters: int
    world: int
    skills: int


class ModelStatus(TypedDict):
    name: str | None  # the model settings name (folder:weights bytes:dimension), None when it cannot load
    dim: int | None
    vocabulary: int | None  # how many token vectors the model holds
    indexModel: str | None  # what the index's vectors were made with
    indexDim: int | None
    semantic: bool  # semantic recall can run now
    problem: ReasonInfo | None


class DiagnosticCounts(TypedDict):
    errors: int
    warnings: int


class WatchStatus(TypedDict):
    mode: Literal["native", "polling"]
    running: bool
    note: str | None  # why it polls, when it does
    lastChange: str | None


class EpisodeCounts(TypedDict):
    total: int  # episodes in the journal (evicted ones included)
    live: int
    pending: int  # accepted by `memory:episode:record` and not yet written
    failed: int  # given up on after 3 tries since the project was opened (each also sent as `episode:failed`)


class LastRuns(TypedDict):
    realtime: str | None  # null: never
    daily: str | None
    weekly: str | None
    monthly: str | None


class EpisodeLevels(TypedDict):
    active: int
    decaying: int
    to_compress: int
    to_evict: int


class LifecycleStatus(TypedDict):
    lastRun: LastRuns
    levels: EpisodeLevels  # live episodes per decay level, as of the last daily trigger
    warnings: list[str]  # lifecycle runs or episodes dated after now (the clock was ahead), ignored


class StrongStatus(TypedDict):
    setting: Literal["auto", "off"]  # embedding.strong
    state: Literal["ready", "filling", "off", "unavailable"]  # filling: vectors are being embedded
    problem: str | None  # why the tier is off or cannot run here
    model: str | None  # the strong model's identity, when it runs
    indexModel: str | None  # the model the stored strong vectors were made with
    done: int  # entries (memories, cards, world entries) with a strong vector of that model
    total: int  # entries the tier embeds


class IndexStatus(TypedDict):
    projectId: str
    name: str
    counts: IndexCounts
    lastSync: str | None
    model: ModelStatus
    diagnostics: DiagnosticCounts
    episodes: EpisodeCounts
    lifecycle: LifecycleStatus
    watch: WatchStatus | None  # None when no watcher runs (the CLI, or `serve --no-watch`)
    strong: StrongStatus  # the strong tier of vectors (recall.md, Tiers)


class SyncReport(TypedDict):
    added: int
    updated: int
    removed: int
    unchanged: int
    errors: int  # files with at least one error
    tookMs: float


class DiagnosticItem(TypedDict):
    source: str
    line: int
    severity: Literal["error", "warning"]
    message: str
    code: NotRequired[str]  # where an app may act on the kind of problem: MERGE_CONFLICT


class DiagnosticList(TypedDict):
    items: list[DiagnosticItem]


CHANNELS = (
    Channel("index:status", ProjectOnly, IndexStatus, status, "read", "status",
            "The index's state: counts, last sync, model, problems.", "status"),
    # not `embeds`: a sync loads the model only when something needs embedding (a no-op `membank
    # index` at 10,000 files: 0.85 -> 0.40 s); one that embeds loads it inside the write lock, once
    Channel("index:sync", IndexSync, SyncReport, refresh, "write", "index",
            "Bring the index up to date with the files.", "sync"),
    Channel("index:diagnostics", ProjectOnly, DiagnosticList, diagnostics, "read", "doctor",
            "Every file problem with source:line; exits 1 when there is an error.", "diagnostics"),
)
