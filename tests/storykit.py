"""A small bilingual story for the narrative-state tests (issue 33): five chapters, a few cards, threads
opened and resolved, a secret a character learns later and the reader learns later still, and scenes that
change place. Tiny files, written into a fresh project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import membank
from membank import Bank

CH = [f"chapters/ch0{i}.md" for i in range(1, 6)]

CHAPTERS = {
    "ch01.md": "第一回。绛珠仙草在灵河岸上。A jade stone fell to earth.\n",
    "ch02.md": "第二回。林黛玉进京，来到荣国府。Daiyu met 贾母.\n\n贾宝玉 came in wearing 通灵宝玉.\n",
    "ch03.md": "第三回。黛玉住在碧纱橱。\n",
    "ch04.md": "第四回。薛蟠打死冯渊。\n",
    "ch05.md": "第五回。宝玉梦游太虚幻境。\n",
}

CARDS = {
    "characters/lin-daiyu.md": """---
name: 林黛玉
kind: character
aliases: [黛玉, Daiyu]
keys: [绛珠]
introduced: chapters/ch02.md
progressions:
  - {at: chapters/ch02.md, set: {location: 荣国府}}
  - {at: chapters/ch04.md, set: {knows: [宝玉的玉]}}
---
林如海之女。
""",
    "characters/jia-baoyu.md": """---
name: 贾宝玉
kind: character
aliases: [宝玉]
keys: [通灵宝玉]
introduced: chapters/ch02.md
---
衔玉而生。
""",
    "characters/jia-mu.md": """---
name: 贾母
kind: character
introduced: chapters/ch02.md
---
荣国府的老祖宗。
""",
    "world/old/book.md": """---
name: 旧设定
include: never
---
""",
    "world/old/stone.md": """---
name: 顽石
keys: [jade stone]
introduced: chapters/ch03.md
---
女娲补天剩下的石头。
""",
}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")


def story(tmp_path: Path, extra: dict[str, str] | None = None) -> Bank:
    """The story, opened (the caller closes it). `extra`: more files, by path from the project root."""
    root = tmp_path / "hlm"
    membank.init(root, name="红楼梦")
    for example in (root / ".writenow").rglob("example*"):
        example.unlink()
    write(root, {f"chapters/{name}": text for name, text in CHAPTERS.items()})
    write(root, {f".writenow/{rel}": text for rel, text in CARDS.items()})
    (root / ".writenow" / "project.yaml").write_text(
        (root / ".writenow" / "project.yaml").read_text("utf-8") + "chapters: [chapters/ch*.md]\n", "utf-8")
    write(root, extra or {})
    return membank.open(root)


def ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def fits(channel: str, data: Any) -> None:
    """`data` fits the channel's schema in docs/schema/ (what the sidecar promises)."""
    import json

    from membank.shells import schema

    doc = json.loads((Path(__file__).resolve().parent.parent / "docs" / "schema" / schema.file_name(channel))
                     .read_text("utf-8"))
    problems = schema.check(data, doc["properties"]["data"], doc)
    assert not problems, f"{channel} data does not fit docs/schema: {problems}"
