"""How a card reads in the prompt: whole in Layer 2 (never its story-time state), and in Layer 4 with
its state, facets and relations at the story position, each value citing its source and line. Pure."""

from __future__ import annotations

import json
from typing import Any

from ..story.order import StoryOrder
from ..story.state import CardState, Relation, holds, state_at


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _head(card: dict[str, Any]) -> list[str]:
    lines = [f"#### {card['name']} ({card['kind']})", f"Source: {card['source']}"]
    if card.get("aliases"):
        lines.append("Also called: " + ", ".join(card["aliases"]))
    return lines


def standing(card: dict[str, Any]) -> str:
    """Layer 2: name, kind, aliases, summary and body; nothing that changes over story time."""
    lines = _head(card)
    if card.get("summary"):
        lines.append(f"Summary: {card['summary']}")
    if card.get("content"):
        lines += ["", card["content"]]
    return "\n".join(lines)


def _relation(r: Relation) -> str:
    arrow = "→" if r.direction == "out" else "←"
    span = "".join((f", since {r.since}" if r.since else "", f", until {r.until}" if r.until else ""))
    note = f": {r.note}" if r.note else ""
    return f"- {r.type} {arrow} {r.other}{span}{note} ({r.source}:{r.line})"


def at_position(card: dict[str, Any], relations: tuple[Relation, ...], order: StoryOrder,
                position: str | None, whole: bool) -> tuple[str, int, int]:
    """Layer 4: the card (whole, or only its state when Layer 2 holds the rest) as the story stands at
    `position`. Returns (text, progressions hidden, relations hidden)."""
    state: CardState = state_at(card, order, position)
    shown = [r for r in relations if holds(r, order, position)]
    lines = _head(card)
    if whole and card.get("summary"):
        lines.append(f"Summary: {card['summary']}")
    where = f" at {position}" if position is not None and order.knows(position) else ""
    if state.state is not None:
        lines.append(f"State{where}: {state.state.value} ({state.state.source}:{state.state.line})")
    for key, cited in state.facets.items():
        lines.append(f"{key}: {_value(cited.value)} ({cited.source}:{cited.line})")
    if shown:
        lines += ["Relations:", *(_relation(r) for r in shown)]
    if whole and card.get("content"):
        lines += ["", card["content"]]
    elif not whole:
        lines.append("(described under Project above)")
    return "\n".join(lines), state.hidden, len(relations) - len(shown)
