"""The manuscript around the selection (context.md, Surrounding text): a window of N code points on
each side, cut back to a paragraph, else a sentence, else a reported hard cut; and how a side gives
way further when the budget is short. Pure."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Callable, Iterator

from ...kernel.text import span_tokens

# Each alternative of these two starts with one character, so the regex engine skips to the next one that
# may start a match rather than trying at every position (2-3x faster over a 20,000-code-point side; the
# same matches as `\r?\n…` and `(?:[。！？…．｡]+|[.!?]+(?=…))…`).
_PARAGRAPH = re.compile(r"(?:\r\n|\n)[ \t\r]*\n\s*")  # a blank line (and the blank space after it); CRLF too
# a sentence ends at 。！？… or a full-width ．｡ (Chinese needs no space after them) or at .!? followed by a space or
# the end; closing quotes and brackets right after belong to the sentence
_ENDS, _CLOSING = "。！？…．｡", r"[\"'”’」』）)\]]*"
_SENTENCE = re.compile("(?:" + "|".join([f"{c}[{_ENDS}]*" for c in _ENDS] + [
    rf"\{c}[.!?]*(?={_CLOSING}(?:\s|$))" for c in ".!?"]) + rf"){_CLOSING}[ \t]*")


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
    return Side(_whole_start(text, len(text) - n), "hard")


def after(text: str, n: int) -> Side:
    """At most n code points from the start of `text` (what follows the selection)."""
    if n <= 0 or not text:
        return Side("", "empty" if text else "none")
    if len(text) <= n:
        return Side(text, "none")
    window = text[:n]
    last = next((m.start() for m in _backward(window, _PARAGRAPH, 0, _NOT_SPACE) if m.start() > 0), 0)
    if last:  # the last blank line, found from the end (a side of 20,000 code points holds hundreds)
        return Side(window[:last], "paragraph")
    ends = [m.end() for m in _SENTENCE.finditer(window)]
    if ends:
        return Side(window[:ends[-1]].rstrip(), "sentence")
    return Side(text[:_whole_end(text, n)], "hard")


def _joins(ch: str) -> bool:
    """A code point that belongs to the one before it: a combining mark, a variation selector, a skin tone,
    an emoji tag, or a zero-width joiner (and what it joins)."""
    o = ord(ch)
    return (unicodedata.combining(ch) != 0 or o == 0x200D or 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF
            or 0xE0020 <= o <= 0xE007F or 0xE0100 <= o <= 0xE01EF or unicodedata.category(ch) in ("Mn", "Me"))


def _whole_start(text: str, at: int) -> str:
    """`text[at:]`, moved later so it does not start inside a character (a hard cut: a lone accent or
    half an emoji would start the prompt's text)."""
    while at < len(text) and (_joins(text[at]) or (at > 0 and text[at - 1] == "\u200d")):
        at += 1
    return text[at:]


def _whole_end(text: str, at: int) -> int:
    """`at`, moved earlier so `text[:at]` does not end inside a character."""
    while at > 0 and at < len(text) and (_joins(text[at]) or text[at - 1] == "\u200d"):
        at -= 1
    return at


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


NEAR = 500  # code points next to the selection the budget's first cut never takes (context.md, Budgets)


def near_floor(text: str) -> int:
    """The code points of a side the budget's first cut keeps: its near half, and never fewer than the
    500 nearest the selection (all of a shorter side)."""
    return max(-(-len(text) // 2), min(len(text), NEAR))


def _kept_lengths(text: str, side: str, pattern: re.Pattern[str], paragraph: bool, keep: int) -> Iterator[int]:
    """Each boundary of `pattern` in a side as the code points a cut there keeps (those nearest the
    selection), at least `keep`, longest first: the order in which cuts from the far end reach them. Lazy,
    read from the far end: a prompt's budget takes a few cuts of a side of thousands of code points (and
    only the part a cut may take is searched, with a few code points past it, for a boundary's context)."""
    size = len(text)
    if side == "before":  # the far end is the start: a cut keeps what follows the boundary
        for m in pattern.finditer(text, 0, min(size, size - keep + 8)):
            kept = size - m.end()  # ends only grow: what is kept only shrinks
            if kept < keep:
                return
            if 0 < kept < size:
                yield kept
        return
    # the far end is the end: a paragraph's cut keeps what precedes the blank line, a sentence's its end
    for m in _backward(text, pattern, max(0, keep - 8), _NOT_SPACE if paragraph else str.isalnum):
        kept = m.start() if paragraph else m.end()  # from the last match back: what is kept only shrinks
        if kept < keep:
            return
        if 0 < kept < size:
            yield kept


def _NOT_SPACE(ch: str) -> bool:
    return not ch.isspace()


def _backward(text: str, pattern: re.Pattern[str], lo: int, outside: Callable[[str], bool]) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text, lo)`'s matches, the last first, read from the end in growing chunks. A scan
    started at a character no match can hold (`outside`: a blank line's matches hold only white space, a
    sentence end's no letter or digit) finds from there the very matches a scan from `lo` finds."""
    stop, width = len(text), 1024
    while stop > lo:
        at = max(lo, stop - width)
        while at > lo and not outside(text[at]):
            at -= 1
        found = []
        for m in pattern.finditer(text, at):
            if m.start() >= stop:
                break
            found.append(m)
        yield from reversed(found)
        stop, width = at, width * 2


@dataclass(frozen=True)
class Cut:
    kept: int  # code points the side keeps after this cut (nearest the selection)
    how: str  # "paragraph" | "sentence" | "hard" (a side with neither to cut at) | "all"
    tokens: int  # tokens of what the side keeps after this cut (`kept_text`; measured whole, as estimates round)


def cuts(text: str, side: str, keep: int) -> Iterator[Cut]:
    """The successive cuts the budget may make to one side, from its far end toward the selection: whole
    paragraphs first, then the sentences of the paragraph that no longer goes whole, never keeping fewer
    than `keep` code points; with `keep` 0 the last step leaves the side out. Pure and lazy (the caller
    stops as soon as enough is given); each cut's tokens are `estimate_tokens` of what the side keeps."""
    size = len(text)
    measure = span_tokens(text)
    current = size

    def taken(kept: int) -> int:  # the tokens of `kept_text(text, side, kept)`, without making it
        if side == "before":
            start = size - kept
            while start < size and text[start].isspace():
                start += 1
            return measure(start, size)
        end = kept
        while end > 0 and text[end - 1].isspace():
            end -= 1
        return measure(0, end)

    for pattern, how in ((_PARAGRAPH, "paragraph"), (_SENTENCE, "sentence")):
        for kept in _kept_lengths(text, side, pattern, how == "paragraph", max(keep, 1)):
            if kept < current:
                yield Cut(kept, how, taken(kept))
                current = kept
    if 0 < keep < current and (current == size or current - keep > NEAR):  # no blank line or sentence end to
        # cut at (a run of commas), or none for more than 500 code points past the near half: a hard cut there
        kept = _whole_kept(text, side, keep)
        yield Cut(kept, "hard", taken(kept))
        current = kept
    if keep <= 0 and current > 0:
        yield Cut(0, "all", taken(0))


def _whole_kept(text: str, side: str, keep: int) -> int:
    """`keep`, or a little more: so many code points nearest the selection that no character is split."""
    size = len(text)
    if side == "before":
        start = size - keep
        while start > 0 and (_joins(text[start]) or text[start - 1] == "\u200d"):
            start -= 1
        return size - start
    end = keep
    while end < size and (_joins(text[end]) or text[end - 1] == "\u200d"):
        end += 1
    return end


def kept_text(text: str, side: str, kept: int) -> str:
    """The `kept` code points of a side nearest the selection, without the blank space at the cut."""
    if kept <= 0:
        return ""
    return text[len(text) - kept:].lstrip() if side == "before" else text[:kept].rstrip()
