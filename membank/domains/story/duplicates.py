"""Near-duplicates (issue 33.6): two cards whose names or aliases overlap, two facts that say nearly the
same thing. The bible grows in one direction when nobody looks; `doctor` suggests merging them, each with
both sources. Pure: names and texts in, pairs out. Facts compare by their words (character trigrams,
NFKC and case folded) among those that begin or end alike, never by a model: doctor loads none."""

from __future__ import annotations

import re
from typing import Iterable

from .names import normalize

SIMILAR = 0.8  # the share of trigrams two facts have in common (Jaccard) to be near-duplicates
EDGE = 12  # the characters at either end that pick the facts compared
COMMON = 50  # compared within one bucket of alike ends, at most
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


def _flat(text: str) -> str:
    return _SPACE.sub(" ", normalize(text)).strip()


def _grams(flat: str) -> frozenset[str]:
    return frozenset([flat[i:i + 3] for i in range(max(1, len(flat) - 2))])


def similar_texts(texts: dict[str, str], threshold: float = SIMILAR) -> list[tuple[str, str, float]]:
    """Each pair of ids whose texts share at least `threshold` of their trigrams (Jaccard), by id. Only
    texts that begin or end alike (their first or last EDGE characters) are compared: a fact written twice
    keeps one end when it is edited, and thousands of facts are not n² comparisons."""
    flats = {i: _flat(t) for i, t in texts.items() if t and t.strip()}
    buckets: dict[tuple[int, str], list[str]] = {}
    for i in sorted(flats):
        flat = flats[i]
        buckets.setdefault((0, flat[:EDGE]), []).append(i)
        buckets.setdefault((1, flat[-EDGE:]), []).append(i)
    pairs: set[tuple[str, str]] = set()
    for ids in buckets.values():
        for n, a in enumerate(ids[:COMMON]):
            for b in ids[n + 1:COMMON]:
                pairs.add((a, b))
    grams: dict[str, frozenset[str]] = {}
    out = []
    for a, b in sorted(pairs):
        la, lb = len(flats[a]), len(flats[b])
        if min(la, lb) < threshold * max(la, lb):
            continue  # too different in length to share that much
        ga = grams.get(a) or grams.setdefault(a, _grams(flats[a]))
        gb = grams.get(b) or grams.setdefault(b, _grams(flats[b]))
        score = len(ga & gb) / len(ga | gb)
        if score >= threshold:
            out.append((a, b, round(score, 2)))
    return out
