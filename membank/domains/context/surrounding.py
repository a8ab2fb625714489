"""The manuscript around the selection (context.md, Surrounding text): a window of N code points on
each side, cut back to a paragraph, else a sentence, else a reported hard cut; and how a side gives
way further when the budget is short. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")  # a blank line (and the blank space after it)
# a sentence ends at 。！？… (Chinese needs no space after them) or at .!? followed by a space or
# the end; closing quotes and brackets right after belong to the sentence
_SENTENCE = re.compile(r"(?:[。！？…]+|[.!?]+(?=[\"'”’」』）)\]]*(?:\s|$)))[\"'”’」』）)\]]*[ \t]*")


@dataclass(frozen=True)
class Side:
    text: str
    cut: str  # "none" (reached the document's edge) | "paragraph" | "sentence" | "hard" | "empty"


def before(text: str, n: int) -> Side:
    """At most n code points from the end of `text` (what precedes the selection)."""
    if n <= 0 or not text:
        return Side("", "empty" if text else "none")
    if len(text) <= n:
        return Side(text, "none")
    window = text[len(text) - n:]
    m = _PARAGRAPH.search(window)
    if m is not None and m.end() < len(window):
        return Side(window[m.end():], "paragraph")
    m = _SENTENCE.search(window)
    if m is not None and m.end() < len(window):
        return Side(window[m.end():].lstrip(), "sentence")
    return Side(window, "hard")


def after(text: str, n: int) -> Side:
    """At most n code points from the start of `text` (what follows the selection)."""
    if n <= 0 or not text:
        return Side("", "empty" if text else "none")
    if len(text) <= n:
        return Side(text, "none")
    window = text[:n]
    ends = [m.start() for m in _PARAGRAPH.finditer(window) if m.start() > 0]
    if ends:
        return Side(window[:ends[-1]], "paragraph")
    ends = [m.end() for m in _SENTENCE.finditer(window)]
    if ends:
        return Side(window[:ends[-1]].rstrip(), "sentence")
    return Side(window, "hard")


def shrink_before(text: str) -> str:
    """One step back for the budget: drop the farthest paragraph, else the farthest sentence, else all."""
    m = _PARAGRAPH.search(text)
    if m is not None and m.end() < len(text):
        return text[m.end():]
    m = _SENTENCE.search(text)
    if m is not None and m.end() < len(text):
        return text[m.end():].lstrip()
    return ""


def shrink_after(text: str) -> str:
    ends = [m.start() for m in _PARAGRAPH.finditer(text) if m.start() > 0]
    if ends:
        return text[:ends[-1]]
    ends = [m.end() for m in _SENTENCE.finditer(text) if m.end() < len(text.rstrip())]
    if ends:
        return text[:ends[-1]].rstrip()
    return ""


def _units(text: str, pattern: re.Pattern[str], keep_end: bool) -> list[str]:
    """`text` split at `pattern`, each boundary kept with the unit before it (so "".join gives text)."""
    out, start = [], 0
    for m in pattern.finditer(text):
        cut = m.end() if keep_end else m.start()
        if 0 < cut < len(text):
            out.append(text[start:cut])
            start = cut
    out.append(text[start:])
    return [u for u in out if u]


def trim(text: str, side: str, max_tokens: int, tokens: Callable[[str], int]) -> tuple[str, str]:
    """`text` cut back from its far end (the start for "before", the end for "after") until it holds
    at most `max_tokens`: whole paragraphs first, then whole sentences, else nothing. (kept, how)."""
    if tokens(text) <= max_tokens:
        return text, "none"
    for pattern, how in ((_PARAGRAPH, "paragraph"), (_SENTENCE, "sentence")):
        units = _units(text, pattern, keep_end=True)
        if len(units) < 2:
            continue
        ordered = units if side == "after" else units[::-1]  # nearest to the selection first
        kept: list[str] = []
        used = 0
        for unit in ordered:
            cost = tokens(unit)
            if used + cost > max_tokens:
                break
            kept.append(unit)
            used += cost
        if kept:
            joined = "".join(kept if side == "after" else kept[::-1])
            return (joined.rstrip() if side == "after" else joined.lstrip()), how
        text = ordered[0]  # not even one paragraph fits: try its sentences
        if tokens(text) <= max_tokens:
            return text, how
    return "", "all"
