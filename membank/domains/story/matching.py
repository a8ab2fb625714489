"""Matching (story.md): which cards a text mentions, where, and whether they activate. Pure.

Names, aliases and keys are compared after NFKC + case folding on both sides. A key in Latin,
Cyrillic or Greek script matches whole words only (with the endings s, es, 's); a key holding CJK
characters matches as a substring (Chinese has no spaces). A `/pattern/flags` key is a regular
expression run with a time limit. Every literal key of every card sits in one Aho–Corasick
automaton (pyahocorasick), built once per generation of the cards: a text is walked once, however
many cards there are."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, NamedTuple

import ahocorasick
import regex

_CJK = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                  r"\U00020000-\U0002ffff]")
_REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)
_ENDINGS = ("'s", "’s", "es", "s")
_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "u": 0, "g": 0}
LOGICS = ("and_any", "and_all", "not_any", "not_all")


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


@dataclass(frozen=True)
class Skipped:
    """A regex key that could not run: reported, never fatal."""

    id: str
    key: str
    reason: str  # timeout | invalid
    message: str


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def is_regex_key(key: str) -> bool:
    return bool(_REGEX_KEY.match(key.strip()))


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` normalized character by character, and for each normalized position the original one
    (NFKC and case folding can change lengths: ß → ss, ﬁ → fi). ASCII text maps one to one."""
    if text.isascii():
        return text.lower(), range(len(text) + 1)  # type: ignore[return-value]
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        folded = normalize(ch) if not ch.isascii() else ch.lower()
        out.append(folded)
        where.extend([i] * len(folded))
    where.append(len(text))
    return "".join(out), where


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


ROLES = ("primary", "exclude", "secondary")


class Matcher:
    def __init__(self, cards: dict[str, Keyed], automaton: ahocorasick.Automaton | None,
                 regexes: list[tuple[str, str, str, regex.Pattern[str] | None, str]], timeout: float):
        self.cards = cards
        self._automaton = automaton
        self._regexes = regexes  # (card, role, key as written, compiled or None, problem)
        self._timeout = timeout

    @classmethod
    def build(cls, cards: Iterable[Keyed], regex_timeout: float = 0.02) -> Matcher:
        by_id = {c.id: c for c in sorted(cards, key=lambda c: c.id)}
        words: dict[str, list[tuple[str, str, str, bool]]] = {}
        regexes = []
        for card in by_id.values():
            for role, keys in (("primary", (card.name, *card.aliases, *card.keys)), ("exclude", card.exclude_keys),
                               ("secondary", card.secondary_keys)):
                for key in dict.fromkeys(k for k in keys if k and k.strip()):
                    if is_regex_key(key):
                        regexes.append((card.id, role, key, *_compile(key)))
                        continue
                    folded = normalize(key.strip())
                    words.setdefault(folded, []).append((card.id, role, key, bool(_CJK.search(folded))))
        automaton = None
        if words:
            automaton = ahocorasick.Automaton()
            for folded, payload in words.items():
                automaton.add_word(folded, (folded, tuple(payload)))
            automaton.make_automaton()
        return cls(by_id, automaton, regexes, regex_timeout)

    def _scan(self, text: str, first_only: bool = False) -> tuple[dict[tuple[str, str], list[Match]], list[Skipped]]:
        """Every occurrence of every key (or only the first, `first_only`), by (card, role)."""
        found: dict[tuple[str, str], list[Match]] = {}
        if self._automaton is not None and text:
            folded, where = _folded(text)
            for end, (word, payload) in self._automaton.iter(folded):
                start = end - len(word) + 1
                stop = end + 1
                for card_id, role, key, cjk in payload:
                    if first_only and (card_id, role) in found:
                        continue
                    hit = stop if cjk else _whole_word(folded, start, stop)
                    if hit is None:
                        continue
                    a, b = where[start], where[hit]
                    found.setdefault((card_id, role), []).append(Match(card_id, key, text[a:b], a, b - a))
        skipped: list[Skipped] = []
        for card_id, role, key, compiled, problem in self._regexes:
            if compiled is None:
                skipped.append(Skipped(card_id, key, "invalid", f"the key {key} of {card_id} is not a regular "
                                       f"expression membank can run ({problem}); it is skipped"))
                continue
            try:
                for m in compiled.finditer(text, timeout=self._timeout):
                    if m.end() > m.start():
                        found.setdefault((card_id, role), []).append(
                            Match(card_id, key, m.group(0), m.start(), m.end() - m.start()))
            except TimeoutError:
                skipped.append(Skipped(card_id, key, "timeout", f"the key {key} of {card_id} took longer than "
                                       f"{self._timeout * 1000:g} ms and was skipped"))
        return found, skipped

    def mentions(self, text: str) -> tuple[list[Match], list[Skipped]]:
        """Every occurrence of a card's name, alias or key, by offset."""
        found, skipped = self._scan(text)
        out = [m for (_, role), ms in found.items() if role == "primary" for m in ms]
        return sorted(set(out), key=lambda m: (m.offset, -m.length, m.id, m.key)), skipped

    def activated(self, text: str, first_only: bool = False) -> tuple[dict[str, list[Match]], list[Skipped]]:
        """Cards a primary word activates, unless an exclude key occurs, when their secondary keys
        agree (SillyTavern's logic): each with its primary matches in offset order (only the first
        one with `first_only`, which a long text scanned only to know which cards it names wants)."""
        found, skipped = self._scan(text, first_only)
        out: dict[str, list[Match]] = {}
        for (card_id, role), matches in sorted(found.items()):
            if role != "primary" or (card_id, "exclude") in found:
                continue
            card = self.cards[card_id]
            if card.secondary_keys and not _secondary_ok(card, found.get((card_id, "secondary"), [])):
                continue
            out[card_id] = sorted(set(matches), key=lambda m: (m.offset, -m.length, m.key))
        return out, skipped


def _compile(key: str) -> tuple[regex.Pattern[str] | None, str]:
    m = _REGEX_KEY.match(key.strip())
    assert m is not None
    pattern, flags = m.group(1), m.group(2)
    bits = 0
    for flag in flags:
        if flag not in _FLAGS:
            return None, f"unknown flag {flag}"
        bits |= _FLAGS[flag]
    try:
        return regex.compile(pattern, bits | regex.V0), ""
    except (regex.error, ValueError, OverflowError) as e:
        return None, str(e).split("\n")[0][:80]


def _whole_word(folded: str, start: int, stop: int) -> int | None:
    """Where a whole-word match ending at `stop` really ends (after an s / es / 's ending), or None."""
    if start > 0 and _word_char(folded[start - 1]):
        return None
    if stop >= len(folded) or not _word_char(folded[stop]) and folded[stop] not in "'’":
        return stop
    for ending in _ENDINGS:
        end = stop + len(ending)
        if folded.startswith(ending, stop) and (end >= len(folded) or not _word_char(folded[end])):
            return end
    return None


def _secondary_ok(card: Keyed, matches: list[Match]) -> bool:
    present = {m.key for m in matches}
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
