"""Layer 4's manuscript parts and the selection's scene (docs/manuscript.md): `context_rules.recap` (the story
so far, from the summaries) and `context_rules.recall` (earlier passages), both from before the story
position, which is the scene the selection is in."""

from __future__ import annotations

from ..contract import Bank
from .layers import Piece
from .passage import Passage


def selection_at(start: int | None, passage: Passage, text: str | None) -> int | None:
    """The selection's code-point offset in the document's text, when it is known."""
    at = start if start is not None else (
        text.find(passage.selection) if text is not None and passage.selection and passage.located else None)
    return at if at is not None and at >= 0 else None


def scene_position(bank: Bank, document: str, at: int | None) -> str:
    """`document#n` for the scene holding offset `at` (the manuscript's passages know it), else `document`."""
    from ..manuscript.recall import scene_at

    scene = scene_at(bank, document, at)
    return f"{document}#{scene}" if scene is not None else document


def recap(bank: Bank, position: str, tokens: int) -> list[Piece]:
    """The story so far: the summaries of what lies before the position, oldest first, a stale one marked."""
    if tokens <= 0:
        return []
    from ..manuscript.summaries import recap as told

    return [Piece(4, "recap", "summary", f"#### {s.of}{' (stale)' if stale else ''}\n{s.text}", None, s.source, None,
                  {"level": s.level, "stale": stale}) for s, stale in told(bank, position, tokens)]


def recall(bank: Bank, start: int | None, passage: Passage, text: str | None, query: str, k: int,
           position: str) -> list[Piece]:
    """The k earlier passages most relevant to `query`: from before the selection's scene, none already in
    Layer 5's text, each citing its line."""
    if k <= 0:
        return []
    from ..manuscript.recall import recall as recalled

    at = selection_at(start, passage, text)
    window = None if at is None else (at - len(passage.before.text),
                                      at + len(passage.selection) + len(passage.after.text))
    around = passage.before.text + passage.selection + passage.after.text
    return [Piece(4, "manuscript", "passage", r.text, None, r.source, r.line, {"scene": r.scene, "why": r.reason},
                  r.score) for r in recalled(bank, position, query, k, window, around)]
