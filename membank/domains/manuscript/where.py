"""Where a passage stands against a story position (manuscript.md, "Positions inside a chapter").

A position is a document (`chapters/ch05.md`), or a document and a scene (`chapters/ch05.md#雨夜`, the
heading's text, or `#2` for the second scene). "Before" a position is every passage of an earlier
document, and of its own document those of earlier scenes; an unknown scene counts as the end of its
document (a warning); a document the story order does not hold counts as after every known one."""

from __future__ import annotations

from dataclasses import dataclass


def split(position: str) -> tuple[str, str | None]:
    """(document, scene or None). The scene is what follows the last `#`; `#` alone names no scene."""
    doc, sep, scene = position.partition("#")
    scene = scene.strip()
    return doc.strip(), (scene if sep and scene else None)


def scene_number(scene: str, scenes: dict[str, int]) -> int | None:
    """The scene's number in its document: by heading text, else `N` / `#N` as a number; None if unknown."""
    if scene in scenes:
        return scenes[scene]
    digits = scene[1:] if scene.startswith("#") else scene
    if digits.isdigit() and int(digits) >= 1 and int(digits) in scenes.values():
        return int(digits)
    return None


@dataclass(frozen=True)
class Before:
    """Which passages lie strictly before a position: every one of `earlier` documents, and of `document`
    those whose scene number is below `scene_below` (None: none of it)."""

    earlier: tuple[str, ...]
    document: str | None
    scene_below: int | None
    warning: str | None = None

    def allows(self, document: str, scene_no: int) -> bool:
        if document == self.document:
            return self.scene_below is not None and scene_no < self.scene_below
        return document in self.earlier


def before(position: str, documents: list[str], known: bool, scenes: dict[str, int]) -> Before:
    """The passages before `position`. `documents` is the manuscript in story order; `known` whether the
    story order holds the position's document; `scenes` that document's scene labels -> numbers."""
    doc, scene = split(position)
    if not known or doc not in documents:
        # a position the order does not hold counts as after every known one (story.md)
        return Before(tuple(d for d in documents if d != doc), None, None)
    earlier = tuple(documents[:documents.index(doc)])
    if scene is None:
        return Before(earlier, doc, None)
    number = scene_number(scene, scenes)
    if number is None:
        return Before(earlier, doc, 1 << 30, f"`{position}`: the document has no scene `{scene}`; it counts as the "
                      "end of the document")
    return Before(earlier, doc, number)
