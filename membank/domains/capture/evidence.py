"""Where a quote stands in a chapter (capture.md, propose): after NFKC and with whitespace folded away
(a quote copied across a line break, full-width or half-width, still matches), its line. Pure."""

from __future__ import annotations

import hashlib
import unicodedata

MAX_QUOTE_CHARS = 2_000  # a quote longer than this is not a quote (a model pasting the chapter back)


def chapter_hash(text: str) -> str:
    """`sha256:` of the chapter text as prepared, its line ends as LF: a checkout that gives the chapter
    CRLF (git for Windows, `core.autocrlf`) leaves the ops proposed on another machine current."""
    return _sha256(text.replace("\r\n", "\n").replace("\r", "\n"))


def chapter_hashes(text: str) -> frozenset[str]:
    """The hashes that name this text of the chapter: `chapter_hash`'s, and that of the text as read (an
    op proposed before line ends were made LF, or an app that hashed the text as it has it)."""
    return frozenset((chapter_hash(text), _sha256(text)))


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def fold(text: str) -> tuple[str, list[int]]:
    """The text NFKC-normalized with every whitespace character left out, and for each folded
    character the offset in `text` it comes from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch):
            if not c.isspace():
                out.append(c)
                where.append(i)
    return "".join(out), where


class Chapter:
    """A chapter folded once, for every quote of a proposal."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded, self.where = fold(text)

    def line_of(self, quote: str) -> int | None:
        """The 1-based line the quote starts on; None when it is not in the chapter (or is empty)."""
        needle, _ = fold(quote)
        if not needle:
            return None
        at = self.folded.find(needle)
        if at < 0:
            return None
        before = self.text[:self.where[at]]  # a lone CR (an old Mac file) ends a line as the editor shows it
        return before.count("\n") + before.count("\r") - before.count("\r\n") + 1
