"""What `capture:prepare` puts in (capture.md, prepare): the position just before the chapter, and a
chapter longer than the skill's budget in scene-sized parts. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from ..manuscript.passages import cut
from ..story.order import StoryOrder

BEFORE = "\x00before:"  # the name of the position just before a chapter, in an order of its own


def before(order: StoryOrder, document: str) -> tuple[StoryOrder, str]:
    """An order with one more position just before `document`, and that position: what holds there is
    what held before the chapter began (nothing of the chapter, none of its scenes, nothing later). The
    first chapter gets one too: only what is timeless holds there."""
    at = order.document_rank(document)
    mark = BEFORE + document
    positions = (*order.positions[:at], mark, *order.positions[at:])
    return StoryOrder(positions, order.explicit, order.scenes), mark


@dataclass(frozen=True)
class Part:
    scene: str  # the first scene's label (a heading's text, or `#n`)
    line: int  # first line of the chapter it holds (1-based)
    end_line: int
    text: str


def parts(document: str, text: str, budget: int) -> list[Part]:
    """The chapter whole when it fits `budget` code points; else scenes gathered while they fit, and a
    scene longer than the budget cut between its passages (paragraphs, sentences)."""
    pieces = cut(document, text, markdown=document.lower().endswith(".md"))
    if len(text) <= budget or not pieces:
        return [Part(pieces[0].scene if pieces else "#1", 1, text.count("\n") + 1, text)]
    out: list[Part] = []
    first = pieces[0]
    last = first
    for piece in pieces[1:]:
        new_scene = piece.scene_no != last.scene_no
        if (piece.end - first.start > budget) or (new_scene and piece.end - first.start > budget // 2):
            out.append(Part(first.scene, first.line, last.end_line, text[first.start:last.end]))
            first = piece
        last = piece
    out.append(Part(first.scene, first.line, last.end_line, text[first.start:last.end]))
    return out
