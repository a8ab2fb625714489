"""`context_rules.recall: k` (docs/manuscript.md): the k passages most relevant to this moment from before the
story position, for Layer 4. The position is the scene the selection starts in (a passage of that scene
or later is never a candidate), and a passage already in Layer 5's text around the selection is left out."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ..contract import Bank
from ..story.positions import story_order
from .search import ranked_items
from .words import generation_memo

EXCERPT_PROBE = 40  # code points of a passage looked for in the surrounding text


@dataclass(frozen=True)
class Recalled:
    source: str
    scene: str
    line: int
    text: str  # as Layer 4 shows it: the passage under a line citing it
    score: float
    reason: str


def scene_at(bank: Bank, document: str, offset: int | None) -> int | None:
    """The number of the scene holding code-point `offset` of `document` (None without passages)."""
    if offset is None:
        return None
    starts, numbers = _scenes(bank, document)
    if not starts:
        return None
    at = bisect_right(starts, offset)  # the passage starting last at or before `offset`, else the first scene
    return numbers[at - 1] if at else min(numbers)


def _scenes(bank: Bank, document: str) -> tuple[list[int], list[int]]:
    """`document`'s passages' starts, in order, and each one's scene number: kept per generation of the
    passages (every prompt asks for the scene its selection is in)."""
    kept = generation_memo(bank.index).setdefault("scene_starts", {})
    found = kept.get(document)
    if found is None:
        rows = bank.index.db.execute("SELECT start, scene_no FROM manuscript_passages WHERE document = ?"
                                     " ORDER BY start, id", (document,)).fetchall()
        found = ([int(a) for a, _ in rows], [int(n) for _, n in rows])
        if len(kept) >= SPANS_KEPT:
            kept.clear()
        kept[document] = found
    return found  # type: ignore[no-any-return]


def overlapping(bank: Bank, document: str, window: tuple[int, int]) -> frozenset[int]:
    """The ids of `document`'s passages overlapping code points `window` (start, stop), from its passages'
    spans kept per generation of the passages (a prompt asks for its document's every time)."""
    import numpy as np

    kept = generation_memo(bank.index).setdefault("spans", {})
    spans = kept.get(document)
    if spans is None:
        rows = bank.index.db.execute("SELECT id, start, stop FROM manuscript_passages WHERE document = ? ORDER BY id",
                                     (document,)).fetchall()
        spans = np.asarray(rows, dtype=np.int64).reshape(-1, 3).T
        if len(kept) >= SPANS_KEPT:
            kept.clear()
        kept[document] = spans
    ids, start, stop = spans
    return frozenset(ids[(start < window[1]) & (stop > window[0])].tolist())


SPANS_KEPT = 64  # documents whose passages' spans are kept per generation


def shown(text: str, surrounding: str) -> bool:
    """Whether a passage is already in the text around the selection (whole, or its opening or ending)."""
    body = text.strip()
    if not body or not surrounding:
        return False
    probes = {body} if len(body) <= EXCERPT_PROBE else {body[:EXCERPT_PROBE], body[-EXCERPT_PROBE:]}
    return any(p in surrounding for p in probes)


def recall(bank: Bank, before: str, query: str, k: int, window: tuple[int, int] | None,
           surrounding: str, windows: bool = True) -> list[Recalled]:
    """The k best passages strictly before the story position `before` (its document's scene where the
    selection is), none overlapping `window` (code-point offsets of Layer 5's text in that document) nor
    shown in `surrounding`. `windows` False: the static vectors rank, whatever the encoder keeps (an assemble
    whose memories' side does not embed the query: which vectors rank is never left to what ran before)."""
    if k <= 0 or not query.strip() or not story_order(bank).knows(before):
        return []  # a document outside the story order is after every chapter: recall nothing, hide nothing less
    document = story_order(bank).locate(before)[0]
    exclude = overlapping(bank, document, window) if window is not None else frozenset()
    # the strong windows rank when the memories' side of this assemble already embedded the query (the
    # encoder keeps it); an embedding of its own (~10-25 ms) is never paid for here: else the static vectors
    out: list[Recalled] = []
    for item in ranked_items(bank, query, before, k + 8, exclude, windows, k):  # the passages read k at a time
        if shown(item["text"], surrounding):
            continue
        heading = f"({item['source']}:{item['line']}, {item['scene']})"
        out.append(Recalled(item["source"], item["scene"], item["line"], f"{heading}\n{item['text']}",
                            item["score"], item["reason"]))
        if len(out) == k:
            break
    return out
