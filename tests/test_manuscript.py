"""The manuscript as memory (manuscript.md): passages kept level with the chapters through index:sync,
spoiler-safe search cited to the line, bad chapters as diagnostics, and no manuscript file ever written."""

from __future__ import annotations

import hashlib
import os
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest

import membank
from membank import Bank
from membank.domains.manuscript.sync import sync as sync_manuscript

CH1 = "# 第一回\n\n## 灯塔\n\n林默在灯塔下等了一夜。\n\n***\n\n天亮了，船没有来。\n"
CH2 = "## 雨夜\n\n雨夜里，老周在码头等船。\n\n## 灯塔之死\n\nThe keeper died at the lighthouse that night.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "novel"
    membank.init(root)
    (root / "chapters").mkdir()
    (root / "chapters" / "ch01.md").write_text(CH1, "utf-8")
    (root / "chapters" / "ch02.md").write_text(CH2, "utf-8")
    return root


@pytest.fixture
def bank(project: Path) -> Iterator[Bank]:
    opened = membank.open(project)
    yield opened
    opened.close()


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".writenow" not in p.parts}


def test_search_cites_source_and_line(bank: Bank) -> None:
    items = bank.search_manuscript(query_text="灯塔")["items"]
    assert {(i["source"], i["scene"], i["line"]) for i in items} >= {("chapters/ch01.md", "灯塔", 1),
                                                                    ("chapters/ch02.md", "灯塔之死", 5)}
    first = items[0]
    assert set(first) == {"source", "scene", "line", "endLine", "text", "score", "reason"}


def test_items_read_a_few_at_a_time_are_the_ranked_ones(bank: Bank) -> None:
    from membank.domains.manuscript.search import ranked, ranked_items

    (bank.root / "chapters" / "ch03.md").write_text("## 风暴\n\n灯塔下，林默又等了一夜。\n", "utf-8")
    bank.sync()
    items, _ = ranked(bank, "灯塔 林默 船 雨夜", "chapters/ch03.md", None, 10, embed=False, windows=False)
    assert len(items) >= 3
    for batch in (1, 2, 100):
        assert list(ranked_items(bank, "灯塔 林默 船 雨夜", "chapters/ch03.md", 10, frozenset(), False, batch)) == items
    skipped = frozenset({items[0]["id"]})  # an excluded passage is no item, and the ranks are counted without it
    assert [i["id"] for i in ranked_items(bank, "灯塔 林默 船 雨夜", "chapters/ch03.md", 10, skipped, False, 1)] == \
        [i["id"] for i in ranked(bank, "灯塔 林默 船 雨夜", "chapters/ch03.md", None, 10, skipped, False, False)[0]]


def test_before_never_returns_a_passage_at_or_after_the_position(bank: Bank) -> None:
    for before, allowed in [("chapters/ch01.md", set()),
                            ("chapters/ch01.md#2", {("chapters/ch01.md", "灯塔")}),
                            ("chapters/ch02.md", {("chapters/ch01.md", "灯塔"), ("chapters/ch01.md", "#2")}),
                            ("chapters/ch02.md#灯塔之死", {("chapters/ch01.md", "灯塔"), ("chapters/ch01.md", "#2"),
                                                        ("chapters/ch02.md", "雨夜")})]:
        for query in ("灯塔", "lighthouse keeper died", "雨夜 码头", "船"):
            got = {(i["source"], i["scene"]) for i in bank.search_manuscript(query_text=query, before=before,
                                                                             limit=50)["items"]}
            assert got <= allowed, (before, query, got)


def test_an_unknown_scene_counts_as_the_end_of_its_document(bank: Bank) -> None:
    got = {i["scene"] for i in bank.search_manuscript(query_text="灯塔 雨夜 船", before="chapters/ch02.md#nowhere",
                                                      limit=50)["items"]}
    assert "灯塔之死" in got or "雨夜" in got


def test_a_changed_chapter_rewrites_only_its_changed_passages(bank: Bank, project: Path) -> None:
    chapter = project / "chapters" / "ch02.md"
    chapter.write_text("新的开头。\n\n" + CH2.replace("码头", "渡口"), "utf-8")
    report = sync_manuscript(bank)
    assert report.changed == ["chapters/ch02.md"]
    # the new opening and the edited scene are written; the unchanged passage moved down two lines, kept
    assert (report.added, report.kept, report.removed) == (2, 1, 1)
    items = bank.search_manuscript(query_text="lighthouse keeper died", document_id="chapters/ch02.md")["items"]
    assert items[0]["line"] == 7  # its lines moved with it
    assert sync_manuscript(bank).changed == []  # nothing changed since: nothing read again


def test_a_search_after_a_sync_cites_the_moved_passage_where_it_now_is(bank: Bank, project: Path) -> None:
    def cited() -> list[tuple[str, int, str]]:
        return [(i["scene"], i["line"], i["text"]) for i in bank.search_manuscript(
            query_text="lighthouse keeper died", document_id="chapters/ch02.md")["items"]]

    assert cited()[0][:2] == ("灯塔之死", 5)  # asked once: what the search shows is kept until the passages move
    chapter = project / "chapters" / "ch02.md"
    chapter.write_text("新的开头。\n\n" + CH2.replace("## 灯塔之死", "## 守灯人"), "utf-8")
    sync_manuscript(bank)
    assert cited()[0][:2] == ("守灯人", 7)
    chapter.write_text(CH2.replace("died at", "drowned off"), "utf-8")
    sync_manuscript(bank)
    assert "drowned off" in cited()[0][2]


def test_a_search_before_a_chapter_follows_a_chapter_added_in_front_of_it(bank: Bank, project: Path) -> None:
    (project / "chapters" / "ch03.md").write_text("## 尾声\n\n天又亮了。\n", "utf-8")
    bank.sync()
    def sources(before: str) -> list[str]:
        return [i["source"] for i in bank.search_manuscript(query_text="信鸽", before=before)["items"]]

    assert "chapters/ch02b.md" not in sources("chapters/ch03.md")  # asked once: the chapters before ch03 are kept
    (project / "chapters" / "ch02b.md").write_text("一只信鸽落在窗台上。\n", "utf-8")
    bank.sync()
    assert sources("chapters/ch03.md")[0] == "chapters/ch02b.md"
    assert "chapters/ch02b.md" not in sources("chapters/ch02b.md")


def test_index_sync_follows_removed_and_added_chapters(bank: Bank, project: Path) -> None:
    (project / "chapters" / "ch02.md").unlink()
    (project / "chapters" / "ch03.md").write_text("第三章：风暴来了。\n", "utf-8")
    bank.sync()
    status = bank.manuscript_status()
    assert [d["source"] for d in status["items"]] == ["chapters/ch01.md", "chapters/ch03.md"]
    assert "chapters/ch02.md" not in {i["source"] for i in bank.search_manuscript(query_text="keeper died")["items"]}
    assert bank.search_manuscript(query_text="风暴")["items"][0]["source"] == "chapters/ch03.md"


def test_status_lists_documents_in_story_order(bank: Bank) -> None:
    status = bank.manuscript_status()
    assert [(d["source"], d["scenes"], d["problem"]) for d in status["items"]] == [
        ("chapters/ch01.md", ["灯塔", "#2"], None), ("chapters/ch02.md", ["雨夜", "灯塔之死"], None)]
    assert status["passages"] == 4


def test_bad_chapters_are_diagnostics_never_a_stop(project: Path, tmp_path: Path) -> None:
    chapters = project / "chapters"
    (chapters / "big.md").write_bytes(b"a" * (20 * 1024 * 1024))
    (chapters / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (chapters / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n", "utf-8")
    (chapters / "link.md").symlink_to(outside)
    os.mkfifo(chapters / "fifo.md")
    listed = ["chapters/ch01.md", "chapters/big.md", "chapters/binary.md", "chapters/latin1.md", "chapters/link.md",
              "chapters/fifo.md", "chapters/gone.md"]
    yaml = project / ".writenow" / "project.yaml"
    yaml.write_text(yaml.read_text("utf-8") + "chapters: [" + ", ".join(listed) + "]\n", "utf-8")
    before = _hashes(project)
    with closing(membank.open(project)) as bank:
        status = {d["source"]: d for d in bank.manuscript_status()["items"]}
        for name in ("big", "binary", "latin1", "link", "fifo"):
            assert status[f"chapters/{name}.md"]["problem"], name
            assert status[f"chapters/{name}.md"]["passages"] == 0
        assert status["chapters/gone.md"] == {"source": "chapters/gone.md", "passages": 0, "scenes": [],
                                              "codePoints": 0, "characters": [], "problem": None,
                                              "summary": "none"}
        assert status["chapters/ch01.md"]["passages"] == 2
        assert "chapters/link.md" not in {i["source"] for i in bank.search_manuscript(query_text="secret")["items"]}
        warned = {d["source"] for d in bank.diagnostics()["items"] if "manuscript" in d["message"]}
        assert warned >= {"chapters/big.md", "chapters/binary.md", "chapters/latin1.md", "chapters/link.md",
                          "chapters/fifo.md"}
        again = sync_manuscript(bank)  # nothing moved: no chapter read again, the warnings stay
        assert (again.changed, again.problems) == ([], {})
        (chapters / "latin1.md").write_text("café au lait\n", "utf-8")  # fixed: indexed, its warning gone
        bank.sync()
        assert bank.search_manuscript(query_text="café")["items"][0]["source"] == "chapters/latin1.md"
        assert "chapters/latin1.md" not in {d["source"] for d in bank.diagnostics()["items"]}
    assert _hashes(project) == {**before, "chapters/latin1.md": _hashes(project)["chapters/latin1.md"]}


def test_membank_never_writes_a_manuscript_file(project: Path) -> None:
    before = _hashes(project)
    with closing(membank.open(project)) as bank:
        bank.sync()
        bank.search_manuscript(query_text="灯塔", before="chapters/ch02.md#灯塔之死")
        bank.manuscript_status()
        bank.sync(rebuild=True)
        bank.search_manuscript(query_text="灯塔")
    assert _hashes(project) == before


def test_the_watcher_keeps_the_passages_level_with_a_saved_chapter(bank: Bank, project: Path) -> None:
    from membank.shells.watch import Watcher

    from .watching import wait_until

    changed: list[list[str]] = []
    watcher = Watcher(bank, on_change=changed.append, debounce=0.05, reconcile_every=None)
    watcher.start()
    try:
        wait_until(watcher.idle, what="the first reconcile")
        saved = project / "chapters" / "ch01.md.tmp"  # an editor's save: write aside, rename over
        saved.write_text(CH1 + "\n## 风暴\n\n风暴把灯塔的窗子吹破了。\n", "utf-8")
        os.replace(saved, project / "chapters" / "ch01.md")

        def found() -> bool:
            from membank.index.store import reading

            with reading():
                return any(i["scene"] == "风暴" for i in bank.search_manuscript(query_text="风暴")["items"])
        wait_until(found, what="the saved chapter's new scene")
        # the listener is called after the batch is committed, so a reader may see the passage first
        wait_until(lambda: any("chapters/ch01.md" in batch for batch in changed),
                   what="the change announced")  # the sidecar's `chapter:changed`
    finally:
        watcher.stop()


RECALL_SKILL = """---
id: recall-test
name: Recall test
context_rules:
  surrounding: 60
  recall: 3
---
Continue.
"""


def test_recall_puts_earlier_passages_in_layer_4_never_later_or_surrounding(project: Path) -> None:
    (project / ".writenow" / "skills").mkdir(exist_ok=True)
    (project / ".writenow" / "skills" / "recall-test.md").write_text(RECALL_SKILL, "utf-8")
    ch3 = ("## 回忆\n\n他又想起灯塔下那一夜。\n\n" + "海浪。" * 60 + "\n\n## 灯塔\n\n灯塔的灯又亮了，林默站在灯塔下。\n")
    (project / "chapters" / "ch03.md").write_text(ch3, "utf-8")
    with closing(membank.open(project)) as bank:
        at = ch3.index("灯塔的灯")
        d = bank.assemble_context(skill_id="recall-test", document_id="chapters/ch03.md",
                                  selection={"start": at, "end": at + 4}, query_text="灯塔 林默")
        recalled = [i for i in d["items"] if i["kind"] == "passage"]
        assert recalled and all(i["layer"] == 4 for i in recalled)
        cited = {(i["source"], i["line"]) for i in recalled}
        # earlier chapters, and ch03's first scene (before the selection's scene); never ch03's scene 2
        assert ("chapters/ch01.md", 1) in cited
        assert all(not (s == "chapters/ch03.md" and line >= 7) for s, line in cited)
        assert "### Earlier in the manuscript" in d["userContent"]
        assert "(chapters/ch01.md:1, 灯塔)" in d["userContent"]
        # in ch01's second scene the first one is earlier, but it is in the text around the selection
        at = CH1.index("天亮了")
        d = bank.assemble_context(skill_id="recall-test", document_id="chapters/ch01.md",
                                  selection={"start": at, "end": at + 3}, query_text="灯塔 林默 船")
        assert "林默在灯塔下等了一夜" in d["userContent"].split("## The passage")[1]  # Layer 5 holds it
        assert not [i for i in d["items"] if i["kind"] == "passage"]
        skill = project / ".writenow" / "skills" / "recall-test.md"
        skill.write_text(RECALL_SKILL.replace("surrounding: 60", "surrounding: 0"), "utf-8")
        bank.sync()
        d = bank.assemble_context(skill_id="recall-test", document_id="chapters/ch01.md",
                                  selection={"start": at, "end": at + 3}, query_text="灯塔 林默 船")
        assert [(i["source"], i["line"]) for i in d["items"] if i["kind"] == "passage"] == [("chapters/ch01.md", 1)]


DEATH = """---
type: fact
scope: project
since: "chapters/ch02.md#灯塔之死"
---
老周死在了灯塔。
"""
FACTS_SKILL = """---
id: facts-test
name: Facts test
context_rules:
  memories: 5
---
Continue.
"""


def test_a_death_in_mid_chapter_is_not_true_at_its_first_scene(project: Path) -> None:
    wb = project / ".writenow"
    (wb / "memories" / "fact").mkdir(parents=True, exist_ok=True)
    (wb / "memories" / "fact" / "death.md").write_text(DEATH, "utf-8")
    (wb / "skills").mkdir(exist_ok=True)
    (wb / "skills" / "facts-test.md").write_text(FACTS_SKILL, "utf-8")
    with closing(membank.open(project)) as bank:
        def sees(at: int) -> bool:
            d = bank.assemble_context(skill_id="facts-test", document_id="chapters/ch02.md",
                                      selection={"start": at, "end": at + 2}, query_text="老周 灯塔")
            return "老周死在了灯塔" in d["userContent"]
        assert not sees(CH2.index("雨夜里"))  # scene 1 (雨夜): not yet
        assert sees(CH2.index("The keeper"))  # scene 2 (灯塔之死): true
        assert not [d for d in bank.diagnostics()["items"] if "灯塔之死" in d["message"]]
        (wb / "memories" / "fact" / "death.md").write_text(DEATH.replace("灯塔之死", "nowhere"), "utf-8")
        # position problems are reported where project.yaml lists `chapters:` (story.md)
        yaml = wb / "project.yaml"
        yaml.write_text(yaml.read_text("utf-8") + "chapters: [chapters/ch01.md, chapters/ch02.md]\n", "utf-8")
        bank.sync()
        [warning] = [d for d in bank.diagnostics()["items"] if "nowhere" in d["message"]]
        assert "names no scene" in warning["message"] and warning["severity"] == "warning"


CARD = """---
name: 林默
aliases: [Lin Mo]
keys: [灯塔]
---
守灯人。
"""


def test_appearances_count_names_per_chapter_in_story_order(project: Path) -> None:
    (project / ".writenow" / "characters").mkdir(exist_ok=True)
    (project / ".writenow" / "characters" / "lin-mo.md").write_text(CARD, "utf-8")
    (project / "chapters" / "ch03.md").write_text("Lin Mo came back.\n\n林默笑了。林默走了。\n", "utf-8")
    with closing(membank.open(project)) as bank:
        got = bank.appearances(name="Lin Mo")
        assert [(i["source"], i["count"], i["firstLine"], i["lastLine"]) for i in got["items"]] == [
            ("chapters/ch01.md", 1, 5, 5), ("chapters/ch03.md", 3, 1, 3)]  # keys (灯塔) are not mentions
        assert (got["first"], got["last"], got["total"]) == ("chapters/ch01.md#灯塔", "chapters/ch03.md#1", 4)
        assert [d["characters"] for d in bank.manuscript_status()["items"]] == [["林默"], [], ["林默"]]


def test_appearances_follow_a_chapter_saved_and_the_cards_changed(project: Path) -> None:
    (project / ".writenow" / "characters").mkdir(exist_ok=True)
    card = project / ".writenow" / "characters" / "lin-mo.md"
    card.write_text(CARD, "utf-8")
    chapter = project / "chapters" / "ch03.md"
    chapter.write_text("Lin Mo came back.\n\n林默笑了。\n", "utf-8")
    with closing(membank.open(project)) as bank:
        def seen() -> list[tuple[str, int, int, int]]:
            return [(i["source"], i["count"], i["firstLine"], i["lastLine"])
                    for i in bank.appearances(name="林默")["items"]]

        assert seen() == [("chapters/ch01.md", 1, 5, 5), ("chapters/ch03.md", 2, 1, 3)]
        chapter.write_text("Nobody.\n\nLin Mo came back.\n\n林默笑了。林默走了。\n", "utf-8")
        bank.sync()
        assert seen() == [("chapters/ch01.md", 1, 5, 5), ("chapters/ch03.md", 3, 3, 5)]
        card.write_text(CARD.replace("aliases: [Lin Mo]", "aliases: []"), "utf-8")
        bank.sync()
        assert seen() == [("chapters/ch01.md", 1, 5, 5), ("chapters/ch03.md", 2, 5, 5)]


RECAP_SKILL = """---
id: recap-test
name: Recap test
context_rules:
  recap: 2000
---
Continue.
"""


def test_summaries_put_list_stale_and_the_story_so_far(project: Path) -> None:
    wb = project / ".writenow"
    (wb / "skills").mkdir(exist_ok=True)
    (wb / "skills" / "recap-test.md").write_text(RECAP_SKILL, "utf-8")
    (project / "chapters" / "ch03.md").write_text("## 风暴\n\n风暴来了。\n", "utf-8")
    before = _hashes(project)
    with closing(membank.open(project)) as bank:
        bank.put_summary(of="chapters/ch01.md", level="chapter", text="林默在灯塔下等船，船没有来。", by="app")
        bank.put_summary(of="chapters/ch02.md#雨夜", level="scene", text="老周在码头等船。")
        bank.put_summary(of="chapters/ch02.md", level="chapter", text="老周死在灯塔。")
        bank.put_summary(of="chapters/ch03.md", level="chapter", text="风暴。")
        listed = bank.list_summaries()["items"]
        assert [(s["of"], s["stale"]) for s in listed] == [("chapters/ch01.md", False), ("chapters/ch02.md#雨夜", False),
                                                           ("chapters/ch02.md", False), ("chapters/ch03.md", False)]
        assert [s["of"] for s in bank.list_summaries(before="chapters/ch02.md#2")["items"]] == [
            "chapters/ch01.md", "chapters/ch02.md#雨夜"]
        assert _hashes(project) == before  # summaries live in .writenow/summaries/, never beside the chapters
        at = CH2.index("The keeper")
        d = bank.assemble_context(skill_id="recap-test", document_id="chapters/ch02.md",
                                  selection={"start": at, "end": at + 3})
        told = d["userContent"].split("### The story so far")[1].split("\n### ")[0]
        assert told.index("林默在灯塔下等船") < told.index("老周在码头等船")  # oldest first
        assert "老周死在灯塔" not in d["userContent"] and "风暴" not in told  # nothing at or after the position
        (project / "chapters" / "ch01.md").write_text(CH1 + "\n新的一段。\n", "utf-8")
        bank.sync()
        assert [s["stale"] for s in bank.list_summaries()["items"]][:2] == [True, False]
        [warning] = [d for d in bank.diagnostics()["items"] if "stale" in d["message"]]
        assert "chapters/ch01.md" in warning["message"] and warning["source"].startswith(".writenow/summaries/")
        assert [d["summary"] for d in bank.manuscript_status()["items"]] == ["stale", "current", "current"]
        d = bank.assemble_context(skill_id="recap-test", document_id="chapters/ch02.md",
                                  selection={"start": at, "end": at + 3})
        assert "#### chapters/ch01.md (stale)" in d["userContent"]
        bank.put_summary(of="chapters/ch01.md", level="chapter", text="林默等船，船没来；天亮了。")
        assert len(list((wb / "summaries").rglob("*.md"))) == 4  # replaced in place
        assert bank.list_summaries()["items"][0]["stale"] is False
        bank.sync()
        assert not [d for d in bank.diagnostics()["items"] if "stale" in d["message"]]


def test_the_recap_folds_older_chapters_into_an_arc_and_cuts_the_oldest_end(project: Path) -> None:
    from membank.domains.manuscript.summaries import recap

    for n in (3, 4, 5):
        (project / "chapters" / f"ch0{n}.md").write_text(f"第{n}章。\n", "utf-8")
    with closing(membank.open(project)) as bank:
        for n in (1, 2, 3, 4):
            bank.put_summary(of=f"chapters/ch0{n}.md", level="chapter", text=f"第{n}章的事。" * 40)
        bank.put_summary(of="chapters/ch01.md..chapters/ch02.md", level="arc", text="前两章。")
        # each chapter's summary is ~250 tokens: ch04 and ch03 in detail, ch01-02 folded into their arc
        told = [s.of for s, _ in recap(bank, "chapters/ch05.md", 520)]
        assert told == ["chapters/ch01.md..chapters/ch02.md", "chapters/ch03.md", "chapters/ch04.md"]
        # no arc tells ch03: what does not fit is cut from the oldest end, never a gap in the middle
        assert [s.of for s, _ in recap(bank, "chapters/ch05.md", 300)] == ["chapters/ch04.md"]
        told = [s.of for s, _ in recap(bank, "chapters/ch05.md", 2000)]
        assert told == ["chapters/ch01.md", "chapters/ch02.md", "chapters/ch03.md", "chapters/ch04.md"]
        assert [s.of for s, _ in recap(bank, "chapters/ch04.md#1", 2000)] == told[:3]


def test_the_recap_told_again_follows_a_summary_edited_by_hand_and_the_position(project: Path) -> None:
    from membank.domains.manuscript.summaries import recap

    (project / "chapters" / "ch03.md").write_text("第3章。\n", "utf-8")
    with closing(membank.open(project)) as bank:
        bank.put_summary(of="chapters/ch01.md", level="chapter", text="林默等船。")
        bank.put_summary(of="chapters/ch02.md", level="chapter", text="老周死在灯塔。")
        assert [s.text for s, _ in recap(bank, "chapters/ch03.md", 2000)] == ["林默等船。", "老周死在灯塔。"]
        assert [s.text for s, _ in recap(bank, "chapters/ch02.md", 2000)] == ["林默等船。"]
        [path] = [p for p in (project / ".writenow" / "summaries").rglob("*.md") if "ch01" in p.name]
        path.write_text(path.read_text("utf-8").replace("林默等船。", "林默等了一夜的船。"), "utf-8")  # no sync
        assert [s.text for s, _ in recap(bank, "chapters/ch03.md", 2000)] == ["林默等了一夜的船。", "老周死在灯塔。"]
        assert [s.text for s, _ in recap(bank, "chapters/ch03.md", 20)] == ["老周死在灯塔。"]


def test_a_prompt_s_recap_follows_a_summary_edited_by_hand_and_its_items_are_the_caller_s(project: Path) -> None:
    wb = project / ".writenow"
    (wb / "skills").mkdir(exist_ok=True)
    (wb / "skills" / "recap-test.md").write_text(RECAP_SKILL, "utf-8")
    (project / "chapters" / "ch03.md").write_text("第3章。\n", "utf-8")
    with closing(membank.open(project)) as bank:
        bank.put_summary(of="chapters/ch01.md", level="chapter", text="林默等船。")

        def told() -> tuple[str, list[dict[str, object]]]:
            d = bank.assemble_context(skill_id="recap-test", document_id="chapters/ch03.md",
                                      selection={"start": 0, "end": 1})
            return d["userContent"], [i for i in d["items"] if i["kind"] == "summary"]

        content, [item] = told()
        assert "林默等船。" in content and item["reason"] == {"level": "chapter", "stale": False}
        item["reason"]["stale"] = True  # the caller's own: the next prompt is not changed by it
        assert told()[1][0]["reason"] == {"level": "chapter", "stale": False}
        [path] = [p for p in (wb / "summaries").rglob("*.md") if "ch01" in p.name]
        path.write_text(path.read_text("utf-8").replace("林默等船。", "林默等了一夜的船。"), "utf-8")  # no sync
        content, _ = told()
        assert "林默等了一夜的船。" in content and "林默等船。" not in content


def test_the_recap_follows_a_summary_put_and_one_removed_between_two_prompts(project: Path) -> None:
    from membank.domains.manuscript.summaries import recap

    (project / "chapters" / "ch03.md").write_text("第3章。\n", "utf-8")
    with closing(membank.open(project)) as bank:
        bank.put_summary(of="chapters/ch01.md", level="chapter", text="林默等船。")
        assert [s.text for s, _ in recap(bank, "chapters/ch03.md", 2000)] == ["林默等船。"]
        bank.put_summary(of="chapters/ch02.md", level="chapter", text="老周死在灯塔。")
        assert [s.text for s, _ in recap(bank, "chapters/ch03.md", 2000)] == ["林默等船。", "老周死在灯塔。"]
        [path] = [p for p in (project / ".writenow" / "summaries").rglob("*.md") if "ch01" in p.name]
        path.unlink()
        assert [s.text for s, _ in recap(bank, "chapters/ch03.md", 2000)] == ["老周死在灯塔。"]


def test_a_chapter_deleted_mid_sync_leaves_the_index_without_it(bank: Bank, project: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.manuscript import sync as sync_module

    chapter = project / "chapters" / "ch02.md"
    chapter.write_text(CH2 + "\n更多。\n", "utf-8")  # changed: the sync will read it
    real = sync_module.read_document_bytes

    def deleted_first(root: Path, document: str, cap: int) -> bytes | None:
        if document == "chapters/ch02.md":
            chapter.unlink()  # gone between the stat and the read
        return real(root, document, cap)
    monkeypatch.setattr(sync_module, "read_document_bytes", deleted_first)
    report = sync_manuscript(bank)
    assert report.changed == ["chapters/ch02.md"] and not report.problems
    assert [d["source"] for d in bank.manuscript_status()["items"]] == ["chapters/ch01.md"]
    assert "chapters/ch02.md" not in {i["source"] for i in bank.search_manuscript(query_text="keeper died")["items"]}


def test_recall_finds_a_passage_of_a_chapter_saved_between_two_prompts(project: Path) -> None:
    (project / ".writenow" / "skills").mkdir(exist_ok=True)
    (project / ".writenow" / "skills" / "recall-test.md").write_text(RECALL_SKILL, "utf-8")
    ch3 = "## 回忆\n\n他又想起那一夜。\n\n" + "海浪。" * 60 + "\n\n## 灯塔\n\n灯塔的灯又亮了。\n"
    (project / "chapters" / "ch03.md").write_text(ch3, "utf-8")
    at = ch3.index("灯塔的灯")
    with closing(membank.open(project)) as bank:
        def recalled() -> str:
            d = bank.assemble_context(skill_id="recall-test", document_id="chapters/ch03.md",
                                      selection={"start": at, "end": at + 4}, query_text="信鸽")
            return d["userContent"]

        assert "信鸽落在" not in recalled()
        (project / "chapters" / "ch02.md").write_text(CH2 + "\n一只信鸽落在窗台上。\n", "utf-8")
        bank.sync()
        got = recalled()
        assert "信鸽落在" in got, got
