"""A book's identity (ecosystem.md, "One book, one folder"): by content and origin, never by name alone.

A lorebook's earlier version is a folder membank imported a standalone book into (not a card's book) with
the same name that came from the same file name or holds the same original; any other folder whose book
has the same name is a different book: the new one gets its own folder and a warning naming both. The
last imported original of each card and book is kept under `.writenow/assets/` (JSON, never a memory) for
the next import to merge against."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...files.frontmatter import FrontMatterError, decode, split
from ...files.reader import Unreadable, read_regular
from ...files.rewrite import render
from ...kernel.limits import MAX_FILE_BYTES
from . import formats, safety
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


def _front(path: Path) -> dict[str, Any] | None:
    """A Markdown file's front matter; None when there is none to read."""
    try:
        data, _ = read_regular(path, MAX_FILE_BYTES + 1, follow_links=False)
        return split(decode(data)).meta
    except (OSError, Unreadable, FrontMatterError):
        return None


def _book_meta(root: Path, folder: str) -> dict[str, Any] | None:
    return _front(root / folder / BOOK_FILE)


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
               warnings: list[str], planned: dict[str, str]) -> str:
    """The folder for a book named `name`: its earlier version's (a standalone book only), else the first
    free one; a folder passed over that holds a book of the same name (on disk, or `planned` in this
    import: folder -> book name) is named in a warning."""
    n, namesakes = 1, []
    while True:
        rel = f"world/{base}" if n == 1 else f"world/{base}-{n}"
        n += 1
        if safety.folded(rel) in claimed:  # one folder on macOS and Windows disks
            if planned.get(rel) == name:
                namesakes.append(rel)
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
    claimed.add(safety.folded(rel))
    planned[rel] = name
    for other in namesakes:
        warnings.append(f"another book named \"{formats.short(name)}\" is in .writenow/{other}: "
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
    entry has (`mine`: name -> front matter, in the export's order: those book.md lists, then by name): an
    entry the card's author renamed stays in its file. Pure."""
    found: dict[tuple[str, Any], str] = {}
    for name in mine:  # a writer's copy of a file has its identity too: the first (as the export orders) keeps it
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


def parsed(data: bytes) -> tuple[dict[str, Any], str] | None:
    """A Markdown file's (front matter, body); None when its front matter cannot be read."""
    try:
        doc = split(decode(data))
    except FrontMatterError:
        return None
    return doc.meta, doc.body


def _renamed(files: dict[str, bytes], folder: str, mine: dict[str, dict[str, Any]]) -> dict[str, bytes]:
    """`files` (rel -> bytes) with the entry files of `folder` named as the writer's files of the same
    entries are (`renames`), and book.md's `entries:` following."""
    book_rel, prefix = f"{folder}/{BOOK_FILE}", folder + "/"
    inside = {rel[len(prefix):]: parsed(data) for rel, data in files.items()
              if rel.startswith(prefix) and rel.endswith(".md") and rel != book_rel}
    moves = renames({n: d[0] for n, d in inside.items() if d is not None}, mine)
    if not moves:
        return files
    out = {prefix + moves.get(rel[len(prefix):], rel[len(prefix):]) if rel.startswith(prefix) else rel: data
           for rel, data in files.items()}
    book = parsed(out[book_rel]) if book_rel in out else None
    if book is not None:
        listed = book[0].get("entries")
        if isinstance(listed, list):
            meta = {**book[0], "entries": [moves.get(n, n) if isinstance(n, str) else n for n in listed]}
            out[book_rel] = render(meta, book[1]).encode("utf-8")
    return out


def align(root: Path, folder: str | None, writes: list[tuple[str, bytes]], base: dict[str, bytes] | None
          ) -> tuple[list[tuple[str, bytes]], dict[str, bytes] | None]:
    """A new version's files (and the base's) with each entry in the file the writer has of it, found by
    its uid or id: an entry its author renamed is merged into that file, not written beside it."""
    if folder is None or not os.path.isdir(root / folder):
        return writes, base
    try:
        names = [e.name for e in os.scandir(root / folder) if e.name.endswith(".md") and e.name != BOOK_FILE
                 and not e.name.startswith(".") and e.is_file(follow_symlinks=False)]
    except OSError:
        return writes, base
    book = _book_meta(root, folder) or {}
    listed = [n for n in book.get("entries") or () if isinstance(n, str) and n in names]
    ordered = listed + sorted(n for n in names if n not in listed)
    mine = {name: meta for name in ordered if (meta := _front(root / folder / name)) is not None}
    return (list(_renamed(dict(writes), folder, mine).items()),
            _renamed(base, folder, mine) if base is not None else None)
