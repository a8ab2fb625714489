"""Hostile files and states around capture review (issue 34.3): a writer's thread or scene file saved
with a BOM or old Mac line ends, odd document paths, vanished folders, a proposal reviewed twice. Each
is refused with a stable code and nothing written, or written with every other byte kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from membank import Bank
from membank.domains.capture import edits
from membank.domains.capture.evidence import chapter_hash

from .capturekit import CH03, D, fresh, ok
from .storykit import write

BOM = "\ufeff"
SCENES = f".writenow/scenes/{D}.md"


@pytest.fixture
def bank(tmp_path: Path) -> Any:
    b = fresh(tmp_path / "hlm")
    yield b
    b.close()


def _accept(bank: Bank, *ops: dict[str, Any]) -> dict[str, Any]:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=list(ops))
    return bank.call("capture:review", {"documentId": D, "decisions": [
        {"id": r["id"], "decision": "accept"} for r in proposed["ops"]]})


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_scene_file_with_a_bom_or_old_line_ends_keeps_its_front_matter_and_sections(newline: str) -> None:
    mine = (BOM + "---\npov: 林黛玉\n---\n## 进府\npresent: [贾母]\n").replace("\n", newline)
    top = edits.scene(mine, None, {"date": "冬"}, f"{D}:3")
    assert top == (BOM + f"---\npov: 林黛玉\ndate: 冬\n# evidence: {D}:3\n---\n## 进府\npresent: [贾母]\n"
                   ).replace("\n", newline)
    section = edits.scene(mine.replace(f"---{newline}pov: 林黛玉{newline}---{newline}", ""), "进府",
                          {"location": "荣国府"}, f"{D}:5")
    assert section == (BOM + f"## 进府\npresent: [贾母]\nlocation: 荣国府\n# evidence: {D}:5\n").replace("\n", newline)


def test_a_scene_op_into_a_bom_file_keeps_the_writers_pov(bank: Bank) -> None:
    write(bank.root, {SCENES: BOM + "---\npov: 林黛玉\n---\n"})
    done = _accept(bank, {"op": "scene", "date": "冬", "evidence": "原不忍弃父而往"})
    assert done["ok"], done
    state = {k: v["value"] for k, v in ok(bank, "story:scene", at=D)["state"].items()}
    assert state == {"pov": "林黛玉", "date": "冬"}


def test_a_chapter_whose_path_holds_a_hash_is_refused_before_anything_is_written(bank: Bank) -> None:
    # `chapters/ch03 #2.md#…` reads as a scene of another document: its scene file would never read back
    odd = "chapters/ch03 #2.md"
    write(bank.root, {odd: CH03})
    op = {"op": "scene", "pov": "林黛玉", "evidence": "原不忍弃父而往"}
    for channel, payload in (("capture:prepare", {}), ("capture:propose", {"chapterHash": chapter_hash(CH03),
                                                                            "ops": [op]}),
                             ("capture:review", {"decisions": []})):
        got = bank.call(channel, {"documentId": odd, **payload})
        assert not got["ok"] and got["error"]["code"] == "INVALID_ARGUMENT" and "#" in got["error"]["message"]
    assert not (bank.root / ".writenow" / "proposals").exists() and not (bank.root / ".writenow" / "scenes").exists()


def test_a_touch_that_would_grow_a_thread_past_what_the_reader_reads_is_refused(bank: Bank) -> None:
    from membank.domains.story.threadfiles import MAX_THREAD_BYTES

    head = "---\ntitle: 通灵宝玉\nopened: chapters/ch02.md\ntouched:\n"
    item = "  - {at: chapters/ch02.md, evidence: 'chapters/ch02.md:3'}\n"
    full = head + item * ((MAX_THREAD_BYTES - len(head) - 100) // len(item)) + "---\n"
    full += "玉" * ((MAX_THREAD_BYTES - 20 - len(full.encode())) // 3)  # 20 bytes short: no room for a touch
    write(bank.root, {".writenow/threads/jade.md": full})
    assert len(full.encode()) <= MAX_THREAD_BYTES
    done = _accept(bank, {"op": "thread", "title": "通灵宝玉", "action": "touch", "evidence": "黛玉方进入房时"})
    assert not done["ok"] and done["error"]["code"] == "CONFLICT" and "KiB" in done["error"]["message"], done
    assert (bank.root / ".writenow/threads/jade.md").read_text("utf-8") == full
    assert "通灵宝玉" in [t["title"] for t in ok(bank, "story:threads", at=D)["items"]]


def _until(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "until": D}


def test_a_relation_written_as_a_block_with_a_list_inside_is_ended_in_its_place() -> None:
    from membank.files.rewrite import set_item

    card = "---\nname: 林黛玉\nrelations:\n  - to: 林如海\n    type: 父亲\n    notes:\n      - 一\n      - 二\n---\n正文\n"
    assert set_item(card, "relations", 4, _until, {}) == card.replace(
        "  - to: 林如海\n    type: 父亲\n    notes:\n      - 一\n      - 二\n",
        f"  - {{to: 林如海, type: 父亲, notes: [一, 二], until: {D}}}\n")


@pytest.mark.parametrize("relations", ["base: &b {type: 父亲}\nrelations:\n  - {<<: *b, to: 林如海}\n",
                                       "x: &r 父亲\nrelations:\n  - {to: 林如海, type: *r}\n",
                                       "relations:\n  - {to: &who 林如海, type: 父亲}\ny: *who\n"])
def test_a_relation_holding_an_anchor_alias_or_merge_is_refused_not_flattened(relations: str) -> None:
    from membank.files.rewrite import RewriteError, set_item

    card = "---\nname: 林黛玉\n" + relations + "---\n"
    line = 1 + card.split("\n").index(next(r for r in card.split("\n") if "林如海" in r))
    with pytest.raises(RewriteError):
        set_item(card, "relations", line, _until, {})


def test_a_proposal_file_hand_edited_into_two_ops_with_one_id_is_refused_with_the_line(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "progress", "entity": "林黛玉", "state": "进京", "evidence": "登舟而去"},
        {"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "方洒泪拜别"}])["ops"]
    first, second = (r["id"] for r in proposed)
    path = bank.root / ".writenow" / "proposals" / D
    text = path.read_text("utf-8").replace(second, first).replace("status: pending", "status: accepted")
    path.write_text(text, "utf-8")
    files = {p: p.read_bytes() for p in (bank.root / ".writenow").rglob("*.md")}
    done = bank.call("capture:review", {"documentId": D})
    assert not done["ok"] and done["error"]["code"] == "CONFLICT", done
    line = done["error"]["details"]["line"]
    assert text.split("\n")[line - 1] == f"## {first} · thread 黛玉进京"
    assert {p: p.read_bytes() for p in (bank.root / ".writenow").rglob("*.md")} == files


def test_new_cards_get_files_a_filesystem_and_windows_take_and_that_no_other_card_holds(bank: Bank) -> None:
    write(bank.root, {".writenow/characters/王-嬷嬷.md": "---\nname: 王太医\nkind: character\n---\n"})
    names = ["老妇人" * 100, "CON", "王 嬷嬷", "王·嬷嬷"]
    done = _accept(bank, *({"op": "entity", "name": n, "kind": "character", "evidence": "老妇人"} for n in names))
    assert done["ok"], done
    made = [w.removeprefix(".writenow/characters/") for w in done["data"]["written"] if "/characters/" in w]
    assert len(set(made)) == 4 and "con.md" not in made
    assert all(len(m.encode()) <= 128 for m in made)
    assert (bank.root / ".writenow/characters/王-嬷嬷.md").read_text("utf-8").startswith("---\nname: 王太医")
    assert {ok(bank, "kg:entity:get", name=n)["name"] for n in names} == set(names)


def test_one_more_evidence_line_keeps_the_writers_comments_inside_the_list() -> None:
    mine = "---\ntype: fact\nevidence:\n  - chapters/ch02.md:3  # 原话\n  # 第五回也提到\n---\n黛玉之母贾氏已逝。\n"
    got = edits.keys(mine, {"revealed": D}, f"{D}:3", {}, listed=True)
    assert got == mine.replace("  # 第五回也提到\n", f"  - '{D}:3'\n  # 第五回也提到\n").replace(
        "---\n黛玉", f"revealed: {D}\n---\n黛玉")
    assert edits.keys(got, {"revealed": D}, f"{D}:3", {}, listed=True) == got  # cited already: nothing new


@pytest.mark.parametrize("title", ["进府\nlocation: 外", "进府\r## 另一", "进府\u2028x", "进府\x00", "进府\x1b[2J"])
def test_a_scene_name_that_would_write_another_line_or_a_control_character_is_refused(bank: Bank, title: str) -> None:
    for op in ({"op": "scene", "scene": title, "pov": "林黛玉", "evidence": "黛玉"},
               {"op": "progress", "entity": "林黛玉", "scene": title, "state": "进京", "evidence": "黛玉"}):
        got = bank.call("capture:propose", {"documentId": D, "chapterHash": chapter_hash(CH03), "ops": [op]})
        assert not got["ok"] and got["error"]["code"] == "INVALID_ARGUMENT" and got["error"]["details"]["field"] \
            == "ops[0].scene", got
    assert not (bank.root / ".writenow" / "proposals").exists()


def test_a_name_with_a_control_character_is_refused_and_a_fact_may_span_lines(bank: Bank) -> None:
    got = bank.call("capture:propose", {"documentId": D, "chapterHash": chapter_hash(CH03), "ops": [
        {"op": "entity", "name": "老妇\x00人", "kind": "character", "evidence": "老妇人"}]})
    assert not got["ok"] and got["error"]["details"]["field"] == "ops[0].name"
    fine = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "fact", "content": "贾母疼爱黛玉。\n一把搂入怀中。", "evidence": "心肝儿肉叫着大哭起来"}])
    assert fine["ops"][0]["status"] == "pending"


def test_a_card_renamed_between_propose_and_review_is_named_in_words(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "progress", "entity": "林黛玉", "state": "进京", "evidence": "登舟而去"}])["ops"]
    card = bank.root / ".writenow/characters/lin-daiyu.md"
    card.rename(card.with_name("daiyu.md"))
    got = bank.call("capture:review", {"documentId": D, "decisions": [{"id": proposed[0]["id"], "decision": "accept"}]})
    assert not got["ok"] and got["error"]["code"] == "CONFLICT"
    assert "lin-daiyu.md is gone" in got["error"]["message"] and "Error" not in got["error"]["message"]
    assert not card.exists() and "进京" not in card.with_name("daiyu.md").read_text("utf-8")


def test_what_a_later_chapter_taught_the_bible_never_reaches_an_earlier_chapters_prompt(bank: Bank) -> None:
    from .capturekit import CH04

    later = "chapters/ch04.md"
    proposed = ok(bank, "capture:propose", documentId=later, chapterHash=chapter_hash(CH04), ops=[
        {"op": "progress", "entity": "林黛玉", "state": "寄居秘密已泄", "evidence": "却说黛玉同姊妹们至王夫人处"},
        {"op": "fact", "content": "王夫人掌家之秘", "evidence": "计议家务"},
        {"op": "thread", "title": "家务秘事", "action": "open", "evidence": "计议家务"},
        {"op": "scene", "location": "议事秘所", "evidence": "计议家务"},
        {"op": "relate", "entity": "林黛玉", "to": "王夫人", "type": "秘密盟友", "evidence": "至王夫人处"}])["ops"]
    done = bank.call("capture:review", {"documentId": later, "decisions": [
        {"id": r["id"], "decision": "accept"} for r in proposed]})
    assert done["ok"], done
    assert ok(bank, "kg:state", name="林黛玉", at=later)["state"] == "寄居秘密已泄"  # the bible knows it from ch04 on
    for earlier in ("chapters/ch02.md", D):
        got = ok(bank, "capture:prepare", documentId=earlier)
        text = got["prompt"] + "".join(p.get("prompt", "") for p in got["parts"]) + str(got)
        assert not [w for w in ("秘密已泄", "掌家之秘", "家务秘事", "议事秘所", "秘密盟友", "计议家务") if w in text]


def test_evidence_lines_count_every_kind_of_line_end() -> None:
    from membank.domains.capture.evidence import Chapter

    for newline in ("\n", "\r\n", "\r"):
        assert Chapter(CH03.replace("\n", newline)).line_of("一把搂入怀中") == 5


def test_a_new_persons_card_saved_by_hand_before_the_index_read_it_is_not_made_twice(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "entity", "name": "奶娘", "kind": "character", "evidence": "随了奶娘"}])["ops"]
    mine = "---\nname: 奶娘\nkind: character\n---\n王嬷嬷。\n"
    (bank.root / ".writenow/characters/奶娘.md").write_text(mine, "utf-8")  # no sync: the index has not read it
    got = bank.call("capture:review", {"documentId": D, "decisions": [{"id": proposed[0]["id"], "decision": "accept"}]})
    assert not got["ok"] and got["error"]["code"] == "CONFLICT", got
    assert [p.name for p in (bank.root / ".writenow/characters").glob("奶娘*")] == ["奶娘.md"]


def _decided_in_file(bank: Bank, edit: Any) -> tuple[dict[str, Any], str]:
    ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "progress", "entity": "林黛玉", "state": "进京", "evidence": "登舟而去"}])
    path = bank.root / ".writenow" / "proposals" / D
    path.write_bytes(edit(path.read_text("utf-8").replace("status: pending", "status: accepted")).encode("utf-8"))
    return bank.call("capture:review", {"documentId": D}), path.read_bytes().decode("utf-8")


def test_a_proposal_file_saved_with_crlf_is_applied_and_stays_crlf(bank: Bank) -> None:
    done, after = _decided_in_file(bank, lambda t: t.replace("\n", "\r\n"))
    assert done["ok"] and done["data"]["counts"]["applied"] == 1, done
    assert "status: applied\r\n" in after and "\n" not in after.replace("\r\n", "")


def test_an_op_hand_edited_with_a_key_twice_is_refused_with_its_line(bank: Bank) -> None:
    card = (bank.root / ".writenow/characters/lin-daiyu.md").read_bytes()
    done, _ = _decided_in_file(bank, lambda t: t.replace("state: 进京", "state: 进京\nstate: 出京"))
    assert not done["ok"] and done["error"]["code"] == "CONFLICT" and done["error"]["details"]["line"], done
    assert (bank.root / ".writenow/characters/lin-daiyu.md").read_bytes() == card


def test_a_scene_value_with_a_comment_inside_is_refused_not_rewritten_without_it() -> None:
    from membank.files.rewrite import RewriteError

    top = "---\npov: 林黛玉\npresent:\n  - 贾母  # 外祖母\n  - 林黛玉\n---\n"
    section = "## 进府\npresent:\n  - 贾母  # 外祖母\nlocation: 荣国府  # 正房\n"
    with pytest.raises(RewriteError):
        edits.scene(top, None, {"present": ["林黛玉", "贾母", "王夫人"]}, f"{D}:3")
    with pytest.raises(RewriteError):
        edits.scene(section, "进府", {"present": ["贾母", "王夫人"]}, f"{D}:3")
    # a comment at the end of a one-line value stays on its line; other keys' comments are not touched
    assert edits.scene(section, "进府", {"location": "贾母房中"}, f"{D}:3") == section.replace(
        "荣国府  # 正房\n", f"贾母房中  # 正房\n# evidence: {D}:3\n")
    assert edits.scene(top, None, {"pov": "贾母"}, f"{D}:3").startswith("---\npov: 贾母\npresent:\n  - 贾母  # 外祖母\n")


def test_a_scene_op_never_writes_the_scene_file_of_another_document(bank: Bank) -> None:
    other = "chapters/ch03.md.md"  # its `<document>` without `.md` is the scene file of chapters/ch03.md
    write(bank.root, {other: CH03, SCENES: "---\npov: 贾母\n---\n"})
    proposed = ok(bank, "capture:propose", documentId=other, chapterHash=chapter_hash(CH03), ops=[
        {"op": "scene", "pov": "林黛玉", "evidence": "黛玉"}])["ops"]
    done = bank.call("capture:review", {"documentId": other, "decisions": [{"id": proposed[0]["id"], "decision": "accept"}]})
    assert done["ok"], done
    assert (bank.root / SCENES).read_text("utf-8") == "---\npov: 贾母\n---\n"
    assert ok(bank, "story:scene", at=other)["state"]["pov"]["value"] == "林黛玉"


def test_a_new_thread_beside_an_unreadable_file_of_its_name_is_conflict_not_a_second_file(bank: Bank) -> None:
    broken = "---\ntitle: 通灵宝玉\ntitle: 通灵宝玉\nopened: chapters/ch02.md\n---\n"  # a key twice: not read
    write(bank.root, {".writenow/threads/通灵宝玉.md": broken})
    done = _accept(bank, {"op": "thread", "title": "通灵宝玉", "action": "open", "evidence": "黛玉"})
    assert not done["ok"] and done["error"]["code"] == "CONFLICT", done
    assert [p.name for p in (bank.root / ".writenow/threads").glob("通灵宝玉*")] == ["通灵宝玉.md"]


def test_ops_proposed_on_a_machine_with_lf_stay_current_where_git_checked_the_chapter_out_with_crlf(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "progress", "entity": "林黛玉", "state": "进京", "evidence": "登舟而去"}])["ops"]
    (bank.root / D).write_bytes(CH03.replace("\n", "\r\n").encode("utf-8"))  # core.autocrlf on the other machine
    ok(bank, "index:sync")
    assert [i["status"] for i in ok(bank, "capture:pending", documentId=D)["items"]] == ["pending"]
    again = ok(bank, "capture:prepare", documentId=D)["chapterHash"]
    assert again == chapter_hash(CH03)  # the same chapter names itself the same on both machines
    done = ok(bank, "capture:review", documentId=D, decisions=[{"id": proposed[0]["id"], "decision": "accept"}])
    assert done["counts"]["applied"] == 1, done


def test_a_changed_chapter_still_makes_its_pending_ops_stale_whatever_its_line_ends(bank: Bank) -> None:
    ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "progress", "entity": "林黛玉", "state": "进京", "evidence": "登舟而去"}])
    (bank.root / D).write_bytes((CH03 + "又一段。\n").replace("\n", "\r\n").encode("utf-8"))
    ok(bank, "index:sync")
    assert [i["status"] for i in ok(bank, "capture:pending", documentId=D)["items"]] == ["stale"]
