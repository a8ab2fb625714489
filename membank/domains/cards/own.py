"""membank's own front matter in a card: `extensions.membank` on export, and back on import. Pure.

A card carries what membank knows of a character that no card field holds (all its aliases, extra keys,
exclude keys, the summary when it is not the description's first sentence, state, `state_at`,
`introduced`, relations, progressions, `match` and `minScore`) under its `extensions.membank`, as the Character Card spec lets
tools keep their own data. Export also writes what other tools can show: the summary and state as
`creator_notes` of a card written by hand, and its keys as a `character_book` entry (marked as membank's,
so a re-import takes them back as keys, not as a book)."""

from __future__ import annotations

from typing import Any

from .groups import Obj, text, words

EXTENSION = "membank"
WORD_LISTS = ("aliases", "keys", "exclude_keys")
TEXTS = ("summary", "state", "state_at", "introduced")
RECORDS = ("relations", "progressions")
MATCH = ("words", "meaning")  # `match:` (context.md, Activation), with its `minScore`
FIELDS = WORD_LISTS[:1] + TEXTS[:1] + WORD_LISTS[1:] + TEXTS[1:] + RECORDS  # the order they are written in


def of(meta: Obj, derived: str, nickname: bool) -> Obj:
    """The `extensions.membank` object for a character file's front matter (empty: nothing to carry).
    `derived`: the summary import would make of the exported description (such a summary needs no
    carrying); `nickname`: the card's spec carries the first alias as `nickname`."""
    out: Obj = {}
    aliases = [a for a in words(meta.get("aliases")) if a.strip()]
    if len(aliases) > (1 if nickname else 0):
        out["aliases"] = aliases
    summary = text(meta.get("summary")).strip()
    if summary and summary != derived:
        out["summary"] = summary
    for key in WORD_LISTS[1:]:
        if words(meta.get(key)):
            out[key] = words(meta.get(key))
    for key in TEXTS[1:]:
        if isinstance(meta.get(key), str) and meta[key].strip():
            out[key] = meta[key]
    for key in RECORDS:
        found = [r for r in meta.get(key) or [] if isinstance(r, dict)] if isinstance(meta.get(key), list) else []
        if found:
            out[key] = found
    out.update(_matching(meta.get("match"), meta.get("minScore", meta.get("min_score"))))
    return out


def _matching(match: Any, score: Any) -> Obj:
    """`match` and `minScore` as a card writes them, when they are well formed."""
    out: Obj = {}
    if match in MATCH:
        out["match"] = match
    if isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 1:
        out["minScore"] = score
    return out


def restore(own: Any) -> Obj:
    """The front matter an `extensions.membank` object gives back (values of the wrong shape left out)."""
    if not isinstance(own, dict):
        return {}
    out: Obj = {}
    for key in FIELDS:
        value = own.get(key)
        if key in WORD_LISTS and words(value):
            out[key] = words(value)
        elif key in TEXTS and isinstance(value, str) and value.strip():
            out[key] = value
        elif key in RECORDS and isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            out[key] = value
    out.update(_matching(own.get("match"), own.get("minScore")))
    return out


def generated(book: Any) -> bool:
    """True for the `character_book` export made from a card's keys (not a book of the card's own)."""
    ext = book.get("extensions") if isinstance(book, dict) else None
    return isinstance(ext, dict) and isinstance(ext.get(EXTENSION), dict) and ext[EXTENSION].get("from") == "keys"


def keys_book(name: str, keys: list[str], content: str) -> Obj:
    """A one-entry book that makes other tools bring the card's text in when one of its keys is named."""
    return {"name": name, "description": "", "extensions": {EXTENSION: {"from": "keys"}}, "entries": [
        {"keys": keys, "content": content, "extensions": {}, "enabled": True, "insertion_order": 100,
         "use_regex": False, "constant": False, "selective": False, "secondary_keys": [], "comment": name}]}


def notes(meta: Obj) -> str:
    """`creator_notes` of a card written by hand: its summary and its current state."""
    parts = [text(meta.get("summary")).strip()]
    if text(meta.get("state")).strip():
        parts.append(f"State: {text(meta.get('state')).strip()}")
    return "\n\n".join(p for p in parts if p)


def take(data: Obj) -> tuple[Obj, Obj]:
    """(the card's data without membank's extension and generated book, the front matter they give back)."""
    ext = data.get("extensions")
    if not isinstance(ext, dict) or EXTENSION not in ext:
        return data, {}
    rest = {k: v for k, v in data.items() if not (k == "character_book" and generated(v))}
    rest["extensions"] = {k: v for k, v in ext.items() if k != EXTENSION}
    return rest, restore(ext[EXTENSION])


def put(data: Obj, meta: Obj, derived: str, by_hand: bool, nickname: bool) -> Obj:
    """The card's data with membank's own front matter added (see the module's docstring); `derived` as
    for `of`, `by_hand`: a card membank did not import."""
    out = dict(data)
    own = of(meta, derived, nickname)
    if own:
        ext = out.get("extensions") if isinstance(out.get("extensions"), dict) else {}
        out["extensions"] = {**ext, EXTENSION: own}
    keys = words(meta.get("keys"))
    if keys and not isinstance(out.get("character_book"), dict):
        name = text(out.get("name"))
        out["character_book"] = keys_book(name, keys, text(meta.get("summary")).strip() or text(out.get("description")))
    if by_hand and not text(out.get("creator_notes")) and notes(meta):
        out["creator_notes"] = notes(meta)
    return out
