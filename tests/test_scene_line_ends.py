"""Scene files saved with old-Mac (lone CR) or Windows (CRLF) line ends read exactly as LF ones: the same
scenes, values and cited lines in `story:scene` (a reviewer's report of a misparse, checked: kept as a guard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .storykit import ok, story

CH02 = "---\npov: 林黛玉\nlocation: 荣国府\n---\n## 进府\npresent: [林黛玉, 贾母]\n\n## 宝玉来\npresent: [林黛玉, 贾宝玉]\n" \
       "location: 贾母房中\n"
FILE = ".writenow/scenes/chapters/ch02.md.md"


def _answers(tmp_path: Path, ends: str) -> list[object]:
    bank = story(tmp_path / repr(ends), {FILE: CH02.replace("\n", ends)})
    try:
        return [ok(bank, "story:scene", at=at) for at in ("chapters/ch02.md#进府", "chapters/ch02.md", "chapters/ch03.md")]
    finally:
        bank.close()


@pytest.mark.parametrize("ends", ["\r", "\r\n"], ids=["cr", "crlf"])
def test_a_scene_file_reads_the_same_whatever_its_line_ends(tmp_path: Path, ends: str) -> None:
    lf = _answers(tmp_path, "\n")
    assert lf[0]["state"]["present"] == {"value": ["林黛玉", "贾母"], "at": "chapters/ch02.md",
                                         "source": FILE, "line": 6}
    assert lf[1]["state"]["location"]["line"] == 10
    assert _answers(tmp_path, ends) == lf
