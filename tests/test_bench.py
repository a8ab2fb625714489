"""The benchmark's corpus and runner, and the fast read paths it motivated: each must give the
answer the plain path gives (fitting = fit over the whole order, numpy KNN = sqlite-vec's, keys from
columns = keys from records)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import membank
from membank.shells import bench
from membank.domains.recall.rank import deterministic_key, fit


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bench.generate(tmp_path_factory.mktemp("bench") / "project", 400).root


@pytest.fixture
def opened(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WRITENOW_HOME", str(tmp_path / "home"))
    bank = membank.open(corpus)
    yield bank
    bank.close()


def _files(root: Path) -> dict[str, bytes]:
    base = root / ".writenow"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*.md"))}


def test_corpus_is_seeded_and_mixed(corpus: Path, tmp_path: Path) -> None:
    again = bench.generate(tmp_path / "again", 400)
    assert _files(corpus) == _files(again.root)
    assert again.memories + again.characters + again.world == 400 and again.characters and again.world
    texts = list(_files(corpus).values())
    chinese = sum(any("\u4e00" <= ch <= "\u9fff" for ch in t.decode().split("---", 2)[-1]) for t in texts)
    assert 0.05 < chinese / len(texts) < 0.2


def test_corpus_indexes_without_errors(opened: membank.Bank) -> None:
    assert opened.index.error_count() == 0
    counts = opened.index.counts()
    assert counts["characters"] and counts["world"] and counts["memories"] > 300


def test_fitting_is_fit_over_the_whole_order(opened: membank.Bank) -> None:
    rng = random.Random(7)
    documents = [None] + [f"chapters/ch{i:02d}.md" for i in range(1, 41)]
    for _ in range(200):
        document = rng.choice(documents)
        max_items, budget = rng.choice([0, 1, 3, 20, 500]), rng.choice([0, 40, 100, 1200, 10**6])
        assert opened.index.fitting(document, max_items, budget) == list(
            fit(opened.index.ordered(document), max_items, budget))


def test_eligible_count_follows_changes(opened: membank.Bank) -> None:
    before = opened.index.eligible_count(None)
    assert opened.index.eligible_count(None) == before  # cached
    opened.create_memory("note", "project", "One more memory about the harbour at dusk.")
    assert opened.index.eligible_count(None) == before + 1


def test_numpy_knn_matches_sqlite_vec(opened: membank.Bank) -> None:
    model = opened.embedder()
    assert model is not None
    index = opened.index
    for query in bench.QUERIES[:12]:
        vector = model.encode([query])[0]
        if not vector.any():
            continue
        exact = index.db.execute("SELECT rowid, distance FROM vec WHERE emb MATCH ? AND k = ? ORDER BY distance",
                                 (vector.astype(np.float32).tobytes(), 50)).fetchall()
        ours = index.nearest(vector, 50)
        assert len(ours) == len(exact)
        assert np.allclose([d for _, d in ours], [d for _, d in exact], atol=1e-5)
        # the same neighbours; only rows whose distances tie to float precision may trade places
        assert {r for r, _ in ours[:40]} <= {r for r, _ in exact}


def test_knn_copy_follows_writes(opened: membank.Bank) -> None:
    model = opened.embedder()
    assert model is not None
    text = "A lantern swings above the anchor chain while the gulls scream."
    vector = model.encode([text])[0]
    opened.index.nearest(vector, 5)  # load the copy
    created = opened.create_memory("fact", "project", text)
    rowid = opened.index.db.execute("SELECT rowid FROM entries WHERE id = ?", (created["id"],)).fetchall()[0][0]
    assert opened.index.nearest(vector, 1)[0][0] == rowid
    opened.delete_memory(created["id"])  # soft delete keeps the vector; the file's removal drops it
    (opened.project.path / created["source"].split("/", 1)[1]).unlink()
    opened.sync()
    assert rowid not in {r for r, _ in opened.index.nearest(vector, 20)}


def test_keys_from_columns_match_keys_from_records(opened: membank.Bank) -> None:
    rows = [r for (r,) in opened.index.db.execute("SELECT rowid FROM entries WHERE kind = 'memory'")]
    keys = opened.index.eligible_keys(rows, "chapters/ch05.md")
    records = opened.index.records(list(keys))
    assert keys and all(keys[r][1] == deterministic_key(records[r]) for r in keys)


def test_quick_runner_end_to_end(tmp_path: Path) -> None:
    opts = bench.Options(size=300, large=0, previews=6, creates=3, syncs=2, one_file=2, watcher=2, sidecar=5,
                         cold_runs=1, quiet=True, repo=tmp_path)  # no benchmarks/sidecar.py there: rows say so
    result = bench.run(opts)
    rows = {r.key: r for r in result.rows}
    for key in ("cold_index", "noop_sync", "one_file_sync", "watcher", "preview_deterministic", "preview_semantic",
                "memory_create"):
        assert rows[key].samples, key
    assert "not measured" in rows["sidecar_rtt"].note
    text = bench.table(result)
    assert "| cold index" in text and "p95" in text
    assert result.to_json()["rows"][0]["key"] == "cold_index"


def _same_as_table(index) -> bool:  # type: ignore[no-untyped-def]
    from membank.index.vectors import Vectors

    copy = index._vectors
    fresh = Vectors.load(index.db, index.get_meta("vec_tag"))
    mine = {int(r): copy.matrix[i].tobytes() for i, r in enumerate(copy.rowids)}
    theirs = {int(r): fresh.matrix[i].tobytes() for i, r in enumerate(fresh.rowids)}
    return mine == theirs


def test_vector_copy_is_patched_after_own_writes_and_reloaded_after_others(opened: membank.Bank) -> None:
    from membank.index.store import Index

    model = opened.embedder()
    assert model is not None
    vector = model.encode(["the keeper trims the lamp before the storm"])[0]
    opened.index.nearest(vector, 5)
    first = opened.index._vectors
    memory = opened.create_memory("note", "project", "The keeper trims the lamp before the storm, every night.")
    opened.update_memory(memory["id"], {"content": "The keeper trims the lamp at dusk, storm or no storm."})
    opened.index.nearest(vector, 5)
    patched = opened.index._vectors
    assert patched is not first and len(patched.rowids) == len(first.rowids) + 1  # patched, not reloaded
    assert _same_as_table(opened.index)
    other = Index(opened.index.path)  # another process's writer: the log cannot vouch for its writes
    try:
        rowid = other.db.execute("SELECT rowid FROM entries WHERE id = ?", (memory["id"],)).fetchall()[0][0]
        with other.transaction():
            other.put_vectors([rowid], model.encode(["a different text entirely, about gulls"]))
    finally:
        other.close()
    opened.index.nearest(vector, 5)
    assert opened.index._vectors is not patched and _same_as_table(opened.index)
