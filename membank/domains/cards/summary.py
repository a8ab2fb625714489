"""An imported card's one-line `summary`, from its prose rather than its markup. Pure.

Many community cards write the description in W++ or a like notation (`[Seraphina's Personality=
"caring", "protective", …]`, `[character("X") { Mind("a" + "b") }]`), often followed by example
dialogue after `<START>`. Their first "sentence" is a bracketed run, useless as a summary. The summary
is the first sentence of the description's prose outside such blocks; else of the personality's, then
the scenario's; else, when the card is markup only, its name and the first traits its blocks list (or
the prose a block holds after its label).
"""

from __future__ import annotations

import re
from typing import Any

from .groups import body_text

MAX = 200
TRAITS = 6  # traits named in a summary made from W++ blocks
_DIALOGUE = re.compile(r"<START>.*", re.DOTALL | re.IGNORECASE)  # example dialogues follow the first <START>
_BLOCK = re.compile(r"\[[^\[\]]*\]|\{[^{}]*\}", re.DOTALL)  # [ … ] and { … } runs (W++, Boostyle, JSON-ish)
_QUOTED = re.compile(r'"([^"\n]{1,80})"')
_SENTENCE = re.compile(r"(.+?[.!?。！？])(?:\s|$)", re.DOTALL)
_PLACEHOLDER = re.compile(r"\{\{\s*(char|user)\s*\}\}|<(BOT|USER)>", re.IGNORECASE)


def _named(text: str, name: str) -> str:
    return _PLACEHOLDER.sub(lambda m: name if (m.group(1) or m.group(2) or "").lower() in ("char", "bot")
                            else "the user", text)


def _blocks(text: str) -> tuple[str, list[str]]:
    """The text without its bracketed blocks (innermost first, until none is left), and the blocks."""
    found: list[str] = []
    while True:
        stripped = _BLOCK.sub(lambda m: found.append(m.group(0)) or " ", text)
        if stripped == text:
            return text, found
        text = stripped


def _prose(text: str) -> str:
    """The first sentence of what reads as prose (a word or more of letters), or ""."""
    flat = " ".join(text.split())
    if not re.search(r"\w\w", flat):
        return ""
    m = _SENTENCE.match(flat)
    return m.group(1) if m else flat


def _cut(text: str) -> str:
    return text if len(text) <= MAX else text[:MAX - 1].rstrip() + "…"


def card_summary(name: str, description: Any, personality: Any = None, scenario: Any = None) -> str:
    """The summary of a card with these fields (see the module's docstring); "" when it has no text."""
    blocks: list[str] = []
    for field in (description, personality, scenario):
        text, found = _blocks(_DIALOGUE.sub("", _named(body_text(field), name)))
        blocks += found
        sentence = _prose(text)
        if sentence:
            return _cut(sentence)
    traits = [v.strip() for block in blocks for v in _QUOTED.findall(block) if v.strip() and v.strip() != name]
    if traits:
        shown = ", ".join(dict.fromkeys(traits[:TRAITS]))
        return _cut(f"{name}: {shown}" + ("…" if len(traits) > TRAITS else ""))
    for block in blocks:  # `[Coding Sensei = assists the user with …]`: the prose after the label
        inner = block[1:-1]
        label = re.match(r"[^=:\n]{1,60}[=:]", inner)
        sentence = _prose(inner[label.end():] if label else inner)
        if sentence:
            return _cut(f"{name}: {sentence}")
    return ""
