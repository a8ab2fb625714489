"""The channel table: every channel's payload type and handler, dispatched to envelopes.

The CLI, the Python API and the sidecar all call `dispatch`, so a channel cannot exist in one
and not the others."""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, NotRequired, TypedDict

from . import errors
from .bank import Bank
from .errors import MembankError
from .files.project import ProjectError, find_root
from .index import IndexError_, StorageError

log = logging.getLogger("membank")


# -- payloads: the Python types are the contract (docs/schema/ is generated from them) -------------


@dataclass(frozen=True)
class ProjectOpen:
    path: str


@dataclass(frozen=True)
class ProjectOnly:
    projectId: str | None = None


@dataclass(frozen=True)
class IndexSync:
    projectId: str | None = None
    rebuild: bool = False


@dataclass(frozen=True)
class MemoryCreate:
    type: str
    scope: Literal["project", "document", "global"]
    content: str
    projectId: str | None = None
    documentId: str | None = None
    tags: list[str] | None = None
    confidence: float | None = None
    evidence: list[Any] | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool | None = None


@dataclass(frozen=True)
class MemoryRef:
    id: str
    projectId: str | None = None


@dataclass(frozen=True)
class MemoryList:
    projectId: str | None = None
    scope: Literal["project", "document", "global"] | None = None
    type: str | None = None
    origin: Literal["manual", "learned"] | None = None
    includeDeleted: bool = False


@dataclass(frozen=True)
class MemoryPatch:
    content: str | None = None
    type: str | None = None
    tags: list[str] | None = None
    confidence: float | None = None
    evidence: list[Any] | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool | None = None
    documentId: str | None = None


@dataclass(frozen=True)
class MemoryUpdate:
    id: str
    patch: MemoryPatch
    projectId: str | None = None
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
    projectId: str | None = None
    scope: Literal["project", "global"] = "project"


@dataclass(frozen=True)
class PreferencesIngest:
    runId: str
    skillId: str
    action: Literal["accept", "reject", "partial"]
    evidenceRef: str
    projectId: str | None = None
    tags: list[str] | None = None


@dataclass(frozen=True)
class InjectionPreview:
    projectId: str | None = None
    queryText: str | None = None
    documentId: str | None = None


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


# -- validation ------------------------------------------------------------------------------


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is list:
        return "a list"
    if origin is dict:
        return "an object"
    if dataclasses.is_dataclass(tp):
        return "an object"
    return {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}.get(tp, str(tp))


def _check(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        last: MembankError | None = None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _check(arg, value, where)
            except MembankError as e:
                last = e
        raise last or errors.invalid(where, f"`{where}` has the wrong type")
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
        raise errors.invalid(where, f"`{where}` must be {_type_name(tp)}")
    if origin is list:
        if not isinstance(value, list):
            raise errors.invalid(where, f"`{where}` must be a list")
        (item,) = typing.get_args(tp)
        return [_check(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise errors.invalid(where, f"`{where}` must be an object")
        return value
    if dataclasses.is_dataclass(tp):
        # a nested object (a patch) arrives as a dict of the keys sent, so null and absent differ
        checked = build(tp, value, where)
        return {k: getattr(checked, k) for k in value}
    ok = {
        str: lambda v: isinstance(v, str),
        bool: lambda v: isinstance(v, bool),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    }[tp](value)
    if not ok:
        raise errors.invalid(where, f"`{where}` must be {_type_name(tp)}")
    return value


def build(cls: type, payload: Any, prefix: str = "") -> Any:
    """A payload dict as `cls`; INVALID_ARGUMENT names the first wrong field."""
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise errors.invalid(prefix or "params", f"`{prefix or 'params'}` must be an object")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        where = f"{prefix}.{f.name}" if prefix else f.name
        if f.name not in payload:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise errors.invalid(where, f"`{where}` is required")
            continue
        values[f.name] = _check(hints[f.name], payload[f.name], where)
    unknown = sorted(set(payload) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        where = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise errors.invalid(where, f"`{where}` is not a field of this channel")
    return cls(**values)


# -- the registry of open projects -----------------------------------------------------------------


class Registry:
    """The banks a process has open, by project id."""

    def __init__(self, home: Path | None = None):
        self.home = home
        self.banks: dict[str, Bank] = {}

    def open(self, path: Path | str, sync: bool = True) -> Bank:
        try:
            root = find_root(Path(path))
        except ProjectError as e:
            raise MembankError(errors.NOT_FOUND, str(e), {"field": "path"}) from None
        for bank in self.banks.values():
            if bank.root == root:
                return bank
        try:
            bank = Bank(root, self.home)
        except ProjectError as e:
            raise MembankError(errors.INVALID_ARGUMENT, str(e), {"field": "path"}) from None
        if bank.info.id in self.banks:
            bank.close()
            raise MembankError(errors.CONFLICT, f"another open project already has the id `{bank.info.id}`")
        if sync:
            bank.sync()
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


def dispatch(registry: Registry, name: str, payload: Any) -> dict[str, Any]:
    """Run one channel; always an envelope, never an exception."""
    channel = CHANNELS.get(name)
    if channel is None:
        return MembankError(errors.NOT_FOUND, f"no channel named `{name}`", {"channel": name}).envelope()
    try:
        return {"ok": True, "data": channel.handler(registry, build(channel.payload, payload))}
    except MembankError as e:
        return e.envelope()
    except (StorageError, IndexError_) as e:  # SQLite failed (busy past its timeout, disk full, damaged file)
        log.warning("index error in %s: %s", name, e.__class__.__name__)
        return MembankError(errors.DB_ERROR, f"the index could not be read or written ({e.__class__.__name__}); "
                            "try again, and run `membank index --rebuild` if it persists").envelope()
    except Exception:  # a bug: say so, keep serving
        log.exception("internal error in %s", name)
        return MembankError(errors.INTERNAL, f"internal error in {name}; this is a bug in membank, see its log").envelope()
