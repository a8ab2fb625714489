"""Projects on disk: finding the root, project.yaml, the global bank, and `init` from the template."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from .frontmatter import FrontMatterError, decode
from .write import atomic_write, new_id

BANK_DIR = ".writenow"
SECTIONS = ("memories", "characters", "world", "skills", "journal", "history")


class ProjectError(Exception):
    """No project here, or project.yaml is unusable; the message is for the writer."""


@dataclass(frozen=True)
class ProjectInfo:
    id: str
    name: str
    root: Path  # the folder holding .writenow/


def template_dir() -> Path:
    """The template `init` copies: packaged with membank, or the repository's `.writenow-template/`."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "template", here.parent / ".writenow-template"):
        if candidate.is_dir():
            return candidate
    raise ProjectError("the .writenow template is missing from this installation")


def global_home() -> Path:
    """`$WRITENOW_HOME`, else `~/.writenow`; created on first use."""
    home = Path(os.environ.get("WRITENOW_HOME") or Path.home() / ".writenow")
    for section in SECTIONS[:4]:
        (home / section).mkdir(parents=True, exist_ok=True)
    return home


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` holding `.writenow/project.yaml`, like git."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / BANK_DIR / "project.yaml").is_file():
            return folder
    raise ProjectError(f"no membank project here or above (no {BANK_DIR}/project.yaml); run `membank init` first")


def read_project(root: Path) -> ProjectInfo:
    path = root / BANK_DIR / "project.yaml"
    try:
        data = yaml.safe_load(decode(path.read_bytes())) or {}
    except (OSError, FrontMatterError, yaml.YAMLError) as e:
        raise ProjectError(f".writenow/project.yaml cannot be read: {getattr(e, 'message', e.__class__.__name__)}") from None
    if not isinstance(data, dict) or not data.get("id"):
        raise ProjectError(".writenow/project.yaml needs an `id:` line (membank init writes one)")
    return ProjectInfo(str(data["id"]), str(data.get("name") or root.name), root)


def init(root: Path, name: str | None = None) -> tuple[ProjectInfo, list[str]]:
    """Create `.writenow/` from the template, never overwriting; returns the project and the files created."""
    bank = root / BANK_DIR
    created: list[str] = []
    template = template_dir()
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        dest = bank / rel
        if src.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            created.append(f"{BANK_DIR}/{rel.as_posix()}")
    project_yaml = bank / "project.yaml"
    if not project_yaml.exists():
        text = (
            "# This project's identity for membank. Keep `id` stable: the writing app refers to it.\n"
            f"id: {new_id('p')}\n"
            f"name: {yaml.safe_dump(name or root.resolve().name, allow_unicode=True).splitlines()[0]}\n"
        )
        try:
            atomic_write(project_yaml, text.encode(), exclusive=True)
            created.append(f"{BANK_DIR}/project.yaml")
        except FileExistsError:
            pass
    for section in SECTIONS:
        (bank / section).mkdir(parents=True, exist_ok=True)
    return read_project(root), created
