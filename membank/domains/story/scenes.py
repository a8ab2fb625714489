"""Scenes (story.md, Scenes): who is here, where and when, kept in `.writenow/scenes/<document path>.md`
(membank never writes the manuscript). Pure: a file's text in, its scenes out; the scene state at a
position, carried forward from every earlier scene; the `LOCATION_MISMATCH` flags of a document.

A file holds one front matter for the whole document, or sections (`## a heading`, then `key: value`
lines) one per scene; the front matter then holds what every section starts from. `pov`, `location`,
`date` (and any other facet) hold until a later scene changes them; `present` is per scene."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import yaml

from ...files.conflicts import LEFT_OUT, conflict_line
from ...files.frontmatter import FrontMatterError, decode, load_yaml, split
from .matching import normalize
from .order import StoryOrder

FOLDER = "scenes"
CARRIED = ("pov", "location", "date")
LOCATION_MISMATCH = "LOCATION_MISMATCH"


@dataclass(frozen=True)
class Scene:
    document: str  # the story position the scene is in
    title: str  # the section's heading ("" for a whole document)
    line: int  # the heading's line (1 for a whole document)
    values: dict[str, tuple[Any, int]]  # key -> (value, line): pov, present, location, date, other facets
    source: str


def _mapping(text: str) -> dict[str, Any] | None:
    try:
        loaded = load_yaml(text) if text.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return None
    if loaded is None:  # only comments (its values taken away, or commented out): a scene with no values
        return {}
    return loaded if isinstance(loaded, dict) else None


def _lines(text: str, first: int, keys: Iterable[str]) -> dict[str, int]:
    out = {}
    rows = text.split("\n")
    for key in keys:
        out[key] = next((first + i for i, row in enumerate(rows) if row.lstrip().startswith(f"{key}:")), first)
    return out


def _values(meta: dict[str, Any], lines: dict[str, int]) -> dict[str, tuple[Any, int]]:
    out: dict[str, tuple[Any, int]] = {}
    for key, value in meta.items():
        key = str(key)
        if key == "present":
            value = [str(v).strip() for v in (value if isinstance(value, list) else [value]) if v is not None]
        elif value is not None and not isinstance(value, (list, dict)):
            value = str(value).strip()
        out[key] = (value, lines.get(key, 1))
    return out


def parse(data: bytes, document: str, source: str) -> tuple[list[Scene], list[tuple[int, str]]]:
    """A scene file's scenes, in order, and (line, problem) for what could not be read."""
    try:
        text = decode(data)
        if (marker := conflict_line(text)) is not None:
            return [], [(marker, LEFT_OUT)]
        doc = split(text)
    except FrontMatterError as e:
        return [], [(e.line, e.message)]
    head = _values(doc.meta, {k: doc.key_line(k) for k in doc.meta})
    body = text.split("\n")
    start = doc.body_line - 1 if doc.body else len(body)
    sections: list[tuple[str, int, list[str]]] = []
    for i in range(start, len(body)):
        row = body[i]
        if row.startswith("## "):
            sections.append((row[3:].strip(), i + 1, []))
        elif sections:
            sections[-1][2].append(row)
    if not sections:
        return [Scene(document, "", 1, head, source)], []
    scenes, problems = [], []
    for n, (title, line, rows) in enumerate(sections):
        chunk = "\n".join(rows)
        meta = _mapping(chunk)
        if meta is None:
            problems.append((line, f"the scene `{title}` should hold `key: value` lines (pov, present, location, "
                                   "date)"))
            meta = {}
        values = _values(meta, _lines(chunk, line + 1, meta))
        base = dict(head) if n == 0 else {}  # the front matter: where the first scene starts from
        if "present" in head and "present" not in values:
            base["present"] = head["present"]  # who is present in every scene that does not say
        scenes.append(Scene(document, title, line, {**base, **values}, source))
    return scenes, problems


def state(scenes_of: Callable[[str], list[Scene]], order: StoryOrder, at: str
          ) -> tuple[dict[str, dict[str, Any]], Scene | None]:
    """The scene state at `at` (a document, or `document#heading` for one of its scenes): each value with
    the position, source and line it comes from; `present` only from the scene itself. And the scene.
    Without a heading, the document's last scene is the one in force (the one being written)."""
    document, title = order.locate(at)  # `chapters/ch#1.md#雨夜`: the document is the one the order holds
    carried: dict[str, dict[str, Any]] = {}
    current = None
    if not order.knows(document):
        return carried, None
    here = order.document_rank(document)
    # `#2` (context:assemble's form) names the second scene as `#雨夜` does: a section of a later scene of the
    # chapter never answers an earlier one; a section whose title is no scene of it counts in file order
    target = order.scene_number(document, title) if title is not None else None
    for rank in range(here + 1):
        position = order.positions[rank]
        for n, scene in enumerate(scenes_of(position), start=1):
            named = order.scene_number(document, scene.title) if rank == here and scene.title else None
            number = n if named is None and rank == here and scene.title else named
            if target is not None and number is not None and number > target:
                break
            for key, (value, line) in scene.values.items():
                if key != "present":
                    carried[key] = {"value": value, "at": position, "source": scene.source, "line": line}
            if rank == here:
                current = scene
                if title is not None and (scene.title == title or (named is not None and named == target)):
                    break
    out = dict(carried)
    if current is not None and "present" in current.values:
        value, line = current.values["present"]
        out["present"] = {"value": value, "at": document, "source": current.source, "line": line}
    return out, current


def line_of(values: dict[str, dict[str, Any]]) -> str:
    """The scene state as Layer 4's one line: `POV 林黛玉 · 荣国府 · 第一年 冬 · present: 林黛玉, 贾母`."""
    parts = []
    if "pov" in values:
        parts.append(f"POV {values['pov']['value']}")
    for key in ("location", "date"):
        if key in values and values[key]["value"] not in (None, ""):
            parts.append(str(values[key]["value"]))
    if values.get("present", {}).get("value"):
        parts.append("present: " + ", ".join(values["present"]["value"]))
    return " · ".join(parts)


def mismatches(scenes: list[Scene], carried: dict[str, dict[str, Any]], facets_of: Callable[[str], dict[str, Any]],
               functional: Iterable[str]) -> list[tuple[Scene, str, str, dict[str, Any], Any]]:
    """Each (scene, character as written, facet, the character's facet there, the scene's value) where a
    character present in a scene of this document holds a functional facet (location, by default) whose
    value differs from the scene's. `carried`: the values in force before the document's first scene;
    `facets_of(name)` the character's facets at the position ({} for a name that is no card)."""
    out = []
    state = {k: v["value"] for k, v in carried.items() if k != "present"}
    for scene in scenes:
        state.update({k: v for k, (v, _) in scene.values.items() if k != "present"})
        for name in scene.values.get("present", ([], 0))[0]:
            facets = facets_of(name)
            for facet in functional:
                said, held = state.get(facet), facets.get(facet)
                if said in (None, "") or held is None or isinstance(held["value"], (list, dict)):
                    continue
                if normalize(str(held["value"]).strip()) != normalize(str(said).strip()):
                    out.append((scene, name, facet, held, said))
    return out
