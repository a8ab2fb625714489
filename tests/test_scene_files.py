"""Scene files (story.md, Scenes) as writers save them: old-Mac (lone CR) or Windows (CRLF) line ends read
exactly as LF ones (a reviewer's report of a misparse, checked: kept as a guard); a chapter whose file name
holds `#` (`chapters/ch#5.md`) answers `story:scene` at its positions, `#scene` included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from membank import Bank

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


def test_a_chapter_named_with_a_hash_has_its_scene_positions(bank: Bank, sample: Path) -> None:
    shutil.move(sample / "chapters" / "ch05.md", sample / "chapters" / "ch#5.md")
    scenes = sample / ".writenow" / "scenes" / "chapters"
    scenes.mkdir(parents=True)
    (scenes / "ch#5.md.md").write_text("---\npov: Maren Voss\n---\n## The fight\nlocation: the cove\n"
                                       "\n## After\nlocation: Blackpine\n", "utf-8")
    assert bank.call("index:sync", {})["ok"]
    for at, location in (("chapters/ch#5.md#The fight", "the cove"), ("chapters/ch#5.md#2", "Blackpine"),
                         ("chapters/ch#5.md", "Blackpine"), (" chapters/ch#5.md#1 ", "the cove")):
        got = ok(bank, "story:scene", at=at)
        assert got["at"] == at.strip()
        assert got["state"]["location"]["value"] == location, at
        assert got["state"]["pov"]["source"] == ".writenow/scenes/chapters/ch#5.md.md"
        assert [s["title"] for s in got["scenes"]] == ["The fight", "After"]
    assert ok(bank, "story:scene", at="chapters/ch01.md")["state"] == {}  # before it: nothing of it
    missing = bank.call("story:scene", {"at": "chapters/ch#6.md#1"})
    assert missing["error"]["code"] == "INVALID_ARGUMENT"
