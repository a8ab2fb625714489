"""The names memories hold as the cards change (the name bridge, bridgebank.py): pure, no I/O.

A memory's names are the cards whose name or alias its text holds (story/matching.py's rules), and each
card's word is found or not on its own: no other card's word hides or adds one. So when the cards change,
a memory's names are its names before, less the cards whose name or aliases changed (or that came or went),
plus those of them a matcher of their names alone finds in it. And a key word occurs in the matcher's
folded text (`folded_text`) wherever the matcher finds it, a Latin word on its boundaries or CJK anywhere:
only the texts whose folded form holds one of the changed words need that matcher. A card edit that
changes no name or alias (summary, body, state) changes nothing here."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable, Hashable, Iterable, Mapping, TypeVar

from ..story.matching import Keyed, Matcher, is_regex_key, normalize

K = TypeVar("K", bound=Hashable)
Spelled = dict[str, tuple[str, tuple[str, ...]]]  # card -> its name and aliases, as the bridge matches them


def named(matcher: Matcher, text: str) -> frozenset[str]:
    """The cards whose name or alias `text` holds, for a matcher of names and aliases alone."""
    spans, _ = matcher.spans(text, "first")  # one span per word, with the cards it names (no keys here)
    return frozenset(card for _, _, cards in spans for card in cards)


CHAIN = 8  # matchers a generation of names is held in before one of them all is built again


@dataclass(frozen=True)
class Matchers:
    """The names and aliases of a generation of the cards, in a few matchers: the first of them all, then
    one per change of the cards, of the changed cards alone; each with the cards it no longer speaks for
    (changed since). A card's spelling now is in one of them, and not dropped there."""

    parts: tuple[tuple[Matcher, frozenset[str]], ...]

    @classmethod
    def of(cls, keyed: Iterable[Keyed]) -> Matchers:
        return cls(((Matcher.build(_names_only(keyed)), frozenset()),))

    def named(self, text: str) -> frozenset[str]:
        """The cards whose name or alias `text` holds."""
        if len(self.parts) == 1:
            return named(self.parts[0][0], text)
        out: set[str] = set()
        for matcher, dropped in self.parts:
            found = named(matcher, text)
            out.update(found - dropped if dropped else found)
        return frozenset(out)

    def changed(self, keyed: Iterable[Keyed], gone: frozenset[str]) -> tuple[Matchers, Matcher]:
        """These matchers after the cards `gone` changed (`keyed`: the cards now), and the matcher of those
        cards alone."""
        keyed = list(keyed)
        fresh = Matcher.build(_names_only(k for k in keyed if k.id in gone))
        if len(self.parts) >= CHAIN:
            return Matchers.of(keyed), fresh
        return Matchers((*((m, dropped | gone) for m, dropped in self.parts), (fresh, frozenset()))), fresh


def rematched(last: Spelled, gone: frozenset[str], small: Matcher, names: Mapping[K, frozenset[str]],
              folded: Folded, read: Callable[[list[K]], Iterable[tuple[K, str]]]
              ) -> tuple[dict[K, frozenset[str]], list[K]]:
    """`names` (matched with the cards spelled `last`) after the cards `gone` changed (`small`: a matcher
    of their names and aliases now), and the keys whose names may have changed: those whose `folded` text
    holds a word of theirs, before or now (no other can have held them, nor hold them now), the changed
    cards matched again in the texts `read` gives of them (a key `read` does not give, a version edited
    away since, is left out)."""
    if not gone:
        return dict(names), []
    before, now = words(Keyed(c, *last[c]) for c in gone if c in last), words(small.cards.values())
    both = None if before is None or now is None else list(dict.fromkeys([*before, *now]))
    picked = candidates(names, folded, both)
    out = dict(names)
    found = {key: named(small, text) for key, text in read(picked)} if picked and small.cards else None
    for key in picked:
        if found is not None and key not in found:
            del out[key]
            continue
        held = out[key]
        more = found.get(key) if found is not None else None
        held = held - gone if not held.isdisjoint(gone) else held
        out[key] = held | more if more else held
    return out, picked


def _names_only(keyed: Iterable[Keyed]) -> list[Keyed]:
    return [Keyed(k.id, k.name, k.aliases) for k in keyed]


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


class Folded:
    """Memory versions' texts as the matcher folds them, and all of them joined, for one search per word
    (joined again after a change; a read thread may add the same entries meanwhile)."""

    def __init__(self) -> None:
        self.texts: dict[Hashable, str] = {}
        self._joined: tuple[str, list[Hashable], list[int], set[Hashable]] | None = None

    def add(self, key: Hashable, text: str) -> None:
        self.texts[key] = text
        self._joined = None

    def drop(self, key: Hashable) -> None:
        if self.texts.pop(key, None) is not None:
            self._joined = None

    def holding(self, found: list[str]) -> tuple[set[Hashable], set[Hashable]]:
        """The keys whose text holds one of the words `found`, and the keys whose texts were searched (a
        text added meanwhile by another thread may not be)."""
        if any("\0" in word for word in found):
            items = list(self.texts.items())
            return {key for key, text in items if any(w in text for w in found)}, {key for key, _ in items}
        joined = self._joined
        if joined is None:
            items = list(self.texts.items())  # one C-level copy
            texts = [text for _, text in items]
            starts = [0, *accumulate(len(t) + 1 for t in texts)]  # where each text starts (one separator each)
            keys = [key for key, _ in items]
            joined = self._joined = ("\0".join(texts), keys, starts, set(keys))
        text, keys, starts, searched = joined
        out = set()
        for word in found:
            at = text.find(word)
            while at != -1:
                i = bisect_right(starts, at) - 1
                out.add(keys[i])
                at = text.find(word, starts[i + 1])  # the next text
        return out, searched


def candidates(keys: Iterable[K], folded: Folded, found: list[str] | None) -> list[K]:
    """The `keys` whose folded text may hold one of the words `found` (every key when `found` is None,
    and a key whose folded text is not known)."""
    keys = list(keys)
    if found is None:
        return keys
    wanted = set(keys)
    hits, searched = folded.holding(found)
    return [*(wanted & hits), *wanted.difference(searched)]  # type: ignore[list-item]
