"""Terminal cells: how wide text shows, so columns of Chinese line up and cuts never overflow them.

A wide or full-width character (CJK ideographs, kana, hangul, full-width punctuation: East Asian Width
W or F) takes two cells; a combining mark, a zero-width character or a control character none; every
other character one. The same rule as wcwidth, from the standard library's Unicode tables.
"""

from __future__ import annotations

import functools
import unicodedata

ELLIPSIS = "…"


@functools.lru_cache(maxsize=4096)
def char_cells(char: str) -> int:
    """The cells one character takes on a terminal: 0, 1 or 2."""
    if char < "\u0300":  # ASCII and Latin-1 (fast path): controls take none, the rest one
        return 0 if char < " " or "\x7f" <= char < "\xa0" else 1
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf", "Cc"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cells(text: str) -> int:
    """How many terminal cells `text` takes on one line."""
    if text.isascii():  # one cell a character but the controls (isprintable: none of them, in C)
        return len(text) if text.isprintable() else sum(1 for c in text if " " <= c < "\x7f")
    return sum(map(char_cells, text))


def clip(text: str, width: int) -> str:
    """`text` cut to at most `width` cells, ending in … when cut (never a wide character split in half)."""
    if text.isascii() and text.isprintable():  # a cell a character: a slice (`membank list` clips thousands)
        return text if len(text) <= width else text[:max(0, width - 1)] + ELLIPSIS
    room, used, end = max(0, width - 1), 0, -1  # one walk, as far as the cut shows: a long text is not measured whole
    for at, char in enumerate(text):
        used += char_cells(char)
        if end < 0 and used > room:
            end = at  # the first character past the room left for the …
        if end >= 0 and used > width:
            break
    else:
        if used <= width:
            return text  # the whole of it fits
        end = len(text)  # a width below 0: even a text of no cells is cut
    while end > 0 and text[end - 1] == "\u200d":  # half a joined emoji: the joiner would glue it to the …
        end -= 1
    return text[:end] + ELLIPSIS


def pad(text: str, width: int) -> str:
    """`text` followed by spaces up to `width` cells (as str.ljust, counted in cells)."""
    return text + " " * max(0, width - cells(text))


# what a terminal would obey rather than show: C0 controls but tab and newline, DEL, C1 controls (ESC starts
# a sequence that can clear the screen, retitle the window or hide text); each shown as its control picture
_HIDDEN = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)}
_HIDDEN.update({0x0D: None, 0x7F: 0x2421, **{c: 0xFFFD for c in range(0x80, 0xA0)}})


def visible(text: str) -> str:
    """`text` with nothing a terminal would obey: the writer's names, values and bodies shown, never run
    (a card named "\\x1b[2J" must not clear the screen). A carriage return is left out."""
    if text.isprintable():
        return text
    return text.translate(_HIDDEN)
