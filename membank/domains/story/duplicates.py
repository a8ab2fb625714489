"""Near-duplicates (issue 33.6): two cards whose names or aliases overlap, two facts that say nearly the
same thing. The bible grows in one direction when nobody looks; `doctor` suggests merging them, each with
both sources. Pure: names and texts in, pairs out. Facts compare by their words (character trigrams,
NFKC and case folded), never by a model: doctor loads none."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from .names import normalize

SIMILAR = 0.8  # the share of trigrams two facts have in common (Jaccard) to be near-duplicates
COMMON = 20  # a trigram in more facts than this tells nothing about a pair
_SPACE = re.compile(r"\s+")


def shared_names(cards: Iterable[tuple[str, Iterable[str]]]) -> list[tuple[str, tuple[str, ...]]]:
    """Each name or alias (as the first card writes it) that two or more cards answer to, with the ids of
    those cards in order; by name."""
    seen: dict[str, list[str]] = {}
    written: dict[str, str] = {}
    for card_id, names in cards:
        for name in dict.fromkeys(n.strip() for n in names if n and n.strip()):
            key = normalize(name)
            ids = seen.setdefault(key, [])
            written.setdefault(key, name)
            if card_id not in ids:
                ids.append(card_id)
    return sorted(((written[k], tuple(sorted(v))) for k, v in seen.items() if len(v) > 1), key=lambda x: x[0])


def _grams(text: str) -> frozenset[str]:
    flat = _SPACE.sub(" ", normalize(text)).strip()
    return frozenset(flat[i:i + 3] for i in range(max(1, len(flat) - 2)))


def similar_texts(texts: dict[str, str], threshold: float = SIMILAR) -> list[tuple[str, str, float]]:
    """Each pair of ids whose texts share at least `threshold` of their trigrams (Jaccard), by id. Only
    pairs sharing an uncommon trigram are compared, so a bible of thousands of facts is not n²."""
    grams = {i: _grams(t) for i, t in texts.items() if t and t.strip()}
    counts = Counter(g for gs in grams.values() for g in gs)
    by_gram: dict[str, list[str]] = {}
    for i in sorted(grams):
        for g in grams[i]:
            if counts[g] <= COMMON:
                by_gram.setdefault(g, []).append(i)
    pairs: set[tuple[str, str]] = set()
    for ids in by_gram.values():
        for n, a in enumerate(ids):
            for b in ids[n + 1:]:
                pairs.add((a, b))
    out = []
    for a, b in sorted(pairs):
        ga, gb = grams[a], grams[b]
        score = len(ga & gb) / len(ga | gb)
        if score >= threshold:
            out.append((a, b, round(score, 2)))
    return out
