"""`slug` reads only the head of a long text: the same name as the whole text gives."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings, strategies as st

from membank.files.write import WINDOWS_DEVICES, kept_chars, slug


def _whole(text: str, limit: int = 60) -> str:
    """The rule read over the whole text, as `slug` once did."""
    text = unicodedata.normalize("NFKC", text).lower()
    out = re.sub(r"-+", "-", kept_chars(text)).strip("-")[:limit].strip("-") or "memory"
    return f"{out}-1" if WINDOWS_DEVICES.fullmatch(out) else out


_PIECES = st.sampled_from(["a", "Z", "7", "-", " ", "--", "...", "林默", "नमस्ते", "\u0301", "ﬁ", "İ", "e\u0301",
                           "Ⅻ", "con", "\u200b", "ก่", "\n", "!", " - "])


@settings(max_examples=150)
@given(st.lists(_PIECES, max_size=300), st.integers(-3, 80))
def test_the_head_gives_the_whole_texts_slug(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    assert slug(text, limit) == _whole(text, limit)


def test_a_long_memory_with_a_long_run_of_punctuation_first() -> None:
    text = "-" * 5000 + " " * 3000 + "The harbour at dusk " * 200
    assert slug(text) == _whole(text) == "the-harbour-at-dusk-the-harbour-at-dusk-the-harbour-at-dusk"
    assert slug("!" * 10_000) == "memory" and slug("Con") == "con-1"
