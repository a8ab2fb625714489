"""Semantic recall applies eligibility before it cuts the candidates: the nearest 300 entries being
another document's, deleted or shadowed must not hide an eligible relevant memory further out."""

from __future__ import annotations

from pathlib import Path

import membank
from membank.domains.recall.preview import CANDIDATES
from membank.domains.recall import keytable, queries

from .helpers import write_memory

QUERY = "albatross"
RELEVANT = "m-relevant-albatross"


def crowded(sample: Path) -> None:
    """300 entries that are nearer to the query, and match its word more often, but cannot be injected."""
    for i in range(150):
        write_memory(sample, f"crowd/doc-{i:03}.md", f"Albatross albatross albatross {i}.", id=f"m-doc-{i}",
                     type="note", scope="document", document="chapters/other.md")
    for i in range(100):
        write_memory(sample, f"crowd/gone-{i:03}.md", f"Albatross albatross albatross {i}.", id=f"m-gone-{i}",
                     type="note", deleted_at="2026-01-01T00:00:00Z")
    for i in range(50):  # each id twice: the file with the smaller path is used, the other is shadowed
        write_memory(sample, f"crowd/a-{i:03}.md", f"Tea is served at four, day {i}.", id=f"m-twin-{i}", type="note")
        write_memory(sample, f"crowd/b-{i:03}.md", f"Albatross albatross albatross {i}.", id=f"m-twin-{i}", type="note")
    write_memory(sample, "relevant.md", "An albatross circled the ship once, far out at sea, and then was gone.",
                 id=RELEVANT, type="fact")


def test_an_eligible_memory_behind_300_ineligible_neighbours_is_found(sample: Path) -> None:
    crowded(sample)
    bank = membank.open(sample)
    try:
        assert CANDIDATES < 300
        vector = bank.embedder().encode([QUERY])[0]
        assert RELEVANT not in {m["id"] for m, _ in queries.eligible_by_rowid(bank.index, 
            [r for r, _ in bank.index.nearest(vector, CANDIDATES)], None).values()}  # what a cut first would keep
        preview = bank.preview(query_text=QUERY)
        assert preview["mode"] == "semantic"
        item = next(i for i in preview["items"] if i["id"] == RELEVANT)
        assert item["reason"]["score"]["vectorRank"] is not None and item["reason"]["score"]["lexicalRank"] is not None
        assert not any(i["id"].startswith(("m-doc-", "m-gone-")) for i in preview["items"])
        # for its own document the document-scoped ones are eligible: nearer, they fill the top places
        for_doc = bank.preview(query_text=QUERY, document_id="chapters/other.md")
        ids = [i["id"] for i in for_doc["items"]]
        assert len(ids) >= 3 and all(i.startswith("m-doc-") for i in ids[:3]), ids
    finally:
        bank.close()


def test_each_retriever_returns_its_nearest_eligible_in_order(sample: Path) -> None:
    crowded(sample)
    bank = membank.open(sample)
    try:
        vector = bank.embedder().encode([QUERY])[0]
        eligible = set(queries.eligible_rowids(bank.index, None))
        plain = [hit for hit in bank.index.nearest(vector, 100_000) if hit[0] in eligible][:CANDIDATES]
        nearest, keys = queries.nearest_eligible(bank.index, vector, CANDIDATES, None)
        assert nearest == plain and set(keys) >= {r for r, _ in nearest}
        for k in (1, 5, 40):  # small k: growing rounds, then the whole eligible set as a mask
            assert queries.nearest_eligible(bank.index, vector, k, None)[0] == plain[:k]
        words = [r for r, _ in bank.index.lexical(QUERY, 100_000) if r in eligible][:CANDIDATES]
        assert words and plain
        lexical, keys = queries.lexical_eligible(bank.index, QUERY, CANDIDATES, None)
        assert [r for r, _ in lexical] == words and set(keys) >= set(words)
        for k in (1, 5):  # the best 4k matches all ineligible: FTS5 over the eligible ones alone
            assert [r for r, _ in queries.lexical_eligible(bank.index, QUERY, k, None)[0]] == words[:k]
            nearest, lexical, keys = queries.candidates(bank.index, vector, QUERY, k, None)
            assert nearest == plain[:k] and [r for r, _ in lexical] == words[:k]
            assert set(keys) >= {r for r, _ in nearest + lexical}
    finally:
        bank.close()


def test_eligible_keys_read_from_the_views_table_equal_sqls(sample: Path, monkeypatch) -> None:
    crowded(sample)
    write_memory(sample, "mine.md", "Albatross in my own chapter.", id="m-mine", type="note", scope="document",
                 document="chapters/mine.md")
    bank = membank.open(sample)
    try:
        index = bank.index
        every = [r for r, _ in index.db.execute("SELECT rowid, 0 FROM entries").fetchall()]
        cases = [(None, (), ()), ("chapters/other.md", (), ()), ("chapters/mine.md", every[::3], ()),
                 ("chapters/other.md", every[1::5], ("note",)), (None, (), ("fact", "note"))]

        def answers() -> list[tuple[dict, list[int]]]:
            out = []
            for document, hidden, types in cases:
                with queries.hiding(hidden, types):
                    out.append((queries.eligible_keys(index, every, document),
                                sorted(queries.eligible_rowids(index, document))))
            return out

        monkeypatch.setattr(keytable, "KEYS_AFTER", 10**9)  # SQL's answers, one statement each
        by_sql = answers()
        monkeypatch.setattr(keytable, "KEYS_AFTER", 1)  # the view's table of every key
        assert answers() == by_sql
        assert len({len(a) for a, _ in by_sql}) > 2  # the cases differ
        assert all(sorted(keys) == rowids for keys, rowids in by_sql)
    finally:
        bank.close()
