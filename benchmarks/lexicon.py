"""A bilingual lexicon as cross-language evidence: the calibration study's rows (issue 35; not shipped).

Classic dictionary-based cross-language retrieval, generalising the name bridge (membank/domains/recall/
bridge.py) from card names to words: the question's content words are translated into the other language
and an other-language memory holding a translation gains rarity-weighted evidence in its pool, as a memory
naming a card the question names does. English words are lowercased, stopwords dropped and stemmed
(`stem`, a few suffix rules, applied alike to both sides); Chinese questions are cut into the lexicon's
headwords by forward maximum matching (`segment`: Chinese has no spaces); a Chinese memory holds a
translation when it holds the headword as a substring, an English memory when its stems include a
translation's stem. A word's worth in a pool is log(n / df) / log(n) (df: the pool's memories holding any
of its translations; a word with more than `most` translations is left out), and a memory's evidence is
either the most any question word is worth in it (`max`) or the share of the question's worth it holds
(`cover`). The lexicon is a file of `scripts/build_lexicon.py` (CC-CEDICT or the static model's mutual
nearest neighbours); docs/recall.md gives the figures and why it does not ship.
"""

from __future__ import annotations

import gzip
import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from benchmarks.usestudy import order
from membank.domains.recall.calibrate import CAP, GATE, calibrated_arrays
from membank.kernel.text import STOPWORDS, script_language

_WORD = re.compile(r"[a-z]+")
_HAN = re.compile(r"[\u4e00-\u9fff]+")
# words a dictionary gloss is made of that translate nothing (CC-CEDICT's "to do sth", "a kind of ...")
GLOSS_STOP = frozenset("sb sth one someone something oneself etc also used esp e g kind type lit fig person thing "
                       "make get take give put go come way".split())
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ness", ""), ("ing", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", ""))
LONGEST = 6  # the longest headword forward maximum matching tries

Lexicon = tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]  # Chinese -> stems, stem -> Chinese


def stem(word: str) -> str:
    """A light English stem (one suffix, a doubled last letter, a final e): the same rule on both sides, so
    `hiding`, `hides` and `hide` meet."""
    w = word.lower()
    for suffix, put in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: len(w) - len(suffix)] + put
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "ls":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def content(text: str) -> list[str]:
    """The stems of `text`'s English content words (stopwords and gloss fillers left out), in order."""
    return [stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS and w not in GLOSS_STOP]


def segment(text: str, heads: Iterable[str] | dict[str, Any], longest: int = LONGEST) -> list[str]:
    """`text`'s runs of Chinese cut into `heads` by forward maximum matching (a character no headword
    starts is passed over)."""
    known = heads if isinstance(heads, (dict, set, frozenset)) else set(heads)
    out = []
    for run in _HAN.findall(text):
        i = 0
        while i < len(run):
            for n in range(min(longest, len(run) - i), 0, -1):
                if run[i:i + n] in known:
                    out.append(run[i:i + n])
                    i += n
                    break
            else:
                i += 1
    return out


def read(path: Path) -> Lexicon:
    """A lexicon file of scripts/build_lexicon.py: gzipped lines `headword<TAB>stem stem ...` (`#`: comments)."""
    zh2en: dict[str, frozenset[str]] = {}
    en2zh: dict[str, set[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or "\t" not in line:
                continue
            head, _, stems = line.rstrip("\n").partition("\t")
            zh2en[head] = frozenset(stems.split())
            for s in zh2en[head]:
                en2zh.setdefault(s, set()).add(head)
    return zh2en, {s: frozenset(v) for s, v in en2zh.items()}


def evidence(texts: list[str], queries: list[str], zh: np.ndarray, lexicon: Lexicon, how: str = "max",
             shortest: int = 1, most: int = 60) -> np.ndarray:
    """Each memory's lexicon evidence for each query (queries x memories; 0 in the query's own language).
    `shortest`: the fewest characters a Chinese translation of an English word must have to count."""
    zh2en, en2zh = lexicon
    zh = np.asarray(zh, bool)
    pools = {"zh": np.flatnonzero(zh), "en": np.flatnonzero(~zh)}
    stems = [frozenset(content(t)) for t in texts]
    out = np.zeros((len(queries), len(texts)))
    for qi, query in enumerate(queries):
        held: list[np.ndarray] = []
        if script_language(query) == "en":
            pool = pools["zh"]
            for s in dict.fromkeys(content(query)):
                found = [t for t in en2zh.get(s, ()) if len(t) >= shortest]
                if found and len(found) <= most:
                    held.append(np.array([any(t in texts[i] for t in found) for i in pool], bool))
        else:
            pool = pools["en"]
            for w in dict.fromkeys(segment(query, zh2en)):
                if len(zh2en[w]) <= most:
                    held.append(np.array([not stems[i].isdisjoint(zh2en[w]) for i in pool], bool))
        if held and len(pool) >= 2:
            out[qi, pool] = combine(held, len(pool), how)
    return out


def own(texts: list[str], queries: list[str], zh: np.ndarray, lexicon: Lexicon, how: str = "cover") -> np.ndarray:
    """Each memory's evidence for each query's own words, in the query's own language's pool (English by the
    stems, Chinese by the lexicon's headwords as substrings): what `evidence` gives the other language."""
    zh = np.asarray(zh, bool)
    stems = [frozenset(content(t)) for t in texts]
    out = np.zeros((len(queries), len(texts)))
    for qi, query in enumerate(queries):
        if script_language(query) == "en":
            pool = np.flatnonzero(~zh)
            held = [np.array([s in stems[i] for i in pool], bool) for s in dict.fromkeys(content(query))]
        else:
            pool = np.flatnonzero(zh)
            held = [np.array([w in texts[i] for i in pool], bool) for w in dict.fromkeys(segment(query, lexicon[0]))]
        if held and len(pool) >= 2:
            out[qi, pool] = combine(held, len(pool), how)
    return out


def combine(held: list[np.ndarray], n: int, how: str) -> np.ndarray:
    """Per memory of a pool of `n`, the evidence of the question words it holds (`held`: one mask per word)."""
    worth = np.array([h * (math.log(n / h.sum()) / math.log(n) if h.any() else 0.0) for h in held])
    if how == "max":
        return np.asarray(worth.max(axis=0))
    total = float(worth.max(axis=1).sum())
    return np.asarray(worth.sum(axis=0) / total) if total > 0 else np.zeros(n)


def rows(measure: Callable[..., None], texts: list[str], queries: list[str], zh: np.ndarray, names: np.ndarray,
         strong: np.ndarray, static: np.ndarray, qzh: list[bool], lexicon: Lexicon, label: str,
         lifted: Callable[[np.ndarray, float], np.ndarray]) -> None:
    """The study's rows for one lexicon, beside the name bridge's (`names`: its evidence): the lexicon's
    evidence and the names' (the larger) before the gate; added where a memory names a card the question
    names (`named`); or only choosing which memories within the gate take the cap's places (`cap only`)."""
    for how, shortest in (("max", 1), ("cover", 1), ("cover", 2)):
        lex = evidence(texts, queries, zh, lexicon, how, shortest)
        for a in (0.5, 1.0):
            tag = f"{label} lexicon, {how}{', 2+ chars' if shortest > 1 else ''}, lift {a}"
            for name, bridge in ((f"{tag}, or names", np.maximum(names, a * lex)),
                                 (f"{tag}, named", names + a * lex * (names > 0))):
                measure(name, _ranked(strong, static, zh, qzh, bridge), lifted(bridge, 1.0))
            measure(f"{tag}, cap only", _cap_only(strong, static, zh, qzh, names, a * lex), lifted(names, 1.0))
    lex = evidence(texts, queries, zh, lexicon, "max")
    held = own(texts, queries, zh, lexicon)
    for a in (0.5, 1.0):  # the question's own words weigh as much in its own language: the gate compares alike
        measure(f"{label} lexicon, max, lift {a}, or names, own words too", both(strong, static, zh, qzh,
                np.maximum(names, a * lex), a * held), lifted(np.maximum(names, a * lex), 1.0))
        weak = (held.max(axis=1) < 0.5)[:, None]  # or only where the own language holds under half its words
        measure(f"{label} lexicon, max, lift {a}, or names, own words under half", _ranked(strong, static, zh, qzh,
                np.maximum(names, a * lex * weak)), lifted(np.maximum(names, a * lex * weak), 1.0))


def _ranked(strong: np.ndarray, static: np.ndarray, zh: np.ndarray, qzh: list[bool], bridge: np.ndarray
            ) -> Callable[[int], list[int]]:
    def rank(qi: int) -> list[int]:
        scores, competes = calibrated_arrays(strong[qi], static[qi], zh, qzh[qi], evidence=bridge[qi])
        return list(np.lexsort((-scores, ~competes)))
    return rank


def both(strong: np.ndarray, static: np.ndarray, zh: np.ndarray, qzh: list[bool], other: np.ndarray,
          same_words: np.ndarray) -> Callable[[int], list[int]]:
    """The shipped gate and cap with evidence on both sides: `other` for the other language, `same_words`
    for the question's own."""
    def rank(qi: int) -> list[int]:
        base, _ = calibrated_arrays(strong[qi], static[qi], zh, qzh[qi], gate=0.0, cap=0)  # the blended score
        same = zh == qzh[qi]
        return order(base + np.where(same, same_words[qi], other[qi]), same)
    return rank


def _cap_only(strong: np.ndarray, static: np.ndarray, zh: np.ndarray, qzh: list[bool], names: np.ndarray,
              lex: np.ndarray) -> Callable[[int], list[int]]:
    """The shipped gate (names only), then the cap's places and the order by the score with the lexicon."""
    def rank(qi: int) -> list[int]:
        scores, within = calibrated_arrays(strong[qi], static[qi], zh, qzh[qi], evidence=names[qi], gate=GATE,
                                           cap=10**6)
        same = zh == qzh[qi]
        ranked = scores + np.where(same, 0.0, lex[qi])
        other = np.flatnonzero(within & ~same)
        competes = same.copy()
        competes[other[np.lexsort((other, -ranked[other]))[:CAP]]] = True
        return list(np.lexsort((-ranked, ~competes)))
    return rank
