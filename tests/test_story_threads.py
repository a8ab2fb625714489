"""Threads (story.md, Threads; issue 33.2): open at a position, spoiler-safe `story:threads`, the threads
open here in Layer 4 (`context_rules.threads`), and `THREAD_ABANDONED` after `story.threadWarnChapters`
documents without a mention."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

from membank.domains.story.order import StoryOrder
from membank.domains.story.threads import Thread, abandoned, parse, status

from .helpers import membank
from .storykit import CH, fits, ok, story

JADE = """---
title: 通灵宝玉的来历
opened: chapters/ch01.md
resolved: chapters/ch05.md
keys: [jade stone, 顽石]
entities: [贾宝玉]
---
Where the jade Baoyu was born with came from.
"""

MARRIAGE = """---
title: 金玉良缘
opened: chapters/ch03.md
keys: [金锁]
---
The golden lock and the jade: who will Baoyu marry?
"""

SKILL = ("---\nid: continue\nname: 续写\ncontext_rules:\n  surrounding: 200\n  characters: true\n"
         "  threads: true\n---\n续写。\n")


def _story(tmp_path: Path, settings: str = "") -> object:
    extra = {".writenow/threads/jade.md": JADE, ".writenow/threads/marriage.md": MARRIAGE,
             ".writenow/skills/continue.md": SKILL}
    if settings:
        extra[".writenow/settings.yaml"] = settings
    return story(tmp_path, extra)


def test_the_status_of_a_thread_at_each_position() -> None:
    thread, problem, _ = parse(JADE.encode(), "threads/jade", ".writenow/threads/jade.md")
    assert thread is not None and problem is None and thread.lines["opened"] == 3
    order = StoryOrder(tuple(CH), True)
    assert [status(thread, order, p) for p in CH] == ["open", "open", "open", "open", "resolved"]
    later, _, _ = parse(MARRIAGE.encode(), "threads/marriage", "m.md")
    assert later is not None and [status(later, order, p) for p in CH] == [None, None, "open", "open", "open"]
    none, problem, line = parse(b"---\ntitle: x\n---\nno opened\n", "threads/x", "x.md")
    assert none is None and "opened" in (problem or "") and line == 1


def test_abandoned_counts_documents_without_a_mention() -> None:
    thread, _, _ = parse(MARRIAGE.replace("chapters/ch03.md", "c1").encode(), "threads/marriage", "m.md")
    assert thread is not None
    order = StoryOrder(tuple(f"c{i}" for i in range(10)), True)
    assert abandoned([thread], order, "c3", 3, lambda p: frozenset()) == []  # opened two documents ago
    named = {"c3": {"threads/marriage"}}
    said = abandoned([thread], order, "c6", 3, lambda p: frozenset(named.get(p, set())))
    assert [(t.id, last, gone) for t, last, gone in said] == [("threads/marriage", "c3", 3)]
    assert abandoned([thread], order, "c5", 3, lambda p: frozenset(named.get(p, set()))) == []  # named 2 ago
    named["c6"] = {"threads/marriage"}
    assert abandoned([thread], order, "c6", 3, lambda p: frozenset(named.get(p, set()))) == []


def _abandoned_one_by_one(open_threads: list[Thread], order: StoryOrder, at: str, limit: int,
                          mentioned: Callable[[str], frozenset[str]]) -> list[tuple[Thread, str | None, int]]:
    """Each thread asked on its own, back from `at` until a document names it (what `abandoned` did)."""
    out = []
    here = order.document_rank(at)
    for thread in open_threads:
        start = order.document_rank(thread.opened or "")
        if here - start < limit:
            continue
        touched = {order.document_rank(t) for t in thread.touched}
        named = next((r for r in range(here, start, -1) if r in touched or thread.id in mentioned(order.positions[r])),
                     None)
        if named is not None and named > here - limit:
            continue
        since = order.positions[named] if named is not None else None
        out.append((thread, since, here - order.document_rank(since or thread.opened or "")))
    return out


def test_abandoned_walks_back_once_and_says_what_asking_each_thread_says() -> None:
    rng = random.Random(33)
    docs = tuple(f"c{i}" for i in range(12))
    order = StoryOrder(docs, True)
    for _ in range(300):
        found = [Thread(f"t{n}", f"T{n}", rng.choice([*docs, "elsewhere"]), None, None, (), (), "", "t.md",
                        {"opened": 1}, tuple(rng.sample([*docs, "c99"], rng.randint(0, 2)))) for n in range(6)]
        names = {d: frozenset(t.id for t in found if rng.random() < 0.15) for d in docs}
        at, limit = rng.choice(docs), rng.randint(1, 6)
        asked: list[str] = []

        def mentioned(position: str) -> frozenset[str]:
            asked.append(position)
            return names[position]
        said = abandoned(found, order, at, limit, mentioned)
        once = list(asked)
        asked.clear()
        assert said == _abandoned_one_by_one(found, order, at, limit, mentioned)
        assert sorted(once) == sorted(set(once)) and set(once) == set(asked)  # each document once, none more


def test_story_threads_is_spoiler_safe(tmp_path: Path) -> None:
    bank = _story(tmp_path)
    try:
        early = ok(bank, "story:threads", at="chapters/ch02.md")
        assert [(t["id"], t["status"]) for t in early["items"]] == [("threads/jade", "open")]
        text = json.dumps(early, ensure_ascii=False)
        assert "金玉良缘" not in text and "ch05" not in text  # opened later; resolved later
        assert early["items"][0]["source"] == ".writenow/threads/jade.md" and early["items"][0]["line"] == 3
        end = ok(bank, "story:threads", at="chapters/ch05.md")
        fits("story:threads", end)
        assert {(t["id"], t["status"]) for t in end["items"]} == {("threads/jade", "resolved"),
                                                                   ("threads/marriage", "open")}
        assert next(t for t in end["items"] if t["status"] == "resolved")["resolved"] == "chapters/ch05.md"
        assert [t["id"] for t in ok(bank, "story:threads", at="chapters/ch05.md", status="open")["items"]] == \
            ["threads/marriage"]
        refused = bank.call("story:threads", {"at": "chapters/ch99.md"})
        assert not refused["ok"] and refused["error"]["code"] == "INVALID_ARGUMENT"
    finally:
        bank.close()


def test_the_open_threads_go_into_layer_4_and_no_later_one(tmp_path: Path) -> None:
    bank = _story(tmp_path)
    try:
        d = ok(bank, "context:assemble", skillId="continue", documentId="chapters/ch02.md", instruction="续写")
        layer4 = d["blocks"][4]["text"]
        assert "### Open threads" in layer4 and "通灵宝玉的来历 (open since chapters/ch01.md)" in layer4
        assert "金玉良缘" not in json.dumps(d, ensure_ascii=False)
        thread = next(i for i in d["items"] if i["kind"] == "thread")
        assert thread["source"] == ".writenow/threads/jade.md" and thread["line"] == 3
        later = ok(bank, "context:assemble", skillId="continue", documentId="chapters/ch05.md", instruction="续写")
        assert "金玉良缘" in later["blocks"][4]["text"] and "通灵宝玉的来历" not in later["blocks"][4]["text"]
    finally:
        bank.close()


def test_a_thread_edited_between_two_prompts_is_told_as_it_now_is(tmp_path: Path) -> None:
    bank = _story(tmp_path)
    try:
        ask = {"skillId": "continue", "documentId": "chapters/ch02.md", "instruction": "续写"}
        assert "通灵宝玉的来历" in ok(bank, "context:assemble", **ask)["blocks"][4]["text"]
        path = tmp_path / "novel" / ".writenow" / "threads" / "jade.md"
        if not path.exists():
            [path] = list(tmp_path.rglob("threads/jade.md"))
        path.write_text(JADE.replace("resolved: chapters/ch05.md", "resolved: chapters/ch02.md"), "utf-8")
        assert "通灵宝玉的来历" not in ok(bank, "context:assemble", **ask)["blocks"][4]["text"]  # resolved here now
        assert "通灵宝玉的来历" in ok(bank, "context:assemble", **{**ask, "documentId": "chapters/ch01.md"}
                                 )["blocks"][4]["text"]
    finally:
        bank.close()


def test_thread_abandoned_after_the_setting_and_not_before(tmp_path: Path) -> None:
    bank = _story(tmp_path, "story:\n  threadWarnChapters: 2\n")
    try:
        flags = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md")["flags"]
        said = [f for f in flags if f["code"] == "THREAD_ABANDONED"]
        assert [f["entity"] for f in said] == ["threads/marriage"]  # opened ch03, unnamed in ch03-ch05
        assert said[0]["evidence"] == [{"source": ".writenow/threads/marriage.md", "line": 3}]
        named = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md", text="宝钗的金锁。")
        assert not any(f["code"] == "THREAD_ABANDONED" for f in named["flags"])  # the passage names it
        early = ok(bank, "kg:consistency:check", documentId="chapters/ch04.md")
        # 金玉良缘 opened one document ago: not yet; 通灵宝玉的来历 last named (宝玉) in ch02: two ago
        assert [f["entity"] for f in early["flags"] if f["code"] == "THREAD_ABANDONED"] == ["threads/jade"]
        assert "last named in chapters/ch02.md" in early["flags"][-1]["message"]
        assert not ok(bank, "kg:consistency:check", documentId="chapters/ch03.md")["flags"]
    finally:
        bank.close()


def test_a_thread_resolved_or_reopened_between_two_checks_is_flagged_as_it_now_is(tmp_path: Path) -> None:
    bank = _story(tmp_path, "story:\n  threadWarnChapters: 2\n")
    try:
        [path] = list(tmp_path.rglob("threads/marriage.md"))

        def abandoned() -> list[str]:
            flags = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md")["flags"]
            return [f["entity"] for f in flags if f["code"] == "THREAD_ABANDONED"]
        assert abandoned() == ["threads/marriage"]
        path.write_text(MARRIAGE.replace("keys:", "resolved: chapters/ch04.md\nkeys:"), "utf-8")
        assert abandoned() == []  # resolved before ch05: no longer open there
        path.write_text(MARRIAGE, "utf-8")
        assert abandoned() == ["threads/marriage"]
    finally:
        bank.close()


def test_threads_on_the_command_line(tmp_path: Path, home: Path) -> None:
    _story(tmp_path).close()  # type: ignore[attr-defined]
    shown = membank("threads", "--at", "chapters/ch03.md", cwd=tmp_path / "hlm", home=home)
    assert shown.returncode == 0, shown.stderr
    assert "通灵宝玉的来历" in shown.stdout and "金玉良缘" in shown.stdout and "threads/jade.md:3" in shown.stdout
