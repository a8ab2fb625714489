"""What counts as a mention in the consistency check (story.md; issue 33.5): a name or alias, a card's
extra `keys` only with `mention_keys: true`; an entry switched off is not an entity of any chapter."""

from __future__ import annotations

from pathlib import Path

from .storykit import ok, story


def _flags(bank: object, document: str) -> set[tuple[str, str]]:
    checked = ok(bank, "kg:consistency:check", documentId=document)  # type: ignore[arg-type]
    return {(f["code"], f["entity"]) for f in checked["flags"]}


def test_extra_keys_are_not_mentions_and_switched_off_entries_are_not_entities(tmp_path: Path) -> None:
    bank = story(tmp_path)
    try:
        checked = ok(bank, "kg:consistency:check", documentId="chapters/ch01.md")
        assert checked["flags"] == []  # 绛珠 is 林黛玉's key; "jade stone" names an entry of a book that is off
        # her card is still evidence (its key brought it); the switched-off entry is not an entity at all
        assert [e["id"] for e in checked["entities"]] == ["characters/lin-daiyu"]
        # a name is still a mention: 林黛玉 named in ch01 is flagged
        named = ok(bank, "kg:consistency:check", documentId="chapters/ch01.md", text="林黛玉在灵河岸上。")
        assert {(f["code"], f["entity"]) for f in named["flags"]} == {("NOT_YET_INTRODUCED", "characters/lin-daiyu")}
        # activation still counts the keys
        assert {m["id"] for m in ok(bank, "kg:mentions", text="绛珠")["items"]} == {"characters/lin-daiyu"}
    finally:
        bank.close()


def test_mention_keys_true_makes_the_keys_mentions(tmp_path: Path) -> None:
    card = tmp_path / "hlm" / ".writenow" / "characters" / "lin-daiyu.md"
    bank = story(tmp_path)
    try:
        card.write_text(card.read_text("utf-8").replace("keys: [绛珠]", "keys: [绛珠]\nmention_keys: true"), "utf-8")
        bank.sync()
        assert _flags(bank, "chapters/ch01.md") == {("NOT_YET_INTRODUCED", "characters/lin-daiyu")}
    finally:
        bank.close()


def test_an_entry_of_a_book_switched_on_is_an_entity(tmp_path: Path) -> None:
    bank = story(tmp_path, {".writenow/world/old/book.md": "---\nname: 旧设定\ninclude: auto\n---\n",
                            ".writenow/world/old/stone.md": "---\nname: 顽石\nkeys: [jade stone]\nmention_keys: true\n"
                                                            "introduced: chapters/ch03.md\n---\n石头。\n"})
    try:
        assert _flags(bank, "chapters/ch01.md") == {("NOT_YET_INTRODUCED", "world/old/stone")}
    finally:
        bank.close()


def test_an_alias_inside_the_cards_own_key_is_not_a_mention(tmp_path: Path) -> None:
    """第一回 names the jade, 通灵宝玉, and 贾宝玉's alias 宝玉 sits inside that key: the real chapter drew a
    false NOT_YET_INTRODUCED (issue 33, point 5). The alias standing on its own still counts."""
    bank = story(tmp_path)
    try:
        jade = ok(bank, "kg:consistency:check", documentId="chapters/ch01.md", text="石上镌着通灵宝玉四字。")
        assert jade["flags"] == []
        assert [e["id"] for e in jade["entities"]] == ["characters/jia-baoyu"]  # still evidence
        both = ok(bank, "kg:consistency:check", documentId="chapters/ch01.md", text="宝玉摘下通灵宝玉。")
        assert {(f["code"], f["entity"]) for f in both["flags"]} == {("NOT_YET_INTRODUCED", "characters/jia-baoyu")}
    finally:
        bank.close()


def test_appearances_count_what_the_check_counts(tmp_path: Path) -> None:
    """kg:appearances (and lastSeen) count a mention as the check does: 宝玉 inside 贾宝玉's key 通灵宝玉 is not
    one, and `mention_keys: true` (in the card's front matter) makes 林黛玉's key 绛珠 one (docs/manuscript.md)."""
    card = tmp_path / "hlm" / ".writenow" / "characters" / "lin-daiyu.md"
    bank = story(tmp_path)
    try:
        baoyu = ok(bank, "kg:appearances", name="贾宝玉")  # ch02: "贾宝玉 came in wearing 通灵宝玉."
        assert [(i["source"], i["count"]) for i in baoyu["items"]] == [("chapters/ch02.md", 1), ("chapters/ch05.md", 1)]
        assert [i["source"] for i in ok(bank, "kg:appearances", name="林黛玉")["items"]][0] == "chapters/ch02.md"
        card.write_text(card.read_text("utf-8").replace("keys: [绛珠]", "keys: [绛珠]\nmention_keys: true"), "utf-8")
        bank.sync()
        daiyu = ok(bank, "kg:appearances", name="林黛玉")
        assert daiyu["items"][0]["source"] == "chapters/ch01.md" and daiyu["first"].startswith("chapters/ch01.md")
    finally:
        bank.close()
