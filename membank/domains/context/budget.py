"""Budgets (context.md): each layer's cap, then the skill's `max_tokens` over Layers 2-5, and the order
in which things give way. Pure: pieces in, the pieces kept and every piece dropped (with why) out.

Layer 4 gives way first (its last items first), then the far ends of the surrounding text (whole
paragraphs, then sentences), then Layer 2 (its last cards first). Layers 0 and 1, the instruction
and the selection are never cut: when they alone are over, the call says OVER_BUDGET."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ...kernel.text import estimate_tokens
from .layers import LAYERS, Piece, by_layer as _by_layer
from .surrounding import trim

BUDGETED = (2, 3, 4, 5)  # the layers `max_tokens` covers
NEVER_CUT = ("identity", "skill", "instruction", "selection")
SURROUNDING = ("before", "after")


class Dropped(NamedTuple):  # a tuple: a prompt drops dozens to thousands
    layer: int
    kind: str
    id: str | None
    source: str | None
    tokens: int
    reason: str

    def to_api(self) -> dict[str, Any]:
        return {"layer": self.layer, "kind": self.kind, "id": self.id, "source": self.source, "tokens": self.tokens,
                "reason": self.reason}


@dataclass(frozen=True)
class Fitted:
    pieces: list[Piece]
    dropped: list[Dropped]
    over_budget: bool  # what is never cut is over a cap or the budget on its own


def _drop(piece: Piece, reason: str, tokens: int | None = None) -> Dropped:
    return Dropped(piece.layer, piece.kind, piece.id, piece.source, piece.tokens if tokens is None else tokens, reason)


def _total(pieces: list[Piece]) -> int:
    return sum(p.tokens for p in pieces)


def _drop_last(pieces: list[Piece], cap: int, reason: str, dropped: list[Dropped]) -> list[Piece]:
    """Drop from the end until the pieces hold at most `cap` tokens (the order is the priority)."""
    kept = list(pieces)
    total = _total(kept)
    while kept and total > cap:
        last = kept.pop()
        total -= last.tokens
        dropped.append(_drop(last, reason))
    return kept


def _cap_reason(layer: str, cap: int) -> str:
    return f"over the {layer} layer's cap of {cap} tokens (settings context.layerTokens)"


def capped(pieces: list[Piece], layer: str, cap: int | None) -> tuple[list[Piece], list[Dropped]]:
    """One of Layers 2-4 under its own cap, its last pieces dropped: what `fit` does to it first.
    Layer 3 gives way to nothing else, so a caller may cap it ahead (and keep the result)."""
    dropped: list[Dropped] = []
    if cap is None:
        return list(pieces), dropped
    return _drop_last(pieces, cap, _cap_reason(layer, cap), dropped), dropped


def _trim_surrounding(pieces: list[Piece], room: int, reason: str, dropped: list[Dropped]) -> list[Piece]:
    """Cut the text before and after back so both hold at most `room` tokens: the longer side gives
    more, the shorter keeps up to half."""
    sides = {p.kind: p for p in pieces if p.kind in SURROUNDING}
    if _total(list(sides.values())) <= room:
        return pieces
    small, large = sorted(sides, key=lambda k: (sides[k].tokens, k))[:2] if len(sides) == 2 else (None, next(iter(sides), None))
    targets: dict[str, int] = {}
    if small is not None:
        targets[small] = min(sides[small].tokens, room // 2)
    if large is not None:
        targets[large] = room - targets.get(small, 0) if small is not None else room
    out = []
    for p in pieces:
        if p.kind not in targets:
            out.append(p)
            continue
        text, how = trim(p.text, "after" if p.kind == "after" else "before", max(0, targets[p.kind]), estimate_tokens)
        if how == "none":
            out.append(p)
            continue
        kept = replace(p, text=text) if text else None
        cut = p.tokens - (kept.tokens if kept else 0)
        what = {"paragraph": "cut back to a paragraph", "sentence": "cut back to a sentence", "all": "left out"}[how]
        dropped.append(_drop(p, f"{reason}: the text {p.kind} the selection {what}", cut))
        out.append(kept if kept is not None else replace(p, text=""))
    return out


def fit(pieces: list[Piece], layer_caps: dict[str, int], max_tokens: int) -> Fitted:
    by_layer: dict[int, list[Piece]] = _by_layer(pieces)
    dropped: list[Dropped] = []
    over = False
    for layer in LAYERS:  # each layer's own cap first
        cap = layer_caps.get(layer.name)
        mine = by_layer[layer.number]
        if cap is None or _total(mine) <= cap:
            continue
        reason = _cap_reason(layer.name, cap)
        if layer.number in (0, 1):
            over = True  # never cut
        elif layer.number == 5:
            fixed = _total([p for p in mine if p.kind not in SURROUNDING])
            by_layer[5] = _trim_surrounding(mine, max(0, cap - fixed), reason, dropped)
            over = over or fixed > cap
        else:
            by_layer[layer.number] = _drop_last(mine, cap, reason, dropped)
    reason = f"over the skill's budget of {max_tokens} tokens for Layers 2-5"
    excess = sum(_total(by_layer[n]) for n in BUDGETED) - max_tokens
    if excess > 0:
        by_layer[4] = _drop_last(by_layer[4], max(0, _total(by_layer[4]) - excess), reason, dropped)
        excess = sum(_total(by_layer[n]) for n in BUDGETED) - max_tokens
    if excess > 0:
        surround = _total([p for p in by_layer[5] if p.kind in SURROUNDING])
        by_layer[5] = _trim_surrounding(by_layer[5], max(0, surround - excess), reason, dropped)
        excess = sum(_total(by_layer[n]) for n in BUDGETED) - max_tokens
    if excess > 0:
        by_layer[2] = _drop_last(by_layer[2], max(0, _total(by_layer[2]) - excess), reason, dropped)
        excess = sum(_total(by_layer[n]) for n in BUDGETED) - max_tokens
    kept = [p for layer in LAYERS for p in by_layer[layer.number] if p.text or p.kind in NEVER_CUT]
    return Fitted(kept, dropped, over or excess > 0)
