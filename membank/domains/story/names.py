"""How the story compares names, aliases and keys (story.md, Matching): NFKC, then case folding, on
both sides. Apart from the matcher, so that what reads names alone (the problems `membank status`
counts, kept in the index as cards are indexed: refs.py) loads no automaton and no `regex`."""

from __future__ import annotations

import unicodedata


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()
