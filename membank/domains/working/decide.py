"""Working memory's decisions, pure: an entry's identity, which entries a new one evicts under the
token cap (lowest importance first, then the weakest relation to the focus, then the least recently
added), how related two texts are without a model, and which signals a session's end archives."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from ...kernel.text import fts_terms
from ..learning.decisions import normalize

SIGNAL = "signal"  # the one kind whose entries can reach the learning threshold and be archived
ARCHIVE_TAG = "working-memory"  # on every episode a session's end archives, with the entry's kind
SUMMARY_CHARS = 2000  # an archived episode's summary, as `memory:episode:record` bounds it
MAX_SESSIONS = 100  # open sessions per project: each holds up to the cap, all of it in memory


@dataclass(frozen=True)
class Held:
    """What eviction needs to know of an entry."""

    id: str
    tokens: int
    importance: float
    touched: int  # when it was last added (a repeat refreshes it): larger is more recent


def kind_of(kind: str) -> str:
    """A kind as membank keeps it: trimmed and lower-cased (`Signal` is `signal`)."""
    return kind.strip().lower()


def key(kind: str, content: str) -> tuple[str, str]:
    """An entry's identity in its session: its kind and its text normalized as learning's signals are
    (NFKC, case-folded, whitespace collapsed). Adding the same again refreshes the entry it names."""
    return kind_of(kind), normalize(content)


def fits(tokens: int, cap: int) -> bool:
    """Whether an entry can be held at all: one alone over the cap is refused, never kept alone."""
    return tokens <= cap


def eviction_order(held: Iterable[Held], relation: Mapping[str, float]) -> list[Held]:
    """Who goes first: the lowest importance; among equal importance the least related to the current
    focus (`relation` by id, 0 for one not in it, so without a focus this step decides nothing); then
    the least recently added; then the id, so the order is total."""
    return sorted(held, key=lambda h: (h.importance, relation.get(h.id, 0.0), h.touched, h.id))


def victims(held: Iterable[Held], incoming: int, cap: int, relation: Mapping[str, float]) -> list[Held]:
    """The entries to evict, in order, so that `incoming` tokens fit beside the rest within `cap`: taken
    from the front of `eviction_order` until the total fits (the newcomer itself is never among them).
    Nothing when it fits already. `incoming` must fit alone (`fits`)."""
    if not fits(incoming, cap):
        raise ValueError(f"{incoming} tokens can never fit within {cap}")
    entries = list(held)
    total = sum(h.tokens for h in entries) + incoming
    out: list[Held] = []
    if total <= cap:
        return out
    for h in eviction_order(entries, relation):
        out.append(h)
        total -= h.tokens
        if total <= cap:
            break
    return out


def words(text: str) -> frozenset[str]:
    """The words a text is compared by without a model: any word but English stopwords, any pair of
    adjacent CJK characters (a lone one stands for itself), case-folded (the terms of a search)."""
    return frozenset(term.casefold() for term in fts_terms(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """How related two word sets are, 0..1: the cosine of their sets (shared words over the geometric
    mean of their sizes), the same shape as the model's cosine; 0 when either has no words."""
    if not a or not b:
        return 0.0
    return round(len(a & b) / math.sqrt(len(a) * len(b)), 6)


def reached(kind: str, count: int, threshold: int) -> bool:
    """A signal that reached the learning threshold: an entry of kind `signal` added at least
    `threshold` (`memory.preferenceLearningThreshold`) times in its session. A session's end archives
    these as episodes and drops every other entry."""
    return kind == SIGNAL and count >= threshold


def immediate(held: Iterable[Held], budget: int) -> list[Held]:
    """The entries a prompt's "this session" block holds (context.md, Working memory): the most important
    first (then the most recently added, then by id), within `budget` tokens; one too large for what is
    left is skipped and a smaller later one may still fit."""
    order = sorted(held, key=lambda h: (-h.importance, -h.touched, h.id))
    out: list[Held] = []
    used = 0
    for h in order:
        if used + h.tokens <= budget:
            out.append(h)
            used += h.tokens
    return out
