"""The surrounding text's boundaries read from the far end (context/surrounding.py `_backward`) are the ones a
scan of the whole side finds: a side's last blank line, and the cuts the budget may make, for sides long
enough to be read in several chunks."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from membank.domains.context import surrounding
from membank.domains.context.surrounding import _PARAGRAPH, _SENTENCE

_piece = st.sampled_from(["a", "word ", "林默", "\n", "\n\n", "\r\n\r\n", " \n \n", "\u3000", ". ", "。", "！”",
                          "?\" ", "...", "…", "\t", "x" * 300, "y. " * 40, "\n\n" * 5, "1", "\n" * 700,
                          " \n" * 400, ". " * 600])
_text = st.lists(_piece, max_size=400).map("".join)


def _lengths_scanned_whole(text: str, side: str, paragraph: bool, keep: int) -> list[int]:
    pattern = _PARAGRAPH if paragraph else _SENTENCE
    size = len(text)
    if side == "before":
        kept = {size - m.end() for m in pattern.finditer(text, 0, min(size, size - keep + 8)) if 0 < m.end() < size}
    else:
        found = pattern.finditer(text, max(0, keep - 8))
        kept = {k for k in ((m.start() if paragraph else m.end()) for m in found) if 0 < k < size}
    return sorted((k for k in kept if k >= keep), reverse=True)


@settings(max_examples=300, deadline=None)
@given(_text, st.sampled_from(["before", "after"]), st.booleans(), st.integers(1, 3000))
def test_the_cuts_read_from_the_far_end_are_those_of_a_whole_scan(text: str, side: str, paragraph: bool,
                                                                    keep: int) -> None:
    pattern = _PARAGRAPH if paragraph else _SENTENCE
    assert list(surrounding._kept_lengths(text, side, pattern, paragraph, keep)) == \
        _lengths_scanned_whole(text, side, paragraph, keep)


@settings(max_examples=300, deadline=None)
@given(_text, st.integers(1, 6000))
def test_the_text_after_ends_at_the_last_blank_line_of_its_window(text: str, n: int) -> None:
    window = text[:n]
    ends = [m.start() for m in _PARAGRAPH.finditer(window) if m.start() > 0]
    got = surrounding.after(text, n)
    if len(text) > n and ends:
        assert got == surrounding.Side(window[:ends[-1]], "paragraph")
    elif len(text) > n:
        assert got.cut != "paragraph"
