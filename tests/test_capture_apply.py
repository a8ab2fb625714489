"""Capture review applies every op kind (capture.md, review; issue 34.3): `unrelate` ends a relation,
`invalidate` ends a fact, `thread` touch / resolve / drop change the thread's file, `reveal` says where
the reader learns a fact, `scene` writes the chapter's scene file; each through the round-trip writer,
citing `evidence: <document>:<line>`, and each refused, with nothing written, when it no longer applies.
The story is test_capture's (a few lines of 红楼梦 第二回-第四回)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from membank import Bank
from membank.kernel.errors import MembankError
from membank.domains.capture.evidence import chapter_hash

from .capturekit import CH03, D, fresh, ok, refused
from .storykit import write

FATHER = {"op": "unrelate", "entity": "林黛玉", "to": "林如海", "type": "父亲", "evidence": "原不忍弃父而往"}
CARD = ".writenow/characters/lin-daiyu.md"
THREAD = ".writenow/threads/jinjing.md"
JADE = "---\ntitle: 通灵宝玉\nopened: chapters/ch02.md   # 第二回\n---\n那块玉的来历。\n"


@pytest.fixture
def bank(tmp_path: Path) -> Any:
    b = fresh(tmp_path / "hlm")
    write(b.root, {".writenow/threads/jade.md": JADE})
    yield b
    b.close()


def _accept(bank: Bank, *ops: dict[str, Any]) -> dict[str, Any]:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=list(ops))
    assert all(r["status"] == "pending" for r in proposed["ops"]), proposed["ops"]
    return bank.call("capture:review", {"documentId": D, "decisions": [
        {"id": r["id"], "decision": "accept"} for r in proposed["ops"]]})


def _read(bank: Bank, rel: str) -> str:
    return (bank.root / rel).read_text("utf-8")


def _fact_id(bank: Bank) -> str:
    return next(m["id"] for m in ok(bank, "memory:list", type="fact")["items"] if "贾氏" in m["content"])


def test_unrelate_ends_the_relation_here_and_keeps_it_before(bank: Bank) -> None:
    before = _read(bank, CARD)
    done = _accept(bank, FATHER)
    assert done["ok"], done
    after = _read(bank, CARD)
    assert f"- {{to: 林如海, type: 父亲, until: {D}, evidence: '{D}:3'}}" in after
    kept = [line for line in before.splitlines() if "type: 父亲" not in line]
    assert [line for line in after.splitlines() if line in kept] == kept  # every other line as it was
    def fathers(at: str) -> list[str]:
        return [e["name"] for e in ok(bank, "kg:relations", name="林黛玉", at=at)["edges"] if e["type"] == "父亲"]
    assert fathers("chapters/ch02.md") == ["林如海"] and fathers(D) == []


def test_an_unrelate_that_no_longer_holds_is_refused_and_nothing_is_written(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[FATHER])
    (bank.root / CARD).write_text(_read(bank, CARD).replace("  - {to: 林如海, type: 父亲}\n", ""), "utf-8")
    card, proposal = _read(bank, CARD), _read(bank, f".writenow/proposals/{D}")
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": proposed["ops"][0]["id"],
                                                                      "decision": "accept"}])
    assert error["code"] == "CONFLICT" and "ALREADY_KNOWN" in error["message"]
    assert (_read(bank, CARD), _read(bank, f".writenow/proposals/{D}")) == (card, proposal)
    # at propose, a relation that does not hold here is refused outright
    apart = {"op": "unrelate", "entity": "林黛玉", "to": "贾母", "type": "外孙女", "evidence": "黛玉"}
    got = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[apart])["ops"][0]
    assert (got["status"], got["reason"]) == ("refused", "ALREADY_KNOWN")


def test_invalidate_ends_the_fact_and_reveal_says_where_the_reader_learns_it(bank: Bank) -> None:
    fact = _fact_id(bank)
    done = _accept(bank, {"op": "reveal", "fact": fact, "evidence": "无奈他外祖母致意务去"})
    assert done["ok"], done
    text = _read(bank, ".writenow/memories/facts/mother.md")
    assert f"revealed: {D}" in text and f"evidence: ['{D}:3']" in text and text.startswith("---\ntype: fact\n")
    assert not ok(bank, "index:diagnostics")["items"]  # a memory's evidence is a list
    knows = {at: [f["id"] for f in ok(bank, "story:reader", at=at)["items"]] for at in ("chapters/ch02.md", D)}
    assert knows == {"chapters/ch02.md": [], D: [fact]}
    again = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03),
               ops=[{"op": "reveal", "fact": fact, "evidence": "黛玉"}])["ops"][0]
    assert (again["status"], again["reason"]) == ("refused", "ALREADY_KNOWN")
    done = _accept(bank, {"op": "invalidate", "fact": fact, "evidence": "原不忍弃父而往"})
    assert done["ok"], done
    text = _read(bank, ".writenow/memories/facts/mother.md")
    assert f"until: {D}" in text and f"evidence: ['{D}:3', '{D}:3']" not in text
    assert [f["id"] for f in ok(bank, "capture:prepare", documentId="chapters/ch04.md")["facts"]] == []
    assert not ok(bank, "index:diagnostics")["items"]


def test_a_reveal_in_words_is_a_new_fact_revealed_here(bank: Bank) -> None:
    done = _accept(bank, {"op": "reveal", "content": "贾母是黛玉的外祖母。", "evidence": "黛玉便知是他外祖母"})
    assert done["ok"], done
    made = [m for m in ok(bank, "memory:list", type="fact")["items"] if "外祖母" in m["content"]]
    assert len(made) == 1 and f"revealed: {D}" in _read(bank, made[0]["source"])
    assert [f["content"] for f in ok(bank, "story:reader", at=D)["items"] if "外祖母" in f["content"]]
    assert not [f for f in ok(bank, "story:reader", at="chapters/ch02.md")["items"] if "外祖母" in f["content"]]
    # in the words of a fact in force: that fact is revealed here, no second one is made
    done = _accept(bank, {"op": "reveal", "content": "黛玉之母贾氏已逝。", "evidence": "原不忍弃父而往"})
    assert done["ok"], done
    assert f"revealed: {D}" in _read(bank, ".writenow/memories/facts/mother.md")
    assert len(ok(bank, "memory:list", type="fact")["items"]) == 2


def test_an_unknown_fact_is_flagged_and_never_applied(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03),
                  ops=[{"op": "invalidate", "fact": "no-such-fact", "evidence": "黛玉"}, FATHER])
    assert proposed["ops"][0]["flags"] == ["UNKNOWN_FACT"]
    card = _read(bank, CARD)
    error = refused(bank, "capture:review", documentId=D, decisions=[
        {"id": r["id"], "decision": "accept"} for r in proposed["ops"]])
    assert error["code"] == "CONFLICT" and proposed["ops"][0]["id"] in error["message"]
    assert _read(bank, CARD) == card  # the unrelate of the same call is not written either


def test_threads_are_touched_resolved_and_dropped_in_their_files(bank: Bank) -> None:
    done = _accept(bank, {"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "方洒泪拜别"},
                   {"op": "thread", "title": "通灵宝玉", "action": "touch", "evidence": "黛玉方进入房时"})
    assert done["ok"], done
    assert f"resolved: {D}" in _read(bank, THREAD) and f"evidence: {D}:3" in _read(bank, THREAD)
    jade = _read(bank, ".writenow/threads/jade.md")
    assert jade.startswith(JADE.split("---\n那块")[0]) and f"- {{at: {D}, evidence: '{D}:5'}}" in jade
    states = {t["title"]: t["status"] for t in ok(bank, "story:threads", at=D)["items"]}
    assert states == {"黛玉进京": "resolved", "通灵宝玉": "open"}
    assert ok(bank, "story:threads", at="chapters/ch02.md")["items"][0]["status"] == "open"
    done = _accept(bank, {"op": "thread", "title": "通灵宝玉", "action": "drop", "evidence": "一把搂入怀中"})
    assert done["ok"], done
    assert {t["title"]: t["status"] for t in ok(bank, "story:threads", at=D)["items"]}["通灵宝玉"] == "dropped"
    assert "# 第二回" in _read(bank, ".writenow/threads/jade.md")
    again = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03),
               ops=[{"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "黛玉"}])["ops"][0]
    assert (again["status"], again["reason"]) == ("refused", "ALREADY_KNOWN")


def test_a_thread_that_is_not_open_here_is_not_touched(bank: Bank) -> None:
    write(bank.root, {".writenow/threads/later.md": "---\ntitle: 护官符\nopened: chapters/ch04.md\n---\n"})
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "thread", "title": "护官符", "action": "touch", "evidence": "黛玉"},
        {"op": "thread", "title": "无此线索", "action": "resolve", "evidence": "黛玉"}])
    assert [r["flags"] for r in proposed["ops"]] == [["UNKNOWN_THREAD"], ["UNKNOWN_THREAD"]]
    before = _read(bank, ".writenow/threads/later.md")
    for r in proposed["ops"]:
        error = refused(bank, "capture:review", documentId=D, decisions=[{"id": r["id"], "decision": "accept"}])
        assert error["code"] == "CONFLICT"
    assert _read(bank, ".writenow/threads/later.md") == before


def test_scene_ops_write_the_chapters_scene_file(bank: Bank) -> None:
    done = _accept(bank, {"op": "scene", "scene": "进府", "pov": "林黛玉", "present": ["林黛玉", "贾母"],
                          "location": "荣国府", "evidence": "黛玉方进入房时"})
    assert done["ok"], done
    path = f".writenow/scenes/{D}.md"
    assert f"# evidence: {D}:5" in _read(bank, path)
    scene = ok(bank, "story:scene", at=D)
    assert {k: v["value"] for k, v in scene["state"].items()} == {"pov": "林黛玉", "location": "荣国府",
                                                                  "present": ["林黛玉", "贾母"]}
    # a second scene op into the file the writer has since commented: the front matter gains the date
    (bank.root / path).write_text("# 林黛玉进府\n" + _read(bank, path), "utf-8")
    done = _accept(bank, {"op": "scene", "date": "第一年 冬", "evidence": "原不忍弃父而往"},
                   {"op": "scene", "scene": "进府", "location": "贾母房中", "evidence": "一把搂入怀中"})
    assert done["ok"], done
    text = _read(bank, path)
    assert text.startswith("---\ndate: 第一年 冬\n# evidence:") and "# 林黛玉进府" in text
    state = {k: v["value"] for k, v in ok(bank, "story:scene", at=D)["state"].items()}
    assert state == {"pov": "林黛玉", "location": "贾母房中", "date": "第一年 冬", "present": ["林黛玉", "贾母"]}
    assert ok(bank, "story:scene", at="chapters/ch02.md")["state"] == {}
    # a scene captured from earlier in the chapter goes before the ones captured from further on
    done = _accept(bank, {"op": "scene", "scene": "拜别", "pov": "林黛玉", "evidence": "方洒泪拜别"})
    assert done["ok"], done
    assert [s["title"] for s in ok(bank, "story:scene", at=D)["scenes"]] == ["拜别", "进府"]
    again = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "scene", "scene": "进府", "location": "贾母房中", "pov": "林黛玉", "evidence": "黛玉"}])["ops"][0]
    assert (again["status"], again["reason"]) == ("refused", "ALREADY_KNOWN")


def test_a_folder_the_review_makes_is_on_disk_before_the_proposal_records_it(
        bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first scene op makes .writenow/scenes/: the folder holding it is fsynced too (else a crash can
    lose the folder, its file with it, while the proposal file says applied and it is never applied again)."""
    from membank.domains.capture import commit

    synced: list[Path] = []
    real = commit.fsync_dir
    monkeypatch.setattr(commit, "fsync_dir", lambda folder: (synced.append(Path(folder)), real(folder))[1])
    assert not (bank.root / ".writenow/scenes").exists()
    done = _accept(bank, {"op": "scene", "pov": "林黛玉", "evidence": "黛玉方进入房时"})
    assert done["ok"], done
    assert (bank.root / f".writenow/scenes/{D}.md").is_file()
    proposal = (bank.root / done["data"]["proposal"]).parent
    before = synced[:synced.index(proposal)]
    assert {bank.root / ".writenow", bank.root / ".writenow/scenes"} <= set(before)


def test_a_scene_op_takes_a_value_away_with_null(bank: Bank) -> None:
    path = f".writenow/scenes/{D}.md"
    write(bank.root, {path: "---\ndate: 第一年 冬   # 全章\nlocation: 扬州\n---\n## 进府\npov: 林黛玉\n"
                            "location: 荣国府  # 正房\npresent: [林黛玉, 贾母]\n"})
    done = _accept(bank, {"op": "scene", "scene": "进府", "location": None, "present": None, "evidence": "黛玉方进入房时"})
    assert done["ok"], done
    assert _read(bank, path).endswith(f"## 进府\npov: 林黛玉\n# evidence: {D}:5\n")  # its other lines as they were
    state = {k: v["value"] for k, v in ok(bank, "story:scene", at=f"{D}#进府")["state"].items()}
    assert state == {"pov": "林黛玉", "date": "第一年 冬", "location": "扬州"}  # the value before the scene holds again
    # the front matter's too; and a value the scene does not hold is nothing to take away
    done = _accept(bank, {"op": "scene", "date": None, "evidence": "原不忍弃父而往"})
    assert done["ok"], done
    assert _read(bank, path).startswith(f"---\nlocation: 扬州\n# evidence: {D}:3\n---\n## 进府\n")
    again = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[
        {"op": "scene", "scene": "进府", "location": None, "evidence": "黛玉"},
        {"op": "scene", "scene": "宝玉来", "date": None, "evidence": "黛玉"}])["ops"]
    assert [(r["status"], r["reason"]) for r in again] == [("refused", "ALREADY_KNOWN")] * 2
    # the last value of a section taken away: a scene with no values, read without a problem
    done = _accept(bank, {"op": "scene", "scene": "进府", "pov": None, "evidence": "一把搂入怀中"})
    assert done["ok"], done
    assert ok(bank, "story:scene", at=f"{D}#进府")["state"]["location"]["value"] == "扬州"
    assert not ok(bank, "index:diagnostics")["items"]


def test_null_takes_away_only_a_scenes_values() -> None:
    from membank.domains.capture import shapes

    assert shapes.check({"op": "scene", "pov": None, "evidence": "q"}, 0)["pov"] is None
    for op in ({"op": "scene", "scene": None, "pov": "x", "evidence": "q"},
               {"op": "progress", "entity": "x", "state": None, "evidence": "q"}):
        with pytest.raises(MembankError) as e:
            shapes.check(op, 3)
        assert e.value.code == "INVALID_ARGUMENT"
    scene = next(v for v in shapes.proposal_schema()["properties"]["ops"]["items"]["oneOf"]
                 if v["properties"]["op"] == {"const": "scene"})
    assert {"type": "null"} in scene["properties"]["location"]["anyOf"] and "anyOf" not in scene["properties"]["scene"]


def test_a_scene_naming_no_card_writes_no_scene_file(bank: Bank) -> None:
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03),
                  ops=[{"op": "scene", "pov": "无名氏", "evidence": "黛玉"}])
    assert proposed["ops"][0]["flags"] == ["UNKNOWN_ENTITY"]
    error = refused(bank, "capture:review", documentId=D,
                    decisions=[{"id": proposed["ops"][0]["id"], "decision": "accept"}])
    assert error["code"] == "CONFLICT" and not (bank.root / f".writenow/scenes/{D}.md").exists()


def test_one_list_item_is_rewritten_in_its_place_and_nothing_else() -> None:
    from membank.files.rewrite import RewriteError, set_item

    card = ("---\nname: 林黛玉  # 主角\nrelations:\n  - {to: 林如海, type: 父亲}   # 生父\n  - to: 贾母\n    type: 外孙女\n"
            "  - to: 贾敏  # 母亲\n    type: 女儿\n---\n正文\n")
    ended = set_item(card, "relations", 4, lambda item: {**item, "until": D}, {})
    assert ended == card.replace("父亲}   #", f"父亲, until: {D}}}   #")
    block = set_item(card, "relations", 5, lambda item: {**item, "until": D}, {"revision": 2})
    assert f"  - {{to: 贾母, type: 外孙女, until: {D}}}\n  - to: 贾敏  # 母亲\n" in block and "revision: 2\n---" in block
    for line in (7, 3):  # a comment inside the item would be lost; no item on that line
        with pytest.raises(RewriteError):
            set_item(card, "relations", line, lambda item: {**item, "until": D}, {})


def test_doctor_warns_on_the_thread_and_scene_lines_whose_quote_is_gone(bank: Bank) -> None:
    done = _accept(bank, {"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "方洒泪拜别"},
                   {"op": "scene", "pov": "林黛玉", "evidence": "方洒泪拜别"})
    assert done["ok"], done
    (bank.root / D).write_text(CH03.replace("方洒泪拜别，", ""), "utf-8")
    found = sorted((d["source"], d["line"]) for d in ok(bank, "index:diagnostics")["items"]
                   if d.get("code") == "CAPTURE_EVIDENCE_GONE")
    assert [source for source, _ in found] == [f".writenow/scenes/{D}.md", THREAD]
    for source, line in found:
        assert f"{D}:3" in _read(bank, source).splitlines()[line - 1]


def test_a_scene_edit_keeps_the_writers_lines() -> None:
    from membank.domains.capture import edits

    mine = "---\npov: 林黛玉   # 全章\n---\n## 进府\npresent: [贾母]  # 只有贾母\n\n## 宝玉来\nlocation: 贾母房中\n"
    got = edits.scene(mine, "进府", {"location": "荣国府"}, f"{D}:5")
    assert got == mine.replace("只有贾母\n", f"只有贾母\nlocation: 荣国府\n# evidence: {D}:5\n")
    top = edits.scene(mine.replace("\n", "\r\n"), None, {"date": "冬"}, f"{D}:3")
    assert top.startswith("---\r\npov: 林黛玉   # 全章\r\ndate: 冬\r\n# evidence: chapters/ch03.md:3\r\n---\r\n")
    assert "\n" not in top.replace("\r\n", "")


def test_a_recorded_touch_keeps_a_thread_from_being_abandoned() -> None:
    from membank.domains.story.order import StoryOrder
    from membank.domains.story.threads import abandoned, parse

    text = "---\ntitle: 金玉良缘\nopened: c1\ntouched:\n  - {at: c3, evidence: 'c3:4'}\n---\n"
    thread, _, _ = parse(text.encode(), "threads/marriage", "m.md")
    assert thread is not None and thread.touched == ("c3",)
    order = StoryOrder(tuple(f"c{i}" for i in range(10)), True)
    never = lambda p: frozenset()  # noqa: E731 - no chapter names it in words
    assert abandoned([thread], order, "c5", 3, never) == []  # touched two documents ago
    assert [(last, gone) for _, last, gone in abandoned([thread], order, "c6", 3, never)] == [("c3", 3)]


def test_a_new_person_and_a_relation_to_them_are_accepted_together(bank: Bank) -> None:
    nanny = {"op": "entity", "name": "奶娘", "kind": "character", "aliases": ["王嬷嬷"], "evidence": "随了奶娘"}
    cared = {"op": "relate", "entity": "林黛玉", "to": "王嬷嬷", "type": "乳母", "evidence": "随了奶娘"}
    seen = {"op": "scene", "present": ["林黛玉", "奶娘", "无名氏"], "evidence": "随了奶娘"}
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[nanny, cared, seen])
    ids = [r["id"] for r in proposed["ops"]]
    error = refused(bank, "capture:review", documentId=D, decisions=[  # 无名氏 is no card, new or old
        {"id": i, "decision": "accept"} for i in ids])
    assert error["code"] == "CONFLICT" and "无名氏" in error["message"]
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": ids[1], "decision": "accept"}])
    assert error["code"] == "CONFLICT"  # without the entity op, 王嬷嬷 names no card
    done = bank.call("capture:review", {"documentId": D, "decisions": [
        {"id": ids[1], "decision": "accept"}, {"id": ids[0], "decision": "accept"}, {"id": ids[2], "decision": "reject"}]})
    assert done["ok"], done
    edges = ok(bank, "kg:relations", name="林黛玉", at=D)["edges"]
    assert ("王嬷嬷", "乳母") in {(e["name"], e["type"]) for e in edges}
    (to,) = [e["to"] for e in edges if e["type"] == "乳母"]
    assert ok(bank, "kg:entity:get", id=to)["name"] == "奶娘"  # the name resolves to the new card


def test_a_new_persons_state_and_relations_go_into_their_new_card(bank: Bank) -> None:
    nanny = {"op": "entity", "name": "奶娘", "kind": "character", "evidence": "随了奶娘"}
    goes = {"op": "progress", "entity": "奶娘", "state": "随黛玉进京", "set": {"location": "荣国府"},
            "evidence": "随了奶娘及荣府几个老妇人登舟而去"}
    cares = {"op": "relate", "entity": "奶娘", "to": "林黛玉", "type": "乳母", "evidence": "随了奶娘"}
    old = {"op": "progress", "entity": "奶娘", "set": {"age": 300}, "evidence": "随了奶娘"}
    proposed = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[nanny, goes, cares, old])
    assert [(r["status"], r["reason"]) for r in proposed["ops"]][1:] == [
        ("pending", "UNKNOWN_ENTITY"), ("pending", "UNKNOWN_ENTITY"), ("refused", "INVALID_VALUE")]
    done = bank.call("capture:review", {"documentId": D, "decisions": [
        {"id": r["id"], "decision": "accept"} for r in proposed["ops"][:3]]})
    assert done["ok"], done
    card = _read(bank, ".writenow/characters/奶娘.md")
    assert f"progressions:\n  - {{at: {D}, state: 随黛玉进京, set: {{location: 荣国府}}, evidence: '{D}:3'}}\n" in card
    assert f"relations:\n  - {{to: 林黛玉, type: 乳母, since: {D}, evidence: '{D}:3'}}\n" in card
    state = ok(bank, "kg:state", name="奶娘", at=D)
    assert state["state"] == "随黛玉进京" and state["facets"]["location"]["value"] == "荣国府"
    assert not ok(bank, "index:diagnostics")["items"]
    ended = ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[  # nothing to end
        {"op": "entity", "name": "丫鬟", "kind": "character", "evidence": "老妇人"},
        {"op": "unrelate", "entity": "丫鬟", "to": "林黛玉", "type": "主仆", "evidence": "老妇人"}])["ops"]
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": r["id"], "decision": "accept"}
                                                                      for r in ended])
    assert error["code"] == "CONFLICT" and not (bank.root / ".writenow/characters/丫鬟.md").exists()
