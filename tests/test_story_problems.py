"""The story's problems (`membank doctor`, `index:status`) come from rows each card's indexing keeps
(domains/story/refs.py), not from a card catalog built per command, so the fear is a kept answer gone
stale. Whatever changes (a card's relations or links, another card's names, a card removed or hidden,
project.yaml's `chapters:`, a memory's since/until, a progression a write adds) and whichever way the
index learns it (a full sync, the named file a write or the watcher syncs), the answer is the one an
index built afresh from the files gives: the same items in the same order."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import membank
from membank import Bank
from membank.index.store import reading

from .watching import wait_until

NOWHERE = "names no character or world entry"
SEVERAL = "entries ("
OUTSIDE = "is not in project.yaml `chapters:`"


def _card(folder: Path, rel: str, name: str, *more: str, body: str = "") -> Path:
    path = folder / f"{rel}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    kind = "character" if rel.startswith("characters/") else "place"
    path.write_text("\n".join(["---", f"name: {name}", f"kind: {kind}", *more, "---", body, ""]), "utf-8")
    return path


def _memory(root: Path, *more: str) -> Path:
    path = root / ".writenow" / "memories" / "facts" / "light.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["---", "type: fact", *more, "---", "The lamp is lit.", ""]), "utf-8")
    return path


def _chapters(root: Path, *patterns: str) -> None:
    """project.yaml with `chapters:` (none: without the key); a change of size, so the stamp moves."""
    path = root / ".writenow" / "project.yaml"
    kept = [line for line in path.read_text("utf-8").splitlines() if not line.startswith("chapters:")]
    listed = [f"chapters: [{', '.join(patterns)}]"] if patterns else []
    path.write_text("\n".join([*kept, *listed]) + "\n", "utf-8")


@pytest.fixture
def story(tmp_path: Path) -> Path:
    """A project of three cards and one timed memory: Ana relates to Bo and links [[Cy]], whom no card is."""
    root = tmp_path / "story"
    membank.init(root, "Story")
    wb = root / ".writenow"
    for example in [*wb.glob("characters/**/*.md"), *wb.glob("world/**/*.md"), *wb.glob("memories/**/*.md")]:
        example.unlink()  # the template's examples: this story is its own
    _card(wb, "characters/ana", "Ana", "aliases: [Rook]", "introduced: chapters/ch01.md",
          "relations:", "  - {to: Bo, type: ally, since: chapters/ch02.md}", body="She met [[Cy]] at the cove.")
    _card(wb, "characters/bo", "Bo")
    _card(wb, "world/cove", "The Cove", "progressions:", "  - {at: chapters/ch02.md, state: flooded}")
    _memory(root, "since: chapters/ch01.md")
    for name in ("ch01", "ch02"):
        (root / "chapters").mkdir(exist_ok=True)
        (root / "chapters" / f"{name}.md").write_text(f"{name}\n", "utf-8")
    return root


def _problems(bank: Bank) -> list[dict[str, Any]]:
    with reading():  # both answers from one snapshot: a watcher's batch between them would make them differ
        envelope = bank.call("index:diagnostics", {})
        status = bank.call("index:status", {})["data"]["diagnostics"]
    assert envelope["ok"], envelope
    items: list[dict[str, Any]] = envelope["data"]["items"]
    assert status["warnings"] == sum(d["severity"] != "error" for d in items)
    return items


def _afresh(root: Path, tmp: Path) -> list[dict[str, Any]]:
    """What an index built from nothing gives for the same files (citations are relative: they compare)."""
    copy = tmp / f"afresh-{len(list(tmp.glob('afresh-*')))}"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".index"))
    bank = membank.open(copy)
    try:
        return _problems(bank)
    finally:
        bank.close()


def _said(items: list[dict[str, Any]], words: str) -> list[tuple[str, int]]:
    return [(d["source"], d["line"]) for d in items if words in d["message"]]


def test_a_card_edit_is_seen_in_the_problems_of_the_cards_it_touches(story: Path, tmp_path: Path, home: Path) -> None:
    wb = story / ".writenow"
    bank = membank.open(story)
    try:
        first = _problems(bank)
        assert _said(first, NOWHERE) == [(".writenow/characters/ana.md", 9)]  # [[Cy]], the body's first line
        assert first == _afresh(story, tmp_path)

        _card(wb, "characters/bo", "Bo", "aliases: [Cy]")  # another card answers to Cy now
        # a clash (bo.md wins, this file is shadowed) and a deleted card: neither names nor relates
        _card(wb, "characters/zz", "Zed", "id: characters/bo", "aliases: [Bo]", "relations: [{to: Nobody}]")
        _card(wb, "characters/old", "Old", "aliases: [Bo]", "deleted_at: 2026-01-01T00:00:00Z",
              "relations: [{to: Nobody}]")
        bank.sync()
        assert _said(_problems(bank), NOWHERE) == _said(_problems(bank), SEVERAL) == []
        for rel in ("characters/zz.md", "characters/old.md"):
            (wb / rel).unlink()
            bank.sync_one(bank.project, rel)

        _card(wb, "characters/bo-2", "Bo the Younger", "aliases: [Bo]")  # Bo names two cards
        bank.sync_one(bank.project, "characters/bo-2.md")  # as a write syncs the file it wrote
        two = _problems(bank)
        assert [d["message"] for d in two if SEVERAL in d["message"]] == \
            ["`Bo` names 2 entries (characters/bo, characters/bo-2); write the id to say which"]
        assert two == _afresh(story, tmp_path)

        (wb / "characters" / "bo-2.md").unlink()
        (wb / "characters" / "bo.md").unlink()
        bank.sync_one(bank.project, "characters/bo-2.md")
        bank.sync_one(bank.project, "characters/bo.md")
        gone = _problems(bank)
        assert len(_said(gone, NOWHERE)) == 2 and _said(gone, SEVERAL) == []  # Bo and Cy lead nowhere
        assert gone == _afresh(story, tmp_path)

        _card(home, "characters/bo", "Bo", "relations:", "  - {to: Nobody, type: rival}")  # the global bank
        _card(home, "characters/ana", "Ana", "aliases: [Cy]")  # hidden by the project's Ana: Cy stays unknown
        bank.sync()
        hidden = _problems(bank)
        assert sorted(_said(hidden, NOWHERE)) == [(".writenow/characters/ana.md", 9), ("global:characters/bo.md", 5)]
        assert hidden == _afresh(story, tmp_path)

        _card(wb, "characters/ana", "Ana", body="She left.")  # her relation and link taken out
        bank.sync()
        assert _said(_problems(bank), NOWHERE) == [("global:characters/bo.md", 5)]
    finally:
        bank.close()


def test_chapters_and_a_memorys_span_are_seen_without_a_stale_answer(story: Path, tmp_path: Path) -> None:
    memory = ".writenow/memories/facts/light.md"
    bank = membank.open(story)
    try:
        assert _said(_problems(bank), OUTSIDE) == []  # natural order: no position is outside
        _chapters(story, "chapters/ch01.md")  # project.yaml is no indexed file: no sync between
        listed = _problems(bank)
        assert sorted(_said(listed, OUTSIDE)) == [(".writenow/characters/ana.md", 7), (".writenow/world/cove.md", 5)]
        assert listed == _afresh(story, tmp_path)

        _memory(story, "# moved", "until: chapters/ch09.md")
        bank.sync_one(bank.project, "memories/facts/light.md")
        assert (memory, 4) in _said(_problems(bank), OUTSIDE)

        _chapters(story, "chapters/ch*.md")
        (story / "chapters" / "ch09.md").write_text("ch09\n", "utf-8")  # the glob holds it now
        globbed = _problems(bank)
        assert _said(globbed, OUTSIDE) == []
        assert globbed == _afresh(story, tmp_path)

        _chapters(story, "chapters/ch02.md")
        _memory(story, "since: chapters/ch02.md")
        bank.sync()
        again = _problems(bank)
        assert sorted(_said(again, OUTSIDE)) == [(".writenow/characters/ana.md", 5)]  # introduced: ch01
        assert again == _afresh(story, tmp_path)

        _chapters(story)
        assert _said(_problems(bank), OUTSIDE) == []
    finally:
        bank.close()


def test_a_write_and_the_watcher_keep_the_problems_current(story: Path, tmp_path: Path) -> None:
    from membank.shells.watch import Watcher

    bank = membank.open(story)
    watcher = Watcher(bank, debounce=0.05)
    watcher.start()
    try:
        moved = bank.call("kg:state:update", {"name": "Bo", "at": "chapters/ch02.md", "state": "gone"})
        assert moved["ok"], moved
        _chapters(story, "chapters/ch01.md")
        written = _said(_problems(bank), OUTSIDE)
        assert {(".writenow/characters/bo.md", 5), (".writenow/characters/bo.md", 9)} <= set(written)  # at, state

        _card(story / ".writenow", "characters/cy", "Cy")  # saved by hand: only the watcher hears of it
        wait_until(lambda: _said(_problems(bank), NOWHERE) == [], what="the watcher to index Cy")
        expected = _afresh(story, tmp_path)
        with reading():  # the sidecar's reads: a read-only snapshot of their own
            assert _problems(bank) == expected
    finally:
        watcher.stop()
        bank.close()


def test_an_index_opened_without_a_sync_since_the_kept_rows_came_answers_the_same(story: Path) -> None:
    bank = membank.open(story)
    try:
        _chapters(story, "chapters/ch01.md")
        kept = _problems(bank)
        with bank.index.transaction():  # as an index written before the table existed, opened as it is
            bank.index.db.execute("DELETE FROM story_refs")
    finally:
        bank.close()
    bank = membank.open(story, sync=False)
    try:
        assert _problems(bank) == kept
    finally:
        bank.close()
