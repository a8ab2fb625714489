"""The six layers (context.md): what each holds, and their one serialisation. Pure.

Every layer and every sub-section is always present, in the same order, under the same heading; an
empty one carries the same placeholder line, so the skeleton of a prompt never depends on what this
moment found. Text is NFC with LF line endings: a file saved with CRLF gives the same bytes."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ...kernel.text import estimate_tokens

PLACEHOLDER = "(none)"
SYSTEM_LAYERS = (0, 1, 2, 3)  # the systemPrompt; 4 and 5 are the userContent


@dataclass(frozen=True)
class Layer:
    number: int
    name: str  # the settings' layerTokens key
    title: str
    sections: tuple[tuple[str, str], ...]  # (key, heading); () for a layer of one text


LAYERS = (
    Layer(0, "identity", "Identity", ()),
    Layer(1, "skill", "Skill", ()),
    Layer(2, "project", "Project", (("project", "Project"), ("characters", "Characters"), ("world", "World"))),
    Layer(3, "preferences", "Preferences", (("preferences", "The author's preferences"),)),
    Layer(4, "retrieved", "Retrieved for this passage", (
        ("cards", "Characters and places mentioned"), ("memories", "Relevant memories"),
        ("document", "Memories for this document"), ("episodes", "Past runs like this one"),
        ("history", "Recent history"), ("recap", "The story so far"),
        ("manuscript", "Earlier in the manuscript"), ("threads", "Open threads"), ("scene", "Scene"))),
    Layer(5, "immediate", "The passage", (
        ("session", "This session"), ("instruction", "Instruction"), ("before", "Text before"), ("selection", "Selection"),
        ("after", "Text after"))),
)


def clean(text: str) -> str:
    """NFC with LF line endings: the same bytes on every machine and editor."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


@dataclass(frozen=True)
class Piece:
    """One injected piece: it is cited in `items`, journaled in the run, and counted in the budget."""

    layer: int
    section: str  # the layer's sub-section key ("" for Layers 0 and 1)
    kind: str  # identity | skill | project | card | state | preference | memory | working | instruction | before | selection | after
    text: str  # as it appears in the prompt (clean)
    id: str | None = None
    source: str | None = None
    line: int | None = None
    reason: Any = None
    score: float | None = None
    tokens: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean(self.text))
        object.__setattr__(self, "tokens", estimate_tokens(self.text))

    @classmethod
    def cleaned(cls, layer: int, section: str, kind: str, text: str, tokens: int, id: str | None = None,
                source: str | None = None, line: int | None = None, reason: Any = None,
                score: float | None = None) -> Piece:
        """The piece `Piece(...)` makes of a text that `clean` gave and `estimate_tokens` counted (a text
        kept from an earlier prompt): without the frozen dataclass's eleven attribute calls, as a prompt
        makes dozens of memory pieces that the budget mostly drops."""
        piece = object.__new__(cls)
        object.__setattr__(piece, "__dict__", {"layer": layer, "section": section, "kind": kind, "text": text, "id": id,
                                               "source": source, "line": line, "reason": reason, "score": score,
                                               "tokens": tokens})  # a dict made whole: no keywords to parse
        return piece

    def item(self) -> dict[str, Any]:
        """The piece as `items` lists it: the caller's own, as pieces (and their reasons, flat dicts) are
        kept between prompts (preferences, a document's memories, the recap)."""
        reason = dict(self.reason) if type(self.reason) is dict else self.reason
        out: dict[str, Any] = {"layer": self.layer, "kind": self.kind, "id": self.id, "source": self.source,
                               "tokens": self.tokens, "reason": reason}
        if self.line is not None:
            out["line"] = self.line
        if self.score is not None:
            out["score"] = self.score
        return out


def _section(heading: str, pieces: list[Piece]) -> str:
    body = "\n\n".join(p.text for p in pieces if p.text) or PLACEHOLDER
    return f"### {heading}\n\n{body}\n\n"


def render(layer: Layer, pieces: list[Piece]) -> str:
    """One block: the layer's heading, then its text or its sub-sections in their fixed order."""
    head = f"## {layer.title}\n\n"
    if not layer.sections:
        body = "\n\n".join(p.text for p in pieces if p.text) or PLACEHOLDER
        return head + body + "\n\n"
    return head + "".join(_section(title, [p for p in pieces if p.section == key]) for key, title in layer.sections)


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Assembled:
    blocks: tuple[dict[str, Any], ...]
    system_prompt: str
    user_content: str
    prefix_hash: str
    prefix_tokens: int
    breakpoints: tuple[int, ...]


def by_layer(pieces: list[Piece]) -> dict[int, list[Piece]]:
    """The pieces of each layer, in their order (a piece of no layer in LAYERS is in none)."""
    out: dict[int, list[Piece]] = {layer.number: [] for layer in LAYERS}
    for p in pieces:
        mine = out.get(p.layer)
        if mine is not None:
            mine.append(p)
    return out


def serialise(pieces: list[Piece]) -> Assembled:
    """The six blocks, the two parts and the prefix hash. Cache breakpoints go after the skill (shared
    by every project using it), after the project's standing material and after the preferences (the
    end of the prefix): an edit to a later layer still hits the cache for the earlier ones."""
    layered = by_layer(pieces)
    prefix = _prefix(tuple((p.layer, p.section, p.text) for n in SYSTEM_LAYERS for p in layered[n]), layered)
    blocks = [dict(b) for b in prefix[0]]  # the caller's own
    blocks += [_block(layer, layered[layer.number]) for layer in LAYERS if layer.number not in SYSTEM_LAYERS]
    user = "".join(b["text"] for b in blocks if b["layer"] not in SYSTEM_LAYERS)
    return Assembled(tuple(blocks), prefix[1], user, prefix[2], prefix[3], (1, 2, 3))


def _block(layer: Layer, pieces: list[Piece]) -> dict[str, Any]:
    text = render(layer, pieces)
    return {"layer": layer.number, "name": layer.name, "text": text, "tokens": estimate_tokens(text), "hash": sha256(text)}


PrefixKey = tuple[tuple[int, str, str], ...]
_prefixes: dict[PrefixKey, tuple[tuple[dict[str, Any], ...], str, str, int]] = {}
PREFIXES_KEPT = 8


def _prefix(key: PrefixKey, layered: dict[int, list[Piece]]) -> tuple[tuple[dict[str, Any], ...], str, str, int]:
    """Blocks 0-3, the systemPrompt, its hash and tokens, made once for the same texts in the same
    sections: the prefix is byte-stable by design, so a session's prompts render and hash it again and
    again (the texts are mostly the same string objects, whose hashes Python keeps)."""
    made = _prefixes.get(key)
    if made is None:
        blocks = tuple(_block(layer, layered[layer.number]) for layer in LAYERS if layer.number in SYSTEM_LAYERS)
        system = "".join(b["text"] for b in blocks)
        made = (blocks, system, sha256(system), estimate_tokens(system))
        if len(_prefixes) >= PREFIXES_KEPT:
            _prefixes.clear()
        _prefixes[key] = made
    return made
