"""Layer 4's narrative state (context.md `threads` and `scene`; story.md): the threads open at the
position, each citing its file. Nothing of a later position: a thread opened later does not exist yet,
and without a known position there are none."""

from __future__ import annotations

from ..contract import Bank
from ..story import threadfiles, threads
from ..story.order import StoryOrder
from .layers import Piece


def thread_pieces(bank: Bank, order: StoryOrder, position: str | None) -> list[Piece]:
    if position is None:
        return []
    found, _ = threadfiles.load(bank)
    out = []
    for item in threads.at_position(found, order, position, "open"):
        note = f": {item['note']}" if item["note"] else ""
        text = f"{item['title']} (open since {item['opened']}){note}"
        out.append(Piece(4, "threads", "thread", text, item["id"], item["source"], item["line"],
                         reason="a thread open here"))
    return out
