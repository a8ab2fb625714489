"""Hostile checks of issue 31's prompt, working memory, watcher and displays, and issue 29's book scoping:
what a hostile writer or a demanding app developer would try. Each test failed before its fix."""

from __future__ import annotations

from membank.domains.context import surrounding
from membank.domains.context.budget import fit
from membank.domains.context.layers import Piece, serialise


def _layer2_prompt(session: list[str]) -> list[Piece]:
    return [Piece(0, "", "identity", "identity"), Piece(1, "", "skill", "continue"),
            Piece(2, "project", "project", "Title: T"),
            Piece(2, "characters", "card", "Maren Voss, harbour pilot. " * 20, "maren"),
            *[Piece(5, "session", "working", text, f"w-{i}", "session:s1") for i, text in enumerate(session)],
            Piece(5, "instruction", "instruction", "Continue"),
            Piece(5, "selection", "selection", "He drew. " * 30)]


def test_working_memory_never_moves_the_system_prompt() -> None:
    """A session's entries gave way after Layer 2, so a large working memory pushed an always-on card out
    of the systemPrompt: the provider's prefix cache missed on every add."""
    plain = serialise(fit(_layer2_prompt([]), {}, 250).pieces)
    held = serialise(fit(_layer2_prompt(["- [note] " + "word " * 300, "- [note] short"]), {}, 250).pieces)
    assert held.system_prompt == plain.system_prompt and held.prefix_hash == plain.prefix_hash
    assert "Maren Voss" in held.system_prompt


CRLF = "First paragraph, line one\r\nline two\r\n\r\nSecond paragraph with words and no end"


def test_crlf_text_is_cut_at_its_blank_lines() -> None:
    """A Windows editor's document: a blank line is \\r\\n\\r\\n, which the paragraph cut did not see, so
    every cut was a hard one (or a sentence) in the middle of a paragraph."""
    assert surrounding.before(CRLF, 60) == surrounding.Side("Second paragraph with words and no end", "paragraph")
    assert surrounding.after(CRLF, 45) == surrounding.Side("First paragraph, line one\r\nline two", "paragraph")
    assert [c.how for c in surrounding.cuts(CRLF, "before", 1)] == ["paragraph"]


def test_a_hard_cut_never_splits_a_character() -> None:
    """Offsets are code points, so a hard cut could start the text with a lone combining accent, a skin
    tone without its hand, or end it on a zero-width joiner (half a family emoji)."""
    assert surrounding.before("A" * 10 + "e\u0301" + "B" * 5, 6).text == "B" * 5
    assert surrounding.before("x👍🏽y", 2).text == "y"
    assert surrounding.after("x👨\u200d👩\u200d👧y", 3).text == "x"
    assert surrounding.after("abcdef", 3) == surrounding.Side("abc", "hard")  # plain text: as before
