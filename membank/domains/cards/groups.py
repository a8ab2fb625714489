"""Fields membank maps, kept exact on the way back. Pure.

A `Group` owns some fields of a JSON object (a card's `data`, a lore entry) and maps them to front-matter
values (`to`) and back (`back`). `split` turns an object into front matter, the fields kept as they are
(`kept`: every field no group owns, plus an owned field's original value when `back` would not give it
again exactly) and the owned fields it did not have (`absent`). `join` rebuilds the object: for each group,
the original values when the front matter still means what they mean (the writer left it alone), else
the values `back` derives from the front matter (the writer's edit wins)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

Obj = dict[str, Any]


@dataclass(frozen=True)
class Group:
    fields: tuple[str, ...]
    to: Callable[[Obj], Obj]  # the whole object -> front-matter values (canonical, comparable)
    back: Callable[[Obj, Obj], Obj]  # (front matter, the object so far) -> the owned fields (and patches)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON (so `true` is not `1`), key order aside."""
    return json.dumps(a, sort_keys=True, ensure_ascii=False) == json.dumps(b, sort_keys=True, ensure_ascii=False)


def owned(groups: tuple[Group, ...]) -> set[str]:
    return {f for g in groups for f in g.fields}


def split(obj: Obj, groups: tuple[Group, ...]) -> tuple[Obj, Obj, list[str]]:
    """(front matter, kept, absent) for `obj`; `join(front matter, kept, absent)` gives `obj` again."""
    front: Obj = {}
    for g in groups:
        front.update(g.to(obj))
    mine = owned(groups)
    kept = {k: v for k, v in obj.items() if k not in mine}
    absent: list[str] = []
    for g in groups:
        derived = g.back(front, obj)
        for f in g.fields:
            if f not in obj:
                if f in derived:
                    absent.append(f)
            elif f not in derived or not same(derived[f], obj[f]):
                kept[f] = obj[f]
    return front, kept, absent


def join(front: Obj, kept: Obj, absent: list[str] | tuple[str, ...], groups: tuple[Group, ...]) -> Obj:
    mine = owned(groups)
    out = {k: v for k, v in kept.items() if k not in mine}
    for g in groups:
        derived = g.back(front, out)
        candidate = {f: kept[f] if f in kept else derived[f] for f in g.fields
                     if f in kept or (f not in absent and f in derived)}
        as_derived = {**out, **derived}
        as_candidate = {**out, **candidate}
        means = g.to(as_candidate)  # what the original values mean, against the front matter as it is now
        unchanged = same(means, g.to(as_derived)) or same(means, {k: front.get(k) for k in means})
        out = as_candidate if unchanged else as_derived
    return out


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def words(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def body_text(value: Any) -> str:
    """Text as a Markdown body reads back: LF endings, stripped."""
    return text(value).replace("\r\n", "\n").replace("\r", "\n").strip()
