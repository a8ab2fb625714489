"""Text measures shared by the index and recall: token estimates and FTS-ready text."""

from __future__ import annotations

import re
import unicodedata

# CJK ideographs, kana, hangul: each is roughly one token for the model and one word for search
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]")


def estimate_tokens(text: str) -> int:
    """About a token per CJK character and per four other characters; never 0 for non-empty text."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return max(1, cjk + -(-(len(text) - cjk) // 4))


def fts_text(text: str) -> str:
    """Text with each CJK character set apart, so FTS5's unicode61 tokenizer indexes them one by one.

    Chinese has no spaces between words; a phrase query over single characters matches
    any run of them (林默 matches 林 默), which trigram tokenizers cannot do for 2-character names."""
    return _CJK.sub(r" \g<0> ", unicodedata.normalize("NFKC", text))  # a template, not a lambda: no call per character


_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for free text: any word, any pair of adjacent CJK characters.

    Every term is quoted, so punctuation or FTS5 operators in the writer's text cannot break the
    query; a lone CJK character stands for itself. None when nothing is searchable."""
    terms: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        run = _CJK.findall(word)
        if not run:
            if len(word) > 1 or word.isdigit():
                terms.append(f'"{word}"')
            continue
        latin = _CJK.sub(" ", word).split()
        terms.extend(f'"{w}"' for w in latin if len(w) > 1)
        chars = [c for c in word if _CJK.fullmatch(c)]
        if len(chars) == 1:
            terms.append(f'"{chars[0]}"')
        terms.extend(f'"{a} {b}"' for a, b in zip(chars, chars[1:]))
    unique = list(dict.fromkeys(terms))
    return " OR ".join(unique) if unique else None
