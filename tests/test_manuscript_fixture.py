"""The manuscript retrieval fixture's English half (fixtures/manuscript, benchmarks/manuscript.py): it loads
as the benchmark reads it, every answer marks one passage of its chapter, and a spoiler question asked
with `before` = its chapter finds nothing at or after that chapter, while the chapter after it may."""

from __future__ import annotations

from pathlib import Path

import membank
from benchmarks import manuscript


def test_the_english_half_loads_with_one_place_per_answer() -> None:
    parts, questions = manuscript.load("en")
    assert len(parts) == 6 and all(p.startswith(f"Chapter {n}\n") for n, p in enumerate(parts, 1))
    assert len(questions) >= 20
    text = "".join(parts)
    for q in questions:
        assert text.count(q["answer"]) == 1, q["answer"]  # only the answering passage can hold it
        assert q["answer"] in parts[q["chapter"] - 1] and "\n" not in q["answer"], q["answer"]


def test_a_spoiler_question_finds_nothing_before_its_position(tmp_path: Path) -> None:
    root = tmp_path / "pride"
    questions = manuscript.write_project(root, "en")
    bank = membank.open(root)
    try:
        for q in questions:
            before = manuscript.chapter_file(q["chapter"])
            early = bank.search_manuscript(query_text=q["q"], before=before, limit=50)["items"]
            assert manuscript.leaked(early, q) == 0, q["q"]
            assert all(i["source"] < before for i in early)
        darcy = next(q for q in questions if q["answer"].startswith("She is tolerable"))  # chapter 3
        assert bank.search_manuscript(query_text=darcy["q"], before="chapters/ch03.txt", limit=50)["items"]
        later = bank.search_manuscript(query_text=darcy["q"], before="chapters/ch04.txt", limit=50)["items"]
        assert any(darcy["answer"] in i["text"] for i in later)  # the position, not the question, hid it
    finally:
        bank.close()


def test_the_held_out_questions_load_with_one_place_per_answer_in_both_languages() -> None:
    """The held-out set (fixtures/manuscript/README.md) is read as the frozen one: at least 10 questions per
    language over the same chapters, each answer once in the excerpt, in the chapter given."""
    for lang in manuscript.NOVELS:
        parts, frozen = manuscript.load(lang)
        same, questions = manuscript.load(lang, "heldout")
        assert same == parts and len(questions) >= 10
        asked = {q["q"] for q in frozen}
        text = "".join(parts)
        for q in questions:
            assert q["q"] not in asked and text.count(q["answer"]) == 1, q["answer"]
            assert q["answer"] in parts[q["chapter"] - 1] and "\n" not in q["answer"], q["answer"]
