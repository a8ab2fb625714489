"""The channel table: every channel's payload type and handler, dispatched to envelopes.

The CLI, the Python API and the sidecar all call `dispatch`, so a channel cannot exist in one
and not the others."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, NotRequired, TypedDict

from ..kernel import errors
from .project import Bank
from ..kernel.errors import MembankError
# the bounded field types (payload.py checks them before a handler runs)
from ..kernel.payload import Content, DocPath, Id, Most, Tags, TypeName, build
from .boundary import locate, storage_error
from ..index import IndexError_, StorageError

log = logging.getLogger("membank")


# -- payloads: the Python types are the contract (docs/schema/ is generated from them) -------------


@dataclass(frozen=True)
class ProjectOpen:
    path: Annotated[str, Most(chars=4096)]


@dataclass(frozen=True)
class ProjectOnly:
    projectId: Id | None = None


@dataclass(frozen=True)
class IndexSync:
    projectId: Id | None = None
    rebuild: bool = False


@dataclass(frozen=True)
class MemoryCreate:
    type: TypeName
    scope: Literal["project", "document", "global"]
    content: Content
    projectId: Id | None = None
    documentId: DocPath | None = None
    tags: Tags | None = None
    confidence: float | None = None
    evidence: list[Any] | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool | None = None


@dataclass(frozen=True)
class MemoryRef:
    id: Id
    projectId: Id | None = None


@dataclass(frozen=True)
class MemoryList:
    projectId: Id | None = None
    scope: Literal["project", "document", "global"] | None = None
    type: TypeName | None = None
    origin: Literal["manual", "learned"] | None = None
    includeDeleted: bool = False


@dataclass(frozen=True)
class MemoryPatch:
    content: Content | None = None
    type: TypeName | None = None
    tags: Tags | None = None
    confidence: float | None = None
    evidence: list[Any] | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool | None = None
    documentId: DocPath | None = None


@dataclass(frozen=True)
class MemoryUpdate:
    id: Id
    patch: MemoryPatch
    projectId: Id | None = None
    expectedRevision: int | None = None


@dataclass(frozen=True)
class SettingsPatch:
    injectionEnabled: bool | None = None
    preferenceLearningEnabled: bool | None = None
    privacyModeEnabled: bool | None = None
    preferenceLearningThreshold: int | None = None
    injectionMaxItems: int | None = None
    injectionTokenBudget: int | None = None


@dataclass(frozen=True)
class SettingsUpdate:
    patch: SettingsPatch
    projectId: Id | None = None
    scope: Literal["project", "global"] = "project"


@dataclass(frozen=True)
class PreferencesIngest:
    runId: Id
    skillId: Id
    action: Literal["accept", "reject", "partial"]
    evidenceRef: str
    projectId: Id | None = None
    tags: Tags | None = None


@dataclass(frozen=True)
class InjectionPreview:
    projectId: Id | None = None
    queryText: str | None = None
    documentId: DocPath | None = None


# -- data: what each channel returns in the envelope's `data` (docs/schema/ is generated from these) --


class ProjectOpened(TypedDict):
    projectId: str
    name: str
    root: str  # the project folder's name only, never an absolute path


class IndexCounts(TypedDict):
    memories: int
    deleted: int
    tombstones: int
    characters: int
    world: int
    skills: int


class ReasonInfo(TypedDict):
    """Why recall degraded (or injection is off): a stable code and a readable message."""

    code: Literal["EMPTY_QUERY", "VEC_UNAVAILABLE", "MODEL_UNAVAILABLE", "EMBEDDING_DIM_MISMATCH",
                  "QUERY_NOT_EMBEDDABLE", "INJECTION_DISABLED"]
    message: str


class ModelStatus(TypedDict):
    name: str | None  # the model settings name, None when it cannot load
    dim: int | None
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


class IndexStatus(TypedDict):
    projectId: str
    name: str
    counts: IndexCounts
    lastSync: str | None
    model: ModelStatus
    diagnostics: DiagnosticCounts
    watch: WatchStatus | None  # None when no watcher runs (the CLI, or `serve --no-watch`)


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


class DiagnosticList(TypedDict):
    items: list[DiagnosticItem]


class Memory(TypedDict):
    id: str
    type: str
    scope: Literal["project", "document", "global"]
    origin: Literal["manual", "learned"]
    content: str
    source: str
    documentId: str | None
    tags: list[str]
    confidence: float
    evidence: list[Any]
    metadata: dict[str, Any]
    pinned: bool
    revision: int
    createdAt: str | None
    updatedAt: str
    deletedAt: str | None


class MemoryItems(TypedDict):
    items: list[Memory]


class MemoryDeleted(TypedDict):
    id: str
    deletedAt: str


class Settings(TypedDict):
    injectionEnabled: bool
    preferenceLearningEnabled: bool
    privacyModeEnabled: bool
    preferenceLearningThreshold: int
    injectionMaxItems: int
    injectionTokenBudget: int


class PreviewScore(TypedDict):
    fused: float
    vector: float | None
    vectorRank: int | None
    lexical: float | None
    lexicalRank: int | None


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


class PreviewDiagnostics(TypedDict):
    degraded: bool
    reasons: list[ReasonInfo]
    truncated: int
    tokens: int
    tookMs: float


class Preview(TypedDict):
    items: list[PreviewItem]
    mode: Literal["deterministic", "semantic"]
    diagnostics: PreviewDiagnostics


class PreferencesIngested(TypedDict):
    ignored: bool
    reason: NotRequired[Literal["EVIDENCE_TOO_SHORT", "LEARNING_DISABLED"]]
    signalKey: str  # `prefer:<hash>` or `avoid:<hash>`
    count: float  # the signal's weight since the last clear (a partial accept counts 0.5)
    threshold: int
    learned: NotRequired[Memory]  # the learned preference, when this feedback wrote or updated it


class PreferencesCleared(TypedDict):
    cleared: int  # learned preferences soft-deleted


# -- the registry of open projects -----------------------------------------------------------------


class Registry:
    """The banks a process has open, by project id."""

    def __init__(self, home: Path | None = None):
        self.home = home
        self.banks: dict[str, Bank] = {}

    def open(self, path: Path | str, sync: bool = True) -> Bank:
        """The bank of the project at or above `path` (`~` expanded); only MembankError escapes."""
        root = locate(path)
        for bank in self.banks.values():
            if bank.root == root:
                return bank
        bank = Bank(root, self.home)
        if bank.info.id in self.banks:
            bank.close()
            raise MembankError(errors.CONFLICT, f"another open project already has the id `{bank.info.id}`")
        if sync:
            try:
                bank.sync()  # a busy or broken index is DB_ERROR (boundary.py), never a traceback
            except MembankError:
                bank.close()
                raise
        self.banks[bank.info.id] = bank
        return bank

    def get(self, project_id: str | None) -> Bank:
        if project_id is None:
            if len(self.banks) == 1:
                return next(iter(self.banks.values()))
            raise errors.invalid("projectId", "`projectId` is required when more or fewer than one project is open")
        try:
            return self.banks[project_id]
        except KeyError:
            raise MembankError(errors.NOT_FOUND, f"no open project with id `{project_id}`", {"projectId": project_id}) from None

    def close(self) -> None:
        for bank in self.banks.values():
            bank.close()
        self.banks.clear()


# -- the channel table -------------------------------------------------------------------------------


def _project_open(reg: Registry, p: ProjectOpen) -> dict[str, Any]:
    bank = reg.open(p.path)
    return {"projectId": bank.info.id, "name": bank.info.name, "root": bank.root.name}


@dataclass(frozen=True)
class Channel:
    name: str
    payload: type
    handler: Callable[[Registry, Any], Any]
    data: Any = None  # the TypedDict of the envelope's `data`; docs/schema/ is generated from it


CHANNELS: dict[str, Channel] = {c.name: c for c in (
    Channel("project:open", ProjectOpen, _project_open, ProjectOpened),
    Channel("index:status", ProjectOnly, lambda r, p: r.get(p.projectId).status(), IndexStatus),
    Channel("index:sync", IndexSync, lambda r, p: r.get(p.projectId).sync(rebuild=p.rebuild), SyncReport),
    Channel("index:diagnostics", ProjectOnly, lambda r, p: r.get(p.projectId).diagnostics(), DiagnosticList),
    Channel("memory:create", MemoryCreate, lambda r, p: r.get(p.projectId).create_memory(
        p.type, p.scope, p.content, p.documentId, p.tags, p.confidence, p.evidence, p.metadata, p.pinned), Memory),
    Channel("memory:get", MemoryRef, lambda r, p: r.get(p.projectId).get_memory(p.id), Memory),
    Channel("memory:list", MemoryList, lambda r, p: r.get(p.projectId).list_memories(
        p.scope, p.type, p.origin, p.includeDeleted), MemoryItems),
    Channel("memory:update", MemoryUpdate, lambda r, p: r.get(p.projectId).update_memory(
        p.id, p.patch, p.expectedRevision), Memory),
    Channel("memory:delete", MemoryRef, lambda r, p: r.get(p.projectId).delete_memory(p.id), MemoryDeleted),
    Channel("memory:restore", MemoryRef, lambda r, p: r.get(p.projectId).restore_memory(p.id), Memory),
    Channel("memory:settings:get", ProjectOnly, lambda r, p: r.get(p.projectId).settings(), Settings),
    Channel("memory:settings:update", SettingsUpdate, lambda r, p: r.get(p.projectId).update_settings(
        p.patch, p.scope), Settings),
    Channel("memory:injection:preview", InjectionPreview, lambda r, p: r.get(p.projectId).preview(
        p.queryText, p.documentId), Preview),
    Channel("memory:preferences:ingest", PreferencesIngest, lambda r, p: r.get(p.projectId).ingest_feedback(
        p.runId, p.skillId, p.action, p.evidenceRef, p.tags), PreferencesIngested),
    Channel("memory:preferences:clear", ProjectOnly, lambda r, p: r.get(p.projectId).clear_preferences(),
            PreferencesCleared),
)}


# Writes that embed what they write: the model is loaded before they queue for the write lock.
EMBEDDING_WRITES = frozenset({"index:sync", "memory:create", "memory:update", "memory:delete", "memory:restore",
                              "memory:preferences:ingest"})


def _load_model_first(registry: Registry, payload: Any) -> None:
    """Load the embedding model outside the write lock: loading takes ~0.4 s, the write ~10 ms, and
    writers from other processes queue for the lock (lock.py); a bank whose model is loaded, or
    cannot load, costs nothing here."""
    try:
        bank = registry.get(getattr(payload, "projectId", None))
    except MembankError:
        return  # the handler says why
    bank.embedder()


def dispatch(registry: Registry, name: str, payload: Any) -> dict[str, Any]:
    """Run one channel; always an envelope, never an exception."""
    channel = CHANNELS.get(name)
    if channel is None:
        return MembankError(errors.NOT_FOUND, f"no channel named `{name}`", {"channel": name}).envelope()
    try:
        checked = build(channel.payload, payload)
        if name in EMBEDDING_WRITES:
            _load_model_first(registry, checked)
        return {"ok": True, "data": channel.handler(registry, checked)}
    except MembankError as e:
        return e.envelope()
    except (StorageError, IndexError_, OSError) as e:  # SQLite or the disk failed (disk full, damaged file)
        log.warning("storage error in %s: %s", name, e.__class__.__name__)
        return storage_error(e).envelope()
    except Exception:  # a bug: say so, keep serving
        log.exception("internal error in %s", name)
        return MembankError(errors.INTERNAL, f"internal error in {name}; this is a bug in membank, see its log").envelope()
