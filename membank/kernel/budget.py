"""Fitting items into a prompt's budgets: the one greedy rule every caller uses."""

from __future__ import annotations

from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def fit(candidates: Iterable[tuple[T, int]], max_items: int, token_budget: int,
        floor: int = 0) -> Iterator[tuple[T, int]]:
    """The candidates, in order, that fit: at most `max_items`, within `token_budget` tokens.

    An item too large for what is left is skipped and smaller later ones may still fit,
    so one long item never starves the rest. `floor`: no candidate takes fewer tokens, so once
    less than that is left nothing more is read from `candidates` (a lazy query stops there)."""
    if max_items <= 0 or token_budget < floor:
        return
    used = kept = 0
    for item, tokens in candidates:
        if used + tokens > token_budget:
            continue
        yield item, tokens
        used += tokens
        kept += 1
        if kept == max_items or token_budget - used < floor:
            return
