"""The 红楼梦 capture story shared by the capture tests (issue 34): chapters 2-4 as a few lines each (from
fixtures/manuscript/hongloumeng_ch01-04_excerpt.txt, lines 108, 136-150 and 200-204; the novel is in the
public domain), the cards of its people, a fact, a thread and the facet schemas; `fresh(root)` writes them
into a new project and opens it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import membank
from membank import Bank

from .storykit import write

CH02 = ("第二回  贾夫人仙逝扬州城　冷子兴演说荣国府\n\n"
        "    今只有嫡妻贾氏，生得一女，乳名黛玉，年方五岁．夫妻无子，故爱如珍宝．\n")
CH03 = ("第三回   贾雨村夤缘复旧职　林黛玉抛父进京都\n\n"
        "    那女学生黛玉，身体方愈，原不忍弃父而往，无奈他外祖母致意务去．黛玉听了，方洒泪拜别，"
        "随了奶娘及荣府几个老妇人登舟而去．\n\n"
        "    黛玉方进入房时，只见两个人搀着一位鬓发如银的老母迎上来，黛玉便知是他外祖母．"
        "方欲拜见时，早被他外祖母一把搂入怀中，心肝儿肉叫着大哭起来．\n")
CH04 = ("第四回  薄命女偏逢薄命郎　葫芦僧乱判葫芦案\n\n"
        "    却说黛玉同姊妹们至王夫人处，见王夫人与兄嫂处的来使计议家务．\n")

CARDS = {
    "characters/lin-daiyu.md": """---
name: 林黛玉
kind: character
aliases: [黛玉]
introduced: chapters/ch02.md
progressions:
  - {at: chapters/ch02.md, state: 随父在扬州, set: {location: 扬州, alive: true}}
  - {at: chapters/ch04.md, set: {location: 荣国府}}
relations:
  - {to: 林如海, type: 父亲}
  - {to: 贾母, type: 外孙女, since: chapters/ch04.md}
---
林如海之女。
""",
    "characters/jia-mu.md": """---
name: 贾母
kind: character
aliases: [外祖母, 史氏太君]
---
荣国府的老祖宗。
""",
    "characters/wang-furen.md": "---\nname: 王夫人\nkind: character\naliases: [舅母]\n---\n",
    "characters/xing-furen.md": "---\nname: 邢夫人\nkind: character\naliases: [舅母]\n---\n",
    "characters/lin-ruhai.md": """---
name: 林如海
kind: character
aliases: [如海]
introduced: chapters/ch02.md
progressions:
  - {at: chapters/ch04.md, state: 在扬州任上}
---
巡盐御史。
""",
}

SETTINGS = "story:\n  facets:\n    location: {type: text}\n    alive: {type: bool}\n    age: {type: int, min: 0, max: 120}\n"
FACT = "---\ntype: fact\nsince: chapters/ch02.md\n---\n黛玉之母贾氏已逝。\n"
THREAD = "---\ntitle: 黛玉进京\nopened: chapters/ch02.md\nresolved: chapters/ch04.md\n---\n"
D = "chapters/ch03.md"


def fresh(root: Path) -> Bank:
    membank.init(root, name="红楼梦")
    for example in (root / ".writenow").rglob("example*"):
        example.unlink()
    write(root, {"chapters/ch02.md": CH02, "chapters/ch03.md": CH03, "chapters/ch04.md": CH04,
                 ".writenow/memories/facts/mother.md": FACT, ".writenow/threads/jinjing.md": THREAD})
    write(root, {f".writenow/{rel}": text for rel, text in CARDS.items()})
    (root / ".writenow" / "settings.yaml").write_text(SETTINGS, "utf-8")
    return membank.open(root)


def ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def refused(bank: Bank, channel: str, **payload: Any) -> dict[str, Any]:
    envelope = bank.call(channel, payload)
    assert not envelope["ok"], envelope
    return envelope["error"]  # type: ignore[no-any-return]


MOVE = {"op": "progress", "entity": "林黛玉", "state": "舍父进京", "set": {"location": "荣国府"},
        "evidence": "方洒泪拜别"}
CRY = {"op": "progress", "entity": "贾母", "state": "见外孙女大哭", "evidence": "心肝儿肉叫着大哭起来"}
NANNY = {"op": "entity", "name": "奶娘", "kind": "character", "evidence": "随了奶娘"}


def proposed(bank: Bank, ops: list[dict[str, Any]]) -> list[str]:
    """The ids of `ops` proposed on chapter 3."""
    from membank.domains.capture.evidence import chapter_hash

    data = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=ops)
    return [r["id"] for r in data["ops"]]
