"""Text measures shared by the index and recall: token estimates and FTS-ready text."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Callable

# CJK ideographs, kana, hangul: each is roughly one token for the model and one word for search
_CJK_CLASS = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]"


@functools.cache
def _cjk(run: bool = False) -> re.Pattern[str]:
    """`_CJK_CLASS` compiled at its first use (`run`: one or more of them): its ranges cost ~8 ms of a
    process's start to compile, which a command that measures no text (`membank status`) never pays."""
    return re.compile(_CJK_CLASS + ("+" if run else ""))


def estimate_tokens(text: str) -> int:
    """About a token per CJK character and per four other characters; never 0 for non-empty text."""
    if not text:
        return 0
    cjk = 0 if text.isascii() else _cjk_count(text)
    return max(1, cjk + -(-(len(text) - cjk) // 4))


def _cjk_count(text: str) -> int:
    """The code points of `text` that `_CJK_CLASS` matches: by the regex (without a list of them), or for a long
    text in a process that has numpy loaded (an assembled prompt's blocks), in one vectorised pass over
    `_CJK_RANGES` (~4x faster at 10,000 code points); numpy is never imported for it."""
    np = sys.modules.get("numpy")
    if np is None or len(text) < 2048:
        return len(text) - len(_cjk().sub("", text))
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    points = points[points >= _CJK_RANGES[0][0]]  # most of a text is below every range
    return sum(int(np.count_nonzero((points >= low) & (points <= high))) for low, high in _CJK_RANGES)


def script_language(text: str) -> str:
    """"zh" when at least 30% of the letters are CJK ideographs (or kana), else "en": the language a
    memory's strong vector is pooled with for cross-language ranking (recall/calibrate.py)."""
    letters = cjk = 0
    for ch in text:
        if ch.isalpha():
            letters += 1
            o = ord(ch)
            if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x3040 <= o <= 0x30FF:
                cjk += 1
    return "zh" if letters and cjk / letters >= 0.3 else "en"


# the code point ranges of _CJK_CLASS, for counting them over a whole text at once
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF),
               (0x20000, 0x2FFFF))


def span_tokens(text: str) -> Callable[[int, int], int]:
    """`estimate_tokens(text[a:b])` for any a <= b, each in O(1) after one vectorised pass over `text`:
    for cutting a long text back piece by piece without measuring every piece again."""
    if text.isascii():
        return lambda a, b: 0 if b <= a else max(1, -(-(b - a) // 4))
    import numpy as np  # here: the kernel is imported by every command, few cut a long text

    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    cjk = np.zeros(len(points), dtype=bool)
    for low, high in _CJK_RANGES:
        cjk |= (points >= low) & (points <= high)
    before = [0, *np.cumsum(cjk, dtype=np.int64).tolist()]  # CJK characters in text[:i]

    def count(a: int, b: int) -> int:
        if b <= a:
            return 0
        n = before[b] - before[a]
        return max(1, n + -(-(b - a - n) // 4))

    return count


def fts_text(text: str) -> str:
    """Text with each CJK character set apart, so FTS5's unicode61 tokenizer indexes them one by one.

    Chinese has no spaces between words; a phrase query over single characters matches
    any run of them (林默 matches 林 默), which trigram tokenizers cannot do for 2-character names."""
    if text.isascii():  # NFKC leaves ASCII as it is, and it holds no CJK (most memories): no NFKC pass
        return text
    text = unicodedata.normalize("NFKC", text)
    if not _cjk().search(text):
        return text
    return _cjk(True).sub(lambda m: " " + " ".join(m.group(0)) + " ", text)  # one call per run, not per character


_WORD = re.compile(r"\w+", re.UNICODE)
# English function words: in nearly every memory, so they add little to BM25 but make FTS5 score
# most of the index (the main cost of a semantic preview at 100,000 memories).
STOPWORDS = frozenset("""a about above after again against all am an and any are as at be been before being below
between both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
off on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves""".split())


TERMS_KEPT = 32  # texts whose `fts_terms` are kept: a prompt's query is asked for its memories and its passages
TERMS_TEXT_KEPT = 10_000  # code points of a text kept so (a query's most: kernel/payload.py MAX_QUERY_CHARS)
_terms_kept: dict[str, tuple[str, ...]] = {}


def fts_terms(text: str) -> list[str]:
    """The terms of an FTS5 MATCH expression for free text, in order: any word, any pair of adjacent
    CJK characters, each once (FTS5 folds case, so Storm and storm are one term).

    Every term is quoted, so punctuation or FTS5 operators in the writer's text cannot break the
    query; a lone CJK character stands for itself. English stopwords are left out unless the
    text has nothing else. Kept for the last few texts (a prompt asks twice with its query)."""
    found = _terms_kept.get(text)
    if found is None:
        found = tuple(_fts_terms(text))
        if len(text) <= TERMS_TEXT_KEPT:  # (a longer text is tokenized again: never held 32 times)
            if len(_terms_kept) >= TERMS_KEPT:
                _terms_kept.clear()
            _terms_kept[text] = found
    return list(found)


def _fts_terms(text: str) -> list[str]:
    words: list[str] = []
    phrases: list[str] = []
    cjk = _cjk()
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        if not cjk.search(word):
            if len(word) > 1 or word.isdigit():
                words.append(word)
            continue
        words.extend(w for w in cjk.sub(" ", word).split() if len(w) > 1)
        chars = [c for c in word if cjk.fullmatch(c)]
        if len(chars) == 1:
            phrases.append(f'"{chars[0]}"')
        phrases.extend(f'"{a} {b}"' for a, b in zip(chars, chars[1:]))
    kept = [w for w in words if w.casefold() not in STOPWORDS]
    if not kept and not phrases:
        kept = words
    unique: dict[str, str] = {}
    for term in [f'"{w}"' for w in kept] + phrases:
        unique.setdefault(term.casefold(), term)  # the first spelling stands for the others
    return list(unique.values())


def fts_query(text: str) -> str | None:
    """`fts_terms` as one MATCH expression (any of them); None when nothing is searchable."""
    terms = fts_terms(text)
    return " OR ".join(terms) if terms else None
