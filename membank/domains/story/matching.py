"""Matching (story.md): which cards a text mentions, where, and whether they activate. Pure.

Names, aliases and keys are compared after NFKC + case folding on both sides. A key in Latin,
Cyrillic or Greek script matches whole words only (with the endings s, es, 's); a key holding CJK
characters matches as a substring (Chinese has no spaces). A `/pattern/flags` key is a regular
expression, compiled only within bounds and run within the call's time allowance (regexkeys.py).
Every literal key of every card sits in one Aho–Corasick
automaton (keywalk.py), built once per generation of the cards: the lines of a text the matcher has not
seen are walked together in one call, however many cards there are, and each line's key words are kept."""

from __future__ import annotations

import functools
from bisect import bisect_right
from dataclasses import dataclass
from itertools import repeat
from typing import Iterable, NamedTuple

from ...kernel import regexcost
from .keywalk import KeyWalk, Occurrence, folded
from .names import normalize
from .matchrules import (Payload, Roles as _Roles, best_of as _best_of,
                         secondary_ok as _secondary_ok)
from .regexkeys import REGEX_CALL_SECONDS, REGEX_KEY_SECONDS, RegexKeys, Skipped, allowance_spent, call_allowance

__all__ = ["Keyed", "Match", "Matcher", "Skipped", "allowance_spent", "call_allowance", "folded_text", "is_regex_key",
           "normalize", "REGEX_CALL_SECONDS", "REGEX_KEY_SECONDS"]


@dataclass(frozen=True)
class Keyed:
    """One card's trigger words."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    exclude_keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    logic: str = "and_any"


class Match(NamedTuple):  # a tuple: a scan may make thousands
    id: str
    key: str  # as the card writes it
    word: str  # as found in the text (with its ending)
    offset: int  # code points into the text given
    length: int


_match = functools.partial(tuple.__new__, Match)  # without NamedTuple's __new__ (a Python function)


is_regex_key = regexcost.is_regex_key


def folded_text(text: str) -> str:
    """`text` as the matcher compares it, line by line (NFKC + case folding): a literal key word occurs
    in it (as a substring) wherever the matcher finds the key, so it filters texts before a scan."""
    return "\n".join(folded(line)[0] for line in text.split("\n"))


ROLES = ("primary", "exclude", "secondary")
LINES_KEPT = 8192  # lines whose key words a matcher keeps (a long chapter's worth several times)


def _line_best(found: list[Occurrence], first: bool) -> dict[str, tuple[int, int]]:
    """Each word's best span among one line's occurrences (in the line), "first" (starts first, then the
    longer) or "last" (ends last, then the longer), the words in the order they are first found."""
    kept: dict[str, tuple[int, int]] = {}
    for a, b, word, _ in found:
        prev = kept.get(word)
        if prev is None or ((a < prev[0] or a == prev[0] and b > prev[1]) if first else
                            (b > prev[1] or b == prev[1] and a < prev[0])):
            kept[word] = (a, b)
    return kept


class Matcher:
    def __init__(self, cards: dict[str, Keyed], walk: KeyWalk | None, regexes: RegexKeys):
        self.cards = cards
        self._walk = walk
        self._regexes = regexes
        self._by_line: dict[str, list[Occurrence]] = {}
        self._firsts: dict[str, dict[str, tuple[int, int]]] = {}  # a line's best span of each word (`_line_best`)
        self._lasts: dict[str, dict[str, tuple[int, int]]] = {}
        self._conditional = frozenset(c.id for c in cards.values() if c.secondary_keys)
        self._roles = {word: _Roles.of(payload, self._conditional)
                       for word, payload in (walk.words.items() if walk is not None else ())}

    @classmethod
    def build(cls, cards: Iterable[Keyed], regex_timeout: float = REGEX_KEY_SECONDS) -> Matcher:
        by_id = {c.id: c for c in sorted(cards, key=lambda c: c.id)}
        words: list[tuple[str, tuple[str, str, str]]] = []
        regexes = []
        for card in by_id.values():
            for role, keys in (("primary", (card.name, *card.aliases, *card.keys)), ("exclude", card.exclude_keys),
                               ("secondary", card.secondary_keys)):
                for key in dict.fromkeys(k for k in keys if k and k.strip()):
                    if is_regex_key(key):
                        regexes.append((card.id, role, key))
                        continue
                    words.append((normalize(key.strip()), (card.id, role, key)))
        return cls(by_id, KeyWalk.of(words) if words else None, RegexKeys.build(regexes, regex_timeout))

    def _occurrences(self, text: str) -> list[Occurrence]:
        """Where each literal key word occurs in `text` (code points), by where it ends (keywalk.py). A
        line's are kept, since a prompt's surrounding text is mostly lines the prompt before it scanned; the
        lines not kept are walked together, in one call. No key spans a line break (keywalk leaves such keys
        out), and a line break is no word character, so a line walked among others finds what it finds
        alone."""
        if self._walk is None or not text:
            return []
        lines = text.split("\n")
        fresh = self._walked(lines)
        kept = self._by_line
        out: list[Occurrence] = []
        at = 0
        for line in lines:
            got = fresh.get(line)
            if got is None:
                got = kept.get(line)
            if got is None:  # cleared by another thread meanwhile: this line alone
                got = self._walk.occurrences(line)
            if got:
                out.extend([(a + at, b + at, word, payload) for a, b, word, payload in got] if at else got)
            at += len(line) + 1
        return out

    def _walked(self, lines: list[str]) -> dict[str, list[Occurrence]]:
        """The occurrences of the `lines` not kept yet, walked together in one call (and kept)."""
        assert self._walk is not None
        kept = self._by_line
        new = [line for line in dict.fromkeys(lines) if line not in kept]
        if not new:
            return {}
        found = self._walk.occurrences("\n".join(new))
        starts = [0]
        for line in new[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        per: list[list[Occurrence]] = [[] for _ in new]
        for a, b, word, payload in found:
            n = bisect_right(starts, a) - 1
            at = starts[n]
            per[n].append((a - at, b - at, word, payload))
        fresh = dict(zip(new, per))
        if len(new) <= LINES_KEPT:  # a text of more new lines than that (20 MB of them) is not kept
            if len(kept) + len(new) > LINES_KEPT:
                kept.clear()
            kept.update(fresh)
        return fresh

    def _scan(self, text: str) -> tuple[dict[tuple[str, str], list[Match]], list[Skipped]]:
        """Every occurrence of the keys by (card, role), in the text's order (regex keys' after)."""
        found: dict[tuple[str, str], list[Match]] = {}
        if self._walk is not None and text:
            for a, b, _, payload in self._occurrences(text):
                for card_id, role, key in payload:
                    found.setdefault((card_id, role), []).append(_match((card_id, key, text[a:b], a, b - a)))
        regex_found, skipped = self._regex_matches(text)
        for pair, matches in regex_found.items():
            found.setdefault(pair, []).extend(matches)
        return found, skipped

    def spans(self, text: str, keep: str) -> tuple[list[tuple[int, int, tuple[str, ...]]], list[Skipped]]:
        """What `activated(text, keep)` decides (`keep`: "first" or "last"), span by span instead of card
        by card: each literal key word's kept span and each match of a primary regex key, with the cards
        it activates (exclude keys and secondary logic applied). A card's match is the best of its
        spans by `keep`; a word many cards share is one span, however many cards it stands for."""
        kept = self._kept(text, keep)
        found, skipped = self._regex_matches(text)
        excluded: set[str] = set()
        present: dict[str, set[str]] = {}  # card -> its secondary keys that occur
        conditional: set[str] = set()  # cards found whose secondary logic decides
        primary: list[tuple[int, int, tuple[str, ...]]] = []
        for word, (a, b) in kept.items():
            cards, _, excludes, secondary, asks, _ = self._roles[word]
            if cards:
                primary.append((a, b, cards))
            excluded.update(excludes)
            conditional.update(asks)
            for card_id, key in secondary:
                present.setdefault(card_id, set()).add(key)
        for (card_id, role), matches in found.items():
            if role == "primary":
                primary.extend((m.offset, m.offset + m.length, (card_id,)) for m in matches)
                if card_id in self._conditional:
                    conditional.add(card_id)
            elif role == "exclude":
                excluded.add(card_id)
            else:
                present.setdefault(card_id, set()).update(m.key for m in matches)
        dropped = excluded | {c for c in conditional if not _secondary_ok(self.cards[c], present.get(c, set()))}
        if dropped:
            primary = [(a, b, cards if dropped.isdisjoint(cards) else tuple(c for c in cards if c not in dropped))
                       for a, b, cards in primary]
        return primary, skipped

    def _kept(self, text: str, keep: str) -> dict[str, tuple[int, int]]:
        """Each literal key word's best span in `text` by `keep` ("first" or "last"), the words in the order
        they are first found. Each line's best spans are kept (`_line_best`): a line's own best is the text's
        unless an earlier line holds the word ("first") or a later one does ("last"), so a prompt's text is
        then a look-up a line and a few words, not its every occurrence placed and compared again."""
        kept: dict[str, tuple[int, int]] = {}
        if self._walk is None or not text:
            return kept
        first = keep == "first"
        best = self._firsts if first else self._lasts
        lines = text.split("\n")
        missing = [line for line in lines if line not in best]
        if missing:
            fresh = self._walked(missing)
            made = {}
            for line in dict.fromkeys(missing):
                found = fresh.get(line)
                if found is None:
                    found = self._by_line.get(line)
                if found is None:  # cleared by another thread meanwhile: this line alone
                    found = self._walk.occurrences(line)
                made[line] = _line_best(found, first)
            if len(made) <= LINES_KEPT:
                if len(best) + len(made) > LINES_KEPT:
                    best.clear()
                best.update(made)
        else:
            made = {}
        at = 0
        for line in lines:
            mine = made.get(line) if missing else None
            if mine is None:
                mine = best.get(line)
            if mine is None:  # cleared by another thread meanwhile
                mine = _line_best(self._walk.occurrences(line), first)
            if mine:
                if first:  # an earlier line's span comes first
                    for word, (a, b) in mine.items():
                        if word not in kept:
                            kept[word] = (a + at, b + at)
                else:  # a later line's ends last; the word keeps its place among those found
                    for word, (a, b) in mine.items():
                        kept[word] = (a + at, b + at)
            at += len(line) + 1
        return kept

    def _regex_matches(self, text: str) -> tuple[dict[tuple[str, str], list[Match]], list[Skipped]]:
        """Every match of the regex keys by (card, role), and the keys that could not run (regexkeys.py)."""
        found: dict[tuple[str, str], list[Match]] = {}
        if not self._regexes.entries:
            return found, []
        hits, skipped = self._regexes.run(text)
        for card_id, role, key, word, offset, length in hits:
            found.setdefault((card_id, role), []).append(Match(card_id, key, word, offset, length))
        return found, skipped

    def mentions(self, text: str) -> tuple[list[Match], list[Skipped]]:
        """Every occurrence of a card's name, alias or key, by offset."""
        rows, skipped = self.mention_rows(text)
        return [Match(card_id, key, word, offset, -length) for offset, length, card_id, key, word in rows], skipped

    def mention_rows(self, text: str) -> tuple[list[tuple[int, int, str, str, str]], list[Skipped]]:
        """`mentions` as rows (offset, -length, card, key as written, word as found), in their order:
        sorted as tuples, with no Match made, for a caller that reads thousands."""
        spans, rows, skipped = self.word_spans(text)
        for word, found in spans.items():
            for card_id, key in self._roles[word].named:
                rows.extend((a, length, card_id, key, seen) for a, length, seen in found)
        return sorted(set(rows)), skipped

    def word_spans(self, text: str) -> tuple[dict[str, list[tuple[int, int, str]]],
                                             list[tuple[int, int, str, str, str]], list[Skipped]]:
        """`mention_rows` before its literal words are spread over their cards (`named` gives a word's): each
        key word found (folded) with its spans (offset, -length, word as found), sorted and distinct; the
        rows of the regex keys where no word of their card is; the regex keys that could not run. A word
        many cards share is one list, however many cards it stands for."""
        spans: dict[str, list[tuple[int, int, str]]] = {}
        if self._walk is not None and text:
            unsorted = set()
            for a, b, word, _ in self._occurrences(text):
                found = spans.get(word)
                if found is None:
                    spans[word] = [(a, a - b, text[a:b])]
                else:
                    if found[-1][0] >= a:  # only where folding made two characters of one (ß → ss)
                        unsorted.add(word)
                    found.append((a, a - b, text[a:b]))
            for word in unsorted:
                spans[word] = sorted(set(spans[word]))
        rows: list[tuple[int, int, str, str, str]] = []
        regex_found, skipped = self._regex_matches(text)
        if regex_found:  # a regex key's match where a word of its card is already one: the same mention
            have = {(a, length, card_id) for word, found in spans.items() for card_id, _ in self._roles[word].named
                    for a, length, _ in found}
            for (card_id, role), matches in regex_found.items():
                if role == "primary":
                    for m in matches:
                        if (m.offset, -m.length, card_id) not in have:
                            have.add((m.offset, -m.length, card_id))
                            rows.append((m.offset, -m.length, card_id, m.key, m.word))
        return spans, rows, skipped

    def named(self, word: str) -> tuple[tuple[str, str], ...]:
        """The cards a key word of `word_spans` is a name, alias or key of, each with the key as written."""
        return self._roles[word].named

    def activated(self, text: str, keep: str = "all") -> tuple[dict[str, list[Match]], list[Skipped]]:
        """Cards a primary word activates, unless an exclude key occurs, when their secondary keys
        agree (SillyTavern's logic): each with its primary matches in offset order, or only the
        one that starts first (`keep="first"`) or ends last (`"last"`): what a long text scanned
        to know which cards it names, and where nearest to a point, wants."""
        if keep != "all":
            return self._activated_one(text, keep)
        found, skipped = self._scan(text)
        out: dict[str, list[Match]] = {}
        for (card_id, role), matches in found.items():  # in the text's order; callers rank them
            if role != "primary" or (card_id, "exclude") in found:
                continue
            card = self.cards[card_id]
            if card.secondary_keys and not _secondary_ok(card, {m.key for m in found.get((card_id, "secondary"), [])}):
                continue
            if len(matches) > 1:
                matches = sorted(set(matches), key=lambda m: (m.offset, -m.length, m.key))
            out[card_id] = matches
        return out, skipped

    def _activated_one(self, text: str, keep: str) -> tuple[dict[str, list[Match]], list[Skipped]]:
        """`activated` for `keep` "first" or "last", word by word (`_Roles`), not key by key: each card's best
        span among its words, then its regex keys' matches; the cards in the order `_scan` finds them (its
        literal words', then those of regex keys alone)."""
        kept = self._kept(text, keep)
        roles = self._roles
        excluded: set[str] = set()
        present: dict[str, set[str]] = {}  # card -> its secondary keys that occur
        gated = False  # whether a card found has secondary logic
        for word in kept:
            _, _, excludes, secondary, asks, _ = roles[word]
            if excludes:
                excluded.update(excludes)
            for card_id, key in secondary:
                present.setdefault(card_id, set()).add(key)
            gated = gated or bool(asks)
        regex_found, skipped = self._regex_matches(text)
        extra: dict[str, list[Match]] = {}  # card -> its primary regex keys' matches
        for (card_id, role), matches in regex_found.items():
            if role == "primary":
                extra[card_id] = matches
            elif role == "exclude":
                excluded.add(card_id)
            else:
                present.setdefault(card_id, set()).update(m.key for m in matches)
        best = self._best_words(text, kept, keep)
        if not (excluded or extra or gated):
            return best, skipped
        conditional = self._conditional
        out: dict[str, list[Match]] = {}
        for card_id, matches in best.items():
            if card_id in excluded or card_id in conditional and not _secondary_ok(self.cards[card_id],
                                                                                  present.get(card_id, set())):
                continue
            more = extra.get(card_id)
            out[card_id] = matches if more is None else _best_of([*matches, *more], keep)
        for card_id, matches in extra.items():
            if card_id in best or card_id in excluded or card_id in conditional and not _secondary_ok(
                    self.cards[card_id], present.get(card_id, set())):
                continue
            out[card_id] = matches if len(matches) == 1 else _best_of(matches, keep)
        return out, skipped

    def _best_words(self, text: str, kept: dict[str, tuple[int, int]], keep: str) -> dict[str, list[Match]]:
        """Each card's best span among the words kept, by `keep`, in the order the words were found: a word's
        cards at a time (in C) where none has a span yet, as most have not."""
        first = keep == "first"
        out: dict[str, list[Match]] = {}
        roles = self._roles
        for word, (a, b) in kept.items():
            cards, named, _, _, _, written = roles[word]
            if not cards:
                continue
            seen = text[a:b]
            if out.keys().isdisjoint(cards):
                out.update(zip(cards, map(list, zip(map(_match, zip(cards, written, repeat(seen), repeat(a),
                                                                     repeat(b - a)))))))
                continue
            for card_id, key in named:
                prev = out.get(card_id)
                if prev is not None:
                    a0, b0 = prev[0].offset, prev[0].offset + prev[0].length
                    if not ((a < a0 or a == a0 and b > b0) if first else (b > b0 or b == b0 and a < a0)):
                        continue
                out[card_id] = [_match((card_id, key, seen, a, b - a))]
        return out
