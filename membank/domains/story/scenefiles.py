"""The scenes of a project as read from `.writenow/scenes/` (story.md, Scenes): the files re-read only
when one changed, `story:scene`, and the `LOCATION_MISMATCH` flag of the consistency check."""

from __future__ import annotations

import os
import stat
from typing import Any

from ...files.reader import Unreadable, read_regular
from ...kernel import errors
from ...kernel.limits import MAX_LISTED
from ...kernel.paths import document_path
from ..contract import Bank
from . import positions, scenes
from .cards import Catalog
from .check import Flag
from .graph import entity
from .order import StoryOrder
from .scenes import Scene

MAX_SCENE_BYTES = 256 * 1024


def _stamp(folder: str, rel: str = "") -> tuple[tuple[str, int, int], ...]:
    """(path under `folder`, size, mtime) of each regular `.md` file, a folder's own files (by name) before
    its sub-folders' (by name); hidden names and links left out. One `lstat` a file, from the folder's
    listing (a prompt with `scene` looks every time)."""
    try:
        with os.scandir(os.path.join(folder, rel) if rel else folder) as listing:
            entries = sorted(listing, key=_name)
    except OSError:
        return ()
    out: list[tuple[str, int, int]] = []
    subs = []
    for e in entries:
        name = e.name
        if name.startswith("."):
            continue
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if not e.is_symlink():  # a linked folder is never walked
                subs.append(f"{rel}/{name}" if rel else name)
            continue
        if name.endswith(".md"):
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):  # a link or a device is never read
                out.append((f"{rel}/{name}" if rel else name, st.st_size, st.st_mtime_ns))
    for sub in subs:
        out += _stamp(folder, sub)
    return tuple(out)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def load(bank: Bank) -> tuple[dict[str, list[Scene]], tuple[dict[str, Any], ...]]:
    """Each document's scenes, and a problem (source, line, message) per part of a file not read."""
    folder = bank.project.file(scenes.FOLDER)
    stamp = _stamp(str(folder))
    memo = bank.memo.setdefault("story.scenes", {})
    if memo.get("stamp") == stamp and "scenes" in memo:
        return memo["scenes"], memo["problems"]  # type: ignore[no-any-return]
    found: dict[str, list[Scene]] = {}
    problems = []
    for rel, _, _ in stamp:
        source = bank.project.source(f"{scenes.FOLDER}/{rel}")
        try:
            data, _ = read_regular(folder / rel, MAX_SCENE_BYTES + 1)
        except (OSError, Unreadable):
            problems.append({"source": source, "line": 1, "message": "the file cannot be read"})
            continue
        document = rel[:-3]  # scenes/chapters/ch02.md.md is the scenes of chapters/ch02.md
        if "." not in document.rsplit("/", 1)[-1]:
            document = rel  # scenes/chapters/ch02.md: the document's own name
        parsed, bad = scenes.parse(data[:MAX_SCENE_BYTES], document, source)
        found[document] = parsed
        problems += [{"source": source, "line": line, "message": message} for line, message in bad]
    memo.update(stamp=stamp, scenes=found, problems=tuple(problems), at={})
    return found, memo["problems"]  # type: ignore[no-any-return]


def _position(order: StoryOrder, at: str) -> tuple[str, str]:
    """(the position as the order spells it, its document); a document whose name holds `#`
    (`chapters/ch#1.md#雨夜`) is told from a scene's name by the documents the order holds."""
    document, title = order.locate(at)
    path = document_path(document, "at")
    if not order.knows(path):
        raise errors.invalid("at", f"`{at}` is not a position of the story: list it in project.yaml `chapters:` "
                             "(or, without that list, create the file)")
    return path + (f"#{title}" if title is not None else ""), path


def _view(scene: Scene) -> dict[str, Any]:
    return {"title": scene.title, "line": scene.line, "source": scene.source,
            "values": {k: v for k, (v, _) in scene.values.items()}}


def scene_at(bank: Bank, order: StoryOrder, at: str) -> tuple[dict[str, dict[str, Any]], Scene | None]:
    found, _ = load(bank)
    return scenes.state(lambda d: found.get(d, []), order, at)


def state_at(bank: Bank, order: StoryOrder, at: str) -> dict[str, dict[str, Any]]:
    """`scene_at`'s state, kept while the files and the story order hold (a prompt with `scene` asks at
    the same few positions again and again). Read-only."""
    found, _ = load(bank)
    kept: dict[Any, dict[str, dict[str, Any]]] = bank.memo["story.scenes"].setdefault("at", {})
    key = (order, at)
    state = kept.get(key)
    if state is None:
        state = scenes.state(lambda d: found.get(d, []), order, at)[0]
        if len(kept) >= 64:
            kept.clear()
        kept[key] = state
    return state


def get_scene(bank: Bank, at: str) -> dict[str, Any]:
    """`story:scene`: the scene state at `at` (a document, or `document#heading`), each value with its
    position, source and line, and the document's own scenes; nothing from a later position."""
    order = positions.story_order(bank)
    position, document = _position(order, at)
    state, current = scene_at(bank, order, position)
    found, problems = load(bank)
    mine = found.get(document, [])
    return positions.warned({"at": position, "state": state, "line": scenes.line_of(state),
                             "scene": _view(current) if current is not None else None,
                             "scenes": [_view(s) for s in mine[:MAX_LISTED]],
                             "problems": [p for p in problems if p["source"].endswith(document + ".md")]}, order, position)


def functional(bank: Bank) -> tuple[str, ...]:
    """The facets checked against scenes: `location`, and every facet the schema declares functional."""
    schema = bank.settings_files.story().get("facets") or {}
    named = [k for k, v in schema.items() if isinstance(v, dict) and v.get("functional") is True]
    return tuple(dict.fromkeys(["location", *named]))


def mismatch_flags(bank: Bank, cat: Catalog, order: StoryOrder, document: str) -> list[Flag]:
    """`LOCATION_MISMATCH` for each character present in a scene of `document` whose functional facet
    there (location, …) differs from the scene's. At a scene position (`document#2`), only the scenes up to
    it (a later scene of the chapter is not consulted)."""
    found, _ = load(bank)
    position, document = document, (order.locate(document)[0] if "#" in document else document)
    mine = found.get(document)
    if mine and position != document:
        mine = [s for s in mine if not s.title or order.reached(f"{document}#{s.title}", position)]
    if not mine:
        return []
    rank = order.document_rank(document)
    before = order.positions[rank - 1] if rank > 0 else None
    carried = state_at(bank, order, before) if before else {}  # read only
    views: dict[str, dict[str, Any]] = cat.memo("scenes.facets", order, document)  # per generation of the cards

    def facets_of(name: str) -> dict[str, Any]:  # read only
        ids = cat.resolve(name)
        if len(ids) != 1:
            return {}
        if ids[0] not in views:
            views[ids[0]] = entity(cat.cards[ids[0]], cat, order, document)["facets"]
        return views[ids[0]]

    out = []
    for scene, name, facet, held, said in scenes.mismatches(mine, carried, facets_of, functional(bank)):
        where = f"the scene {scene.title}" if scene.title else f"the scenes of {document}"
        out.append(Flag(scenes.LOCATION_MISMATCH, cat.resolve(name)[0],
                        f"{name} is present in {where} ({facet}: {said}), but the card's {facet} there is "
                        f"{held['value']} (since {held['at']})",
                        ((scene.source, scene.values["present"][1]), (held["source"], held["line"]))))
    return out
