"""A book's identity (ecosystem.md, "One book, one folder"): by content and origin, never by name alone.

A lorebook's earlier version is a folder membank imported a standalone book into (not a card's book) with
the same name that came from the same file name or holds the same original; any other folder whose book
has the same name is a different book: the new one gets its own folder and a warning naming both. The
last imported original of each card and book is kept under `.writenow/assets/` (JSON, never a memory) for
the next import to merge against."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...files.frontmatter import FrontMatterError, decode, split
from ...files.reader import Unreadable, read_regular
from ...kernel.limits import MAX_FILE_BYTES
from . import formats
from .groups import same

ORIGINAL = "original.json"
BOOK_FILE = "book.md"
CARD_BOOK = "character_book"


def original_of(target: str) -> str:
    """Where the original of a card (characters/x.md) or a lorebook (world/x) is kept, bank-relative."""
    if target.startswith("characters/"):
        return f"assets/{target[len('characters/'):-3]}/{ORIGINAL}"
    return f"assets/{target}/{ORIGINAL}"


@dataclass(frozen=True)
class Candidate:
    """A standalone lorebook being imported: its input's base name and its JSON."""

    file: str
    obj: dict[str, Any]


def _book_meta(root: Path, folder: str) -> dict[str, Any] | None:
    try:
        data, _ = read_regular(root / folder / BOOK_FILE, MAX_FILE_BYTES + 1, follow_links=False)
        return split(decode(data)).meta
    except (OSError, Unreadable, FrontMatterError):
        return None


def _original(root: Path, folder: str) -> Any:
    try:
        data, _ = read_regular(root / original_of(folder), formats.MAX_INPUT + 1, follow_links=False)
        return formats.load_json(data)
    except (OSError, Unreadable, formats.Refused):
        return None


def earlier(root: Path, folder: str, meta: dict[str, Any], name: str, candidate: Candidate) -> bool:
    """Whether `folder` (its book.md's front matter `meta`) holds an earlier import of `candidate`."""
    note = meta.get("imported")
    if not isinstance(note, dict) or note.get("spec") == CARD_BOOK or meta.get("name") != name:
        return False
    return note.get("origin") == candidate.file or same(_original(root, folder), candidate.obj)


def place_book(root: Path, base: str, name: str, candidate: Candidate | None, claimed: set[str],
               warnings: list[str]) -> str:
    """The folder for a book named `name`: its earlier version's (a standalone book only), else the first
    free one; a folder passed over that holds a book of the same name is named in a warning."""
    n, namesakes = 1, []
    while True:
        rel = f"world/{base}" if n == 1 else f"world/{base}-{n}"
        n += 1
        if rel in claimed:
            continue
        if not os.path.lexists(root / rel):
            break
        meta = _book_meta(root, rel)
        if meta is None:
            continue
        if candidate is not None and earlier(root, rel, meta, name, candidate):
            break
        if meta.get("name") == name:
            namesakes.append(rel)
    claimed.add(rel)
    for other in namesakes:
        warnings.append(f"another book named {json.dumps(name, ensure_ascii=False)} is in .writenow/{other}: "
                        f"this one is a different book and goes to .writenow/{rel}; both take part in prompts "
                        "(switch one off with `include: never` in its book.md)")
    return rel


def fingerprint(data: bytes) -> str:
    """The same file twice in one import is imported once."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def entry_identity(meta: dict[str, Any]) -> tuple[str, Any] | None:
    """A lore entry's identity across versions of its book: SillyTavern's key, else the entry's `id`."""
    note, kept = meta.get("imported"), meta.get("lore")
    if isinstance(note, dict) and isinstance(note.get("key"), str):
        return ("key", note["key"])
    ident = kept.get("id") if isinstance(kept, dict) else None
    if isinstance(ident, (int, str)) and not isinstance(ident, bool):
        return ("id", ident)
    return None


def renames(theirs: dict[str, dict[str, Any]], mine: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Entry files of a new version (name -> front matter) to give the name the writer's file of the same
    entry has (`mine`: name -> front matter): an entry the card's author renamed stays in its file. Pure."""
    found: dict[tuple[str, Any], str] = {}
    for name in sorted(mine):  # a writer's copy of a file has its identity too: the first name keeps it
        ident = entry_identity(mine[name])
        if ident is not None:
            found.setdefault(ident, name)
    out: dict[str, str] = {}
    taken = set(theirs)
    for name, meta in theirs.items():
        ident = entry_identity(meta)
        to = found.get(ident) if ident is not None else None
        if to is not None and to != name and to not in taken:
            out[name] = to
            taken.add(to)
    return out
