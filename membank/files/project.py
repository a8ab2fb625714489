"""Projects on disk: finding the root, project.yaml, the global bank, and `init` from the template."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from .conflicts import RESOLVE, conflict_line
from .frontmatter import MAX_FILE_BYTES, FrontMatterError, decode, load_yaml
from .reader import Unreadable, read_regular
from .rewrite import yaml_lines
from ..kernel.errors import MembankError
from .write import atomic_write, check_inside, make_folder, new_id

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
    home.mkdir(parents=True, exist_ok=True)
    for section in SECTIONS[:4]:
        try:
            (home / section).mkdir(exist_ok=True)
        except OSError:
            pass  # a file or a FIFO under a section's name: the scan reports it; the bank still opens
    return home


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` holding `.writenow/project.yaml`, like git. A `start` that does
    not exist is refused: `membank preview continue` (a skill's name where a folder goes) must not answer
    for the project around the current folder as if it had been asked."""
    if not os.path.lexists(start):
        raise ProjectError(f"{start.name or start}: no such file or folder")  # no absolute path in an answer
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / BANK_DIR / "project.yaml").is_file():
            return folder
    raise ProjectError(f"no membank project here or above (no {BANK_DIR}/project.yaml); run `membank init` first")


def read_project(root: Path) -> ProjectInfo:
    path = root / BANK_DIR / "project.yaml"
    try:  # bounded: an ordinary file only (not a FIFO, not /dev/zero), 1 MiB, no alias bombs
        text = decode(read_regular(path, MAX_FILE_BYTES + 1)[0])
        marker = conflict_line(text)
        if marker is not None:
            raise ProjectError(f".writenow/project.yaml:{marker} holds git conflict markers (<<<<<<<, =======, >>>>>>>) "
                               f"left by a merge: {RESOLVE}; membank cannot open the project until then")
        data = load_yaml(text) or {}
    except (OSError, Unreadable, FrontMatterError, yaml.YAMLError, ValueError, TypeError, RecursionError) as e:
        raise ProjectError(f".writenow/project.yaml cannot be read: {getattr(e, 'message', e.__class__.__name__)}") from None
    if not isinstance(data, dict) or not data.get("id"):
        raise ProjectError(".writenow/project.yaml needs an `id:` line (membank init writes one)")
    return ProjectInfo(str(data["id"]), str(data.get("name") or root.name), root)


def read_chapters(root: Path) -> tuple[str, ...] | None:
    """`chapters:` of project.yaml (story.md): paths and glob patterns in reading order; None when the
    project does not set one (or it is not a list of paths: natural order is used then)."""
    try:
        data = load_yaml(decode(read_regular(root / BANK_DIR / "project.yaml", MAX_FILE_BYTES + 1)[0])) or {}
    except (OSError, Unreadable, FrontMatterError, yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    chapters = data.get("chapters") if isinstance(data, dict) else None
    if not isinstance(chapters, list) or not all(isinstance(c, str) and c.strip() for c in chapters):
        return None
    return tuple(c.strip().replace("\\", "/").removeprefix("./") for c in chapters)


EXAMPLE_SECTIONS = ("memories", "characters", "world")  # what the template holds there is an example


def is_example(rel: Path) -> bool:
    """True for a template path holding an example (a memory, a card, a world entry): `init --bare` skips
    them. The template's examples are born switched off (a soft-deleted memory, an `include: never` card)."""
    return len(rel.parts) > 1 and rel.parts[0] in EXAMPLE_SECTIONS


def init(root: Path, name: str | None = None, bare: bool = False) -> tuple[ProjectInfo, list[str]]:
    """Create `.writenow/` from the template, never overwriting; returns the project and the files created.
    `bare`: the layout, settings, skills and guide without the example memories, character and place.

    Nothing is written through a link that leads out of `.writenow/` (ProjectError)."""
    bank = root / BANK_DIR
    try:
        return _init(root, bank, name, bare)
    except MembankError as e:  # a link out of the bank: the CLI reports a ProjectError
        raise ProjectError(e.message) from None


def _cite(rel: str) -> str:
    return f"{BANK_DIR}/{rel}"


def _init(root: Path, bank: Path, name: str | None, bare: bool) -> tuple[ProjectInfo, list[str]]:
    created: list[str] = []
    template = template_dir()
    bank.mkdir(parents=True, exist_ok=True)
    for src in sorted(template.rglob("*")):
        rel = src.relative_to(template)
        if bare and is_example(rel):
            continue
        dest = bank / rel
        if src.is_dir():
            make_folder(bank, dest, _cite)
            continue
        if os.path.lexists(dest):
            continue
        check_inside(bank, dest, _cite)
        try:  # a file created meanwhile (or a dangling link) is the writer's: never replaced
            atomic_write(dest, src.read_bytes(), exclusive=True)
            created.append(f"{BANK_DIR}/{rel.as_posix()}")
        except FileExistsError:
            pass
    project_yaml = bank / "project.yaml"
    if not os.path.lexists(project_yaml):
        # bytes of a folder name that are not UTF-8 become ?; a long or multi-line name reads back whole
        shown = (name or root.resolve().name).encode("utf-8", "replace").decode("utf-8")
        text = (
            "# This project's identity for membank. Keep `id` stable: the writing app refers to it.\n"
            f"id: {new_id('p')}\n"
        ) + yaml_lines({"name": shown})
        check_inside(bank, project_yaml, _cite)
        try:
            atomic_write(project_yaml, text.encode(), exclusive=True)
            created.append(f"{BANK_DIR}/project.yaml")
        except FileExistsError:
            pass
    for section in SECTIONS:
        make_folder(bank, bank / section, _cite)
    return read_project(root), created
