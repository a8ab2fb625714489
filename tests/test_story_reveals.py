"""Reveals and the facts' flags (story.md, Reveals and The consistency check; issue 33.3 and 33.5):
`story:reader` spoiler-safe, the prompt marks a fact the reader does not know yet, `BEFORE_REVEAL`,
`MAY_NOT_KNOW` and `FACTS_DISAGREE`, each with a case that raises it and one that does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from membank.domains.story.order import StoryOrder
from membank.domains.story.reveals import Fact, before_reveal, holds, known

from .helpers import membank
from .storykit import CH, fits, ok, story

FACTS = {
    ".writenow/memories/facts/stone.md": "---\ntype: fact\nrevealed: chapters/ch04.md\nkeys: [青埂峰]\n---\n"
                                         "通灵宝玉原是青埂峰下的顽石。\n",
    ".writenow/memories/facts/jade.md": "---\ntype: fact\nkeys: [宝玉的玉]\n---\n宝玉衔玉而生，玉上刻着字。\n",
    ".writenow/memories/facts/room-a.md": "---\ntype: fact\nsubject: 林黛玉\nfacet: 住处\nvalue: 碧纱橱\n---\n"
                                          "黛玉住在碧纱橱。\n",
    ".writenow/memories/facts/room-b.md": "---\ntype: fact\nsince: chapters/ch05.md\nsubject: 林黛玉\nfacet: 住处\n"
                                          "value: 潇湘馆\n---\n黛玉住在潇湘馆。\n",
    ".writenow/memories/facts/room-c.md": "---\ntype: fact\nsubject: 林黛玉\nfacet: 住处\nvalue: 碧纱橱\n---\n"
                                          "黛玉仍住碧纱橱。\n",
    ".writenow/skills/recall.md": "---\nid: recall\nname: 续写\ncontext_rules:\n  surrounding: 200\n"
                                  "  memories: 20\n---\n续写。\n",
}


def _codes(bank: Any, document: str, text: str) -> list[tuple[str, str]]:
    checked = ok(bank, "kg:consistency:check", documentId=document, text=text)
    return [(f["code"], f["entity"]) for f in checked["flags"]]


def test_what_the_reader_knows_is_pure() -> None:
    order = StoryOrder(tuple(CH), True)
    secret = Fact("facts/stone", "…", "s.md", None, None, "chapters/ch04.md", ("青埂峰",), {})
    assert [known(secret, order, p) for p in CH] == [False, False, False, True, True]
    assert not known(Fact("x", "", "", None, None, "chapters/ch99.md", (), {}), order, "chapters/ch05.md")
    assert before_reveal({"facts/stone": secret}, order, "chapters/ch02.md", [("facts/stone", "青埂峰")]) == \
        [(secret, "青埂峰")]
    assert before_reveal({"facts/stone": secret}, order, "chapters/ch04.md", [("facts/stone", "青埂峰")]) == []
    assert holds(["青埂峰"], secret) and holds("facts/stone", secret) and not holds(["别的"], secret)


def test_story_reader_knows_nothing_from_later(tmp_path: Path) -> None:
    bank = story(tmp_path, FACTS)
    try:
        early = ok(bank, "story:reader", at="chapters/ch02.md")
        ids = [f["id"] for f in early["items"]]
        assert "facts/stone" not in ids and "facts/room-b" not in ids  # revealed later; valid only later
        assert "facts/jade" in ids  # no `revealed`: known from the start
        assert "青埂峰" not in json.dumps(early, ensure_ascii=False) and "潇湘馆" not in json.dumps(early, ensure_ascii=False)
        late = ok(bank, "story:reader", at="chapters/ch04.md")
        fits("story:reader", late)
        stone = next(f for f in late["items"] if f["id"] == "facts/stone")
        assert stone["revealed"] == "chapters/ch04.md" and stone["source"] == ".writenow/memories/facts/stone.md"
    finally:
        bank.close()


def test_the_prompt_marks_a_fact_the_reader_does_not_know_yet(tmp_path: Path) -> None:
    bank = story(tmp_path, FACTS)
    try:
        def layer4(document: str) -> str:
            d = ok(bank, "context:assemble", skillId="recall", documentId=document, instruction="通灵宝玉与青埂峰下的顽石")
            return str(d["blocks"][4]["text"])
        early = layer4("chapters/ch02.md")
        assert "青埂峰下的顽石。\n  (.writenow/memories/facts/stone.md)\n  (the reader does not know this yet)" in early
        assert "(the reader does not know this yet)" not in layer4("chapters/ch04.md")
    finally:
        bank.close()


def test_before_reveal(tmp_path: Path) -> None:
    bank = story(tmp_path, FACTS)
    try:
        assert ("BEFORE_REVEAL", "facts/stone") in _codes(bank, "chapters/ch02.md", "那块玉来自青埂峰。")
        checked = ok(bank, "kg:consistency:check", documentId="chapters/ch02.md", text="那块玉来自青埂峰。")
        flag = next(f for f in checked["flags"] if f["code"] == "BEFORE_REVEAL")
        fits("kg:consistency:check", checked)
        assert flag["evidence"] == [{"source": ".writenow/memories/facts/stone.md", "line": 3}]
        assert ("BEFORE_REVEAL", "facts/stone") not in _codes(bank, "chapters/ch04.md", "那块玉来自青埂峰。")
    finally:
        bank.close()


def test_may_not_know(tmp_path: Path) -> None:
    bank = story(tmp_path, FACTS)
    try:
        # 黛玉 learns of 宝玉的玉 in ch04 (her card's knows)
        assert ("MAY_NOT_KNOW", "characters/lin-daiyu") in _codes(bank, "chapters/ch03.md", "黛玉想起宝玉的玉。")
        assert ("MAY_NOT_KNOW", "characters/lin-daiyu") not in _codes(bank, "chapters/ch04.md", "黛玉想起宝玉的玉。")
        assert ("MAY_NOT_KNOW", "characters/lin-daiyu") in _codes(bank, "chapters/ch03.md", "第三回。\n\n黛玉想起宝玉的玉。")
        # not in one paragraph: no warning
        assert ("MAY_NOT_KNOW", "characters/lin-daiyu") not in \
            _codes(bank, "chapters/ch03.md", "黛玉坐着。\n\n宝玉的玉在灯下。")
    finally:
        bank.close()


def test_facts_disagree(tmp_path: Path) -> None:
    bank = story(tmp_path, FACTS)
    try:
        assert not any(c == "FACTS_DISAGREE" for c, _ in _codes(bank, "chapters/ch03.md", "第三回。"))  # b: ch05
        checked = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md", text="第五回。")
        flag = next(f for f in checked["flags"] if f["code"] == "FACTS_DISAGREE")
        assert {(e["source"], e["line"]) for e in flag["evidence"]} == {
            (".writenow/memories/facts/room-a.md", 5), (".writenow/memories/facts/room-b.md", 6),
            (".writenow/memories/facts/room-c.md", 5)}  # each fact's `value:` line
        assert "碧纱橱" in flag["message"] and "潇湘馆" in flag["message"]
    finally:
        bank.close()


def test_reader_on_the_command_line(tmp_path: Path, home: Path) -> None:
    story(tmp_path, FACTS).close()
    shown = membank("reader", "--at", "chapters/ch02.md", cwd=tmp_path / "hlm", home=home)
    assert shown.returncode == 0, shown.stderr
    assert "宝玉衔玉而生" in shown.stdout and "青埂峰" not in shown.stdout


def test_a_scene_the_chapter_lacks_is_a_warning_in_every_answer(tmp_path: Path, home: Path) -> None:
    """manuscript.md: an unknown scene is a warning and counts as the end of its document. `story:reader`,
    `story:threads` and `story:scene` at `chapters/ch04.md#9` (ch04 has one scene) answer at the end of
    ch04 and say so, in Python, on the command line and from the sidecar; a known scene carries none."""
    from .sidecar import Sidecar

    bank = story(tmp_path, FACTS)
    try:
        at_end = ok(bank, "story:reader", at="chapters/ch04.md#9")
        assert at_end["warnings"] == ["chapters/ch04.md has no scene `9`: it counts as the end of chapters/ch04.md"]
        assert "facts/stone" in [f["id"] for f in at_end["items"]]  # revealed in ch04: the end of ch04 knows it
        fits("story:reader", at_end)
        assert "warnings" not in ok(bank, "story:reader", at="chapters/ch04.md#1")
        for channel in ("story:threads", "story:scene"):
            assert ok(bank, channel, at="chapters/ch04.md#9")["warnings"] == at_end["warnings"], channel
            assert "warnings" not in ok(bank, channel, at="chapters/ch04.md"), channel
    finally:
        bank.close()
    root = tmp_path / "hlm"
    for command in (["reader", "--at"], ["threads", "--at"], ["scene"]):
        shown = membank(*command, "chapters/ch04.md#9", cwd=root, home=home)
        assert shown.returncode == 0, shown.stderr
        assert "warning chapters/ch04.md has no scene `9`" in shown.stdout, command
    server = Sidecar("--project", str(root), home=home)
    try:
        assert server.ok("story:reader", {"at": "chapters/ch04.md#9"})["warnings"] == at_end["warnings"]
        assert server.close() == 0
    finally:
        server.kill()
