"""The bench's row for `manuscript:search` ranked by the strong tier's windows (docs/manuscript.md): the
manuscript of the manuscript rows, its windows filled, every query embedded by the real strong model.

Filling every window for real takes minutes at 1,000,000 code points, so the run embeds the windows of a
few passages for real and gives every other window those vectors in turn, recorded under the real
model's name (as strongtier.py fills memories): a search then pays for exactly what it pays for on a
filled manuscript (the query embedded, every window scanned, the fusion); only which passages come first
is not what a real fill would give."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from ...index import strongload
from ...index.store import reading
from .rows import Row, say

TARGET_MS = 15.0
REAL = 8  # passages whose windows the real model embeds (~60-100 windows)


def manuscript_strong_row(bank: Any, size: int, queries: tuple[str, ...], reps: int, chosen: str | None,
                          rng: random.Random, quiet: bool) -> Row:
    """`manuscript:search` with `before`, the strong tier on and every query embedded (the query cache off:
    a cache hit is not what a new question costs). `chosen`: the strong encoder the run was started with."""
    row = Row("manuscript_search_strong", "manuscript:search with `before`, strong windows (query embedding "
              "included)", "ms", size, target=TARGET_MS, target_text=f"p95 ≤ {TARGET_MS:g} ms")
    bank.memo[strongload.MEMO] = handle = strongload.StrongHandle()  # the static rows' handle said `off`
    previous = os.environ.get(strongload.ENV)
    _choose(chosen)  # read once, at the load
    try:
        encoder = handle.get()
    finally:
        _choose(previous)
    if encoder is None:
        row.note = f"not measured: {handle.why() or 'the strong model cannot run here'}"
        return row
    say(quiet, f"manuscript: filling the strong windows ({REAL} passages embedded by {encoder.name})")
    real, given = _fill(bank, encoder)
    remembered, encoder.cache.size = encoder.cache.size, 0
    encoder.cache.clear()
    try:
        side = _side(bank, queries[0])
        for i in range(reps):
            before = f"chapters/ch{rng.randint(1, 100):03d}.md"
            t = time.perf_counter()
            bank.search_manuscript(query_text=queries[i % len(queries)], before=before)
            row.samples.append((time.perf_counter() - t) * 1000)
    finally:
        encoder.cache.size = remembered
    row.note = (f"{real} windows embedded by the real model, the other {given:,} given those vectors in turn (same "
                f"scan, same query cost; not a real fill's ranking); every query embedded (the query cache off); "
                f"ranked by the {side}")
    return row


def _choose(value: str | None) -> None:
    if value is None:
        os.environ.pop(strongload.ENV, None)
    else:
        os.environ[strongload.ENV] = value


def _fill(bank: Any, encoder: Any) -> tuple[int, int]:
    """Every passage given its windows: REAL passages' embedded for real, the rest those vectors in turn;
    (windows embedded, windows given)."""
    from ...domains.manuscript import strong

    with reading():
        rows = strong.pending(bank.index, REAL)
    made = strong.embed(encoder, rows) or []
    _put(bank, encoder, made)
    vectors = [v for _, _, vs in made for v in vs]
    given = 0
    while vectors:
        with reading():
            rows = strong.pending(bank.index, 500)
        if not rows:
            break
        batch = []
        for pid, digest, text in rows:
            n = len(strong.windows(text))
            batch.append((pid, digest, [vectors[(given + j) % len(vectors)] for j in range(n)]))
            given += n
        _put(bank, encoder, batch)
    return len(vectors), given


def _put(bank: Any, encoder: Any, rows: list[Any]) -> None:
    from ...domains.manuscript import strong

    with bank.write_lock, bank.index.transaction():
        strong.put(bank.index, encoder.name, rows)


def _side(bank: Any, query: str) -> str:
    """Which side ranked a search (its first item's reason says)."""
    items = bank.search_manuscript(query_text=query)["items"]
    if not items:
        return "(no item)"
    return "strong windows" if "strong vector" in items[0]["reason"] else "static vectors (the windows did not rank)"
