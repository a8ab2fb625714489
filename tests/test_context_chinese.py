"""context:assemble on a real Chinese chapter (红楼梦 第三回, fixtures/hlm-ch03): a budget gives way by
relevance to this moment (issue 31.1). A code point of Chinese is about a token, so the text around the
selection alone can fill a budget: its far halves go first, never the card of the character the
selection names."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

import membank
from membank import Bank

CHAPTER = Path(__file__).resolve().parent.parent / "fixtures" / "hlm-ch03" / "ch03.md"
DOCUMENT = "chapters/ch03.md"
SELECTION = "黛玉方进入房时"
OPENING = "却说雨村忙回头看时"  # the chapter's first words: the far end of the text before the selection

DAIYU = """---
name: 林黛玉
kind: character
aliases: [黛玉]
include: auto
summary: 林如海之女，贾母的外孙女，自幼体弱，进京投奔外祖母
---
林黛玉是林如海与贾敏的独女，母亲去世后由外祖母接到荣国府。她聪慧过人，心思细密，
说话行事处处留心，"步步留心，时时在意，不肯轻易多说一句话，多行一步路"。她自幼多病，
常服人参养荣丸。初进贾府时只带了两个人：自幼奶娘王嬷嬷和十岁的小丫头雪雁。
"""

YUCUN = """---
name: 贾雨村
kind: character
aliases: [雨村]
include: auto
summary: 湖州人氏，黛玉的塾师，借林如海之力起复
---
贾雨村原系胡州人氏，也是诗书仕宦之族，因他生于末世，父母祖宗根基已尽，人口衰丧。
后中了进士，升了知府，因贪酷之弊被参革职，在林家坐馆教黛玉读书。起复之后补授应天府，
一上任便遇上薛蟠打死人命的官司。
"""


def _skill(root: Path, max_tokens: int) -> None:
    (root / ".writenow" / "skills" / "continue-zh.md").write_text(
        "---\nid: continue-zh\nname: 续写\ncontext_rules:\n  surrounding: 2000\n  characters: true\n"
        f"  preferences: false\n  max_tokens: {max_tokens}\n---\n续写这一段，保持原文的语气。\n", "utf-8")


@pytest.fixture
def hlm(tmp_path: Path) -> Iterator[Bank]:
    """A project holding the start of 第三回 and two cards, without the template's examples."""
    root = tmp_path / "hlm"
    membank.init(root, name="红楼梦")
    for example in (root / ".writenow").rglob("example*"):
        example.unlink()
    (root / "chapters").mkdir()
    shutil.copyfile(CHAPTER, root / DOCUMENT)
    (root / ".writenow" / "characters" / "lin-daiyu.md").write_text(DAIYU, "utf-8")
    (root / ".writenow" / "characters" / "jia-yucun.md").write_text(YUCUN, "utf-8")
    _skill(root, 1200)
    opened = membank.open(root)
    yield opened
    opened.close()


def _assemble(bank: Bank, **payload: Any) -> dict[str, Any]:
    envelope = bank.call("context:assemble", {"skillId": "continue-zh", "documentId": DOCUMENT, **payload})
    assert envelope["ok"], envelope
    return envelope["data"]


def _kept(d: dict[str, Any], kind: str) -> str:
    block = d["blocks"][5]["text"]
    heading = {"before": "### Text before\n\n", "after": "### Text after\n\n"}[kind]
    return block.split(heading, 1)[1].split("\n\n### ", 1)[0]


@pytest.mark.parametrize("max_tokens", [1200, 2500])
def test_a_small_budget_cuts_the_far_text_and_keeps_the_card_the_selection_names(hlm: Bank, max_tokens: int) -> None:
    _skill(hlm.root, max_tokens)
    hlm.sync()
    d = _assemble(hlm, selection={"text": SELECTION}, instruction="续写")
    cards = {i["id"]: i for i in d["items"] if i["kind"] == "card"}
    assert cards["characters/lin-daiyu"]["reason"]["where"] == "selection"
    assert "林黛玉" in d["blocks"][4]["text"] and "人参养荣丸" in d["blocks"][4]["text"]
    dropped = d["diagnostics"]["dropped"]
    assert "characters/lin-daiyu" not in {x["id"] for x in dropped}
    far = [x for x in dropped if x["kind"] in ("before", "after") and "far half" in x["reason"]]
    assert far and all(x["reason"].startswith(f"over the skill's budget of {max_tokens} tokens") for x in far)
    before = _kept(d, "before")
    assert OPENING not in before and before  # the far end went; the text next to the selection stayed
    text = CHAPTER.read_text("utf-8")
    assert text[:text.index(SELECTION)].rstrip().endswith(before.rstrip())
    kept = sum(i["tokens"] for i in d["items"] if i["layer"] >= 2)
    assert kept <= max_tokens and "OVER_BUDGET" not in {r["code"] for r in d["diagnostics"]["reasons"]}


def test_with_room_nothing_is_cut(hlm: Bank) -> None:
    _skill(hlm.root, 20000)
    hlm.sync()
    d = _assemble(hlm, selection={"text": SELECTION})
    assert not d["diagnostics"]["dropped"] and OPENING in _kept(d, "before")
    assert {"characters/lin-daiyu", "characters/jia-yucun"} <= {i["id"] for i in d["items"]}
