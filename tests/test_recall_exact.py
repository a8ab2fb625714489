"""The fast paths of recall give the plain answer to the bit. `Index.lexical` answers an OR of phrases
from each phrase's own rows where that is exact: it must give what FTS5 gives for the whole query, in
the same order (ties, the limit), on texts with shared words, repeated words, Chinese pairs and
identical documents. The KNN reads only the row spans that hold the allowed rows: it must give what
the whole matrix, masked, gives."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from membank.index import Index

WORDS = ["storm", "storms", "gull", "lamp", "keel", "Maren", "林默", "灯塔", "the", "a_b", "x"]
SQL = "SELECT rowid, bm25(fts, 1.0, 2.0) AS score FROM fts WHERE fts MATCH ? ORDER BY score LIMIT ?"

_doc = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
_phrase = st.sampled_from(['"storm"', '"gull"', '"lamp"', '"keel"', '"maren"', '"林 默"', '"灯 塔"', '"the"',
                           '"a_b"', '"__"', '"x"', '"nowhere"', '"storm gull"',
                           '"Storm"'])


def _index(docs: list[tuple[str, str]]) -> Index:
    index = Index(":memory:")
    with index.transaction():
        for rowid, (body, names) in enumerate(docs, start=1):
            index.db.execute("INSERT INTO fts(rowid, body, names) VALUES (?, ?, ?)",
                             (rowid, body, names))
    return index


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_doc, st.sampled_from(["", "Maren", "keel", "林默"])), min_size=1, max_size=40),
       st.lists(st.lists(_phrase, min_size=1, max_size=4), min_size=1, max_size=6), st.integers(0, 50))
def test_an_or_of_phrases_ranks_as_fts5_ranks_it(docs: list[tuple[str, str]], queries: list[list[str]],
                                                  k: int) -> None:
    index = _index(docs)
    try:
        for phrases in queries * 2:  # the second time from what the first kept
            match = " OR ".join(phrases)
            assert index.lexical(match, k) == index.db.execute(SQL, (match, k)).fetchall()
    finally:
        index.close()


def test_rows_of_one_phrase_each_and_ties_keep_fts5_order() -> None:
    # every document holds one query word or none, many alike: the answer comes from the phrases' rows
    docs = [(w, "") for w in ["storm", "gull", "storm", "lamp", "gull", "storm keel", "gull"] * 30]
    index = _index(docs)
    try:
        for match in ['"storm" OR "gull"', '"gull" OR "lamp" OR "storm"', '"lamp"', '"nowhere" OR "gull"']:
            for k in (0, 1, 5, 50, 1000):
                assert index.lexical(match, k) == index.db.execute(SQL, (match, k)).fetchall()
    finally:
        index.close()


# -- the KNN over the row spans that hold the allowed rows (index/vectors.py) -----------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(40, 400),
       st.lists(st.tuples(st.integers(0, 399), st.integers(1, 120)), max_size=5), st.integers(1, 30))
def test_nearest_among_allowed_rows_is_the_whole_matrix_masked(seed: int, rows: int,
                                                                runs: list[tuple[int, int]], k: int) -> None:
    import numpy as np

    from membank.index.vectors import Vectors

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, 16)).astype(np.float32)
    matrix[rng.random(rows) < 0.1] = matrix[0]  # equal distances: ties go by rowid
    copy = Vectors("t", rng.permutation(rows * 3)[:rows].astype(np.int64), matrix)
    allowed = np.zeros(rows, bool)
    for start, length in runs:  # a few runs, as a type or the cards left out make them
        allowed[start:start + length] = True
    allowed &= rng.random(rows) < 0.95  # and holes: deleted, another document's
    vector = rng.standard_normal(16).astype(np.float32)
    distance = np.where(allowed, 1.0 - np.einsum("ij,j->i", matrix, vector)
                        / (copy.norms * np.float32(np.linalg.norm(vector))), np.inf)
    plain = sorted((float(d), int(r)) for r, d in zip(copy.rowids, distance) if np.isfinite(d))[:k]
    assert copy.nearest(vector, k, allowed) == [(r, d) for d, r in plain]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.integers(1, 40), st.booleans(), st.sampled_from([16, 256]))
def test_nearest_gives_the_einsum_distances_to_the_bit_among_near_ties(seed: int, rows: int, k: int, masked: bool,
                                                                        dim: int) -> None:
    """The KNN's rough BLAS pass only picks the rows the einsum then measures: rows a hair apart (closer
    than float32 sums in another order can tell) still come out as the einsum orders them, with its bits."""
    import numpy as np

    from membank.index.vectors import Vectors

    rng = np.random.default_rng(seed)
    base = rng.standard_normal(dim).astype(np.float32)
    matrix = (base + rng.standard_normal((rows, dim)).astype(np.float32) * np.float32(1e-3)).astype(np.float32)
    matrix[rng.random(rows) < 0.2] = base  # exact ties: by rowid
    matrix[rng.random(rows) < 0.05] = 0.0  # a zero row counts a norm of 1
    copy = Vectors("t", rng.permutation(rows * 3)[:rows].astype(np.int64), matrix)
    vector = (base + rng.standard_normal(dim).astype(np.float32) * np.float32(1e-4)).astype(np.float32)
    allowed = rng.random(rows) < 0.7 if masked else np.ones(rows, bool)
    distance = np.where(allowed, 1.0 - np.einsum("ij,j->i", matrix, vector)
                        / (copy.norms * np.float32(np.linalg.norm(vector))), np.inf)
    plain = sorted((float(d), int(r)) for r, d in zip(copy.rowids, distance) if np.isfinite(d))[:k]
    assert copy.nearest(vector, k, allowed if masked else None) == [(r, d) for d, r in plain]


def test_a_kept_mask_answers_each_query_as_a_fresh_one() -> None:
    """A view asks with the one mask it keeps: the second query reads the spans and rows kept from the
    first (index/vectors.py `_Spans`) and answers as a copy that never saw the mask."""
    import numpy as np

    from membank.index.vectors import Vectors

    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((600, 16)).astype(np.float32)
    rowids = rng.permutation(2000)[:600].astype(np.int64)
    allowed = np.zeros(600, bool)
    allowed[20:300] = allowed[380:420] = allowed[590:] = True
    allowed &= rng.random(600) < 0.9
    kept = Vectors("t", rowids, matrix)
    for _ in range(3):
        vector = rng.standard_normal(16).astype(np.float32)
        assert kept.nearest(vector, 25, allowed) == Vectors("t", rowids, matrix).nearest(vector, 25, allowed)
    assert kept.nearest(vector, 25, np.zeros(600, bool)) == []
