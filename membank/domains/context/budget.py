"""Budgets (context.md): each layer's cap, then the skill's `max_tokens` over Layers 2-5, and the order
in which things give way. Pure: pieces in, the pieces kept and every piece dropped (with why) out.

Pieces give way by relevance to this moment, not by layer (`give_way`): first the far halves of the
surrounding text (cut back to a paragraph, then a sentence, never closer than 500 code points to the
selection), then Layer 4's least relevant items, then the rest of the surrounding text, then Layer 2
(its last cards first), then the rest of Layer 4, then working memory's "this session" entries (least
important first), and last of all the cards the selection or the instruction names (`giveway.py`).
Layers 0 and 1, Layer 3, the instruction and the selection are never cut: when they alone are over,
the call says OVER_BUDGET."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from . import giveway
from .layers import LAYERS, Piece, by_layer as _by_layer
from .surrounding import Cut, cuts, kept_text, near_floor

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


_dropped = functools.partial(tuple.__new__, Dropped)  # without NamedTuple's __new__ (a Python function)


def _drop(piece: Piece, reason: str, tokens: int | None = None) -> Dropped:
    """What `piece` leaves in `dropped`: a prompt leaves out ~150 (Layer 4 over its cap)."""
    return _dropped((piece.layer, piece.kind, piece.id, piece.source, piece.tokens if tokens is None else tokens,
                     reason))


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


def _give(pieces: list[Piece], going: list[Piece], excess: int, reason: str, dropped: list[Dropped]) -> list[Piece]:
    """`pieces` less those of `going` (in that order) it takes to give up `excess` tokens."""
    out: set[int] = set()
    for p in going:  # `_drop` inlined: Layer 4's cap drops ~130 pieces a prompt
        if excess <= 0:
            break
        out.add(id(p))
        excess -= p.tokens
        dropped.append(_dropped((p.layer, p.kind, p.id, p.source, p.tokens, reason)))
    return [p for p in pieces if id(p) not in out] if out else pieces


def _cap_reason(layer: str, cap: int) -> str:
    return f"over the {layer} layer's cap of {cap} tokens (settings context.layerTokens)"


def capped(pieces: list[Piece], layer: str, cap: int | None) -> tuple[list[Piece], list[Dropped]]:
    """One of Layers 2-4 under its own cap, its last pieces dropped: what `fit` does to it first.
    Layer 3 gives way to nothing else, so a caller may cap it ahead (and keep the result)."""
    dropped: list[Dropped] = []
    if cap is None:
        return list(pieces), dropped
    return _drop_last(pieces, cap, _cap_reason(layer, cap), dropped), dropped


HOW = {"paragraph": "cut back to a paragraph", "sentence": "cut back to a sentence",
       "hard": "cut back hard (no blank line or sentence end to cut at)", "all": "left out"}


def _cut_surrounding(layer5: list[Piece], excess: int, keep: Callable[[str], int], what: str, reason: str,
                     dropped: list[Dropped]) -> list[Piece]:
    """The text before and after the selection cut back from their far ends until `excess` tokens are
    given (or no cut is left): the side holding more tokens gives next (a tie: the text after), so the
    two end up alike; `keep(kind)` is the code points a side keeps at least."""
    sides = {p.kind: p for p in layer5 if p.kind in SURROUNDING and p.text}
    if excess <= 0 or not sides:
        return layer5
    plans = {k: cuts(p.text, k, keep(k)) for k, p in sides.items()}
    pending = {k: next(plans[k], None) for k in sides}
    taken: dict[str, Cut] = {}
    held = {k: p.tokens for k, p in sides.items()}
    given = 0
    while given < excess:
        ready = [k for k in sides if pending[k] is not None]
        if not ready:
            break
        k = max(ready, key=lambda s: (held[s], s == "after"))
        cut = taken[k] = pending[k]  # type: ignore[assignment]
        pending[k] = next(plans[k], None)
        given += held[k] - cut.tokens
        held[k] = cut.tokens
    out = []
    for p in layer5:
        last = taken.get(p.kind) if p.kind in sides else None
        if last is None:
            out.append(p)
            continue
        kept = Piece.cleaned(p.layer, p.section, p.kind, kept_text(p.text, p.kind, last.kept), last.tokens, p.id,
                             p.source, p.line, p.reason, p.score)  # a part of a clean text, its tokens known
        dropped.append(_drop(p, f"{reason}: {what} {p.kind} the selection {HOW[last.how]}", p.tokens - kept.tokens))
        out.append(kept)
    return out


def _immediate(layer5: list[Piece], excess: int, originals: dict[str, Piece], reason: str,
               dropped: list[Dropped]) -> list[Piece]:
    """Layer 5 over its own cap, in the budget's order: the far halves, the rest of the text, then the
    session's entries."""
    floors = {k: near_floor(p.text) for k, p in originals.items()}
    cap = _total(layer5) - excess
    mine = _cut_surrounding(layer5, excess, lambda k: floors.get(k, 0), "the far half of the text", reason, dropped)
    mine = _cut_surrounding(mine, _total(mine) - cap, lambda k: 0, "the text", reason, dropped)
    return _give(mine, giveway.session(mine), _total(mine) - cap, reason, dropped)


def fit(pieces: list[Piece], layer_caps: dict[str, int], max_tokens: int) -> Fitted:
    by_layer: dict[int, list[Piece]] = _by_layer(pieces)
    originals = {p.kind: p for p in by_layer[5] if p.kind in SURROUNDING}
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
            by_layer[5] = _immediate(mine, _total(mine) - cap, originals, reason, dropped)
            over = over or _total(by_layer[5]) > cap
        elif layer.number == 4:
            least, rest, last = giveway.retrieved(mine)
            by_layer[4] = _give(mine, least + rest + last, _total(mine) - cap, reason, dropped)
        else:
            by_layer[layer.number] = _drop_last(mine, cap, reason, dropped)
    excess = budget_excess(by_layer, max_tokens)
    if excess > 0:
        by_layer = give_way(by_layer, excess, originals, f"over the skill's budget of {max_tokens} tokens for "
                            "Layers 2-5", dropped)
        excess = budget_excess(by_layer, max_tokens)
    kept = [p for layer in LAYERS for p in by_layer[layer.number] if p.text or p.kind in NEVER_CUT]
    return Fitted(kept, dropped, over or excess > 0)


def _session_tokens(layer5: list[Piece]) -> int:
    return _total(giveway.session(layer5))


def budget_excess(by_layer: dict[int, list[Piece]], max_tokens: int) -> int:
    return sum(_total(by_layer[n]) for n in BUDGETED) - max_tokens


def give_way(by_layer: dict[int, list[Piece]], excess: int, originals: dict[str, Piece], reason: str,
             dropped: list[Dropped]) -> dict[int, list[Piece]]:
    """The budget's order (context.md, Budgets), each stage only while something is still over: the far
    halves of the surrounding text; Layer 4's least relevant items; the rest of the surrounding text;
    Layer 2 from its last card; the rest of Layer 4; the session's entries; the cards the selection or
    instruction names. Layer 2 gives only what would still be over with the session's entries all gone:
    working memory never moves the systemPrompt (its prefix hash is the provider's cache key). `originals` are the sides as taken, whose near halves (at least 500 code points)
    the first stage keeps."""
    out = dict(by_layer)
    floors = {k: near_floor(p.text) for k, p in originals.items()}
    least, rest, last = giveway.retrieved(out[4])
    stages: list[tuple[int, Callable[[list[Piece], int], list[Piece]]]] = [
        (5, lambda mine, e: _cut_surrounding(mine, e, lambda k: floors.get(k, 0), "the far half of the text",
                                             reason, dropped)),
        (4, lambda mine, e: _give(mine, least, e, reason, dropped)),
        (5, lambda mine, e: _cut_surrounding(mine, e, lambda k: 0, "the text", reason, dropped)),
        (2, lambda mine, e: _give(mine, [p for p in mine if p.kind != "project"][::-1], e - _session_tokens(out[5]),
                                  reason, dropped)),
        (4, lambda mine, e: _give(mine, rest, e, reason, dropped)),
        (5, lambda mine, e: _give(mine, giveway.session(mine), e, reason, dropped)),
        (4, lambda mine, e: _give(mine, last, e, reason, dropped)),
    ]
    for layer, stage in stages:
        if excess <= 0:
            break
        before = _total(out[layer])
        out[layer] = stage(out[layer], excess)
        excess -= before - _total(out[layer])
    return out
