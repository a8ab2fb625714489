"""The bad-input corpus (fixtures/bad/): its expectations and how to lay it out in a project."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from membank.files import project

BAD = Path(__file__).resolve().parent.parent / "fixtures" / "bad"
NOT_CORPUS = {"expected.yaml", ".gitattributes"}
CASES: list[dict[str, Any]] = yaml.safe_load((BAD / "expected.yaml").read_text("utf-8"))["files"]
SECTIONS = ("memories", "characters", "world", "skills")


def source_of(path: str) -> str:
    """The citation membank uses for a corpus path."""
    return "global:" + path[len("global/"):] if path.startswith("global/") else ".writenow/" + path


def committed() -> list[str]:
    return sorted(p.relative_to(BAD).as_posix() for p in BAD.rglob("*") if p.is_file() and p.name not in NOT_CORPUS)


def _huge(path: Path) -> None:
    line = "The tide came in over the causeway and the lamp burned on through the night.\n"
    body = line * (1024 * 1024 // len(line) + 100)
    path.write_text(f"---\ntype: note\n---\n{body}", "utf-8")


def real_path(path: str) -> str:
    """A corpus path as it is on disk: the citation's `\\xff` is the byte 0xff in the name."""
    return path.replace("\\xff", os.fsdecode(b"\xff"))


def build(base: Path) -> tuple[Path, Path]:
    """A fresh project (`membank init`) with the corpus copied into its `.writenow/`; returns (root, global home)."""
    root, home = base / "novel", base / "home"
    root.mkdir(parents=True)
    project.init(root, "bad")
    populate(root / ".writenow", home, base / "outside")
    return root, home


def populate(bank_dir: Path, home: Path, outside: Path) -> None:
    """Put the corpus into a project's `.writenow/` and a global bank (`outside` gets the files links lead to)."""
    for rel in committed():
        dest = home / rel[len("global/"):] if rel.startswith("global/") else bank_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BAD / rel, dest)
    (outside / "drafts").mkdir(parents=True)
    secret = "---\ntype: note\n---\nA file outside the bank; membank must not read it.\n"
    (outside / "secret.md").write_text(secret, "utf-8")
    (outside / "drafts" / "ch01-notes.md").write_text(secret, "utf-8")
    for case in CASES:
        dest = bank_dir / real_path(case["path"])
        make = case.get("make")
        if make:
            dest.parent.mkdir(parents=True, exist_ok=True)
        if make == "huge":
            _huge(dest)
        elif make == "link-out":
            os.symlink(outside / "secret.md", dest)
        elif make == "folder-link-out":
            os.symlink(outside / "drafts", dest, target_is_directory=True)
        elif make == "folder-link-in":
            os.symlink(bank_dir / "world", dest, target_is_directory=True)
        elif make == "fifo":
            os.mkfifo(dest)
        elif make == "link-to-fifo":
            os.mkfifo(bank_dir / "pipe-target.md")  # inside the bank, outside every section
            os.symlink(bank_dir / "pipe-target.md", dest)
        elif make == "link-loop":
            os.symlink(dest.name, dest)
        elif make == "folder-loop":
            os.symlink(".", dest, target_is_directory=True)
        elif make == "bad-name-file":
            dest.write_text("---\ntype: note\n---\nA note whose name is not UTF-8.\n", "utf-8")
        elif make == "bad-name-folder":
            dest.mkdir()
            (dest / "kept.md").write_text("---\ntype: note\n---\nA note in a folder whose name is not UTF-8.\n", "utf-8")
