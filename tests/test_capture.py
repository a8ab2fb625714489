"""Capture (capture.md; issue 34.1-34.3): prepare a chapter for a model with the bible as it stood just
before it, check a model's proposed ops one by one (scripted ops stand in for the model), keep the valid
ones in the chapter's proposal file, and list every document's capture state.

The chapters are pieces of 红楼梦 第二回-第四回 (fixtures/manuscript/hongloumeng_ch01-04_excerpt.txt, lines
108, 136-150 and 200-204; from repository `tennessine/corpus`, file `红楼梦.txt`; the novel is in the
public domain)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import membank
from membank import Bank
from membank.domains.capture import parts, proposals, shapes
from membank.domains.capture.evidence import Chapter, chapter_hash
from membank.domains.story.order import StoryOrder

from .capturekit import CH02, CH03, D, fresh, ok, refused
from .helpers import membank as run

@pytest.fixture
def bank(tmp_path: Path) -> Any:
    b = fresh(tmp_path / "hlm")
    yield b
    b.close()


# --- pure decisions ---------------------------------------------------------------------------------

def test_the_position_before_a_chapter_is_before_its_start_and_its_scenes() -> None:
    order = StoryOrder(("a.md", "b.md", "c.md"), True)
    earlier, mark = parts.before(order, "b.md")
    assert earlier.reached("a.md", mark) and not earlier.reached("b.md", mark)
    assert not earlier.reached("b.md#2", mark) and not earlier.reached("c.md", mark)
    first, mark1 = parts.before(order, "a.md")
    assert not first.reached("a.md", mark1) and first.holds(None, None, mark1)


def test_a_long_chapter_comes_in_scene_sized_parts() -> None:
    scene = "他走了。" * 200  # 800 code points
    text = f"# 一\n\n{scene}\n\n# 二\n\n{scene}\n\n# 三\n\n{scene}\n"
    whole = parts.parts("c.md", text, 10_000)
    assert len(whole) == 1 and whole[0].text == text
    cut = parts.parts("c.md", text, 1_000)
    assert [p.scene for p in cut] == ["一", "二", "三"]
    assert all(len(p.text) <= 1_000 for p in cut) and cut[1].line == 5


def test_a_quote_is_found_across_widths_and_line_breaks() -> None:
    chapter = Chapter(CH03)
    assert chapter.line_of("黛玉听了,方洒泪拜别") == 3  # a half-width comma for the full-width one
    assert chapter.line_of("一把搂入\n怀中") == 5
    assert chapter.line_of("宝玉摔玉") is None and chapter.line_of("  ") is None


def test_wrong_shapes_name_the_op_and_the_field() -> None:
    for op, field in [({"op": "fly", "evidence": "x"}, "ops[0].op"),
                      ({"op": "progress", "entity": "黛玉", "evidence": "x"}, "ops[0].state"),
                      ({"op": "relate", "entity": "黛玉", "to": "贾母", "evidence": "x"}, "ops[0].type"),
                      ({"op": "progress", "entity": "黛玉", "set": {"age": {"a": 1}}, "evidence": "x"},
                       "ops[0].set.age"),
                      ({"op": "fact", "content": "x", "evidence": "x", "color": 1}, "ops[0].color"),
                      ({"op": "fact", "content": "x", "evidence": "引" * 1_000_000}, "ops[0].evidence"),
                      ({"op": "thread", "title": "t", "action": "reopen", "evidence": "x"}, "ops[0].action"),
                      ("progress", "ops[0]")]:
        with pytest.raises(membank.MembankError) as e:
            shapes.check_all([op])
        assert e.value.code == "INVALID_ARGUMENT" and e.value.details["field"] == field, (op, e.value.details)
    with pytest.raises(membank.MembankError):
        shapes.check_all([{"op": "fact", "content": "x", "evidence": "x"}] * 10_000)


def test_the_proposal_file_reads_back_and_merges_without_duplicates() -> None:
    op = {"op": "progress", "entity": "黛玉", "set": {"location": "荣国府"}, "evidence": "进入房时"}
    first = proposals.Proposed(proposals.op_id(D, op), op, "sha256:a", 5, ("CONTRADICTS_LATER",), "pending",
                               ("the card has a change at chapters/ch04.md",))
    text = proposals.render(D, {"chapterHash": "sha256:a", "by": "m", "proposed": "2026-01-01T00:00:00Z"}, [first])
    meta, found, problems = proposals.parse(text)
    assert not problems and found == [first] and meta["document"] == D
    again = {**op, "evidence": "另一句"}  # the same change, quoted otherwise: one change
    assert proposals.op_id(D, again) == first.id
    merged, already = proposals.merge(found, [proposals.Proposed(first.id, again, "sha256:a", None)])
    assert merged == [first] and already == [first.id]
    broken = text.replace("- status: pending", "- status: maybe")
    assert proposals.parse(broken)[2][0][0] == text[:text.index("## p-")].count("\n") + 1


# --- through the channels ---------------------------------------------------------------------------

def test_prepare_gives_the_state_before_the_chapter_never_after(bank: Bank) -> None:
    data = ok(bank, "capture:prepare", documentId=D)
    assert data["chapterHash"] == chapter_hash(CH03) and data["parts"] == []
    by_name = {e["name"]: e for e in data["entities"]}
    assert set(by_name) == {"林黛玉", "贾母"}  # 林如海 is not named in this piece
    daiyu = by_name["林黛玉"]
    assert daiyu["facets"]["location"]["value"] == "扬州"  # ch04's 荣国府 is a spoiler here
    assert daiyu["state"]["value"] == "随父在扬州"
    assert {r["type"] for r in daiyu["relations"]} == {"父亲"}  # 外孙女 begins at ch04
    assert [t["title"] for t in data["threads"]] == ["黛玉进京"] and data["threads"][0]["status"] == "open"
    assert [f["content"] for f in data["facts"]] == ["黛玉之母贾氏已逝。"]
    prompt = data["prompt"]
    assert "请通读下面这一章" in prompt and CH03.strip() in prompt and "随父在扬州" in prompt
    assert '"membank capture proposal"' in prompt and "{{" not in prompt and "荣国府}" not in prompt
    # assembled by context:assemble at the end of the chapter before: its cards there, the chapter once
    assert "State at chapters/ch02.md" in prompt and prompt.count(CH03.strip()) == 1
    assert "location: 荣国府 (" not in prompt and "外孙女" not in prompt  # ch04's, never before ch03
    assert data["schema"] == shapes.proposal_schema()


def test_prepare_of_the_first_chapter_holds_only_what_is_timeless(bank: Bank) -> None:
    data = ok(bank, "capture:prepare", documentId="chapters/ch02.md")
    daiyu = next(e for e in data["entities"] if e["name"] == "林黛玉")
    assert daiyu["state"] is None and daiyu["facets"] == {} and data["threads"] == [] and data["facts"] == []
    assert "随父在扬州" not in data["prompt"] and "State at" not in data["prompt"]  # its own state: not yet
    assert data["prompt"].count(CH02.strip()) == 1


def test_a_project_without_the_skill_gets_the_built_in_prompt(bank: Bank) -> None:
    (bank.root / ".writenow" / "skills" / "capture.md").unlink()
    ok(bank, "index:sync")  # a project made before the skill was added
    data = ok(bank, "capture:prepare", documentId=D)
    assert data["skill"] == "membank:skills/capture.md" and data["prompt"].startswith("你是小说作者的资料编辑")
    assert CH03.strip() in data["prompt"] and "随父在扬州" in data["prompt"] and "{{" not in data["prompt"]


GOOD = [
    {"op": "progress", "entity": "黛玉", "state": "弃父进京", "set": {"location": "荣国府"},
     "evidence": "黛玉听了，方洒泪拜别"},
    {"op": "relate", "entity": "贾母", "to": "林黛玉", "type": "外祖母", "evidence": "黛玉便知是他外祖母"},
    {"op": "entity", "name": "奶娘", "kind": "character", "evidence": "随了奶娘及荣府几个老妇人登舟而去"},
    {"op": "fact", "content": "贾母鬓发如银。", "entities": ["贾母"], "evidence": "一位鬓发如银的老母"},
    {"op": "thread", "title": "黛玉进京", "action": "touch", "evidence": "登舟而去"},
    {"op": "reveal", "content": "老母即黛玉外祖母。", "evidence": "黛玉便知是他外祖母"},
    {"op": "scene", "pov": "林黛玉", "present": ["贾母"], "location": "荣国府", "evidence": "黛玉方进入房时"},
]

WRONG = [
    ({"op": "progress", "entity": "王熙凤", "state": "迎客", "evidence": "黛玉方进入房时"}, "pending",
     "UNKNOWN_ENTITY"),
    ({"op": "fact", "content": "黛玉摔玉。", "evidence": "黛玉摔了通灵宝玉"}, "pending", "EVIDENCE_NOT_FOUND"),
    ({"op": "relate", "entity": "舅母", "to": "林黛玉", "type": "舅母", "evidence": "黛玉方进入房时"}, "pending",
     "AMBIGUOUS"),
    ({"op": "progress", "entity": "林黛玉", "set": {"location": "扬州"}, "evidence": "登舟而去"}, "refused",
     "ALREADY_KNOWN"),
    ({"op": "relate", "entity": "林黛玉", "to": "林如海", "type": "父亲", "evidence": "原不忍弃父而往"}, "refused",
     "ALREADY_KNOWN"),
    ({"op": "fact", "content": "黛玉之母贾氏已逝。", "evidence": "那女学生黛玉"}, "refused", "ALREADY_KNOWN"),
    ({"op": "progress", "entity": "林黛玉", "set": {"age": "五岁"}, "evidence": "那女学生黛玉"}, "refused",
     "INVALID_VALUE"),
    ({"op": "progress", "entity": "林如海", "set": {"alive": False}, "evidence": "原不忍弃父而往"}, "pending",
     "CONTRADICTS_LATER"),
    ({"op": "relate", "entity": "林黛玉", "to": "贾母", "type": "外孙女", "evidence": "黛玉便知是他外祖母"}, "pending",
     "CONTRADICTS_LATER"),
    ({"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "登舟而去"}, "pending",
     "CONTRADICTS_LATER"),
]


def test_propose_checks_each_op_and_keeps_the_valid_ones(bank: Bank) -> None:
    h = ok(bank, "capture:prepare", documentId=D)["chapterHash"]
    ops = GOOD + [op for op, _, _ in WRONG]
    data = ok(bank, "capture:propose", documentId=D, chapterHash=h, ops=ops, by="scripted")
    got = data["ops"]
    assert [r["status"] for r in got[:len(GOOD)]] == ["pending"] * len(GOOD)
    assert all(r["reason"] is None for r in got[:len(GOOD)]), got[:len(GOOD)]
    assert got[0]["line"] == 3 and got[1]["line"] == 5
    for r, (op, status, reason) in zip(got[len(GOOD):], WRONG):
        assert (r["status"], r["reason"]) == (status, reason), (op, r)
    assert "entity" in got[len(GOOD)]["message"]  # unknown: add an `entity` op
    assert "王夫人" in got[len(GOOD) + 2]["message"] and "邢夫人" in got[len(GOOD) + 2]["message"]
    assert "ch04" in got[len(GOOD) + 7]["message"]  # the later change the death runs into
    path = bank.root / ".writenow" / "proposals" / "chapters" / "ch03.md"
    text = path.read_text("utf-8")
    kept = [r for r in got if r["status"] == "pending"]
    assert [m for m in text.split("\n") if m.startswith("## p-")] == \
        [next(m for m in text.split("\n") if m.startswith(f"## {r['id']}")) for r in kept]
    assert "> 黛玉听了，方洒泪拜别" in text and f"- evidence: {D}:3" in text and "- status: pending" in text
    assert "五岁" not in text  # refused ops are not stored
    # the same proposal again: nothing added, the file untouched (no timestamp churn)
    again = ok(bank, "capture:propose", documentId=D, chapterHash=h, ops=GOOD, by="scripted")
    assert {r["status"] for r in again["ops"]} == {"duplicate"} and not again["written"]
    assert path.read_text("utf-8") == text
    # a second proposal with one new op: merged after the first, in order
    new = {"op": "progress", "entity": "贾母", "state": "见外孙女大哭", "evidence": "心肝儿肉叫着大哭起来"}
    third = ok(bank, "capture:propose", documentId=D, chapterHash=h, ops=[GOOD[0], new])
    assert [r["status"] for r in third["ops"]] == ["duplicate", "pending"]
    now = path.read_text("utf-8")
    assert now.index(kept[-1]["id"]) < now.index(third["ops"][1]["id"]) and now.count("## p-") == len(kept) + 1
    # the proposal file is not a memory or a card
    assert not any("proposals" in m["source"] for m in ok(bank, "memory:list")["items"])


def test_a_stale_hash_and_wrong_shapes_store_nothing(bank: Bank) -> None:
    error = refused(bank, "capture:propose", documentId=D, chapterHash="sha256:old", ops=GOOD)
    assert error["code"] == "CONFLICT" and error["details"]["chapterHash"] == chapter_hash(CH03)
    h = chapter_hash(CH03)
    error = refused(bank, "capture:propose", documentId=D, chapterHash=h, ops=[GOOD[0], {"op": "relate"}])
    assert error["code"] == "INVALID_ARGUMENT" and error["details"]["field"].startswith("ops[1].")
    error = refused(bank, "capture:propose", documentId=D, chapterHash=h, ops=GOOD * 1500)
    assert error["code"] == "INVALID_ARGUMENT"
    error = refused(bank, "capture:propose", documentId=D, chapterHash=h,
                    ops=[{**GOOD[3], "evidence": "引" * (1 << 20)}])
    assert error["code"] == "INVALID_ARGUMENT"
    assert not (bank.root / ".writenow" / "proposals").exists()


def test_status_in_story_order_and_stale_after_an_edit(bank: Bank) -> None:
    assert [(i["documentId"], i["state"]) for i in ok(bank, "capture:status")["items"]] == \
        [("chapters/ch02.md", "none"), (D, "none"), ("chapters/ch04.md", "none")]
    ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=GOOD[:2])
    items = ok(bank, "capture:status")["items"]
    assert (items[1]["state"], items[1]["pending"]) == ("pending", 2)
    (bank.root / D).write_text(CH03 + "\n又一句。\n", "utf-8")
    items = ok(bank, "capture:status")["items"]
    assert (items[1]["state"], items[1]["stale"], items[1]["pending"]) == ("stale", 2, 0)
    # proposed again against the new text: the stale op is current again, in its place; the other stays stale
    h = ok(bank, "capture:prepare", documentId=D)["chapterHash"]
    again = ok(bank, "capture:propose", documentId=D, chapterHash=h, ops=GOOD[1:2])
    assert [r["status"] for r in again["ops"]] == ["pending"] and again["written"]
    items = ok(bank, "capture:status")["items"]
    assert (items[1]["state"], items[1]["stale"], items[1]["pending"]) == ("stale", 1, 1)
    text = (bank.root / ".writenow" / "proposals" / D).read_text("utf-8")
    assert text.index(again["ops"][0]["id"]) > text.index(proposals.op_id(D, GOOD[0]))


def test_the_cli_prints_the_prompt_takes_a_file_and_lists_the_state(bank: Bank, tmp_path: Path) -> None:
    root, home = bank.root, tmp_path / "home"
    bank.close()
    got = run("capture", D, cwd=root, home=home)
    assert got.returncode == 0 and "你是小说作者的资料编辑" in got.stdout and "随父在扬州" in got.stdout
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"ops": GOOD[:2] + [WRONG[3][0]]}, ensure_ascii=False), "utf-8")
    got = run("propose", D, str(answer), cwd=root, home=home)
    assert got.returncode == 0, got.stderr
    assert "2 kept, 0 already proposed, 1 refused" in got.stdout and "ALREADY_KNOWN" in got.stdout
    got = run("capture", "--status", cwd=root, home=home)
    assert got.returncode == 0 and f"{D}\tpending\t(pending 2)" in got.stdout


def test_a_proposal_file_edited_into_nonsense_is_named_by_its_line(bank: Bank) -> None:
    h = chapter_hash(CH03)
    ok(bank, "capture:propose", documentId=D, chapterHash=h, ops=GOOD[:2])
    path = bank.root / ".writenow" / "proposals" / D
    text = path.read_text("utf-8")
    broken = text.replace("```yaml", "```", 1)
    path.write_text(broken, "utf-8")
    line = broken[:broken.index("## p-")].count("\n") + 1
    error = refused(bank, "capture:propose", documentId=D, chapterHash=h, ops=GOOD[2:3])
    assert error["code"] == "CONFLICT" and error["details"]["line"] == line
    assert path.read_text("utf-8") == broken  # the writer's file is left as they made it
    item = ok(bank, "capture:status")["items"][1]
    assert item["problems"][0]["line"] == line and item["pending"] == 1


def test_a_proposal_that_cannot_be_written_is_a_storage_error(bank: Bank) -> None:
    (bank.root / ".writenow" / "proposals").write_text("a file where the folder goes", "utf-8")
    error = refused(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=GOOD[:1])
    assert error["code"] == "DB_ERROR" and "proposals" in error["message"]
