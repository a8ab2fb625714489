"""The manuscript's word matches composed from each phrase's kept rows (domains/manuscript/words.py) give
what FTS5 gives for the whole OR query, to the bit and in the same order: rows holding many phrases,
repeated words, Chinese pairs, identical passages (ties), a `where` that allows some passages, a limit."""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from membank.domains.manuscript import store, words
from membank.index import Index

WORDS = ["storm", "storms", "gull", "lamp", "keel", "Maren", "林 默", "灯 塔", "the", "x"]
SQL = ("SELECT f.rowid, bm25(manuscript_fts) FROM manuscript_fts AS f JOIN manuscript_passages AS p ON p.id = f.rowid"
       " WHERE manuscript_fts MATCH ? AND p.document IN (SELECT value FROM json_each(?)) ORDER BY 2 LIMIT ?")

_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
_phrase = st.sampled_from(['"storm"', '"gull"', '"lamp"', '"keel"', '"maren"', '"林 默"', '"灯 塔"', '"the"', '"x"',
                           '"nowhere"', '"storm gull"', '"Storms"', '"STORM"', '"Storms gulls"', '"_"'])


def _index(texts: list[str]) -> Index:
    index = Index(":memory:")
    with index.transaction():
        for n, text in enumerate(texts, start=1):
            index.db.execute("INSERT INTO manuscript_passages(id, document, ordinal, scene, scene_no, line, end_line,"
                             " start, stop, text, hash) VALUES (?, ?, ?, '#1', 1, 1, 1, 0, 1, ?, '')",
                             (n * 3, f"ch{n % 3}.md", n, text))  # ids with gaps
            index.db.execute("INSERT INTO manuscript_fts(rowid, body) VALUES (?, ?)", (n * 3, text))
    return index


def _allowed(index: Index, documents: list[str]) -> list[int]:
    return [i for (i,) in index.db.execute("SELECT id FROM manuscript_passages AS p WHERE p.document IN "
                                           "(SELECT value FROM json_each(?))", (json.dumps(documents),))]


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, min_size=1, max_size=40), st.lists(st.lists(_phrase, min_size=1, max_size=6), min_size=1,
                                                           max_size=5),
       st.sampled_from([["ch0.md", "ch1.md", "ch2.md"], ["ch1.md"], ["ch0.md", "ch2.md"], []]), st.integers(1, 60))
def test_an_or_of_phrases_ranks_as_fts5_ranks_it(texts: list[str], queries: list[list[str]], documents: list[str],
                                                  k: int) -> None:
    index = _index(texts)
    try:
        allowed = _allowed(index, documents)
        for phrases in queries * 2:  # the second time from the rows the first kept
            match = " OR ".join(phrases)
            want = [(int(i), float(s)) for i, s in index.db.execute(SQL, (match, json.dumps(documents), k))]
            assert words.composed(index, match, allowed, k) == want
            assert words.best(index, match, "p.document IN (SELECT value FROM json_each(?))", [json.dumps(documents)],
                              allowed, k) == want
    finally:
        index.close()


def test_a_new_generation_of_passages_is_read_again() -> None:
    index = _index(["storm gull", "gull", "lamp"])
    try:
        match = '"gull" OR "lamp"'
        before = words.composed(index, match, [3, 6, 9], 10)
        with index.transaction():
            index.db.execute("INSERT INTO manuscript_passages(id, document, ordinal, scene, scene_no, line, end_line,"
                             " start, stop, text, hash) VALUES (12, 'ch1.md', 9, '#1', 1, 1, 1, 0, 1, 'gull gull', '')")
            index.db.execute("INSERT INTO manuscript_fts(rowid, body) VALUES (12, 'gull gull')")
            store.moved(index)
        after = words.composed(index, match, [3, 6, 9, 12], 10)
        assert after is not None and before is not None
        assert {i for i, _ in after} == {3, 6, 9, 12} and {i for i, _ in before} == {3, 6, 9}
        assert after == [(int(i), float(s)) for i, s in index.db.execute(
            "SELECT rowid, bm25(manuscript_fts) FROM manuscript_fts WHERE manuscript_fts MATCH ? ORDER BY 2", (match,))]
    finally:
        index.close()


def test_spellings_of_one_term_share_its_rows_and_each_ranks_as_fts5_ranks_it() -> None:
    index = _index(["storm gull", "storms", "Storming lamp", "lamp"])
    try:
        for match in ('"storms"', '"Storm"', '"STORMING" OR "lamp"', '"lamp" OR "storm"', '"storm gull"',
                      '"Storms Gulls"', '"' + "storm" * 20_000 + '"'):  # each after an earlier spelling's rows
            want = [(int(i), float(s)) for i, s in index.db.execute(
                "SELECT rowid, bm25(manuscript_fts) FROM manuscript_fts WHERE manuscript_fts MATCH ? ORDER BY 2, 1",
                (match,))]
            assert (want or len(match) > 100) and words.composed(index, match, [3, 6, 9, 12], 10) == want
    finally:
        index.close()


def test_what_is_not_an_or_of_plain_phrases_is_left_to_fts5() -> None:
    index = _index(["storm gull", "gull"])
    try:
        assert words.composed(index, '"gull" AND "storm"', [3, 6], 5) is None
        assert words.composed(index, "gull*", [3, 6], 5) is None
    finally:
        index.close()


def test_kept_positions_are_the_allowed_ones_less_the_excluded_and_follow_a_new_generation() -> None:
    index = _index(["storm gull", "gull", "lamp", "keel"])
    try:
        ids = words._kept(index)["ids"]
        allowed = [9, 3, 12, 99]  # in no order, one not a passage
        for exclude in (frozenset(), frozenset({3}), frozenset({9, 12, 7})):
            want = words.positions(ids, [i for i in allowed if i not in exclude])
            assert words.kept_positions(index, ids, allowed, exclude).tolist() == want.tolist()
        assert words.allowed_mask(index, ids, allowed).tolist() == [True, False, True, True]
        with index.transaction():  # a passage comes: the ids and their positions are read again
            index.db.execute("INSERT INTO manuscript_passages(id, document, ordinal, scene, scene_no, line, end_line,"
                             " start, stop, text, hash) VALUES (1, 'ch1.md', 9, '#1', 1, 1, 1, 0, 1, 'gull', '')")
            store.moved(index)
        ids = words._kept(index)["ids"]
        assert words.kept_positions(index, ids, allowed).tolist() == [3, 1, 4]
        assert words.allowed_mask(index, ids, allowed).tolist() == [False, True, False, True, True]
    finally:
        index.close()


class _Bank:  # what recall.py's `overlapping` and `scene_at` read of a bank: its index
    def __init__(self, index: Index) -> None:
        self.index = index


def _spans(rows: list[tuple[int, str, int, int, int]]) -> Index:
    """An index holding passages (id, document, scene number, start, stop) and nothing else."""
    index = Index(":memory:")
    with index.transaction():
        index.db.executemany("INSERT INTO manuscript_passages(id, document, ordinal, scene, scene_no, line, end_line,"
                             " start, stop, text, hash) VALUES (?, ?, 1, '#1', ?, 1, 1, ?, ?, 'x', '')", rows)
    return index


def _moved(index: Index, sql: str) -> None:
    with index.transaction():
        index.db.execute(sql)
        store.moved(index)


def test_the_passages_overlapping_a_window_follow_a_new_generation() -> None:
    from membank.domains.manuscript.recall import overlapping

    index = _spans([(4, "ch1.md", 1, 0, 10), (7, "ch1.md", 1, 10, 20), (9, "ch1.md", 1, 20, 30),
                    (5, "ch2.md", 1, 0, 30)])
    try:
        bank = _Bank(index)
        assert overlapping(bank, "ch1.md", (10, 20)) == {7}  # a passage ending at 10 or starting at 20: not in it
        assert overlapping(bank, "ch1.md", (5, 25)) == {4, 7, 9}
        assert overlapping(bank, "ch1.md", (30, 40)) == frozenset()
        assert overlapping(bank, "zz.md", (0, 99)) == frozenset()
        _moved(index, "UPDATE manuscript_passages SET start = 31, stop = 40 WHERE id = 9")  # its span read again
        assert overlapping(bank, "ch1.md", (5, 25)) == {4, 7}
        assert overlapping(bank, "ch1.md", (35, 36)) == {9}
    finally:
        index.close()


def test_the_scene_at_an_offset_is_the_one_of_the_passage_starting_last_at_or_before_it() -> None:
    from membank.domains.manuscript.recall import scene_at

    index = _spans([(8, "ch1.md", 3, 40, 50), (2, "ch1.md", 2, 5, 15), (6, "ch1.md", 2, 20, 30)])  # in no order
    try:
        bank = _Bank(index)
        assert [scene_at(bank, "ch1.md", at) for at in (0, 4, 5, 39, 40, 10_000)] == [2, 2, 2, 2, 3, 3]
        assert scene_at(bank, "ch1.md", None) is None and scene_at(bank, "zz.md", 3) is None
        _moved(index, "UPDATE manuscript_passages SET scene_no = 4 WHERE id = 8")  # a heading added above it
        assert scene_at(bank, "ch1.md", 45) == 4
    finally:
        index.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.5, 0.25, -1.0, 0.0, -0.0, 2.0, float("nan")]) | st.floats(-3, 3), min_size=1,
                max_size=40), st.integers(1, 40))
def test_sorting_only_the_first_k_candidates_gives_the_first_k_of_a_stable_sort(values: list[float], k: int) -> None:
    import numpy as np

    array = np.asarray(values, dtype=np.float32)
    want = np.argsort(array, kind="stable")[:k]
    if len(array) > k:
        near = np.flatnonzero(words.first_k(array, k))
        got = near[np.argsort(array[near], kind="stable")][:k]
        assert got.tolist() == want.tolist()
