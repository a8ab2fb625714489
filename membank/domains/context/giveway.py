"""The order in which a prompt's pieces give way to a budget (context.md, Budgets): by relevance to
this moment, not by layer. Pure: pieces in, the same pieces in the order they go out.

Layer 4 is split in three. The least relevant, which go right after the far halves of the surrounding
text: memories below the relevance floor or of no known relevance (recall could not rank them), then
cards reached only through another card, then the compact history (its last sections first). The
rest, which outlives the surrounding text and Layer 2: past runs, the relevant memories (lowest score
first) and this document's own, then the cards the surrounding text mentions (the farthest first).
Last of all: the cards the selection or the instruction names (the last found first). Working
memory's "this session" entries give way least important first."""

from __future__ import annotations

from typing import Any

from .layers import Piece

PROTECTED = ("selection", "instruction", "scene")  # a card found here (or in the scene) goes last of all Layer 4
SCENE = "scene"  # Layer 4's one scene line: with the cards of the scene, last of all
CARD_KINDS = ("card", "state")
SESSION = "session"  # Layer 5's "this session" section (working memory)

# tiers of Layer 4, first to go first
UNRANKED, THROUGH_CARD, HISTORY, EPISODE, RELEVANT, AROUND = range(6)


def _tier(piece: Piece) -> tuple[int, float]:
    """(tier, then what goes first within it: the lower first) of a piece that is not a card (`retrieved`
    places the cards)."""
    if piece.section == "memories":
        return (UNRANKED, 0.0) if piece.score is None else (RELEVANT, piece.score)
    if piece.section == "document":
        return RELEVANT, 2.0  # this document's own: after every memory ranked by relevance (scores are 0..1)
    if piece.section == "history":
        return HISTORY, 0.0
    if piece.section == "episodes":
        return EPISODE, 0.0
    if piece.section == "threads":
        return EPISODE, 1.0  # what the story owes the reader: with the past runs, after them
    return UNRANKED, 0.0


LEAST = (UNRANKED, THROUGH_CARD, HISTORY)  # "Layer 4's least relevant items" (context.md, Budgets)


def retrieved(layer4: list[Piece]) -> tuple[list[Piece], list[Piece], list[Piece]]:
    """Layer 4's pieces (in their prompt order) as (the least relevant, the rest, what goes last of all),
    each in the order it gives way. Within a tier the later piece in the prompt goes first: cards are
    ordered nearest the selection first, memories and episodes best first. The cards are placed here, in the
    one pass, without a second look at their reason (a prompt's Layer 4 holds ~150 pieces over its cap)."""
    ranked: list[tuple[int, float, int, Piece]] = []
    last = []
    for i, p in enumerate(layer4):
        if p.kind in CARD_KINDS:
            reason: Any = p.reason
            where = reason.get("where") if isinstance(reason, dict) else None
            if where in PROTECTED or p.section == SCENE:  # found by the selection, the instruction or the scene
                last.append(p)
                continue
            where = where or ""
            if where == "meaning":  # activated by meaning (context/meaning.py): with the relevant memories, by score
                ranked.append((RELEVANT, p.score or 0.0, -i, p))
            else:
                ranked.append((THROUGH_CARD if where.startswith("card:") else AROUND, 0.0, -i, p))
        elif p.section == SCENE:
            last.append(p)
        else:
            tier, then = _tier(p)
            ranked.append((tier, then, -i, p))
    ranked.sort()  # (tier, then, -i): no two alike, so a piece is never compared
    least = [p for tier, _, _, p in ranked if tier in LEAST]
    rest = [p for tier, _, _, p in ranked if tier not in LEAST]
    return least, rest, last[::-1]


def session(layer5: list[Piece]) -> list[Piece]:
    """Working memory's entries in Layer 5 (most important first in the prompt), the least important
    first."""
    return [p for p in layer5 if p.section == SESSION][::-1]
