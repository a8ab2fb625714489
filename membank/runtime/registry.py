"""The projects a process has open, by project id, and the channels about projects themselves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from ..domains.contract import Channel
from ..files import project as project_files
from ..kernel import errors
from ..kernel.errors import MembankError
from ..kernel.payload import Most
from .boundary import locate
from .project import Project


class Registry:
    """The open projects of one process (a CLI command, the sidecar, a Python program)."""

    def __init__(self, home: Path | None = None):
        self.home = home
        self.banks: dict[str, Project] = {}

    def open(self, path: Path | str, sync: bool = True) -> Project:
        """The project at or above `path` (`~` expanded), opened once; only MembankError escapes."""
        root = locate(path)
        for bank in self.banks.values():
            if bank.root == root:
                return bank
        bank = Project(root, self.home)
        if bank.info.id in self.banks:
            bank.close()
            raise MembankError(errors.CONFLICT, f"another open project already has the id `{bank.info.id}`")
        if sync:
            from ..domains.indexing.refresh import refresh  # the sync's code: `membank --help` opens nothing

            try:
                refresh(bank)  # a busy or broken index is DB_ERROR (boundary.py), never a traceback
            except MembankError:
                bank.close()
                raise
        self.banks[bank.info.id] = bank
        return bank

    def get(self, project_id: str | None) -> Project:
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


# -- the channels about projects (their handler takes the registry, not one project) ------------------


@dataclass(frozen=True)
class ProjectOpen:
    path: Annotated[str, Most(chars=4096)]


@dataclass(frozen=True)
class ProjectInit:
    path: Annotated[str, Most(chars=4096)]
    name: Annotated[str, Most(chars=200)] | None = None
    bare: bool = False  # the layout without the template's (switched-off) example memories, character and place


class ProjectOpened(TypedDict):
    projectId: str
    name: str
    root: str  # the project folder's name only, never an absolute path


class ProjectCreated(TypedDict):
    projectId: str
    name: str
    created: list[str]  # the files made, under the project folder; empty when it was set up already


def open_project(registry: Registry, path: str) -> dict[str, Any]:
    bank = registry.open(path)
    return {"projectId": bank.info.id, "name": bank.info.name, "root": bank.root.name}


def init_project(registry: Registry, path: str, name: str | None = None, bare: bool = False) -> dict[str, Any]:
    """`.writenow/` from the template in the folder `path` (made if needed); never overwrites a file.
    `bare`: without the example memories, character and place."""
    try:
        root = Path(path).expanduser()
        root.mkdir(parents=True, exist_ok=True)
        info, created = project_files.init(root, name, bare)
    except ValueError:  # a NUL byte: no such path can exist
        raise errors.invalid("path", "the path holds a NUL character, which no file name can") from None
    except (project_files.ProjectError, OSError, RuntimeError) as e:
        raise MembankError(errors.DB_ERROR, f"could not create .writenow/: {getattr(e, 'strerror', None) or e}") \
            from None
    return {"projectId": info.id, "name": info.name, "created": created}


CHANNELS = (
    Channel("project:open", ProjectOpen, ProjectOpened, open_project, "write", "open",
            "Open the project at or above a folder and bring its index up to date.", "open", target="registry"),
    Channel("project:init", ProjectInit, ProjectCreated, init_project, "write", "init",
            "Create .writenow/ from the template (--bare: without its examples); never overwrites a file.", "init", target="registry"),
)
