"""State at a story position (story.md): a card's one-line state, its facets and its relations as
the story stands at P — never anything from later. Pure: a card's API record and the story order in,
cited values out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .order import StoryOrder

LINK = re.compile(r"\[\[([^\[\]\n|]+)(?:\|[^\[\]\n]*)?\]\]")  # [[Name]], or [[Name|the text shown]]


@dataclass(frozen=True)
class Cited:
    value: Any
    source: str
    line: int
    at: str | None = None  # the position it comes from (None: timeless)

    def to_api(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "line": self.line, "at": self.at}


@dataclass(frozen=True)
class Relation:
    other: str  # the `to` as written (on an incoming relation: the other card's name)
    type: str
    direction: str  # "out": written on this card; "in": written on the other card about this one
    since: str | None
    until: str | None
    note: str | None
    source: str
    line: int

    def to_api(self) -> dict[str, Any]:
        return {"other": self.other, "type": self.type, "direction": self.direction, "since": self.since,
                "until": self.until, "note": self.note, "source": self.source, "line": self.line}


@dataclass(frozen=True)
class CardState:
    state: Cited | None
    facets: dict[str, Cited] = field(default_factory=dict)
    hidden: int = 0  # progressions not reached yet at the position


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, (dict, list)) else str(value)


def progressions(card: dict[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
    """(at, progression, line) in the card's list order, then the top-level `state` + `state_at`
    (a progression at `state_at`); items without a usable `at` are left out (indexing warned)."""
    lines = card.get("lines", {}).get("progressions", [])
    out = []
    for i, item in enumerate(card.get("progressions") or []):
        at = _text(item.get("at"))
        if at:
            out.append((at.strip(), item, lines[i] if i < len(lines) else 1))
    if card.get("state") is not None and card.get("stateAt"):
        out.append((str(card["stateAt"]), {"state": card["state"]}, card.get("lines", {}).get("state", 1)))
    return out


def state_at(card: dict[str, Any], order: StoryOrder, position: str | None,
             items: list[tuple[str, dict[str, Any], int]] | None = None) -> CardState:
    """The last state reached at `position` and the facets merged from every progression reached
    (story order; the list order breaks ties). Without a known position, only a timeless `state`."""
    source = card["source"]
    last = None  # (state, line, at) of the last progression reached that sets one
    if card.get("state") is not None and not card.get("stateAt"):
        last = (card["state"], card.get("lines", {}).get("state", 1), None)
    known = position is not None and order.knows(position)
    items = progressions(card) if items is None else items  # a caller that has them already
    reached = reached_in_order(items, order, position) if known else []  # type: ignore[arg-type]
    facets: dict[str, tuple[Any, int, str]] = {}
    for at, item, line in reached:
        if item.get("state") is not None:
            last = (item["state"], line, at)
        for key, value in (item.get("set") or {}).items() if isinstance(item.get("set"), dict) else ():
            facets[str(key)] = (value, line, at)
    state = Cited(str(last[0]), source, last[1], last[2]) if last is not None else None
    return CardState(state, {k: Cited(value, source, line, at) for k, (value, line, at) in sorted(facets.items())},
                     len(items) - len(reached))


def reached_in_order(items: list[tuple[str, dict[str, Any], int]], order: StoryOrder, position: str
                     ) -> list[tuple[str, dict[str, Any], int]]:
    """The progressions of `items` reached at `position` (`order.reached`), in story order, the list order
    breaking ties: each position's rank asked once."""
    here, known = order.rank(position), len(order.positions)
    ranked = []
    for i, p in enumerate(items):
        rank = order.rank(p[0])
        if rank[0] < known and rank <= here:
            ranked.append((rank, i, p))
    ranked.sort()  # (rank, index) differ for any two: a progression itself is never compared
    return [p for _, _, p in ranked]


def outgoing(card: dict[str, Any]) -> list[Relation]:
    """The relations written on a card, with their lines (items without `to` are left out)."""
    lines = card.get("lines", {}).get("relations", [])
    out = []
    for i, item in enumerate(card.get("relations") or []):
        to = _text(item.get("to"))
        if not to or not to.strip():
            continue
        out.append(Relation(to.strip(), _text(item.get("type")) or "related", "out", _text(item.get("since")),
                            _text(item.get("until")), _text(item.get("note")), card["source"],
                            lines[i] if i < len(lines) else 1))
    return out


def links(card: dict[str, Any]) -> list[Relation]:
    """`[[Name]]` in a card's body: relations of type `mentions`, one per name (its first link)."""
    body = card.get("content") or ""
    first = (card.get("lines") or {}).get("body", 1)
    out: dict[str, Relation] = {}
    for m in LINK.finditer(body):
        name = m.group(1).strip()
        if name and name.casefold() not in out:
            out[name.casefold()] = Relation(name, "mentions", "out", None, None, None, card["source"],
                                            first + body.count("\n", 0, m.start()))
    return list(out.values())


def incoming(relation: Relation, writer: dict[str, Any]) -> Relation:
    """A relation `writer`'s card holds about another card, as that other card sees it."""
    return Relation(writer["name"], relation.type, "in", relation.since, relation.until, relation.note,
                    relation.source, relation.line)


def holds(relation: Relation, order: StoryOrder, position: str | None) -> bool:
    return order.holds(relation.since, relation.until, position)
