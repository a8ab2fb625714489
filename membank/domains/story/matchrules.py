"""What a matcher decides once it knows where the key words are (story.md, Matching): what one folded key
word stands for, which of a card's matches a scan keeps, and whether a card's secondary logic holds. Pure."""

from __future__ import annotations

from typing import NamedTuple, Protocol, TypeVar

LOGICS = ("and_any", "and_all", "not_any", "not_all")
Payload = tuple[tuple[str, str, str], ...]  # (card, role, key as written) for one folded key word


class _Match(Protocol):  # matching.Match, as a scan keeps it
    @property
    def offset(self) -> int: ...

    @property
    def length(self) -> int: ...

    @property
    def key(self) -> str: ...


class _Keyed(Protocol):  # matching.Keyed, as the logics read it
    @property
    def secondary_keys(self) -> tuple[str, ...]: ...

    @property
    def logic(self) -> str: ...


M = TypeVar("M", bound=_Match)


class Roles(NamedTuple):
    """What one literal key word stands for, sorted out once per generation of the cards."""

    primary: tuple[str, ...]  # the cards it is a name, alias or key of
    named: tuple[tuple[str, str], ...]  # those, with the key as the card writes it
    excludes: tuple[str, ...]  # the cards it is an exclude key of
    secondary: tuple[tuple[str, str], ...]  # (card, key as written) it is a secondary key of
    conditional: tuple[str, ...]  # its primary cards that have secondary keys (their logic decides)
    written: tuple[str, ...]  # `named`'s keys as written, in `primary`'s order

    @classmethod
    def of(cls, payload: Payload, conditional: frozenset[str]) -> "Roles":
        firsts: dict[str, str] = {}  # one per card: a name and a key of one word (`Castle`, `castle`) are one
        for c, role, k in payload:
            if role == "primary":
                firsts.setdefault(c, k)
        named = tuple(firsts.items())
        primary = tuple(firsts)
        return cls(primary, named, tuple(c for c, role, _ in payload if role == "exclude"),
                   tuple((c, k) for c, role, k in payload if role == "secondary"),
                   tuple(c for c in primary if c in conditional), tuple(firsts.values()))


def best_of(matches: list[M], keep: str) -> list[M]:
    """The one match `keep` prefers, in `activated`'s order (a tie: the first by offset, longer, key)."""
    matches = sorted(set(matches), key=lambda m: (m.offset, -m.length, m.key))
    best = matches[0]
    for m in matches[1:]:
        if better(keep, m.offset, m.offset + m.length, best.offset, best.offset + best.length):
            best = m
    return [best]


def better(keep: str, a: int, b: int, a0: int, b0: int) -> bool:
    """Whether the span a..b beats a0..b0: it starts first (`first`) or ends last (`last`), or it
    is longer where they tie."""
    if keep == "first":
        return a < a0 or a == a0 and b > b0
    return b > b0 or b == b0 and a < a0


def secondary_ok(card: _Keyed, present: set[str]) -> bool:
    """Whether the card's secondary logic holds, given which of its secondary keys (as written) occur."""
    wanted = [k for k in dict.fromkeys(card.secondary_keys) if k and k.strip()]
    hits = sum(1 for k in wanted if k in present)
    logic = card.logic if card.logic in LOGICS else "and_any"
    if logic == "and_any":
        return hits > 0
    if logic == "and_all":
        return hits == len(wanted)
    if logic == "not_any":
        return hits == 0
    return hits < len(wanted)  # not_all
