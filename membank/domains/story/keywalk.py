"""The key words' walk (story.md, Matching): every literal key word of every card in one Aho–Corasick automaton
(ahocorasick-rs, the Rust crate's DFA), built once per generation of the cards, and where each word occurs in
a text: as a whole word (with the endings s, es, 's) in Latin, Cyrillic or Greek script, as a substring where
it holds CJK characters. The text is folded and walked whole, in one call: a scan's cost is the text's
length in Rust, then Python for each hit. Pure."""

from __future__ import annotations

import functools
import re
from typing import Iterable

import ahocorasick_rs

from .matchrules import Payload
from .names import normalize

CJK = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                 r"\U00020000-\U0002ffff]")
ENDINGS = ("'s", "’s", "es", "s")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # a lone surrogate (from JSON's \ud800): not UTF-8, Rust refuses it
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
Occurrence = tuple[int, int, str, Payload]  # start, end (code points of the text), the folded word, who it stands for


@functools.lru_cache(maxsize=1 << 16)
def _fold_char(ch: str) -> str:
    return normalize(ch) if not ch.isascii() else ch.lower()


@functools.lru_cache(maxsize=1 << 16)
def _lowers_one_to_one(ch: str) -> bool:
    """Whether `ch` folds to one character, which folding `ch.lower()` also gives, and stays."""
    low, folded = ch.lower(), _fold_char(ch)
    return len(low) == 1 and len(folded) == 1 and _fold_char(low) == folded and _fold_char(folded) == folded


def folded(text: str) -> tuple[str, list[int]]:
    """`text` normalized character by character, and for each normalized position the original one
    (NFKC and case folding can change lengths: ß → ss, ﬁ → fi). When every character folds to one,
    as in Chinese and ASCII, positions map one to one and the text is folded by C calls: `str.lower`,
    then a replace per distinct character that folds further (full-width ，, a final ς)."""
    if text.isascii():
        return text.lower(), range(len(text) + 1)  # type: ignore[return-value]
    return _folded(text, {ch for ch in set("".join(_NON_ASCII.findall(text))) if not stable(ch)})


def stable(ch: str) -> bool:
    """Whether `ch` is in a block every character of which NFKC + case folding and `str.lower` leave as it is:
    kana, the CJK unified ideographs (and the Yijing hexagrams amid them; not the compatibility ones, U+F900..,
    U+2F800.., which NFKC maps), Hangul syllables. A Chinese text holds thousands of distinct ideographs: none
    is then folded alone (test_keywalk.py checks every character of these blocks against `normalize`)."""
    return "\u3400" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7a3" \
        or "\u3041" <= ch <= "\u3096" or "\u30a1" <= ch <= "\u30fa" or "\U00020000" <= ch <= "\U0002f7ff" \
        or "\U00030000" <= ch <= "\U0003134f"


def _folded(text: str, odd: set[str]) -> tuple[str, list[int]]:
    """`folded`, given the distinct characters of `text` that are neither ASCII nor `stable`."""
    several = {ch for ch in odd if not _lowers_one_to_one(ch)}
    if not several:
        lowered = text.lower()
        for ch in {c.lower() for c in odd} | ({"ς"} if "Σ" in odd else set()):  # lower() ends a word's Σ as ς
            if _fold_char(ch) != ch:
                lowered = lowered.replace(ch, _fold_char(ch))
        return lowered, range(len(text) + 1)  # type: ignore[return-value]
    # a few characters fold to several (… → ..., ß → ss): the rest by the C calls above, with each of them
    # held by a NUL meanwhile (every other character folds alone), then theirs put in, positions by ranges
    special = "[" + "".join(re.escape(ch) for ch in several) + "]"
    places = [found.start() for found in re.finditer(special, text)]
    low, _ = _folded(re.sub(special, "\0", text), odd - several)
    out: list[str] = []
    where: list[int] = []
    at = 0
    for i in places:
        out.append(low[at:i])
        where.extend(range(at, i))
        ch = _fold_char(text[i])
        out.append(ch)
        where.extend([i] * len(ch))
        at = i + 1
    out.append(low[at:])
    where.extend(range(at, len(text) + 1))
    return "".join(out), where


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class KeyWalk:
    """The automaton over the folded key words, each with what it stands for (`Payload`)."""

    def __init__(self, words: dict[str, Payload]):
        self.words = words
        # no key spans a line break (a key is one line); an empty word never matches
        walked = [w for w in words if w and "\n" not in w]
        plain = [w for w in walked if not _SURROGATE.search(w)]
        self._odd = [w for w in walked if _SURROGATE.search(w)]  # found by `str.find` (Rust takes no surrogate)
        self._info = [(w, bool(CJK.search(w)), words[w]) for w in plain]
        self._automaton = ahocorasick_rs.AhoCorasick(plain, implementation=ahocorasick_rs.Implementation.DFA) \
            if plain else None

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, tuple[str, str, str]]]) -> KeyWalk:
        """From (folded word, (card, role, key as written)) pairs, in the cards' order."""
        words: dict[str, list[tuple[str, str, str]]] = {}
        for word, entry in pairs:
            words.setdefault(word, []).append(entry)
        return cls({w: tuple(p) for w, p in words.items()})

    def _hits(self, low: str) -> list[tuple[int, int, int]]:
        """(word's index, start, stop) of every occurrence of a word in the folded text, overlapping, by
        stop, the longer first where two stop together (the order of a classic Aho–Corasick walk)."""
        automaton = self._automaton
        if automaton is None:
            hits = []
        elif low.isascii() or not _SURROGATE.search(low):
            hits = automaton.find_matches_as_indexes(low, overlapping=True)
        else:  # walked between the surrogates: no plain word holds one
            hits, at = [], 0
            for part in _SURROGATE.split(low):
                if part:
                    hits.extend((i, a + at, b + at) for i, a, b in automaton.find_matches_as_indexes(part, overlapping=True))
                at += len(part) + 1
        if self._odd and not low.isascii():
            odd = self._odd_hits(low)
            if odd:
                hits = sorted([*hits, *odd], key=lambda h: (h[2], h[1]))
        return hits

    def _odd_hits(self, low: str) -> list[tuple[int, int, int]]:
        out = []
        for n, word in enumerate(self._odd, start=-len(self._odd)):  # negative: not an index of `_info`
            at = low.find(word)
            while at >= 0:
                out.append((n, at, at + len(word)))
                at = low.find(word, at + 1)
        return out

    def occurrences(self, text: str) -> list[Occurrence]:
        """Where each key word occurs in `text` (code points), by where it ends (the longer first)."""
        out: list[Occurrence] = []
        if self._automaton is None and not self._odd or not text:
            return out
        low, where = folded(text)
        size = len(low)
        info, odd = self._info, self._odd
        for n, start, stop in self._hits(low):
            word, cjk, payload = info[n] if n >= 0 else (odd[n], bool(CJK.search(odd[n])), self.words[odd[n]])
            if cjk:
                hit: int | None = stop
            elif start and (low[start - 1].isalnum() or low[start - 1] == "_"):
                continue  # `_whole_word`'s first test, inline: most hits inside a longer word end here
            elif stop >= size or not (low[stop].isalnum() or low[stop] in "_'’"):
                hit = stop  # and its plain end, inline
            elif low[stop] not in "se'’":
                continue  # inside a longer word (`Wanderer1` in `Wanderer12`): no ending begins so
            else:
                hit = _whole_word(low, start, stop)
                if hit is None:
                    continue
            out.append((where[start], where[hit], word, payload))
        return out


def _whole_word(low: str, start: int, stop: int) -> int | None:
    """Where a whole-word match ending at `stop` really ends (after an s / es / 's ending), or None."""
    if start > 0 and _word_char(low[start - 1]):
        return None
    if stop >= len(low) or not _word_char(low[stop]) and low[stop] not in "'’":
        return stop
    for ending in ENDINGS:
        end = stop + len(ending)
        if low.startswith(ending, stop) and (end >= len(low) or not _word_char(low[end])):
            return end
    return None
