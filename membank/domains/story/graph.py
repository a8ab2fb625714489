"""The story graph (story.md): every live card an entity, its relations (front matter and `[[Name]]`
links) seen from both ends, and what holds at a story position. Pure over the card catalog and the
story order: the channels do the reading."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...kernel import errors
from ...kernel.errors import MembankError
from .cards import Catalog
from .order import StoryOrder
from .state import Relation, holds, progressions, state_at

MAX_DEPTH = 3


@dataclass(frozen=True)
class Edge:
    """A relation as the graph answers it: from one entity to another (or to a name no card has)."""

    source_id: str  # the entity it is seen from
    target_id: str | None  # None: `to` names no card
    target: str  # the name as written (or the other card's name)
    relation: Relation
    depth: int = 1

    def to_api(self) -> dict[str, Any]:
        r = self.relation
        return {"from": self.source_id, "to": self.target_id, "name": self.target, "type": r.type,
                "direction": r.direction, "since": r.since, "until": r.until, "note": r.note,
                "source": r.source, "line": r.line, "depth": self.depth}


def find(catalog: Catalog, id_: str | None = None, name: str | None = None) -> dict[str, Any]:
    """The card with this id, or with this name or alias; NOT_FOUND, or CONFLICT with the candidates."""
    if id_ is not None:
        card = catalog.cards.get(id_)
        if card is None:
            raise MembankError(errors.NOT_FOUND, f"no character or world entry has the id `{id_}`",
                               {"field": "id"})
        return card  # type: ignore[no-any-return]
    if name is None or not name.strip():
        raise errors.invalid("id", "give `id` or `name`")
    found = catalog.resolve(name)
    if not found:
        raise MembankError(errors.NOT_FOUND, f"no character or world entry is called `{name}`", {"field": "name"})
    if len(found) > 1:
        candidates = [{"id": c, "name": catalog.cards[c]["name"], "source": catalog.cards[c]["source"]} for c in found]
        raise MembankError(errors.CONFLICT, f"`{name}` names {len(found)} entries; ask by id",
                           {"field": "name", "candidates": candidates})
    return catalog.cards[found[0]]  # type: ignore[no-any-return]


def edges(catalog: Catalog, card_id: str, order: StoryOrder, at: str | None) -> list[Edge]:
    """The relations of an entity that hold at `at` (every one without `at`), both directions."""
    out = []
    for rel in catalog.relations.get(card_id, ()):
        if at is not None and not holds(rel, order, at):
            continue
        if rel.direction == "in":
            target = catalog.by_source.get(rel.source)
        else:
            ids = catalog.resolve(rel.other)
            target = ids[0] if len(ids) == 1 else None
        out.append(Edge(card_id, target, rel.other, rel))
    return out


def walk(catalog: Catalog, card_id: str, order: StoryOrder, at: str | None, depth: int) -> list[Edge]:
    """Relations out from an entity to `depth` (1-3), breadth first. No loops: each entity's relations
    are followed once, and each relation (seen from both ends) is listed once, at its nearest depth."""
    listed: set[tuple[str, int]] = set()
    expanded = {card_id}
    frontier = [card_id]
    out: list[Edge] = []
    for level in range(1, max(1, min(depth, MAX_DEPTH)) + 1):
        nxt: list[str] = []
        for cid in frontier:
            for edge in edges(catalog, cid, order, at):
                where = (edge.relation.source, edge.relation.line)
                if where in listed:
                    continue
                listed.add(where)
                out.append(Edge(edge.source_id, edge.target_id, edge.target, edge.relation, level))
                if edge.target_id is not None and edge.target_id not in expanded:
                    expanded.add(edge.target_id)
                    nxt.append(edge.target_id)
        frontier = nxt
    return out


def entity(card: dict[str, Any], catalog: Catalog, order: StoryOrder, at: str | None, whole: bool = False,
           relations: bool = False, items: list[tuple[str, dict[str, Any], int]] | None = None) -> dict[str, Any]:
    """An entity as the graph answers it at `at`: its state and facets there, (`relations`) the
    relations that hold, and (`whole`) those and the progressions reached and its timeline; without
    `at`, as the story stands at its end. `items`: the card's `progressions`, for a caller that has them."""
    end = at if at is not None else (order.positions[-1] if order.positions else None)
    items = progressions(card) if items is None else items
    current = state_at(card, order, end, items)
    lines = card.get("lines") or {}
    out: dict[str, Any] = {
        "id": card["id"], "name": card["name"], "kind": card["kind"], "section": card["section"],
        "aliases": list(card.get("aliases") or []), "summary": card.get("summary") or "",
        "source": card["source"], "line": lines.get("name", 1),
        "introduced": None if not card.get("introduced") else
        {"value": card["introduced"], "source": card["source"], "line": lines.get("introduced", 1)},
        "state": current.state.to_api() if current.state else None,
        "facets": {k: v.to_api() for k, v in current.facets.items()},
        "hidden": 0,
    }
    shown = edges(catalog, card["id"], order, at)
    if at is not None:  # at a known position, the progressions `state_at` did not reach
        unreached = current.hidden if order.knows(at) else sum(1 for p in items if not order.reached(p[0], at))
        out["hidden"] = unreached + len(catalog.relations.get(card["id"], ())) - len(shown)
    if whole or relations:
        out["relations"] = [e.to_api() for e in shown]
    if whole:  # the progressions reached (at the end of the story, every one), in story order
        reached = items if at is None else [p for p in items if order.reached(p[0], at)]
        out["progressions"] = [{"at": p, "state": None if item.get("state") is None else str(item["state"]),
                                "set": item.get("set") if isinstance(item.get("set"), dict) else {},
                                "source": card["source"], "line": line}
                               for p, item, line in sorted(reached, key=lambda p: (order.rank(p[0]), items.index(p)))]
        out["timeline"] = timeline(card, catalog, order, at)
    return out


def fresh_entity(view: dict[str, Any]) -> dict[str, Any]:
    """A copy of an `entity` view with containers of its own (the values in them are shared, as
    `entity` shares them with the card): a caller may change it without changing a kept one."""
    out = view.copy()
    out["aliases"] = view["aliases"].copy()
    introduced, state, facets = view["introduced"], view["state"], view["facets"]
    if introduced is not None:
        out["introduced"] = introduced.copy()
    if state is not None:
        out["state"] = state.copy()
    out["facets"] = {k: v.copy() for k, v in facets.items()} if facets else {}  # most have none: no comprehension
    relations = view.get("relations")
    if relations is not None:
        out["relations"] = [r.copy() for r in relations] if relations else []
    if "progressions" in view:
        out["progressions"] = [{**p, "set": dict(p["set"])} for p in view["progressions"]]
    if "timeline" in view:
        out["timeline"] = list(view["timeline"])
    return out


def timeline(card: dict[str, Any], catalog: Catalog, order: StoryOrder, at: str | None) -> list[str]:
    """The positions where something about the card happens (its entrance, a progression, a relation
    beginning or ending), in story order, up to `at`."""
    found = {p for p, _, _ in progressions(card)}
    if card.get("introduced"):
        found.add(card["introduced"])
    for rel in catalog.relations.get(card["id"], ()):
        found.update(p for p in (rel.since, rel.until) if p)
    if at is not None:
        found = {p for p in found if order.reached(p, at)}
    return sorted(found, key=lambda p: (order.rank(p), p))
