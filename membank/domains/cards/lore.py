"""A lore entry as a world entry, and back (docs/import-export.md). Pure.

Character Card V2/V3 books and `lorebook_v3` share one entry shape (`keys`, `secondary_keys`, `selective`,
`constant`, `enabled`, `comment`, `content`, `use_regex`, `extensions.selectiveLogic`); a SillyTavern World
Info export has its own (`key`, `keysecondary`, `selective`, `selectiveLogic`, `constant`, `disable`,
`comment`, `content`). Both become `name`, `keys`, `secondary_keys` + `logic`, `include` and the body."""

from __future__ import annotations

import re
from typing import Any

from .groups import Group, Obj, body_text, text, words

LOGIC_CODES = ("and_any", "not_all", "not_any", "and_all")  # SillyTavern's selectiveLogic 0..3


def wrap(key: str) -> str:
    return f"/{key}/"


def unwrap(key: str) -> str:
    return key[1:-1] if len(key) >= 2 and key.startswith("/") and key.endswith("/") else key


def logic_name(code: Any) -> str:
    return LOGIC_CODES[code] if isinstance(code, int) and not isinstance(code, bool) and 0 <= code < 4 else "and_any"


def fm_words(front: Obj, key: str) -> list[str]:
    return words(front.get(key))


def _title(entry: Obj, keys_field: str) -> str:
    for candidate in (entry.get("comment"), entry.get("name")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    first = next((k.strip() for k in words(entry.get(keys_field)) if k.strip()), "")
    pattern = re.fullmatch(r"/(.+)/[a-z]*", first)  # a regex key names its entry by its pattern
    return (pattern.group(1) if pattern else first) or "entry"


def _groups(keys_f: str, second_f: str, off_f: str, off_when: bool, st: bool, local: bool = False
            ) -> tuple[Group, ...]:
    """`local`: `include:` is the writer's switch for this project (ecosystem.md, "The writer's choices stay in
    the project"): read from `constant`/`enabled` at import, never written back into them (they stay in
    `lore:` as the card had them)."""
    def keys_to(e: Obj) -> Obj:
        ks = words(e.get(keys_f))
        return {"keys": [wrap(k) for k in ks] if e.get("use_regex") is True else ks}

    def keys_back(f: Obj, ctx: Obj) -> Obj:
        ks = fm_words(f, "keys")
        return {keys_f: [unwrap(k) for k in ks] if ctx.get("use_regex") is True else ks}

    def logic_of(e: Obj) -> str:
        if st:
            return logic_name(e.get("selectiveLogic"))
        ext = e.get("extensions")
        return logic_name(ext.get("selectiveLogic")) if isinstance(ext, dict) else "and_any"

    def second_to(e: Obj) -> Obj:
        second = words(e.get(second_f)) if e.get("selective") is True else []
        return {"secondary_keys": second, "logic": logic_of(e) if second else "and_any"}

    def second_back(f: Obj, ctx: Obj) -> Obj:
        second = fm_words(f, "secondary_keys")
        logic = f.get("logic") if f.get("logic") in LOGIC_CODES else "and_any"
        out: Obj = {second_f: second, "selective": bool(second)}
        code = LOGIC_CODES.index(logic)
        if st:
            out["selectiveLogic"] = code
        elif logic != logic_of(ctx):  # the writer changed it: extensions.selectiveLogic follows
            ext = ctx.get("extensions")
            out["extensions"] = {**(ext if isinstance(ext, dict) else {}), "selectiveLogic": code}
        return out

    def include_to(e: Obj) -> Obj:
        if e.get(off_f) is off_when:
            return {"include": "never"}
        return {"include": "always" if e.get("constant") is True else "auto"}

    def include_back(f: Obj, ctx: Obj) -> Obj:
        include = f.get("include") if f.get("include") in ("always", "never") else "auto"
        return {"constant": include == "always", off_f: off_when if include == "never" else not off_when}

    return (
        Group((keys_f,), keys_to, keys_back),
        Group(("comment",), lambda e: {"name": _title(e, keys_f)}, lambda f, ctx: {"comment": text(f.get("name"))}),
        Group((second_f, "selective") + (("selectiveLogic",) if st else ()), second_to, second_back),
        Group((), include_to, lambda f, ctx: {}) if local else Group(("constant", off_f), include_to, include_back),
        Group(("content",), lambda e: {"body": body_text(e.get("content"))},
              lambda f, ctx: {"content": text(f.get("body"))}),
    )


CARD_ENTRY = _groups("keys", "secondary_keys", "enabled", False, st=False)  # V2, V3, lorebook_v3
ST_ENTRY = _groups("key", "keysecondary", "disable", True, st=True)  # SillyTavern World Info


CARD_ENTRY_LOCAL = _groups("keys", "secondary_keys", "enabled", False, st=False, local=True)
ST_ENTRY_LOCAL = _groups("key", "keysecondary", "disable", True, st=True, local=True)
SWITCHES = "local"  # a book's `imported.include`: its entries' `include:` is the writer's, never exported


def entry_groups(spec: str, local: bool = False) -> tuple[Group, ...]:
    """The groups of a book's entries; `local` for books imported since `include:` stays in the project
    (older imports carried an edited `include:` into `constant`/`enabled`)."""
    if local:
        return ST_ENTRY_LOCAL if spec == "sillytavern" else CARD_ENTRY_LOCAL
    return ST_ENTRY if spec == "sillytavern" else CARD_ENTRY


def switches(include: object, spec: str) -> Obj:
    """`constant` and `enabled`/`disable` for an entry the writer added (no card author's values to keep)."""
    include = include if include in ("always", "never") else "auto"
    off_f, off_when = ("disable", True) if spec == "sillytavern" else ("enabled", False)
    return {"constant": include == "always", off_f: off_when if include == "never" else not off_when}


def front_of(values: Obj) -> tuple[Obj, str]:
    """The world entry's front matter (membank's keys, defaults left out) and body, from mapped values."""
    meta: Obj = {"name": values["name"], "kind": "lore", "keys": values["keys"]}
    if values["secondary_keys"]:
        meta["secondary_keys"] = values["secondary_keys"]
        if values["logic"] != "and_any":
            meta["logic"] = values["logic"]
    if values["include"] != "auto":
        meta["include"] = values["include"]
    return meta, values["body"]


def values_of(meta: Obj, body: str) -> Obj:
    """The mapped values as `back` reads them, from a world entry file's front matter and body."""
    return {**meta, "body": body}


def to_v3_entry(entry: Obj, spec: str, index: int) -> Obj:
    """A SillyTavern entry as a V3 book entry (for `--spec v3`): the mapped fields, the rest in extensions."""
    if spec != "sillytavern":
        return entry
    taken = {"key", "keysecondary", "comment", "content", "constant", "selective", "disable", "order", "uid"}
    ext = {k: v for k, v in entry.items() if k not in taken}
    return {"keys": entry.get("key", []), "content": entry.get("content", ""), "extensions": ext,
            "enabled": entry.get("disable") is not True, "insertion_order": entry.get("order", 100),
            "comment": entry.get("comment", ""), "id": entry.get("uid", index), "selective": entry.get("selective", False),
            "secondary_keys": entry.get("keysecondary", []), "constant": entry.get("constant", False)}


def new_st_entry(uid: int) -> Obj:
    """The fields SillyTavern expects of an entry the writer added by hand."""
    return {"uid": uid, "order": 100, "position": 0, "addMemo": True}
