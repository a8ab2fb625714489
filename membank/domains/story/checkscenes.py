"""The scenes of a document the consistency check reads (story.md, "The consistency check"; manuscript.md,
"Scene positions"): `chapters/ch03.md#进府` checks that scene's text at that scene's position, and a whole
document is judged scene by scene, so a death in scene 2 is not true in scene 1.

The manuscript domain cuts a document into scenes (domains/manuscript imports story, so story cannot import
it): its package registers the cutter here, named lazily, when imported (as it is whenever a project
opens). Without one, a document is one scene. Pure apart from that call."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ...kernel import errors
from ..contract import Lazy
from .order import StoryOrder

_cutters: list[Lazy] = []
_NOT_NEWLINE = re.compile(r"[^\n]")
_LONE_CR = re.compile(r"\r(?!\n)")  # a line end, as the manuscript's cutter reads it
_KEPT = 16  # documents whose last cut is kept: a check of an unchanged chapter does not cut it again (~2 ms/50k)
_cut: dict[str, tuple[str, list[Span]]] = {}


@dataclass(frozen=True)
class Span:
    number: int  # 1-based
    label: str  # the heading's text, or `#n`
    start: int  # code-point offsets into the document's text
    end: int


def provide(lazy: Lazy) -> None:
    """Register `(text, markdown) -> [Scene(number, name, line)]`, the manuscript's scene cutter."""
    if lazy not in _cutters:
        _cutters.append(lazy)


def spans(document: str, text: str) -> list[Span]:
    """The document's scenes with their offsets; one scene (the whole text) without a cutter. The last cut
    of each document is kept (a read-only list, replaced whole: the same from any thread)."""
    if not _cutters:
        return [Span(1, "#1", 0, len(text))]
    kept = _cut.get(document)
    if kept is not None and kept[0] == text:
        return kept[1]
    cutter: Callable[[str, bool], list[Any]] = _cutters[0].resolve()
    found = cutter(text, document.lower().endswith(".md"))
    starts = [0] + [m.end() for m in re.finditer("\n", _LONE_CR.sub("\n", text))]  # each line's offset
    at = [starts[min(s.line, len(starts)) - 1] for s in found]
    made = [Span(s.number, s.name if s.name is not None else f"#{s.number}", a, b)
            for s, a, b in zip(found, at, at[1:] + [len(text)])]
    if len(_cut) >= _KEPT:
        _cut.clear()
    _cut[document] = (text, made)
    return made


def pick(document: str, scene: str, found: list[Span]) -> Span:
    """The scene `scene` names (a heading's text, `N` or `#N`); INVALID_ARGUMENT listing them if none."""
    for span in found:
        if span.label == scene:
            return span
    digits = scene[1:] if scene.startswith("#") else scene
    if digits.isdecimal() and 1 <= int(digits) <= len(found):
        return found[int(digits) - 1]
    names = ", ".join(s.label for s in found[:20]) + (" …" if len(found) > 20 else "")
    raise errors.invalid("documentId", f"{document} has no scene {scene!r} (its scenes: {names}); name one by its "
                         "heading's text or its number, like chapters/ch03.md#2")


def in_place(text: str, span: Span) -> str:
    """The scene's text where it stands in the document: what comes before it blanked (its line ends kept),
    what follows cut off, so offsets and lines cited are the document's and nothing later is read."""
    return _NOT_NEWLINE.sub(" ", text[:span.start]) + text[span.start:span.end]


def positions(order: StoryOrder, document: str, found: list[Span]) -> list[tuple[int, str]]:
    """(start offset, position) of each scene after the first: the first is judged at the document (its
    start), each later one at its own scene position (`document#label`, or `#n` where the label would
    name another scene)."""
    out = []
    for span in found[1:]:
        label = span.label
        named = not label.startswith("#") and order.scene_number(document, label) == span.number
        out.append((span.start, f"{document}#{label}" if named else f"{document}#{span.number}"))
    return out
