"""Two rules of a scene position (manuscript.md "Positions inside a chapter"): an unknown scene counts as the
end of its document and is a warning, in every read that takes a position; and `at` includes its position
("at or before `at`": `lastSeen`, like a state at P, story.md) while `before` excludes it ("strictly
before": manuscript:search, so the passage being written never answers itself)."""

from __future__ import annotations

from pathlib import Path

from .helpers import membank
from .storykit import fits, ok, story

CH04 = "# 葫芦案\n\n第四回。薛蟠打死冯渊。\n\n# 黛玉\n\n黛玉在碧纱橱里哭了一夜。\n"  # 黛玉 only in its second scene
WARNING = "chapters/ch04.md has no scene `9`: it counts as the end of chapters/ch04.md"


def _story(tmp_path: Path) -> object:
    return story(tmp_path, {"chapters/ch04.md": CH04})


def test_at_includes_its_scene_and_before_excludes_it(tmp_path: Path) -> None:
    bank = _story(tmp_path)
    try:
        seen = {at: ok(bank, "kg:entity:get", name="林黛玉", at=at)["lastSeen"]
                for at in ("chapters/ch04.md", "chapters/ch04.md#1", "chapters/ch04.md#黛玉", "chapters/ch04.md#9")}
        assert seen == {"chapters/ch04.md": "chapters/ch03.md#1", "chapters/ch04.md#1": "chapters/ch03.md#1",
                        "chapters/ch04.md#黛玉": "chapters/ch04.md#黛玉", "chapters/ch04.md#9": "chapters/ch04.md#黛玉"}

        def searched(before: str) -> set[str]:
            return {f"{i['source']}#{i['scene']}" for i in ok(bank, "manuscript:search", queryText="黛玉",
                                                               before=before)["items"]}
        assert "chapters/ch04.md#黛玉" not in searched("chapters/ch04.md#黛玉")  # the scene being written
        assert "chapters/ch04.md#黛玉" in searched("chapters/ch05.md") | searched("chapters/ch04.md#9")
    finally:
        bank.close()


def test_an_unknown_scene_is_a_warning_in_every_read_of_a_position(tmp_path: Path, home: Path) -> None:
    bank = _story(tmp_path)
    try:
        for channel, payload in (("kg:entity:get", {"name": "林黛玉", "at": "chapters/ch04.md#9"}),
                                 ("kg:entity:list", {"at": "chapters/ch04.md#9"}),
                                 ("kg:relations", {"name": "林黛玉", "at": "chapters/ch04.md#9"}),
                                 ("kg:state", {"name": "林黛玉", "at": "chapters/ch04.md#9"}),
                                 ("manuscript:search", {"queryText": "黛玉", "before": "chapters/ch04.md#9"})):
            answer = ok(bank, channel, **payload)
            assert answer["warnings"] == [WARNING], channel
            fits(channel, answer)
            known = {k: (v.replace("#9", "#2") if isinstance(v, str) else v) for k, v in payload.items()}
            assert "warnings" not in ok(bank, channel, **known), channel
    finally:
        bank.close()
    root = tmp_path / "hlm"
    for command in (["state", "林黛玉", "--at"], ["search", "黛玉", "--before"]):
        shown = membank(*command, "chapters/ch04.md#9", cwd=root, home=home)
        assert shown.returncode == 0, shown.stderr
        assert f"warning {WARNING}" in shown.stdout, command


def test_a_scene_of_a_document_whose_name_holds_a_hash_is_no_warning(tmp_path: Path) -> None:
    """`chapters/ch03 #2.md` is a document (manuscript.md): the file alone, its scene `#1` or `#B` are known
    positions, no warning (they said "has no scene `None`" and "has no scene `1`"); its `#9` is one."""
    bank = story(tmp_path, {"chapters/ch03 #2.md": "# A\n\none\n\n# B\n\ntwo 黛玉\n"})
    try:
        for at in ("chapters/ch03 #2.md", "chapters/ch03 #2.md#", "chapters/ch03 #2.md#1", "chapters/ch03 #2.md#B"):
            assert "warnings" not in ok(bank, "kg:entity:get", name="林黛玉", at=at), at
            assert "warnings" not in ok(bank, "manuscript:search", queryText="黛玉", before=at), at
        odd = ok(bank, "kg:entity:get", name="林黛玉", at="chapters/ch03 #2.md#9")
        assert odd["warnings"] == ["chapters/ch03 #2.md has no scene `9`: it counts as the end of chapters/ch03 #2.md"]
        for at in ("chapters/ch04.md#-1", "chapters/ch04.md#999999999999", "chapters/ch04.md#\x00"):
            assert ok(bank, "kg:entity:get", name="林黛玉", at=at)["warnings"], at  # odd scenes: warned, answered
        for at in ("chapters/ch04.md#", "chapters/ch04.md#0"):  # no scene, the document's start
            assert "warnings" not in ok(bank, "kg:entity:get", name="林黛玉", at=at), at
    finally:
        bank.close()
