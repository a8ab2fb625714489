"""Near-duplicates (issue 33.6): `story:duplicates` and `membank doctor`'s suggestions: two cards answering
to one name or alias, two facts saying nearly the same thing, each with both sources; cards and facts that
differ are not."""

from __future__ import annotations

from pathlib import Path

from membank.domains.story.duplicates import shared_names, similar_texts

from .helpers import membank
from .storykit import fits, ok, story

MORE = {
    ".writenow/characters/daiyu-2.md": "---\nname: 颦儿\nkind: character\naliases: [黛玉]\n---\n又一张卡。\n",
    ".writenow/memories/facts/a.md": "---\ntype: fact\n---\n林黛玉住在荣国府的碧纱橱里，由贾母照看。\n",
    ".writenow/memories/facts/b.md": "---\ntype: fact\n---\n林黛玉住在荣国府的碧纱橱里，由贾母照看着。\n",
    ".writenow/memories/facts/c.md": "---\ntype: fact\n---\n薛蟠打死冯渊，买走了英莲。\n",
}


def test_shared_names_and_similar_texts() -> None:
    assert shared_names([("a", ["林黛玉", "黛玉"]), ("b", ["黛玉 ", "颦儿"]), ("c", ["宝玉"])]) == [("黛玉", ("a", "b"))]
    assert shared_names([("a", ["Daiyu"]), ("b", ["daiyu"])]) == [("Daiyu", ("a", "b"))]  # case folded
    texts = {"x": "林黛玉住在荣国府的碧纱橱里，由贾母照看。", "y": "林黛玉住在荣国府的碧纱橱里，由贾母照看着。",
             "z": "薛蟠打死冯渊，买走了英莲。"}
    assert [(a, b) for a, b, _ in similar_texts(texts)] == [("x", "y")]
    edited = {"a": "Maren keeps the light at the Three Teeth and never leaves it.",
              "b": "Old Maren keeps the light at the Three Teeth and never leaves it.", "c": "Maren sleeps."}
    assert [(a, b) for a, b, _ in similar_texts(edited)] == [("a", "b")]  # the same end, a word added in front


def test_near_duplicates_with_both_sources(tmp_path: Path) -> None:
    bank = story(tmp_path, MORE)
    try:
        fits("story:duplicates", ok(bank, "story:duplicates"))
        found = ok(bank, "story:duplicates")["items"]
        card = next(i for i in found if i["kind"] == "card")
        assert card["name"] == "黛玉" and card["ids"] == ["characters/daiyu-2", "characters/lin-daiyu"]
        assert card["sources"] == [{"source": ".writenow/characters/daiyu-2.md", "line": 2},
                                   {"source": ".writenow/characters/lin-daiyu.md", "line": 2}]
        facts = [i for i in found if i["kind"] == "fact"]
        assert [[s["source"] for s in f["sources"]] for f in facts] == \
            [[".writenow/memories/facts/a.md", ".writenow/memories/facts/b.md"]]
        assert len(found) == 2  # 贾宝玉, 贾母 and fact c have no twin
        assert not any(d["message"].startswith("near-duplicate") for d in bank.diagnostics()["items"])
    finally:
        bank.close()


def test_doctor_suggests_the_merges(tmp_path: Path, home: Path) -> None:
    story(tmp_path, MORE).close()
    shown = membank("doctor", str(tmp_path / "hlm"), cwd=tmp_path / "hlm", home=home)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "merge?" in shown.stdout and "characters/daiyu-2.md:2" in shown.stdout and "facts/b.md:1" in shown.stdout
