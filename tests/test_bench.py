"""The benchmark's corpus and runner, and the fast read paths it motivated: each must give the
answer the plain path gives (fitting = fit over the whole order, numpy KNN = sqlite-vec's, keys from
columns = keys from records)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import membank
from membank.domains.recall.order import deterministic_key
from membank.index.embed import BUNDLED, load
from membank.index.store import Index
from membank.kernel.budget import fit
from membank.shells import bench
from membank.domains.recall import queries


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
        assert queries.fitting(opened.index, document, max_items, budget) == list(
            fit(queries.ordered(opened.index, document), max_items, budget))


def test_eligible_count_follows_changes(opened: membank.Bank) -> None:
    before = queries.eligible_count(opened.index, None)
    assert queries.eligible_count(opened.index, None) == before  # cached
    opened.create_memory("note", "project", "One more memory about the harbour at dusk.")
    assert queries.eligible_count(opened.index, None) == before + 1


def _model():  # type: ignore[no-untyped-def]
    return load(BUNDLED)  # loaded once per process: the model the corpus's settings name


def _agrees_with_sqlite_vec(index: Index, vector: np.ndarray, k: int = 50) -> list[tuple[int, float]]:
    """`Index.nearest` against sqlite-vec's own KNN on the same table; returns ours."""
    exact = index.db.execute("SELECT rowid, distance FROM vec WHERE emb MATCH ? AND k = ? ORDER BY distance",
                             (vector.astype(np.float32).tobytes(), k)).fetchall()
    ours = index.nearest(vector, k)
    assert len(ours) == len(exact)
    assert np.allclose([d for _, d in ours], [d for _, d in exact], atol=1e-5)
    # the same neighbours; only rows whose distances tie to float precision may trade places at the cut
    assert {r for r, _ in ours[:k - 10]} <= {r for r, _ in exact}
    return ours


def _rowid(index: Index, memory_id: str) -> int:
    return int(index.db.execute("SELECT rowid FROM entries WHERE id = ?", (memory_id,)).fetchall()[0][0])


def test_numpy_knn_matches_sqlite_vec(opened: membank.Bank) -> None:
    model = _model()
    for query in bench.QUERIES[:12]:
        vector = model.encode([query])[0]
        if vector.any():
            _agrees_with_sqlite_vec(opened.index, vector)


def test_knn_follows_own_creates_updates_and_deletes(opened: membank.Bank) -> None:
    model = _model()
    first, second = (model.encode([t])[0] for t in ("A lantern swings above the anchor chain while the gulls scream.",
                                                    "The keeper trims the lamp at dusk, storm or no storm."))
    _agrees_with_sqlite_vec(opened.index, first)  # the copy is in use before the writes
    created = opened.create_memory("fact", "project", "A lantern swings above the anchor chain while the gulls scream.")
    rowid = _rowid(opened.index, created["id"])
    assert _agrees_with_sqlite_vec(opened.index, first)[0][0] == rowid
    opened.update_memory(created["id"], {"content": "The keeper trims the lamp at dusk, storm or no storm."})
    assert _agrees_with_sqlite_vec(opened.index, second)[0] == (rowid, pytest.approx(0.0, abs=1e-5))
    assert dict(_agrees_with_sqlite_vec(opened.index, first)).get(rowid, 1.0) > 1e-3  # the old vector is gone
    opened.delete_memory(created["id"])  # soft delete keeps the vector; the file's removal drops it
    (opened.project.path / created["source"].split("/", 1)[1]).unlink()
    opened.sync()
    assert rowid not in dict(_agrees_with_sqlite_vec(opened.index, second))


def test_knn_follows_another_writers_vectors(opened: membank.Bank) -> None:
    model = _model()
    created = opened.create_memory("note", "project", "The keeper trims the lamp before the storm, every night.")
    rowid = _rowid(opened.index, created["id"])
    _agrees_with_sqlite_vec(opened.index, model.encode(["the keeper trims the lamp"])[0])
    gulls = model.encode(["a different text entirely, about gulls"])[0]
    other = Index(opened.index.path)  # another process's writer: this one has no record of its writes
    try:
        with other.transaction():
            other.put_vectors([rowid], gulls[None, :])
    finally:
        other.close()
    assert _agrees_with_sqlite_vec(opened.index, gulls)[0] == (rowid, pytest.approx(0.0, abs=1e-5))


def test_knn_follows_a_rebuild(opened: membank.Bank) -> None:
    model = _model()
    vector = model.encode(["the storm that wrecked the ship"])[0]
    before = [d for _, d in _agrees_with_sqlite_vec(opened.index, vector)]
    opened.sync(rebuild=True)  # a new file: every rowid may change
    after = [d for _, d in _agrees_with_sqlite_vec(opened.index, vector)]
    assert np.allclose(before, after, atol=1e-5)


def test_keys_from_columns_match_keys_from_records(opened: membank.Bank) -> None:
    rows = [r for (r,) in opened.index.db.execute("SELECT rowid FROM entries WHERE kind = 'memory'")]
    keys = queries.eligible_keys(opened.index, rows, "chapters/ch05.md")
    records = opened.index.records(list(keys))
    assert keys and all(keys[r][1] == deterministic_key(records[r]) for r in keys)


def test_quick_runner_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # the strong rows with benchmarks/strongtier.py's stand-in encoder (the real model is for `membank bench`)
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "benchmarks.strongtier:fake")
    opts = bench.Options(size=300, large=0, previews=6, creates=3, syncs=2, one_file=2, watcher=2, sidecar=5,
                         sidecar_warmup_s=0, cold_runs=1, cli=0, quiet=True)
    result = bench.run(opts)
    rows = {r.key: r for r in result.rows}
    for key in ("cold_index", "cold_index_process", "cold_index_floor", "cold_index_vs_floor", "noop_sync",
                "one_file_sync", "watcher", "preview_deterministic", "preview_semantic", "preview_semantic_after_write",
                "memory_create", "sidecar_rss", "episode_record", "episode_query", "context_assemble",
                "consistency_check", "context_assemble_story"):
        assert rows[key].samples, (key, rows[key].note)
    assert rows["sidecar_rtt"].n == 5, rows["sidecar_rtt"].note  # the harness is in the package: a real `membank serve`
    for key in ("strong_model_load", "strong_embed_rate", "preview_semantic_strong", "context_assemble_strong",
                "sidecar_rss_strong", "strong_install_mb"):
        assert rows[key].samples, (key, rows[key].note)
    assert "ranked by the strong tier" in rows["preview_semantic_strong"].note
    assert rows["manuscript_search_strong"].samples, rows["manuscript_search_strong"].note
    assert "ranked by the strong windows" in rows["manuscript_search_strong"].note  # not the static row again
    assert rows["strong_embed_rate"].unit == "entries/s" and rows["strong_embed_rate"].met is None
    text = bench.table(result)
    assert "| cold index" in text and "p95" in text
    assert result.to_json()["rows"][0]["key"] == "cold_index"


def test_floor_script_runs_on_a_small_corpus(tmp_path: Path) -> None:
    """benchmarks/floor.py (issue 19's reference pipeline, no membank code) indexes every file and reports a rate."""
    import json
    import subprocess
    import sys

    import apsw

    from membank.shells.bench.floor import SCRIPT

    root = bench.generate(tmp_path / "project", 30).root
    out = tmp_path / "floor.sqlite"
    done = subprocess.run([sys.executable, str(SCRIPT), str(root), "--model", str(BUNDLED), "--db", str(out)],
                          capture_output=True, check=True, timeout=60)
    figures = json.loads(done.stdout)
    bank = root / ".writenow"
    files = sum(len(list((bank / s).rglob("*.md"))) for s in ("memories", "characters", "world", "skills"))
    assert figures["files"] == files >= 30 and figures["filesPerS"] > 0 and figures["yamlErrors"] == 0
    assert apsw.Connection(str(out)).execute("SELECT count(*) FROM fts").fetchall()[0][0] == files


def test_a_busy_machine_is_called_out() -> None:
    from membank.shells.bench.report import busy

    idle = {"cores": 2, "loadAverageAtStart": [0.2, 0.3, 0.4], "loadAverage": [1.3, 1.0, 0.8]}
    assert busy(idle) is None  # the end's load is the bench's own core, and a little
    before = {**idle, "loadAverageAtStart": [1.9, 1.0, 0.5]}
    assert "1.9 at the start" in (busy(before) or "")
    during = {**idle, "loadAverage": [2.6, 2.0, 1.0]}
    assert "2.6 at the end" in (busy(during) or "")
    assert busy({**during, "cores": 16}) is None  # a quarter of 16 cores is 4
    assert busy({"cores": None, "loadAverageAtStart": None, "loadAverage": None}) is None  # no /proc, no guess
