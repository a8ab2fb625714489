"""The passages' strong windows (manuscript.md, "Meaning"): cut at sentence ends, filled in the background
of a long-lived process, used by `manuscript:search` only once every passage has them, and never a way
around `before`. A fake encoder (tests/strongfake.py) stands in for the model."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings, strategies as st

import membank
from membank import Bank
from membank.domains.manuscript import strong

from . import strongfake

CH1 = "The keeper climbed the lighthouse stairs.\n\nA ship went down in the storm that night.\n"
CH2 = "雨夜里，老周在码头等船。\n\nThe keeper found the wreck of the ship on the rocks at dawn.\n"


@pytest.fixture
def bank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bank]:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load")
    strongfake.GATE.set()
    strongfake.HOLD_AFTER[0] = 10**9
    root = tmp_path / "novel"
    membank.init(root)
    (root / "chapters").mkdir()
    (root / "chapters" / "ch01.md").write_text(CH1, "utf-8")
    (root / "chapters" / "ch02.md").write_text(CH2, "utf-8")
    opened = membank.open(root)
    yield opened
    opened.close()
    strongfake.HOLD_AFTER[0] = 0


def _tiers(bank: Bank, **kw: str) -> set[str]:
    items = bank.search_manuscript(query_text="ship storm keeper", **kw)["items"]
    return {i["reason"].split(": ", 1)[1].split(" #")[0] for i in items if "#" in i["reason"].split(",")[0]}


def test_windows_cut_at_sentence_ends_cjk_counting_double() -> None:
    english = "One short sentence. " * 20
    got = strong.windows(english)
    assert len(got) > 1 and all(len(w) <= strong.WINDOW for w in got)
    assert "".join(got).replace(" ", "") == english.replace(" ", "")
    chinese = "林默在灯塔下等了一夜。" * 20  # 11 characters, weight 22 each
    assert all(len(w) <= strong.WINDOW // 2 for w in strong.windows(chinese))
    assert strong.windows("no sentence end here") == ["no sentence end here"]


def test_only_the_allowed_passages_windows_are_scored_each_as_the_whole_matrix_scores_it() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 9, 300)  # windows a passage
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    matrix = rng.standard_normal((int(sizes.sum()), 384)).astype(np.float16).astype(np.float32)
    vector = rng.standard_normal(384).astype(np.float32)
    whole = np.maximum.reduceat(np.einsum("ij,j->i", matrix, vector), first)
    asked = [np.arange(0, 120), np.arange(299, -1, -1), np.array([0]), np.array([299]), np.array([5, 17, 17, 6]),
             np.concatenate([np.arange(0, 50), np.arange(51, 300)]),  # one excluded in the middle
             np.arange(0, 300, 40), np.arange(0, 300, 2)]  # runs far apart, runs close together
    for rows in asked:
        runs = strong.spans(first, len(matrix), rows)
        assert np.array_equal(strong.best_windows(matrix, first, runs, vector)[rows], whole[rows])


def test_a_passage_without_sentence_ends_is_cut_into_windows_the_model_reads_whole() -> None:
    """One window for 750 unpunctuated CJK characters is ~640 tokens, of which the model reads 256: the
    rest of the passage could never be found by meaning. A sentence past twice a window's weight is cut
    (at a space when it has one); one a little over a window stays whole."""
    chinese = "林黛玉方进入房时只见两个人搀着一位鬓发如银的老母迎上来" * 28
    got = strong.windows(chinese)
    assert "".join(got) == chinese and all(len(w) <= strong.WINDOW // 2 + 1 for w in got)
    words = " ".join(["lighthouse"] * 100)  # 1,099 code points, no sentence end
    got = strong.windows(words)
    assert len(got) > 1 and all(len(w) <= strong.WINDOW + 1 for w in got) and " ".join(got) == words
    sentence = "word " * 50 + "end."  # 254: over a window, under two: one window as before
    assert strong.windows(sentence) == [sentence]


def test_search_ranks_with_the_windows_once_the_background_filled_them(bank: Bank) -> None:
    assert _tiers(bank) <= {"vector"}  # nothing filled yet: the static vectors (this search kicks the filler)
    assert strong.settle(bank)
    assert _tiers(bank) == {"strong vector"}
    (bank.root / "chapters" / "ch02.md").write_text(CH2 + "\nThe storm came back.\n", "utf-8")
    bank.sync()
    assert strong.settle(bank)  # the changed passage's windows, in the background after the sync
    assert _tiers(bank) == {"strong vector"}
    bank.update_embedding_settings(patch={"strong": "off"})  # the writer's switch
    assert _tiers(bank) <= {"vector"}


def test_a_passage_added_before_the_position_between_two_searches_is_scored_by_its_windows(bank: Bank) -> None:
    strong.fill(bank)
    first = bank.search_manuscript(query_text="gulls harbour", before="chapters/ch02.md", limit=50)["items"]
    assert not any("gulls" in i["text"] for i in first)
    (bank.root / "chapters" / "ch01.md").write_text(CH1 + "\nGulls circled over the harbour.\n", "utf-8")
    bank.sync()
    assert strong.settle(bank)
    items = bank.search_manuscript(query_text="gulls harbour", before="chapters/ch02.md", limit=50)["items"]
    added = [i for i in items if "Gulls" in i["text"]]
    assert added and added[0]["reason"].split(": ", 1)[1].startswith("strong vector #1 ")
    assert {i["source"] for i in items} == {"chapters/ch01.md"}


def test_a_passage_without_its_windows_leaves_the_ranking_to_the_static_vectors(bank: Bank) -> None:
    assert strong.fill(bank) > 0
    strongfake.HOLD_AFTER[0] = 0
    strongfake.GATE.clear()  # the background cannot embed the changed passage
    (bank.root / "chapters" / "ch01.md").write_text(CH1 + "\nThe light went out.\n", "utf-8")
    bank.sync()
    assert _tiers(bank) <= {"vector"}
    strongfake.GATE.set()
    assert strong.settle(bank)
    assert _tiers(bank) == {"strong vector"}


def test_the_windows_never_open_what_lies_after_before(bank: Bank) -> None:
    strong.fill(bank)
    items = bank.search_manuscript(query_text="雨夜 码头 wreck rocks dawn", before="chapters/ch02.md", limit=50)["items"]
    assert items and {i["source"] for i in items} == {"chapters/ch01.md"}
    assert _tiers(bank, before="chapters/ch02.md") == {"strong vector"}


def test_a_model_failing_on_the_passages_leaves_the_static_vectors_ranking(bank: Bank,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (bank.root / "chapters" / "ch03.md").write_text("The storm passed.\n", "utf-8")
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_broken")
    other = membank.open(bank.root)
    try:
        assert _tiers(other) <= {"vector"}
        assert strong.settle(other)
        assert _tiers(other) <= {"vector"}
    finally:
        other.close()


def _recall_sides(bank: Bank, query: str) -> set[str]:
    from membank.domains.manuscript.recall import recall

    with bank.index.lock:  # as context:assemble calls it: the background fills use the same connection
        got = recall(bank, "chapters/ch02.md", query, 3, None, "")
    assert got  # ch01's passages lie before ch02
    return {r.reason.split(": ", 1)[1].split(" #")[0] for r in got if "#" in r.reason.split(",")[0]}


def test_context_recall_ranks_with_the_windows_only_with_a_query_vector_already_made(bank: Bank) -> None:
    """`context_rules.recall` never pays for an embedding of its own in a prompt: the windows rank when the
    memories' side of the same assemble has made the query's strong vector (the encoder keeps it), the
    static vectors otherwise."""
    from membank.domains.recall.tiers import strong_query

    assert strong.fill(bank) > 0
    query = "the ship in the storm"
    assert _recall_sides(bank, query) == {"vector"}  # not embedded yet: the static vectors, no embedding
    assert strong.made_query(bank, query) is None
    assert strong_query(bank, query) is not None  # what the memories' side does first
    assert _recall_sides(bank, query) == {"strong vector"}
    bank.update_embedding_settings(patch={"strong": "off"})  # the writer's switch
    assert _recall_sides(bank, query) == {"vector"}


def _assembled_sides(bank: Bank, memories: int) -> set[str]:
    skills = bank.root / ".writenow" / "skills"
    skills.mkdir(exist_ok=True)
    (skills / "recall-strong.md").write_text(
        "---\nid: recall-strong\nname: Recall strong\ncontext_rules:\n  surrounding: 0\n"
        f"  memories: {memories}\n  recall: 3\n---\nContinue.\n", "utf-8")
    bank.sync()
    d = bank.assemble_context(skill_id="recall-strong", document_id="chapters/ch02.md",
                              selection={"start": 0, "end": 2}, query_text=f"the storm and the ship {memories}")
    found = [i for i in d["items"] if i["kind"] == "passage"]
    assert found  # ch01 lies before ch02
    whys = [i["reason"]["why"] for i in found]  # "rank n: <side> #m (…), lexical #k"
    return {w.split(": ", 1)[1].split(" #")[0] for w in whys if "#" in w.split(",")[0]}


def test_an_assemble_whose_memories_embed_the_query_recalls_passages_by_their_windows(bank: Bank) -> None:
    assert strong.fill(bank) > 0
    assert _assembled_sides(bank, memories=5) == {"strong vector"}
    assert _assembled_sides(bank, memories=0) == {"vector"}  # nothing embedded it: no embedding paid here


def test_an_assemble_without_memories_recalls_by_the_static_vectors_whatever_embedded_its_query_before(
        bank: Bank) -> None:
    """Which vectors rank Layer 4's passages is the assemble's own: a preview (or another project of the same
    process: the encoder and its query cache are shared) that embedded the same query earlier changes nothing."""
    assert strong.fill(bank) > 0
    assert _assembled_sides(bank, memories=0) == {"vector"}
    bank.preview(query_text="the storm and the ship 0")  # the memories' preview embeds it with the strong model
    assert _assembled_sides(bank, memories=0) == {"vector"}


def test_a_window_the_model_made_nan_ranks_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One window NaN (a model gone wrong on one text) put every passage on the same score: the search was
    in passage order, the answer anywhere."""
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_nan_on_poison")
    root = tmp_path / "novel"
    membank.init(root)
    (root / "chapters").mkdir()
    (root / "chapters" / "ch01.md").write_text("## a\n\nA poison cup on the table.\n\n## b\n\nThe cat slept by the"
                                               " fire.\n\n## c\n\nThe keeper climbed the lighthouse stairs.\n", "utf-8")
    with closing(membank.open(root)) as opened:
        assert strong.fill(opened) > 0
        items = opened.search_manuscript(query_text="lighthouse stairs", limit=3)["items"]
        assert "The keeper" in items[0]["text"] and "strong vector #1" in items[0]["reason"]


def test_a_previews_passages_rank_by_the_windows_in_a_semantic_preview_only(bank: Bank) -> None:
    """The bank's search lists the passages before the document (recall/passages.py), ranked by the windows
    where the preview's memories' side embedded the query; with injection off, none."""
    assert strong.fill(bank) > 0
    query = "the ship in the storm"

    def sides() -> set[str]:
        found = bank.preview(query_text=query, document_id="chapters/ch02.md")["passages"]
        assert found and all(p["source"] == "chapters/ch01.md" for p in found)  # before ch02 only
        return {p["reason"].split(": ", 1)[1].split(" #")[0] for p in found if "#" in p["reason"].split(",")[0]}

    assert sides() == {"strong vector"}
    bank.update_settings({"injectionEnabled": False})
    assert bank.preview(query_text=query, document_id="chapters/ch02.md")["passages"] == []


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=40), st.sampled_from([1, 3, 17, 383, 384]),
       st.data())
def test_any_allowed_set_scores_as_the_whole_matrix_for_any_window_layout(sizes: list[int], dim: int, data: Any) -> None:
    """One passage, passages of one window or of hundreds (gaps over GAP_SCORED), rows of an odd width (views
    starting off the usual alignment), allowed sets with repeats, the first or the last passage alone."""
    import numpy as np

    first = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    rng = np.random.default_rng(len(sizes) * 1000 + dim)
    matrix = rng.standard_normal((sum(sizes), dim)).astype(np.float16).astype(np.float32)
    vector = rng.standard_normal(dim).astype(np.float32)
    whole = np.maximum.reduceat(np.einsum("ij,j->i", matrix, vector), first)
    rows = np.asarray(data.draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=12)), np.int64)
    runs = strong.spans(first, len(matrix), rows)
    got = strong.best_windows(matrix, first, runs, vector)
    assert np.array_equal(got[rows], whole[rows])
    scored = np.zeros(len(sizes), bool)
    for lo, hi in runs.tolist():
        scored[lo:hi] = True
    assert np.isneginf(got[~scored]).all() and np.array_equal(got[scored], whole[scored])


def test_the_index_deleted_while_passages_are_embedded_is_written_nothing_and_said_without_a_traceback(
        bank: Bank, caplog: pytest.LogCaptureFixture) -> None:
    """`.writenow/.index/` deleted while the background embeds a changed chapter's passages: nothing is written
    into the unlinked file and no traceback is logged (its next batch could not open a reader: a traceback
    from the worker); the next call makes the index again and the windows fill it."""
    import logging
    import shutil

    assert strong.fill(bank) > 0
    caplog.set_level(logging.WARNING, logger="membank")
    strongfake.HOLD_AFTER[0] = 0
    strongfake.GATE.clear()
    strongfake.ENTERED.clear()
    (bank.root / "chapters" / "ch01.md").write_text(CH1 + "\nThe light went out.\n", "utf-8")
    bank.sync()
    assert strongfake.ENTERED.wait(30)  # the batch is in the model
    shutil.rmtree(bank.root / ".writenow" / ".index")
    strongfake.GATE.set()
    assert strong.settle(bank)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    bank.sync()  # a call: the index made again from the files
    assert strong.settle(bank)
    assert _tiers(bank) == {"strong vector"}
