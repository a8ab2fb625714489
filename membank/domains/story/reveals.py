"""Reveals (story.md, Reveals): what the reader knows at a position. A fact memory may say where the reader
learns it (`revealed: chapters/ch09.md`) and the words that give it away (`keys`); one without `revealed`
is known from the start. Pure: facts in, what the reader knows and `BEFORE_REVEAL` out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .matching import Keyed, Matcher, normalize
from .order import StoryOrder

BEFORE_REVEAL = "BEFORE_REVEAL"
MARK = "(the reader does not know this yet)"


@dataclass(frozen=True)
class Fact:
    id: str
    content: str
    source: str
    since: str | None
    until: str | None
    revealed: str | None
    keys: tuple[str, ...]
    meta: dict[str, Any]  # the front matter keys membank does not read itself (subject, facet, value, …)


def _words(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return tuple(str(v).strip() for v in items if isinstance(v, (str, int, float)) and str(v).strip())


def of(record: dict[str, Any]) -> Fact:
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    revealed = meta.get("revealed")
    return Fact(record["id"], record.get("content") or "", record["source"], record.get("since"),
                record.get("until"), revealed.strip() if isinstance(revealed, str) and revealed.strip() else None,
                _words(meta.get("keys")), meta)


def known(fact: Fact, order: StoryOrder, at: str | None) -> bool:
    """Whether the reader knows `fact` at `at`: it has no `revealed`, or that position is reached (a
    position the order does not hold counts as after every known one: never known early)."""
    if fact.revealed is None:
        return True
    return at is not None and order.reached(fact.revealed, at)


def reader(facts: Iterable[Fact], order: StoryOrder, at: str) -> list[Fact]:
    """The facts valid at `at` that the reader knows there, in id order."""
    return sorted((f for f in facts if order.holds(f.since, f.until, at) and known(f, order, at)),
                  key=lambda f: f.id)


def matcher(facts: Iterable[Fact]) -> Matcher:
    """One matcher over the keys of every fact that has keys (a secret, or a fact revealed later)."""
    return Matcher.build(Keyed(f.id, f.keys[0], (), f.keys[1:]) for f in facts if f.keys)


def before_reveal(facts: dict[str, Fact], order: StoryOrder, at: str, hits: Iterable[tuple[str, str]]
                  ) -> list[tuple[Fact, str]]:
    """Each fact whose keys the passage at `at` uses (`hits`: fact id, the word) before the reader is told
    it, with the first word found; in id order."""
    first: dict[str, str] = {}
    for fact_id, word in hits:
        first.setdefault(fact_id, word)
    return [(facts[i], first[i]) for i in sorted(first) if i in facts and not known(facts[i], order, at)]


def holds(knows: Any, fact: Fact) -> bool:
    """Whether a `knows` facet holds `fact`: its id, or one of its keys (compared as names are)."""
    items = knows if isinstance(knows, list) else [knows] if knows is not None else []
    said = {normalize(str(k).strip()) for k in items}
    return normalize(fact.id) in said or any(normalize(k) in said for k in fact.keys)
