"""Books (context.md, Books): which world entries a book switches and to whom a book is scoped. Pure.

A world entry belongs to a book when its folder holds a `book.md`. The book's `include:` is the default for
its entries (an entry's own `include:` wins) and `never` switches the whole book off. `scope: character`
(a card's own `character_book`) makes its entries take part only when a character whose `lorebook:` names
the folder is activated in the prompt. `book.md` itself is never put into a prompt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BOOK_FILE = "book.md"


@dataclass(frozen=True)
class Books:
    include: dict[str, str]  # card id -> the include in effect (the book applied), for the cards a book changes
    owners: dict[str, tuple[str, ...]]  # entry id -> the characters it is scoped to (scope: character)
    constant: dict[str, tuple[str, ...]]  # character id -> its scoped books' always-on entries, by name then id
    files: frozenset[str]  # the ids of book.md cards (never injected)


def _place(source: str) -> tuple[str, str, str] | None:
    """(bank prefix, folder under world/, file name) of a world file's citation; None outside world/."""
    for prefix in (".writenow/", "global:"):
        if source.startswith(prefix):
            rel = source[len(prefix):]
            if rel.startswith("world/") and rel.count("/") >= 2:
                folder, _, name = rel.rpartition("/")
                return prefix, folder, name
    return None


def _bank(source: str) -> str:
    return "global:" if source.startswith("global:") else ".writenow/"


def _meta(card: dict[str, Any]) -> dict[str, Any]:
    meta = card.get("metadata")
    return meta if isinstance(meta, dict) else {}


def written_include(card: dict[str, Any]) -> bool:
    """Whether the card writes its own `include:` (a default `auto` is the book's to decide)."""
    lines = card.get("lines")
    return isinstance(lines, dict) and lines.get("include") is not None or card.get("include") != "auto"


def switches(book: dict[str, Any]) -> tuple[str, bool]:
    """A book's `include:` and whether it is scoped to its character. A `book.md` an older membank imported
    (an `imported:` note, no `scope:`) wrote `include: never` only to keep itself out of prompts: that is
    not read as switching its book off; its scope follows where it came from (a card's book: character)."""
    meta = _meta(book)
    note = meta.get("imported") if isinstance(meta.get("imported"), dict) else None
    include = book.get("include") or "auto"
    if "scope" not in meta and note is not None:
        return ("auto" if include == "never" else include), note.get("spec") == "character_book"
    return include, meta.get("scope") == "character"


def matching(cards: list[dict[str, Any]]) -> dict[str, tuple[str, float | None]]:
    """Card id -> (match, minScore) in effect for the entries whose book writes `match:` or `minScore`
    (context.md, Activation: `match: meaning` is opt-in per card or book); what an entry writes wins."""
    suffix = "/" + BOOK_FILE
    books = {c["source"][: -len(suffix)]: c for c in cards
             if c["source"].endswith(suffix) and _place(c["source"]) is not None
             and (c.get("match") is not None or c.get("minScore") is not None)}
    if not books:
        return {}
    out: dict[str, tuple[str, float | None]] = {}
    for c in cards:
        at, _, name = c["source"].rpartition("/")
        book = books.get(at)
        if book is None or name == BOOK_FILE:
            continue
        match = c.get("match") or book.get("match") or "words"
        score = c.get("minScore") if c.get("minScore") is not None else book.get("minScore")
        out[c["id"]] = (match, score)
    return out


def of(cards: list[dict[str, Any]]) -> Books:
    books: dict[str, dict[str, Any]] = {}  # a book folder's citation (".writenow/world/x") -> its book.md card
    suffix = "/" + BOOK_FILE
    for c in cards:
        source = c["source"]
        if source.endswith(suffix) and _place(source) is not None:
            books[source[: -len(suffix)]] = c
    if not books:
        return Books({}, {}, {}, frozenset())
    holders: dict[str, list[str]] = {}  # a book folder's citation -> the characters whose lorebook it is
    for c in cards:
        folder = _meta(c).get("lorebook") if c.get("section") == "characters" else None
        if isinstance(folder, str):
            holders.setdefault(_bank(c["source"]) + folder.strip().strip("/"), []).append(c["id"])
    rules = {at: switches(book) for at, book in books.items()}
    include: dict[str, str] = {}
    owners: dict[str, tuple[str, ...]] = {}
    constant: dict[str, list[dict[str, Any]]] = {}
    for c in cards:
        at, _, name = c["source"].rpartition("/")
        if at not in rules or name == BOOK_FILE:
            continue
        switch, scoped = rules[at]
        own = c.get("include") or "auto"
        effective = "never" if switch == "never" else own if written_include(c) else switch
        if scoped and effective != "never":
            held = tuple(sorted(holders.get(at, ())))
            if not held:  # scoped to a character the project does not have: it never takes part
                effective = "never"
            else:
                owners[c["id"]] = held
                if effective == "always":
                    for h in held:
                        constant.setdefault(h, []).append(c)
                    effective = "auto"  # taken in with its character, never standing in Layer 2
        if effective != own:
            include[c["id"]] = effective
    return Books(include, owners,
                 {h: tuple(c["id"] for c in sorted(found, key=lambda c: (c["name"], c["id"])))
                  for h, found in constant.items()},
                 frozenset(c["id"] for c in books.values()))
