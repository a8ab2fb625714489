"""The memory channels: payloads, data and the table the catalog collects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from ...kernel.payload import Content, DocPath, Id, Tags, TypeName
from ..contract import Channel, Lazy


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
    since: str | None  # story positions (story.md), from the file: valid from `since` up to `until`
    until: str | None


class MemoryItems(TypedDict):
    items: list[Memory]


class MemoryDeleted(TypedDict):
    id: str
    deletedAt: str


# handlers by name: listing the channels (every CLI command does) imports neither module
CHANNELS = (
    Channel("memory:create", MemoryCreate, Memory, Lazy("membank.domains.memories.write", "create"), "write",
            "add", "Create a memory file.", "create_memory", embeds=True),
    Channel("memory:get", MemoryRef, Memory, Lazy("membank.domains.memories.read", "get"), "read", "show",
            "One memory, whole.", "get_memory"),
    Channel("memory:list", MemoryList, MemoryItems, Lazy("membank.domains.memories.read", "list_"), "read", "list",
            "Memories in deterministic order.", "list_memories"),
    Channel("memory:update", MemoryUpdate, Memory, Lazy("membank.domains.memories.write", "update"), "write",
            "edit", "Change a memory (with no options, open its file in $EDITOR).", "update_memory", embeds=True),
    Channel("memory:delete", MemoryRef, MemoryDeleted, Lazy("membank.domains.memories.write", "delete"), "write",
            "rm", "Soft-delete a memory (sets deleted_at; `restore` undoes it).", "delete_memory", embeds=True),
    Channel("memory:restore", MemoryRef, Memory, Lazy("membank.domains.memories.write", "restore"), "write",
            "restore", "Bring back a soft-deleted memory.", "restore_memory", embeds=True),
)
