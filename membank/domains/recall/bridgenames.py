"""The names memories hold as the cards change (the name bridge, bridgebank.py): pure, no I/O.

A memory's names are the cards whose name or alias its text holds (story/matching.py's rules), and each
card's word is found or not on its own: no other card's word hides or adds one. So when the cards change,
a memory's names are its names before, less the cards whose name or aliases changed (or that came or went),
plus those of them a matcher of their names alone finds in it. And a key word occurs in the matcher's
folded text (`folded_text`) wherever the matcher finds it, a Latin word on its boundaries or CJK anywhere:
only the texts whose folded form holds one of the changed words need that matcher. A card edit that
changes no name or alias (summary, body, state) changes nothing here."""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Mapping, TypeVar

from ..story.matching import Keyed, Matcher, is_regex_key, normalize

K = TypeVar("K", bound=Hashable)
Spelled = dict[str, tuple[str, tuple[str, ...]]]  # card -> its name and aliases, as the bridge matches them


def named(matcher: Matcher, text: str) -> frozenset[str]:
    """The cards whose name or alias `text` holds, for a matcher of names and aliases alone."""
    spans, _ = matcher.spans(text, "first")  # one span per word, with the cards it names (no keys here)
    return frozenset(card for _, _, cards in spans for card in cards)


def rematched(last: Spelled, keyed: Iterable[Keyed], names: Mapping[K, frozenset[str]], folded: Mapping[K, str],
              read: Callable[[list[K]], Iterable[tuple[K, str]]]) -> dict[K, frozenset[str]]:
    """`names`, matched with the cards spelled `last`, for the cards `keyed` now: the changed cards matched
    again in the texts `read` gives of the keys whose `folded` text may hold one of their words (a key
    `read` does not give, a version edited away since, is left out)."""
    now = {k.id: k for k in keyed}
    gone = changed(last, spelled(now.values()))
    if not gone:
        return dict(names)
    fresh = [Keyed(now[c].id, now[c].name, now[c].aliases) for c in sorted(gone) if c in now]
    picked = candidates(names, folded, words(fresh)) if fresh else []
    small = Matcher.build(fresh)
    found = {key: named(small, text) for key, text in read(picked)} if picked else {}
    out = renamed(names, gone, found)
    for key in picked:
        if key not in found:
            del out[key]
    return out


def spelled(keyed: Iterable[Keyed]) -> Spelled:
    return {k.id: (k.name, tuple(k.aliases)) for k in keyed}


def changed(before: Spelled, after: Spelled) -> frozenset[str]:
    """The cards whose name or aliases differ between `before` and `after`, and those only one holds."""
    return frozenset(c for c in before.keys() | after.keys() if before.get(c) != after.get(c))


def words(keyed: Iterable[Keyed]) -> list[str] | None:
    """The folded words a matcher of these cards' names and aliases looks for (as `Matcher.build` folds
    them); None when one is a /regex/ (no text can be passed over without running it)."""
    out: dict[str, None] = {}
    for card in keyed:
        for key in (card.name, *card.aliases):
            if not key or not key.strip():
                continue
            if is_regex_key(key):
                return None
            out[normalize(key.strip())] = None
    return [w for w in out if w]


def candidates(keys: Iterable[K], folded: Mapping[K, str], found: list[str] | None) -> list[K]:
    """The `keys` whose folded text may hold one of the words `found` (every key when `found` is None,
    and a key whose folded text is not known)."""
    if found is None:
        return list(keys)
    out = []
    for key in keys:
        text = folded.get(key)
        if text is None or any(w in text for w in found):
            out.append(key)
    return out


def renamed(names: Mapping[K, frozenset[str]], gone: frozenset[str],
            found: Mapping[K, frozenset[str]]) -> dict[K, frozenset[str]]:
    """`names` after the cards `gone` changed: each key's names less those cards, plus those of them
    `found` in it again (by a matcher of the changed cards alone)."""
    out = {}
    for key, held in names.items():
        if not held.isdisjoint(gone):
            held = held - gone
        more = found.get(key)
        out[key] = held | more if more else held
    return out
