"""`lastSeen` in kg:entity:list / kg:entity:get (docs/manuscript.md): the last position at or before `at`
where an entity is mentioned in the manuscript.

The mention index is the manuscript domain's (it reads the passages; domains/manuscript imports story, so
story cannot import it). The manuscript domain provides it here instead: its channel table registers a
provider, named lazily like a channel's handler, that answers card id -> the scenes it is mentioned in.
Without a provider (no manuscript domain loaded) nothing is seen. Pure apart from that call."""

from __future__ import annotations

from typing import Any, Callable

from ..contract import Bank, Lazy
from .order import StoryOrder

# card id -> [(document, scene number, scene label)] where the card is mentioned
Scenes = dict[str, list[tuple[str, int, str]]]
_providers: list[Lazy] = []


def provide(lazy: Lazy) -> None:
    """Register the function `(bank, catalog) -> Scenes` that knows the manuscript's mentions."""
    if lazy not in _providers:
        _providers.append(lazy)


def scenes(bank: Bank, cat: Any) -> Scenes:
    out: Scenes = {}
    for lazy in _providers:
        found: Callable[[Bank, Any], Scenes] = lazy.resolve()
        for card_id, places in found(bank, cat).items():
            out.setdefault(card_id, []).extend(places)
    return out


def position(order: StoryOrder, document: str, number: int, label: str) -> str:
    """`document#label`, or `document#n` where the label would name another scene (a repeated heading)."""
    if label.startswith("#") or order.scene_number(document, label) != number:
        return f"{document}#{number}"
    return f"{document}#{label}"


def last_seen(order: StoryOrder, places: list[tuple[str, int, str]], at: str | None) -> str | None:
    """The latest of `places` in story order at or before `at` (any, without `at`); a document the order
    does not hold is never seen."""
    limit = order.rank(at) if at is not None else None
    best: tuple[tuple[int, int], str, int, str] | None = None
    for document, number, label in places:
        if not order.knows(document):
            continue
        rank = (order.rank(document)[0], number)
        if limit is not None and rank > limit:
            continue
        if best is None or rank > best[0]:
            best = (rank, document, number, label)
    return None if best is None else position(order, best[1], best[2], best[3])
