"""Layer 4's manuscript parts and the selection's scene (docs/manuscript.md): `context_rules.recap` (the story
so far, from the summaries) and `context_rules.recall` (earlier passages), both from before the story
position, which is the scene the selection is in."""

from __future__ import annotations

from typing import Any

from ...kernel.text import estimate_tokens
from ..contract import Bank
from .layers import Piece, clean
from .passage import Passage


def selection_at(start: int | None, passage: Passage, text: str | None) -> int | None:
    """The selection's code-point offset in the document's text, when it is known."""
    at = start if start is not None else (
        text.find(passage.selection) if text is not None and passage.selection and passage.located else None)
    return at if at is not None and at >= 0 else None


def scene_position(bank: Bank, document: str, at: int | None, buffer: str | None = None) -> str:
    """`document#n` for the scene holding offset `at` (the manuscript's passages know it), else `document`.
    With the app's unsaved text (`documentText`), `at` counts in that text, not in the saved chapter the
    passages were cut from: the scene is also found in the text sent (by its heading where the saved
    chapter has one of that name, else by its number), and the earlier of the two is taken, so text
    inserted above the selection can never move the position past what follows it."""
    from ..manuscript.recall import scene_at

    scene = scene_at(bank, document, at)
    if buffer is not None and at is not None and scene is not None:
        scene = min(scene, _scene_in(bank, document, buffer, at))
    return f"{document}#{scene}" if scene is not None else document


def _scene_in(bank: Bank, document: str, text: str, at: int) -> int:
    from ..manuscript.passages import scenes
    from ..story.positions import story_order

    end = text.find("\n", at)
    mine = scenes(text[:end if end >= 0 else len(text)], document.lower().endswith(".md"))[-1]
    known = story_order(bank).scene_number(document, mine.name) if mine.name is not None else None
    return known if known is not None else mine.number


RECAP_PIECES_KEPT = 64


def recap(bank: Bank, position: str, tokens: int) -> list[Piece]:
    """The story so far: the summaries of what lies before the position, oldest first, a stale one marked.
    The texts are made clean and counted once per answer of `summaries.kept_recap` (the same tuple while the
    summaries, the story order and the passages hold: a session asks at the same few positions)."""
    if tokens <= 0:
        return []
    from ..manuscript.summaries import kept_recap

    told = kept_recap(bank, position, tokens)
    kept: dict[int, tuple[Any, list[Piece]]] = bank.memo.setdefault("context.recap", {})
    made = kept.get(id(told))
    if made is None or made[0] is not told:  # the tuple itself held: its id is never another's meanwhile
        pieces = [Piece(4, "recap", "summary", f"#### {s.of}{' (stale)' if stale else ''}\n{s.text}", None, s.source,
                        None, {"level": s.level, "stale": stale}) for s, stale in told]
        if len(kept) >= RECAP_PIECES_KEPT:
            kept.clear()
        made = kept[id(told)] = (told, pieces)
    return list(made[1])  # the pieces shared: `Piece.item` gives the caller a reason of its own


def recall(bank: Bank, start: int | None, passage: Passage, text: str | None, query: str, k: int,
           position: str, windows: bool = True) -> list[Piece]:
    """The k earlier passages most relevant to `query`: from before the selection's scene, none already in
    Layer 5's text, each citing its line (`windows`: manuscript/recall.py)."""
    if k <= 0:
        return []
    from ..manuscript.recall import recall as recalled

    at = selection_at(start, passage, text)
    window = None if at is None else (at - len(passage.before.text),
                                      at + len(passage.selection) + len(passage.after.text))
    around = passage.before.text + passage.selection + passage.after.text
    found = recalled(bank, position, query, k, window, around, windows)
    texts = _kept_texts(bank)
    out = []
    for r in found:
        made = texts.get(r.text)
        if made is None:
            body = clean(r.text)
            made = (body, estimate_tokens(body))
            if len(texts) >= TEXTS_KEPT:
                texts.clear()
            texts[r.text] = made
        out.append(Piece.cleaned(4, "manuscript", "passage", made[0], made[1], None, r.source, r.line,
                                 {"scene": r.scene, "why": r.reason}, r.score))
    return out


TEXTS_KEPT = 1024  # recalled passages' Layer 4 texts kept per generation of the passages


def _kept_texts(bank: Bank) -> dict[str, tuple[str, int]]:
    """A recalled passage's text as Layer 4 shows it (clean) and its tokens, kept per generation of the
    passages (what the text is made of moves only with it): a session's prompts recall the same few."""
    from ..manuscript.words import generation_memo

    return generation_memo(bank.index).setdefault("context.texts", {})  # type: ignore[no-any-return]
