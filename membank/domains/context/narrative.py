"""Layer 4's narrative state (context.md `threads` and `scene`; story.md): the threads open at the
position, each citing its file; the scene's one line, and the cards of its POV and present characters
(reasons `POV`, `PRESENT`). Nothing of a later position: a thread opened later does not exist yet, a
scene is carried forward only, and without a known position there are none."""

from __future__ import annotations

from typing import Any

from ..contract import Bank
from ..story import factfiles, reveals, scenefiles, scenes, threadfiles
from ..story.cards import Catalog
from ..story.order import StoryOrder
from .activation import Found
from .layers import Piece


def thread_pieces(bank: Bank, order: StoryOrder, position: str | None) -> list[Piece]:
    """Layer 4's threads open at `position`, made once per answer of `threadfiles.open_at` (kept while
    the thread files and the story order hold: the same tuple again): a prompt with `threads` asks at the
    same few positions, and a story may hold dozens open. Pieces are frozen: shared by the prompts."""
    if position is None:
        return []
    items = threadfiles.open_at(bank, order, position)
    kept: dict[int, tuple[Any, list[Piece]]] = bank.memo.setdefault("context.threads", {})
    made = kept.get(id(items))
    if made is None or made[0] is not items:  # the tuple itself held: its id is never another's meanwhile
        pieces = []
        for item in items:
            note = f": {item['note']}" if item["note"] else ""
            text = f"{item['title']} (open since {item['opened']}){note}"
            pieces.append(Piece(4, "threads", "thread", text, item["id"], item["source"], item["line"],
                                reason="a thread open here"))
        if len(kept) >= 64:
            kept.clear()
        made = kept[id(items)] = (items, pieces)
    return list(made[1])


def scene(bank: Bank, cards: Catalog, order: StoryOrder, position: str | None, allowed: set[str],
          found: list[Found]) -> tuple[list[Piece], list[Found], dict[str, str]]:
    """The scene at `position`: its line for Layer 4, the cards found with the POV and present characters
    not found otherwise put first (POV first), and each such card's reason (`POV` / `PRESENT`)."""
    if position is None:
        return [], found, {}
    state = scenefiles.state_at(bank, order, position)
    line = scenes.line_of(state)
    if not line:
        return [], found, {}
    cite = state.get("present") or state.get("pov") or next(iter(state.values()))
    pieces = [Piece(4, "scene", "scene", line, None, cite["source"], cite["line"], reason="the scene here")]
    roles: dict[str, str] = {}
    names: list[tuple[str, str]] = []
    if state.get("pov"):
        names.append((str(state["pov"]["value"]), "POV"))
    names += [(str(n), "PRESENT") for n in (state.get("present") or {}).get("value") or []]
    have = {f.id for f in found}
    added: list[Found] = []
    for name, role in names:
        ids = cards.resolve(name)
        if len(ids) != 1 or ids[0] in have or ids[0] in roles or cards.sections.get(ids[0]) not in allowed:
            continue
        roles[ids[0]] = role
        added.append(Found(ids[0], cards.cards[ids[0]]["name"], name, "scene", 0, 0, 0))
    return pieces, added + found, roles


def card_reason(found: Found, roles: dict[str, str]) -> dict[str, Any]:
    """A card's reason in `items`: the match, and for a card the scene brought, `POV` or `PRESENT`."""
    reason = found.reason()
    if found.where == "scene" and found.id in roles:
        reason["reason"] = roles[found.id]
    return reason


def mark_unrevealed(bank: Bank, order: StoryOrder, position: str | None, pieces: list[Piece]) -> list[Piece]:
    """The pieces with each fact memory the reader is told only after `position` marked `(the reader does
    not know this yet)`, so the model does not narrate it (story.md, Reveals)."""
    ids = factfiles.unrevealed(bank.index, order, position)
    if not ids:
        return pieces
    return [Piece(p.layer, p.section, p.kind, f"{p.text}\n  {reveals.MARK}", p.id, p.source, p.line, p.reason, p.score)
            if p.layer == 4 and p.kind == "memory" and p.id in ids else p for p in pieces]
