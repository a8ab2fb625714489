"""A census of the memories a preview may inject: how many, and the fewest tokens any of them takes.

The eligible memories for a document are the shared ones (every scope but `document`) and that
document's own (`scope: document` naming it). Counting the shared ones scans the whole of
`entries_eligible`, so recall/queries.py counts them once per view of the index and hidden set, and
a document's own (a few rows, by `entries_document`) at each call; these pure rules put the two
together and say what the budgets can still take."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Census:
    count: int  # eligible memories
    fewest: int | None  # the fewest tokens any of them takes; None when there is none


NOBODY = Census(0, None)


def of_row(count: int | None, fewest: int | None) -> Census:
    """From SQL's `count(*), min(tokens)`."""
    return Census(int(count or 0), None if fewest is None else int(fewest))


def combine(shared: Census, own: Census) -> Census:
    """The shared memories and a document's own are disjoint: counts add, the fewest is the smaller."""
    fewest = [f for f in (shared.fewest, own.fewest) if f is not None]
    return Census(shared.count + own.count, min(fewest) if fewest else None)


def may_fit(census: Census, left: int) -> bool:
    """Whether any eligible memory is small enough for `left` tokens: when none is, nothing past the
    head of the order can fit, and the scan for later ones is skipped."""
    return census.fewest is not None and census.fewest <= left
