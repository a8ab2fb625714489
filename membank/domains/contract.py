"""What every domain shares: the view of an open project it works on, and how it declares a channel.

A domain never imports the runtime (which sits above it); it is handed an object with this shape
(`runtime.project.Project`) and declares its channels as a table of `Channel`s, which the runtime's
catalog collects. The CLI, the Python API, the sidecar, the JSON Schemas and the channel list in the
docs are all driven by those tables."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol

from ..kernel.payload import Id

if TYPE_CHECKING:  # the shape only: every command imports this module, not all of them open a project
    from ..files.lock import WriteLock
    from ..files.project import ProjectInfo
    from ..files.scan import BankRoot
    from ..files.settings import SettingsCache
    from ..index import Index
    from ..index.embed import Embedder, ModelHandle, ModelInfo
    from ..kernel.background import Worker


class Bank(Protocol):
    """An open project as a domain sees it (runtime.project.Project)."""

    info: ProjectInfo
    root: Path  # the project folder
    home: Path  # the global bank folder
    project: BankRoot  # .writenow/
    global_: BankRoot
    index: Index
    write_lock: WriteLock  # one writer per project, across threads and processes
    settings_files: SettingsCache
    model: ModelHandle  # the embedding model settings name, loaded once
    memo: dict[str, Any]  # per-domain caches that live as long as the open project, by domain name
    watcher: Any
    background: Worker  # one thread per project for writes done off the caller's path
    closers: list[Callable[[], None]]  # run first when the project closes (working memory archives its sessions)

    @property
    def roots(self) -> list[BankRoot]: ...

    def embedder(self) -> Embedder | None: ...

    def model_info(self) -> ModelInfo | str: ...  # from the model's files, without loading it; or why not

    def sync_one(self, root: BankRoot, rel: str) -> None: ...

    def sync_many(self, root: BankRoot, rels: list[str]) -> None: ...  # one sync for the files of one write

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    def present(self) -> bool: ...  # whether the project's .writenow/project.yaml is still on disk


@dataclass(frozen=True)
class ProjectOnly:
    """The payload of a channel that needs nothing but the project."""

    projectId: Id | None = None


@dataclass(frozen=True)
class Lazy:
    """A handler named, not imported: the function `name` of the module `module`, imported when the
    channel first runs. A domain's table of channels so lists every channel (its name, payload, data,
    mode, command) without importing the flows behind them, and a command loads the code of the one
    channel it runs, not numpy, the card formats and the story matcher of every other."""

    module: str  # dotted and absolute, written out: tests/test_layers.py counts it as an import of it
    name: str

    def resolve(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), self.name)  # imported once, then a dict lookup


@dataclass(frozen=True)
class Channel:
    """One channel, declared once. `handler(bank, **fields)` receives the payload's fields (less
    `projectId`) as snake_case keywords (`documentId` -> `document_id`, `type` -> `type_`, `id` ->
    `memory_id`, other names stay as the catalog's parameter names); the same function, its arguments
    checked against the payload type, is the Python method `method` on an open bank."""

    name: str  # `memory:create`
    payload: type  # a frozen dataclass: checked (payload.build) before the handler runs
    data: Any  # the TypedDict of the envelope's `data`
    handler: Callable[..., Any] | Lazy  # call it through `function`
    mode: Literal["read", "write"]  # reads run concurrently in a snapshot (sidecar); writes on a lane
    cli: str  # the CLI command that calls it, e.g. `add` or `settings set`
    summary: str  # one line: the CLI's help and the docs' channel list
    method: str  # the Python method on an open bank (a function of `membank` for a "registry" channel)
    embeds: bool = False  # loads the embedding model before it queues for the write lock
    target: Literal["bank", "registry"] = "bank"  # "registry": about projects; the handler takes the registry
    snapshot: bool = False  # a long read: runs in a snapshot of its own (`reading()`) everywhere, never holding
    # the writer's lock (outside the sidecar a read holds it: a write of another thread would wait it out)

    @property
    def function(self) -> Callable[..., Any]:
        """The handler itself, imported now if the table named it `Lazy`."""
        return self.handler.resolve() if isinstance(self.handler, Lazy) else self.handler
