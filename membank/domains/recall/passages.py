"""The manuscript passages a preview's query finds (recall.md, What the search covers): the bank's search
reaches the manuscript as it reaches the cards, spoiler-safe at the preview's document. Ranked by the
manuscript's own search (`manuscript:search`, docs/manuscript.md); listed, never injected by the preview
(an assembly takes passages with `recall: k`)."""

from __future__ import annotations

from typing import Any

from ..contract import Bank

PASSAGES_SHOWN = 3  # the most passages a preview lists


def before_of(document: str | None, known: bool) -> str | None:
    """The story position a preview's passages must lie strictly before: its document's start; None (no
    passage) without a document, or with one the story order does not hold, where every passage could be
    a spoiler, as every memory tied to the story is left out there (context.md)."""
    return document if document is not None and known else None


def search(bank: Bank, query_text: str, document: str | None, windows: bool,
           k: int = PASSAGES_SHOWN) -> list[dict[str, Any]]:
    """The k passages most relevant to the query from before `document`, best first, each cited
    `source:line` (`manuscript:search`'s items). `windows`: whether the preview's memories' side embedded
    the query with the strong model (a semantic preview), the one case the strong windows may rank."""
    from ..manuscript import search as manuscript  # at the call: a preview without a query never needs it
    from ..story.positions import story_order

    before = before_of(document, document is not None and story_order(bank).knows(document))
    if before is None or k <= 0 or not query_text.strip():
        return []
    # the strong windows rank when the preview's memories' side already embedded the query (the encoder
    # keeps it); a second embedding is never paid for here: else the static vectors, as for Layer 4's
    # recall, whatever the process's query cache holds (the same preview always ranks the same way)
    items, _ = manuscript.ranked(bank, query_text, before, None, k, embed=False, windows=windows)
    return manuscript.answered(items)
