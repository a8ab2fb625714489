"""Finding a bank's files: roots, citations (sources), and a stat-only walk."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .records import ERROR, WARNING, Diagnostic

SECTIONS = ("memories", "characters", "world", "skills")
JOURNAL = "journal"
PROJECT_PREFIX = ".writenow/"
GLOBAL_PREFIX = "global:"
_TEMP = re.compile(r"(~|\.swp|\.swx|\.swo|\.tmp|\.bak|\.membank-tmp)$|^4913$|^\.goutputstream-|^\.#|^#.*#$")


@dataclass(frozen=True)
class BankRoot:
    """One bank folder: the project's `.writenow/` or the global bank."""

    bank: str  # "project" | "global"
    path: Path

    def source(self, rel: str) -> str:
        """The citation for a POSIX path relative to this bank's folder."""
        return (PROJECT_PREFIX if self.bank == "project" else GLOBAL_PREFIX) + rel

    def rel(self, source: str) -> str | None:
        prefix = PROJECT_PREFIX if self.bank == "project" else GLOBAL_PREFIX
        return source[len(prefix):] if source.startswith(prefix) else None

    def file(self, rel: str) -> Path:
        return self.path / rel


@dataclass(frozen=True)
class FileStat:
    source: str
    rel: str  # POSIX path relative to the bank folder, e.g. memories/style/short.md
    section: str
    size: int
    mtime_ns: int


def is_temporary(name: str) -> bool:
    """Editor swap, backup and temporary files: vim's `~`, `.swp` and `4913`, gedit's `.goutputstream-*`, …"""
    return bool(_TEMP.search(name))


def is_ignored(name: str) -> bool:
    """Editor swap and backup files, hidden files, anything not Markdown."""
    return name.startswith(".") or bool(_TEMP.search(name)) or not name.lower().endswith(".md")


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def scan(root: BankRoot) -> tuple[list[FileStat], list[Diagnostic]]:
    """Every Markdown file in the bank's sections, by stat alone; links out of the bank are refused."""
    found: list[FileStat] = []
    problems: list[Diagnostic] = []
    for section in SECTIONS:
        base = root.path / section
        if base.is_dir() and not base.is_symlink():
            _walk(root, base, section, section, found, problems)
        elif base.is_symlink():
            problems.append(_link_problem(root, section, base))
    if root.bank == "project":
        found.extend(_journal(root))
    found.sort(key=lambda f: f.source)
    return found, problems


def _journal(root: BankRoot) -> list[FileStat]:
    """The project's journal files (`journal/*.jsonl`), written by membank itself."""
    folder = root.path / JOURNAL
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".jsonl") and not entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
            st = entry.stat()
            rel = f"{JOURNAL}/{entry.name}"
            found.append(FileStat(root.source(rel), rel, JOURNAL, st.st_size, st.st_mtime_ns))
    return found


def _link_problem(root: BankRoot, rel: str, path: Path) -> Diagnostic:
    if _inside(path, root.path):
        return Diagnostic(root.source(rel), 1, WARNING, "this is a link to a folder; membank does not follow "
                          "folder links, so the files in it are not read")
    return Diagnostic(root.source(rel), 1, ERROR, "this link leads outside the bank; membank only reads files "
                      "inside it, so it is skipped")


def _walk(root: BankRoot, folder: Path, rel: str, section: str, found: list[FileStat], problems: list[Diagnostic]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        problems.append(Diagnostic(root.source(rel), 1, ERROR, "this folder cannot be read (check its permissions)"))
        return
    for entry in entries:
        name = entry.name
        child_rel = f"{rel}/{name}"
        if name.startswith("."):
            continue
        if entry.is_symlink():
            if entry.is_dir():
                problems.append(_link_problem(root, child_rel, Path(entry.path)))
                continue
            if is_ignored(name):
                continue
            if not _inside(Path(entry.path), root.path):
                problems.append(_link_problem(root, child_rel, Path(entry.path)))
                continue
        if entry.is_dir(follow_symlinks=False):
            _walk(root, Path(entry.path), child_rel, section, found, problems)
            continue
        if is_ignored(name):
            continue
        try:
            st = entry.stat()
        except OSError:
            continue  # vanished between listing and stat: the next sync sees it gone
        found.append(FileStat(root.source(child_rel), child_rel, section, st.st_size, st.st_mtime_ns))
