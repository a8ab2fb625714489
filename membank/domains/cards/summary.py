"""A card's one-line `summary`, from its description's prose rather than its markup. Pure.

Many community cards write the description in W++ or a like notation (`[Seraphina's Personality=
"caring", "protective", …]`, `[character("X") { Mind("a" + "b") }]`), often followed by example
dialogue after `<START>`. Their first "sentence" is a bracketed run, useless as a summary. The summary
is the first sentence of the prose outside such blocks; when the description is markup only, the
character's name and the first traits the blocks list (`Seraphina: caring, protective, …`), or the prose
a block holds after its label (`Coding Sensei: assists the user with …`). `{{char}}` reads as the card's
name (given, or the one its W++ names: `[X's …=`, `[character("X")`), `{{user}}` as "the user".
"""

from __future__ import annotations

import re
from typing import Any

from .groups import body_text

MAX = 200
TRAITS = 6  # traits named in a summary made from W++ blocks
_DIALOGUE = re.compile(r"<START>.*", re.DOTALL | re.IGNORECASE)  # example dialogues follow the first <START>
# [ … ] runs and { … } runs holding markup (W++, Boostyle, JSON-ish; never a `{{char}}` left as it is)
# (the look-ahead is atomic: a `{` and 20,000 `:` without a `}` cost one scan, not one per `:`)
_BLOCK = re.compile(r"\[[^\[\]]*\]|\{(?=[^{}]*[:=(\"])[^{}]*\}", re.DOTALL)
READ = 10_000  # code points of a description the summary reads: its first sentence or blocks are near the start
DEPTH = 64  # levels of nested blocks taken out (each a pass over the text); deeper ones stay as text
_QUOTED = re.compile(r'"([^"\n]{1,80})"')
_SENTENCE = re.compile(r"(.+?[.!?。！？])(?:\s|$)", re.DOTALL)
_CHAR = re.compile(r"\{\{\s*char\s*\}\}|<BOT>", re.IGNORECASE)
_USER = re.compile(r"\{\{\s*user\s*\}\}|<USER>", re.IGNORECASE)
_CHARACTER = re.compile(r'\[\s*character\s*\(\s*"([^"\n]{1,80})"\s*\)', re.IGNORECASE)  # classic W++
_LABEL = re.compile(r"\[\s*([^=:\[\]{}\"\n]{1,60}?)\s*[=:]")  # `[Seraphina's Personality=`, `[Coding Sensei =`
_OWNER = re.compile(r"^(.+?)(?:'s|’s)\b", re.IGNORECASE)


def _label(text: str) -> str | None:
    """The first block's label: `Seraphina's Personality`, `Coding Sensei`, or a classic W++ character."""
    m = _CHARACTER.search(text) or _LABEL.search(text)
    return m.group(1).strip() if m else None


def _strip_blocks(text: str) -> tuple[str, list[str]]:
    """The text without its bracketed blocks (innermost first, until none is left or DEPTH levels are
    out), and the blocks."""
    found: list[str] = []
    for _ in range(DEPTH):
        stripped = _BLOCK.sub(lambda m: found.append(m.group(0)) or " ", text)
        if stripped == text:
            break
        text = stripped
    return text, found


def _prose(text: str) -> str:
    """The first sentence of what reads as prose (two letters or more), or ""."""
    flat = " ".join(text.split())
    if not re.search(r"\w\w", flat):
        return ""
    m = _SENTENCE.match(flat)
    return m.group(1) if m else flat


def _cut(text: str) -> str:
    return text if len(text) <= MAX else text[:MAX - 1].rstrip() + "…"


def card_summary(description: Any, name: str | None = None) -> str:
    """The summary the description gives (see the module's docstring); "" when it holds no text."""
    raw = body_text(description)[:READ]  # a hostile card's 100,000 nested brackets must not cost minutes
    label = _label(raw)
    classic = _CHARACTER.search(raw)
    possessive = _OWNER.match(label) if label else None  # `Seraphina's Personality`: Seraphina
    owner = name or (classic.group(1).strip() if classic else possessive.group(1).strip() if possessive else None)
    raw = _USER.sub("the user", raw)
    if owner:
        raw = _CHAR.sub(lambda _: owner, raw)  # the name as written: `\\1` in it is no group
    text, blocks = _strip_blocks(_DIALOGUE.sub("", raw))
    sentence = _prose(text)
    if sentence:
        return _cut(sentence)
    traits = [v.strip() for block in blocks for v in _QUOTED.findall(block) if v.strip() and v.strip() != owner]
    if traits:
        shown = ", ".join(dict.fromkeys(traits[:TRAITS])) + ("…" if len(traits) > TRAITS else "")
        prefix = owner or label
        return _cut(f"{prefix}: {shown}" if prefix else shown)
    for block in blocks:  # `[Coding Sensei = assists the user with …]`: the prose after the label
        inner = block[1:-1]
        m = re.match(r"[^=:\n]{1,60}[=:]", inner)
        sentence = _prose(inner[m.end():] if m else inner)
        if sentence:
            return _cut(f"{label}: {sentence}" if label and m else sentence)
    return ""
