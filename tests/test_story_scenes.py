"""Scenes (story.md, Scenes; issue 33.4): pov, present, location and date carried forward, `story:scene`
spoiler-safe, `context_rules.scene` (the POV and present characters' cards, one scene line in Layer 4,
last to give way), and `LOCATION_MISMATCH`."""

from __future__ import annotations

import json
from pathlib import Path

from membank.domains.context.giveway import retrieved
from membank.domains.context.layers import Piece
from membank.domains.story.order import StoryOrder
from membank.domains.story.scenes import parse, state

from .helpers import membank
from .storykit import CH, fits, ok, story

CH02 = """---
pov: 林黛玉
location: 荣国府
date: 第一年 冬
---
## 进府
present: [林黛玉, 贾母]

## 宝玉来
present: [林黛玉, 贾宝玉]
location: 贾母房中
"""

SCENES = {
    ".writenow/scenes/chapters/ch02.md.md": CH02,
    ".writenow/scenes/chapters/ch03.md.md": "---\nlocation: 荣国府\npresent: [黛玉]\n---\n",
    ".writenow/scenes/chapters/ch04.md.md": "---\npresent: [贾母]\n---\n",
    ".writenow/skills/scene.md": "---\nid: scene\nname: 续写\ncontext_rules:\n  surrounding: 200\n"
                                 "  characters: true\n  scene: true\n---\n续写。\n",
}


def test_a_scene_file_and_what_carries_forward() -> None:
    scenes, problems = parse(CH02.encode(), "chapters/ch02.md", "s.md")
    assert problems == [] and [(s.title, s.line) for s in scenes] == [("进府", 6), ("宝玉来", 9)]
    assert scenes[0].values["pov"] == ("林黛玉", 2) and scenes[0].values["present"] == (["林黛玉", "贾母"], 7)
    assert "pov" not in scenes[1].values and scenes[1].values["location"] == ("贾母房中", 11)
    later, _ = parse(b"---\npresent: [x]\n---\n", "chapters/ch04.md", "t.md")
    files = {"chapters/ch02.md": scenes, "chapters/ch04.md": later}
    order = StoryOrder(tuple(CH), True)
    at3, current = state(lambda d: files.get(d, []), order, "chapters/ch03.md")
    assert current is None and "present" not in at3  # present is per scene, never carried
    assert at3["location"]["value"] == "贾母房中" and at3["pov"]["at"] == "chapters/ch02.md"
    named, current = state(lambda d: files.get(d, []), order, "chapters/ch02.md#进府")
    assert current is not None and current.title == "进府" and named["location"]["value"] == "荣国府"
    assert state(lambda d: files.get(d, []), order, "chapters/ch01.md") == ({}, None)


def test_story_scene_is_cited_and_spoiler_safe(tmp_path: Path) -> None:
    bank = story(tmp_path, SCENES)
    try:
        early = ok(bank, "story:scene", at="chapters/ch01.md")
        assert early["state"] == {} and early["scene"] is None and early["line"] == ""
        at3 = ok(bank, "story:scene", at="chapters/ch03.md")
        assert at3["state"]["pov"] == {"value": "林黛玉", "at": "chapters/ch02.md",
                                       "source": ".writenow/scenes/chapters/ch02.md.md", "line": 2}
        assert at3["state"]["present"]["value"] == ["黛玉"] and at3["state"]["location"]["value"] == "荣国府"
        assert at3["line"] == "POV 林黛玉 · 荣国府 · 第一年 冬 · present: 黛玉"
        scene = ok(bank, "story:scene", at="chapters/ch02.md#进府")
        fits("story:scene", scene)
        assert scene["state"]["present"]["value"] == ["林黛玉", "贾母"] and len(scene["scenes"]) == 2
        assert "贾母房中" not in json.dumps(scene, ensure_ascii=False).split('"scenes"')[0]
    finally:
        bank.close()


def test_the_scene_brings_its_characters_and_one_line(tmp_path: Path) -> None:
    bank = story(tmp_path, SCENES)
    try:
        d = ok(bank, "context:assemble", skillId="scene", documentId="chapters/ch04.md", instruction="续写")
        reasons = {i["id"]: i["reason"] for i in d["items"] if i["kind"] == "card"}
        assert reasons["characters/lin-daiyu"]["reason"] == "POV"  # named nowhere near: the scene's POV
        assert reasons["characters/jia-mu"]["reason"] == "PRESENT"
        assert "characters/jia-baoyu" not in reasons  # in an earlier scene, not in this one
        assert "POV 林黛玉 · 荣国府 · 第一年 冬 · present: 贾母" in d["blocks"][4]["text"]
        plain = ok(bank, "context:assemble", skillId="scene", documentId="chapters/ch01.md", instruction="续写")
        assert not any(i["kind"] == "card" for i in plain["items"])  # ch01: no scene yet, nothing later
        assert "林黛玉" not in plain["blocks"][4]["text"]
    finally:
        bank.close()


def test_the_scene_goes_last_with_the_selection_cards() -> None:
    scene_card = Piece(4, "cards", "card", "林黛玉", "characters/lin-daiyu", reason={"where": "scene"})
    line = Piece(4, "scene", "scene", "POV 林黛玉")
    around = Piece(4, "cards", "card", "贾母", "characters/jia-mu", reason={"where": "before"})
    least, rest, last = retrieved([scene_card, around, line])
    assert last == [line, scene_card] and rest == [around] and least == []


def test_location_mismatch_is_raised_where_the_card_disagrees(tmp_path: Path) -> None:
    bank = story(tmp_path, SCENES)
    try:
        flags = ok(bank, "kg:consistency:check", documentId="chapters/ch02.md")["flags"]
        said = [f for f in flags if f["code"] == "LOCATION_MISMATCH"]
        assert [f["entity"] for f in said] == ["characters/lin-daiyu"]  # 宝玉来 is in 贾母房中, her card: 荣国府
        assert said[0]["evidence"] == [{"source": ".writenow/scenes/chapters/ch02.md.md", "line": 10},
                                       {"source": ".writenow/characters/lin-daiyu.md", "line": 8}]
        assert "贾母房中" in said[0]["message"] and "荣国府" in said[0]["message"]
        at3 = ok(bank, "kg:consistency:check", documentId="chapters/ch03.md")["flags"]
        assert not any(f["code"] == "LOCATION_MISMATCH" for f in at3)  # the scene is back in 荣国府
    finally:
        bank.close()


def test_a_card_edited_between_two_checks_is_compared_as_it_now_is(tmp_path: Path) -> None:
    bank = story(tmp_path, SCENES)
    try:
        def mismatched() -> list[str]:
            flags = ok(bank, "kg:consistency:check", documentId="chapters/ch02.md")["flags"]
            return [f["entity"] for f in flags if f["code"] == "LOCATION_MISMATCH"]
        assert mismatched() == ["characters/lin-daiyu"]
        [card] = list(tmp_path.rglob("characters/lin-daiyu.md"))
        card.write_text(card.read_text("utf-8").replace("location: 荣国府", "mood: 喜"), "utf-8")
        bank.sync()
        assert mismatched() == []  # her card says nothing of where she is now
    finally:
        bank.close()


def test_scene_on_the_command_line(tmp_path: Path, home: Path) -> None:
    story(tmp_path, SCENES).close()
    shown = membank("scene", "chapters/ch03.md", cwd=tmp_path / "hlm", home=home)
    assert shown.returncode == 0, shown.stderr
    assert "POV 林黛玉" in shown.stdout and "scenes/chapters/ch02.md.md:2" in shown.stdout


def test_files_that_are_not_threads_or_scenes_are_doctor_warnings(tmp_path: Path) -> None:
    bank = story(tmp_path, {**SCENES, ".writenow/scenes/chapters/ch05.md.md": "## 梦\n- 不是 key: value\n  [\n",
                            ".writenow/threads/nowhere.md": "---\ntitle: 无头\n---\nno opened\n"})
    try:
        said = {(d["source"], d["line"]) for d in bank.diagnostics()["items"]}
        assert (".writenow/scenes/chapters/ch05.md.md", 1) in said and (".writenow/threads/nowhere.md", 1) in said
        threads = ok(bank, "story:threads", at="chapters/ch05.md")
        assert threads["items"] == [] and threads["problems"][0]["source"] == ".writenow/threads/nowhere.md"
        at5 = ok(bank, "story:scene", at="chapters/ch05.md")  # the bad scene is empty: the values before carry on
        assert at5["state"]["location"]["value"] == "荣国府" and "present" not in at5["state"]
    finally:
        bank.close()
