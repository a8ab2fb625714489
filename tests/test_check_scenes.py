"""The consistency check at a scene position (story.md, "The consistency check"; manuscript.md, "Scene
positions"; issue 32.2, issue 33.5): `chapters/ch03.md#进府` checks that scene's text there, citing the
chapter's lines; a whole chapter is judged scene by scene, so a death in scene 2 is not true in scene 1;
`membank check` takes the passage with --text or on stdin."""

from __future__ import annotations

from pathlib import Path

from membank import Bank

from .helpers import membank
from .storykit import ok, story

CH03 = "# 第三回\n\n秦可卿 smiled at 林黛玉.\n\n## 进府\n\nThe funeral of Keqing. 可卿 was gone.\n"
QIN = """---
name: 秦可卿
kind: character
aliases: [可卿, Keqing]
introduced: chapters/ch01.md
progressions:
  - {at: "chapters/ch03.md#进府", set: {alive: false}}
---
宁国府的蓉大奶奶。
"""
FILES = {"chapters/ch03.md": CH03, ".writenow/characters/qin-keqing.md": QIN,
         ".writenow/scenes/chapters/ch03.md.md": "## 进府\npresent: [林黛玉]\nlocation: 扬州\n",
         ".writenow/memories/facts/funeral.md": "---\ntype: fact\nsince: \"chapters/ch03.md#进府\"\n---\n秦可卿 was buried.\n"}


def _dead(data: dict) -> list[dict]:
    return [f for f in data["flags"] if f["code"] == "NOT_ALIVE"]


def _bank(tmp_path: Path) -> Bank:
    bank = story(tmp_path, FILES)
    ok(bank, "index:sync")
    return bank


def test_a_scene_position_checks_that_scene_there(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    try:
        for at in ("chapters/ch03.md#进府", "chapters/ch03.md#2"):
            data = ok(bank, "kg:consistency:check", documentId=at)
            assert data["documentId"] == at and data["positionKnown"]
            flag, = _dead(data)
            assert "since chapters/ch03.md#进府" in flag["message"]
            qin, = [e for e in data["entities"] if e["name"] == "秦可卿"]
            # offsets are the chapter file's: scene 1's 秦可卿 is not read, scene 2's Keqing is where it stands
            assert [m["offset"] for m in qin["mentions"]] == [CH03.index("Keqing"), CH03.index("可卿 was")]
            assert "林黛玉" not in {e["name"] for e in data["entities"]}  # scene 1 is not this scene
        first = ok(bank, "kg:consistency:check", documentId="chapters/ch03.md#1")
        assert _dead(first) == [] and {e["name"] for e in first["entities"]} == {"秦可卿", "林黛玉"}
        assert first["facts"] == []  # the funeral fact holds from scene 2: nothing later is consulted
        buried, = ok(bank, "kg:consistency:check", documentId="chapters/ch03.md#进府")["facts"]
        assert buried["content"].strip() == "秦可卿 was buried."
        sent = ok(bank, "kg:consistency:check", documentId="chapters/ch03.md#进府", text="可卿 came back.")
        assert len(_dead(sent)) == 1 and sent["entities"][0]["mentions"][0]["offset"] == 0
        early = ok(bank, "kg:consistency:check", documentId="chapters/ch03.md", text="可卿 came back.")
        assert _dead(early) == []  # a death in scene 2 is not true at the chapter's start
        wrong = bank.call("kg:consistency:check", {"documentId": "chapters/ch03.md#雨夜"})
        assert wrong["error"]["code"] == "INVALID_ARGUMENT" and "进府" in wrong["error"]["message"]
    finally:
        bank.close()


def test_a_scene_position_reads_no_later_scene_state(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    try:
        def moved(at: str) -> list[dict]:
            data = ok(bank, "kg:consistency:check", documentId=at)
            return [f for f in data["flags"] if f["code"] == "LOCATION_MISMATCH"]
        assert moved("chapters/ch03.md#1") == []  # 进府's scene state comes after scene 1
        assert len(moved("chapters/ch03.md#进府")) == 1 and len(moved("chapters/ch03.md")) == 1
    finally:
        bank.close()


def test_a_whole_chapter_is_judged_scene_by_scene(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    try:
        data = ok(bank, "kg:consistency:check", documentId="chapters/ch03.md")
        flag, = _dead(data)  # scene 2's mentions, not scene 1's
        assert "mentioned in chapters/ch03.md#进府" in flag["message"]
        assert data["documentId"] == "chapters/ch03.md"
        qin, = [e for e in data["entities"] if e["name"] == "秦可卿"]
        assert qin["mentionsTotal"] >= 3 and qin["facets"].get("alive") is None  # the view at the chapter's start
        # only scene 1 in the file: nothing is flagged (nothing after the position is consulted)
        (bank.root / "chapters/ch03.md").write_text(CH03.split("## ")[0], "utf-8")
        assert _dead(ok(bank, "kg:consistency:check", documentId="chapters/ch03.md")) == []
    finally:
        bank.close()


def test_membank_check_takes_the_passage_on_stdin_or_as_text(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    root = bank.root
    bank.close()
    home = tmp_path / "home"
    scene = membank("check", "chapters/ch03.md#进府", cwd=root, home=home)
    assert scene.returncode == 1 and "NOT_ALIVE" in scene.stdout
    piped = membank("check", "chapters/ch03.md#1", "-", cwd=root, home=home, stdin="可卿 came back.")
    assert piped.returncode == 0 and "秦可卿" in piped.stdout
    assert "林黛玉" not in piped.stdout  # the passage on stdin, not the file's scene 1
    given = membank("check", "chapters/ch03.md#1", "--text", "可卿 came.", cwd=root, home=home)
    assert given.returncode == 0 and "秦可卿" in given.stdout and "NOT_ALIVE" not in given.stdout
    missing = membank("check", "chapters/ch09.md", cwd=root, home=home)
    assert missing.returncode == 1 and "--text" in missing.stderr and "as `text`" not in missing.stderr


def test_scenes_cut_for_a_check_keep_the_chapters_offsets_and_lines() -> None:
    import pytest

    import membank.domains.manuscript  # noqa: F401  (it provides the scene cutter)
    from membank.domains.story import checkscenes
    from membank.kernel.errors import MembankError

    for text in ("前言 Qin\r\n\r\n## 进府\r\n可卿 was gone.\r\n", "前言\r\r## 进府\r可卿 was gone.\r",
                 "---\ntitle: x\n---\n# 第三回\n\nA.\n\n* * *\n\n可卿 was gone.\n"):
        found = checkscenes.spans("chapters/ch03.md", text)
        assert len(found) == 2 and found[1].end == len(text) and found[0].end == found[1].start
        scene = checkscenes.in_place(text, checkscenes.pick("chapters/ch03.md", "2", found))
        assert scene.index("可卿") == text.index("可卿") and scene.count("\n") <= text.count("\n")
        assert "前言" not in scene and "A." not in scene  # nothing of scene 1 is read
    with pytest.raises(MembankError) as e:
        checkscenes.pick("chapters/ch03.md", "#3", found)
    assert "#2" in e.value.message and e.value.code == "INVALID_ARGUMENT"
