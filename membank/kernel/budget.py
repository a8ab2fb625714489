"""Fitting items into a prompt's budgets: the one greedy rule every caller uses."""

from __future__ import annotations

from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def fit(candidates: Iterable[tuple[T, int]], max_items: int, token_budget: int) -> Iterator[tuple[T, int]]:
    """The candidates, in order, that fit: at most `max_items`, within `token_budget` tokens.

    An item too large for what is left is skipped and smaller later ones may still fit,
    so one long item never starves the rest."""
    if max_items <= 0:
        return
    used = kept = 0
    for item, tokens in candidates:
        if used + tokens > token_budget:
            continue
        yield item, tokens
        used += tokens
        kept += 1
        if kept == max_items:
            return
