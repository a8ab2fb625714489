"""Names an import's book brings that another card or entry already has, or that two of its own files share
(a card and an entry of its book called the same, two entries of one name): a lookup by such a name answers
CONFLICT, so the import warns (docs/import-export.md, "Warnings"). The card's own name: flows.name_warnings."""

from __future__ import annotations

from typing import Any, Iterator

from ...files.frontmatter import FrontMatterError, decode, split
from ..story.matching import normalize
from . import formats
from .groups import words

MAX_WARNINGS = 20  # a hostile book of 5,000 entries of one name warns 20 times, then counts the rest

CONFLICT = "a lookup by `{0}` answers CONFLICT until one of them is renamed (ask by id meanwhile)"


def fronts(writes: list[tuple[str, bytes]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, front matter) of every Markdown file of an import that has one, in order."""
    for rel, data in writes:
        if rel.endswith(".md"):
            try:
                yield rel, split(decode(data)).meta
            except (FrontMatterError, UnicodeDecodeError):
                continue


def named(writes: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    """(name, citation) for the name and each alias of every Markdown file of an import, in order."""
    out = []
    for rel, meta in fronts(writes):
        for name in dict.fromkeys([meta.get("name"), *words(meta.get("aliases"))]):
            if isinstance(name, str) and name.strip():
                out.append((name, f".writenow/{rel}"))
    return out


def warnings(cards: dict[str, dict[str, Any]], resolve: Any, target: str, writes: list[tuple[str, bytes]]) -> list[str]:
    """The warnings for the book files of one import (`target`'s own names are warned about elsewhere): `cards`
    and `resolve` are the catalog's records and its name lookup before the import."""
    mine = {f".writenow/{rel}" for rel, _ in writes}
    out: list[str] = []
    first: dict[str, str] = {}  # a normalized name -> the first of this import's files that has it
    for name, source in named(writes):
        said = formats.short(name)
        key = normalize(name.strip())
        if key in first and first[key] != source:
            out.append(f"`{said}` names both {formats.short(first[key])} and {formats.short(source)} of this import; "
                       + CONFLICT.format(said))
        first.setdefault(key, source)
        if source == f".writenow/{target}":
            continue
        for other in (cards[i] for i in resolve(name) if cards[i]["source"] not in mine):
            out.append(f"`{said}` ({formats.short(source)}) already names {formats.short(other['name'])} "
                       f"({formats.short(other['source'])}); " + CONFLICT.format(said))
    return out


def capped(found: list[str]) -> list[str]:
    """At most MAX_WARNINGS warnings, then how many more (a card of 10,000 aliases, a book of one name)."""
    if len(found) <= MAX_WARNINGS:
        return found
    return found[:MAX_WARNINGS] + [f"and {len(found) - MAX_WARNINGS:,} more names shared like these"]
