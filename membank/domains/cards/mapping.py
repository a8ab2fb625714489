"""A character card or a lorebook as front matter and Markdown, and back (docs/import-export.md). Pure.

A card's `data` maps to `name`, `aliases` (from `nickname`), `tags`, a one-line `summary` and a body with
the description, personality and scenario under their own headings; every other field stays under
`card:` in the card's JSON shape. A book becomes a `book.md` (its name, description, the order of its
entries, `lore:` for the rest) and one world entry per lore entry (lore.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import lore, own
from .formats import MAX_BOOK_ENTRIES, V1_FIELDS, V3_ONLY, Refused
from .groups import Group, Obj, body_text, join, same, split, text, words
from .summary import card_summary
from ...files.write import slug
from .safety import folded

SECTIONS = (("description", "Description"), ("personality", "Personality"), ("scenario", "Scenario"))
_HEADING = re.compile(r"## (Description|Personality|Scenario)[ \t]*")
V2_DEFAULTS: Obj = {"description": "", "personality": "", "scenario": "", "first_mes": "", "mes_example": "",
                    "creator_notes": "", "system_prompt": "", "post_history_instructions": "",
                    "alternate_greetings": [], "tags": [], "creator": "", "character_version": "", "extensions": {}}
V3_ENTRY: Obj = {"keys": [], "content": "", "extensions": {}, "enabled": True, "insertion_order": 100,
                 "use_regex": False}  # the fields a V3 book entry requires
SPECS = {"v2": ("chara_card_v2", "2.0"), "v3": ("chara_card_v3", "3.0")}
BOOK_FILE = "book.md"


def render_body(d: Obj) -> str:
    return "\n\n".join(f"## {title}\n\n{body_text(d.get(key))}" for key, title in SECTIONS if body_text(d.get(key)))


def parse_body(body: str) -> Obj:
    parts: dict[str, list[str]] = {key: [] for key, _ in SECTIONS}
    current = "description"
    for line in body.split("\n"):
        m = _HEADING.fullmatch(line)
        if m:
            current = m.group(1).lower()
        else:
            parts[current].append(line)
    return {key: "\n".join(lines).strip() for key, lines in parts.items()}


def summary_of(description: Any, name: Any = None) -> str:
    """The one-line summary a card's description gives: its prose's first sentence, never a W++ block, with
    `{{char}}` read as the card's `name` (a summary stands alone in a prompt, where no app fills macros in)."""
    return card_summary(description, text(name).strip() or None)


def _nickname(d: Obj) -> Obj:
    nick = d.get("nickname")
    return {"aliases": [nick.strip()] if isinstance(nick, str) and nick.strip() else []}


CARD = (
    Group(("name",), lambda d: {"name": text(d.get("name")).strip()}, lambda f, c: {"name": text(f.get("name"))}),
    Group(("nickname",), _nickname, lambda f, c: {"nickname": (words(f.get("aliases")) or [""])[0]}),
    Group(("tags",), lambda d: {"tags": words(d.get("tags"))}, lambda f, c: {"tags": words(f.get("tags"))}),
    Group(tuple(k for k, _ in SECTIONS), lambda d: {"body": render_body(d)}, lambda f, c: parse_body(text(f.get("body")))),
)


def book_groups(fallback: str) -> tuple[Group, ...]:
    return (Group(("name",), lambda b: {"name": text(b.get("name")).strip() or fallback},
                  lambda f, c: {"name": text(f.get("name"))}),
            Group(("description",), lambda b: {"body": body_text(b.get("description"))},
                  lambda f, c: {"description": text(f.get("body"))}))


@dataclass
class File:
    """One Markdown file to write: its front matter and body."""

    meta: Obj
    body: str


@dataclass
class Book:
    book: File  # book.md
    entries: list[tuple[str, File]] = field(default_factory=list)  # (file name, world entry)


def _imported(**values: Any) -> Obj:
    return {k: v for k, v in values.items() if v not in (None, [], {}, "")}


def card_files(obj: Obj, spec: str, origin: str) -> tuple[File, Obj | None]:
    """The character file (without `lorebook:` and picture keys, which the caller adds) and the card's book."""
    data, restored = own.take(obj if spec == "v1" else obj["data"])  # membank's own front matter, exported
    book = data.get("character_book") if isinstance(data.get("character_book"), dict) else None
    front, kept, absent = split({k: v for k, v in data.items() if k != "character_book" or book is None}, CARD)
    meta: Obj = {"name": front["name"]}
    for key in ("aliases", "tags"):
        if front[key]:
            meta[key] = front[key]
    if summary_of(data.get("description"), front["name"]):
        meta["summary"] = summary_of(data.get("description"), front["name"])
    meta.update(restored)
    mirror: list[str] = []
    if spec == "v1":
        card = kept
    else:
        outer = {k: v for k, v in obj.items() if k != "data"}
        mirror = [k for k in outer if k not in ("spec", "spec_version") and k in data and same(outer[k], data[k])]
        card = {**{k: v for k, v in outer.items() if k not in mirror}, "data": kept}
    meta["card"] = card
    meta["imported"] = _imported(origin=origin, spec=spec, absent=absent, mirror=mirror)
    return File(meta, front["body"]), book


def book_files(book: Obj, entries: list[tuple[str | None, Obj]], spec: str, shell: Obj, fallback: str,
               origin: str) -> Book:
    """`book.md` and the world entries of a book. `entries`: (SillyTavern's key or None, entry); `shell`:
    the JSON around the book's own fields (its `spec` for lorebook_v3), kept under `lore:`."""
    if len(entries) > MAX_BOOK_ENTRIES:
        raise Refused(f"its book holds {len(entries):,} entries, more than membank imports ({MAX_BOOK_ENTRIES:,}; "
                      "each is a file)")
    front, kept, absent = split({k: v for k, v in book.items() if k != "entries"}, book_groups(fallback))
    files: list[tuple[str, File]] = []
    taken = {BOOK_FILE}
    for key, entry in entries:
        values, entry_kept, entry_absent = split(entry, lore.entry_groups(spec, local=True))
        meta, body = lore.front_of(values)
        meta["lore"] = entry_kept
        if _imported(absent=entry_absent, key=key):
            meta["imported"] = _imported(absent=entry_absent, key=key)
        name = _free(slug(values["name"]), taken)
        files.append((name, File(meta, body)))
    lore_keys = {**shell, "data": kept} if spec == "lorebook_v3" else {**shell, **kept}
    scope = "character" if spec == "character_book" else "project"  # context.md, Books
    meta = {"name": front["name"], "kind": "lore", "scope": scope, "entries": [n for n, _ in files],
            "lore": lore_keys, "imported": _imported(origin=origin, spec=spec, absent=absent, fallback=fallback,
                                                include=lore.SWITCHES)}
    return Book(File(meta, front["body"]), files)


def _free(base: str, taken: set[str]) -> str:
    """`base.md`, or `base-2.md`, … : never one a macOS or Windows disk takes for a name in `taken` (folded)."""
    name, n = f"{base}.md", 2
    while folded(name) in taken:  # `οδος` and `οδοσ`: one file there
        name, n = f"{base}-{n}.md", n + 1
    taken.add(folded(name))
    return name


# -- back ---------------------------------------------------------------------------------------------

def card_json(meta: Obj, body: str, book: Obj | None, target: str | None) -> tuple[Obj, str]:
    """The card JSON a character file stands for (with `book` as its character_book), and its spec."""
    imported = meta.get("imported") if isinstance(meta.get("imported"), dict) else {}
    source = imported.get("spec") if imported.get("spec") in ("v1", "v2", "v3") else "v3"
    spec = target or source
    card = meta.get("card") if isinstance(meta.get("card"), dict) else {}
    kept = card if source == "v1" else (card.get("data") if isinstance(card.get("data"), dict) else {})
    data = join({**meta, "body": body}, kept, words(imported.get("absent")), CARD)
    if book is not None:
        data["character_book"] = book
    by_hand = imported.get("spec") not in ("v1", "v2", "v3")
    if spec != "v1":
        # a V2 card that came with V3's nickname carries its alias there too
        nickname = spec == "v3" or (spec == source and "nickname" not in words(imported.get("absent")))
        data = own.put(data, meta, summary_of(data.get("description"), data.get("name")), by_hand, nickname)
    if by_hand:
        return convert(data, spec), spec  # a card of the writer's own: every field its spec requires
    if spec == source:
        if spec == "v1":
            return data, spec
        if target == "v3":  # asked for V3: the fields V3 requires that the card lacked, the rest as it came
            data = convert(data, "v3")["data"]
        outer = {k: v for k, v in card.items() if k != "data"}
        for k in words(imported.get("mirror")):
            if k in data:
                outer[k] = data[k]
        return {**outer, "spec": SPECS[spec][0], "spec_version": outer.get("spec_version", SPECS[spec][1]),
                "data": data}, spec
    return convert(data, spec), spec


def convert(data: Obj, spec: str) -> Obj:
    """A card's data as another spec's card: V1's six fields, or V2/V3 with their required fields."""
    if spec == "v1":
        return {k: text(data.get(k)) for k in V1_FIELDS}
    out = {**V2_DEFAULTS, **data}
    if spec == "v2":
        out = {k: v for k, v in out.items() if k not in V3_ONLY}
        if isinstance(out.get("character_book"), dict):
            out["character_book"] = {**out["character_book"], "entries": [
                _v2_entry(e) for e in out["character_book"].get("entries", []) if isinstance(e, dict)]}
    else:
        out.setdefault("group_only_greetings", [])
        if isinstance(out.get("character_book"), dict):
            book = out["character_book"]
            out["character_book"] = {"extensions": {}, **book, "entries": [
                {**V3_ENTRY, **e} for e in book.get("entries", []) if isinstance(e, dict)]}
    return {"spec": SPECS[spec][0], "spec_version": SPECS[spec][1], "data": out}


def _v2_entry(entry: Obj) -> Obj:
    """V2 has no `use_regex`: its keys are written as `/pattern/`, which V2 readers take as regular expressions."""
    if entry.get("use_regex") is not True:
        return {k: v for k, v in entry.items() if k != "use_regex"}
    return {**{k: v for k, v in entry.items() if k != "use_regex"}, "keys": [lore.wrap(k) for k in words(entry.get("keys"))]}


def book_json(meta: Obj, body: str, entries: list[tuple[Obj, str]], target: str | None) -> tuple[Obj, str]:
    """A book's JSON from `book.md` and its world entries (front matter, body), in order; and its spec
    (`character_book` for a card's book, `lorebook_v3`, `sillytavern`)."""
    imported = meta.get("imported") if isinstance(meta.get("imported"), dict) else {}
    source = imported.get("spec") if imported.get("spec") in ("lorebook_v3", "sillytavern", "character_book") \
        else "character_book"
    spec = "lorebook_v3" if target == "v3" else source
    shell = meta.get("lore") if isinstance(meta.get("lore"), dict) else {}
    kept = shell.get("data") if source == "lorebook_v3" and isinstance(shell.get("data"), dict) else shell
    keys = [(m.get("imported") or {}).get("key") if isinstance(m.get("imported"), dict) else None for m, _ in entries]
    uids = [m["lore"].get("uid") for m, _ in entries if isinstance(m.get("lore"), dict)]
    fresh = 1 + max([int(k) for k in keys if isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 15]
                    + [u for u in uids if isinstance(u, int) and not isinstance(u, bool)],
                    default=-1)  # `²` is a digit to str.isdigit; 5,000 digits are no uid
    local = imported.get("include") == lore.SWITCHES
    ids = [m["lore"].get("id") if isinstance(m.get("lore"), dict) else None for m, _ in entries]
    ids = [i if isinstance(i, (int, str)) and not isinstance(i, bool) else None for i in ids]  # hashable ids only
    next_id = 1 + max((i for i in ids if isinstance(i, int) and not isinstance(i, bool)), default=-1)
    used: set[Any] = set()  # a writer's copy of an entry file has its original's key and id: it gets new ones
    made = []
    for n, ((entry_meta, entry_body), key) in enumerate(zip(entries, keys)):
        e_imported = entry_meta.get("imported") if isinstance(entry_meta.get("imported"), dict) else {}
        e_kept = entry_meta.get("lore") if isinstance(entry_meta.get("lore"), dict) else {}
        if source == "sillytavern" and (key is None or key in used):
            copied, (key, fresh) = key is not None, (str(fresh), fresh + 1)
            if copied and "uid" in e_kept:
                e_kept = {**e_kept, "uid": int(key)}
        elif source != "sillytavern" and ids[n] is not None and ("id", ids[n]) in used:
            e_kept, next_id = {**e_kept, "id": next_id}, next_id + 1
        used.update((key, ("id", ids[n])))
        if not e_kept and "lore" not in entry_meta:  # an entry the writer added: the fields its format requires,
            # its switches from include:
            e_kept = {**(lore.new_st_entry(int(key)) if source == "sillytavern" else
                         {"extensions": {}, "insertion_order": 100}),
                      **(lore.switches(entry_meta.get("include"), source) if local else {})}
        entry = join(lore.values_of(entry_meta, entry_body), e_kept, words(e_imported.get("absent")),
                     lore.entry_groups(source, local))
        made.append((key, lore.to_v3_entry(entry, source, n) if spec != source else entry))
    if spec == "sillytavern":
        return {**kept, "entries": {str(k): e for k, e in made}}, spec
    book_kept = kept if source != "sillytavern" else {}
    book = join({**meta, "body": body}, book_kept, words(imported.get("absent")),
                book_groups(text(imported.get("fallback"))))
    book["entries"] = [e for _, e in made]
    if spec == "lorebook_v3":
        outer = {k: v for k, v in shell.items() if k != "data"} if source == "lorebook_v3" else {}
        return {**outer, "spec": "lorebook_v3", "data": book}, spec
    return book, spec
