"""The strong tier of vectors (issue 35): filled in the background, used by recall when complete, the
static tier and STRONG_VECTORS_PENDING meanwhile; its progress and why it is off in `index:status`.
A fake encoder (tests/strongfake.py) stands in for the model."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from typer.testing import CliRunner

import membank
from membank import Bank
from membank.index.strongcopy import StrongVectors, cosine, dequantize, quantize
from membank.shells.cli import app

from . import strongfake
from .helpers import write_memory
from .sidecar import REPO, Sidecar

FAKE = "tests.strongfake:load"


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", FAKE)
    strongfake.GATE.set()
    strongfake.ENTERED.clear()
    strongfake.CALLS["passages"] = 0
    strongfake.HOLD_AFTER[0] = 0
    yield
    strongfake.GATE.set()


class Progress:
    """The `index:strong` announcements of one bank, waited on with an event (no sleeps)."""

    def __init__(self, bank: Bank) -> None:
        self.seen: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        bank.listeners.append(self.heard)

    def heard(self, method: str, params: dict[str, Any]) -> None:
        if method == "index:strong":
            with self.changed:
                self.seen.append(params)
                self.changed.notify_all()

    def until(self, test: Any, timeout: float = 30.0) -> dict[str, Any]:
        with self.changed:
            assert self.changed.wait_for(lambda: any(test(p) for p in self.seen), timeout), self.seen
            return next(p for p in self.seen if test(p))

    def complete(self) -> dict[str, Any]:
        return self.until(lambda p: p["done"] == p["total"])


def _open(root: Path) -> tuple[Bank, Progress]:
    bank = membank.open(root, sync=False)  # listening before the first sync's batch is announced
    progress = Progress(bank)
    bank.sync()
    return bank, progress


def test_quantized_rows_keep_their_direction() -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((500, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    q, scale = quantize(rows)
    assert q.dtype == np.int8 and scale.shape == (500,)
    back = dequantize(q, scale)
    assert (np.einsum("ij,ij->i", rows, back) / np.linalg.norm(back, axis=1)).min() > 0.9999
    zero, zero_scale = quantize(np.zeros((1, 8), np.float32))
    assert not zero.any() and zero_scale[0] == 0
    assert cosine(rows[0], back[:3])[0] == pytest.approx(1.0, abs=1e-4)


def test_a_saved_memory_gets_its_strong_vector_in_the_background(sample: Path) -> None:
    bank, progress = _open(sample)
    try:
        first = progress.complete()
        assert first["model"] == "fake-strong:1:32"
        bank.create_memory(type_="fact", scope="project", content="The lighthouse keeper hides a brass key under the third step")
        after = progress.until(lambda p: p["total"] == first["total"] + 1 and p["done"] == p["total"])
        status = bank.status()["strong"]
        assert status["state"] == "ready" and status["done"] == status["total"] == after["total"]
        preview = bank.preview(query_text="brass key lighthouse")
        assert preview["items"][0]["content"].startswith("The lighthouse keeper")
        assert preview["items"][0]["reason"]["score"]["tier"] == "strong"
        assert not preview["diagnostics"]["reasons"]
    finally:
        bank.close()


def test_a_query_falls_back_with_strong_vectors_pending(sample: Path) -> None:
    bank, progress = _open(sample)
    try:
        progress.complete()
        strongfake.GATE.clear()  # the next batch waits: the new memory has no strong vector yet
        strongfake.ENTERED.clear()
        bank.create_memory(type_="fact", scope="project", content="The lighthouse keeper hides a brass key under the third step")
        assert strongfake.ENTERED.wait(30)
        preview = bank.preview(query_text="brass key lighthouse")
        codes = [r["code"] for r in preview["diagnostics"]["reasons"]]
        assert codes == ["STRONG_VECTORS_PENDING"] and not preview["diagnostics"]["degraded"]
        assert preview["mode"] == "semantic"
        assert {i["reason"]["score"]["tier"] for i in preview["items"]} == {"static"}
        envelope = bank.call("context:assemble", {"skillId": "continue", "queryText": "brass key lighthouse"})
        layer4 = [i for i in envelope["data"]["items"] if i["layer"] == 4 and i["reason"].get("mode") == "semantic"]
        assert layer4 and {i["reason"]["tier"] for i in layer4} == {"static"}  # Layer 4 falls back as well
        status = bank.status()["strong"]
        assert status["state"] == "filling" and status["done"] == status["total"] - 1
        strongfake.GATE.set()
        progress.until(lambda p: p["done"] == p["total"] == status["total"])
        assert not bank.preview(query_text="brass key lighthouse")["diagnostics"]["reasons"]
    finally:
        strongfake.GATE.set()
        bank.close()


def test_an_edited_memory_loses_its_stale_vector_until_embedded_again(sample: Path) -> None:
    bank, progress = _open(sample)
    try:
        total = progress.complete()["total"] + 1
        made = bank.create_memory(type_="fact", scope="project", content="The mill wheel turns at dawn")
        progress.until(lambda p: p["done"] == p["total"] == total)
        seen = len(progress.seen)
        strongfake.GATE.clear()
        strongfake.ENTERED.clear()
        bank.update_memory(memory_id=made["id"], patch={"content": "The mill wheel stopped in the flood"})
        assert strongfake.ENTERED.wait(30)
        assert bank.status()["strong"]["done"] == total - 1  # the old vector went with the old text
        strongfake.GATE.set()
        progress.until(lambda p: p["done"] == p["total"] == total and any(q is p for q in progress.seen[seen:]))
        found = bank.preview(query_text="mill wheel flood")["items"][0]
        assert found["content"] == "The mill wheel stopped in the flood" and found["reason"]["score"]["tier"] == "strong"
    finally:
        strongfake.GATE.set()
        bank.close()


def test_a_model_change_embeds_everything_again(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bank, progress = _open(sample)
    total = progress.complete()["total"]
    bank.close()
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_other")
    bank, progress = _open(sample)
    try:
        done = progress.complete()
        assert done["model"] == "fake-strong-2:1:32" and done["total"] == total
        status = bank.status()["strong"]
        assert status["indexModel"] == status["model"] == "fake-strong-2:1:32"
        assert status["state"] == "ready"
    finally:
        bank.close()


def test_turning_the_tier_back_on_fills_it(sample: Path) -> None:
    settings = sample / ".writenow" / "settings.yaml"
    settings.write_text(settings.read_text("utf-8") + "embedding:\n  strong: off\n", "utf-8")
    bank, progress = _open(sample)
    try:
        assert bank.status()["strong"]["done"] == 0
        bank.update_embedding_settings(patch={"strong": "auto"})
        assert progress.complete()["done"] > 0
    finally:
        bank.close()


def test_strong_copy_ranks_by_cosine_ties_by_rowid_and_patches() -> None:
    rows = np.array([[1, 0], [0, 1], [1, 0], [0, 0]], np.float32)
    q, scale = quantize(rows)
    copy = StrongVectors("a", "m", np.array([7, 3, 5, 9], np.int64), q, scale)
    everything = np.ones(4, bool)
    assert [r for r, _ in copy.nearest(np.array([1, 0], np.float32), 3, everything)] == [5, 7, 3]  # 9: no direction
    new_q, new_scale = quantize(np.array([[0.6, 0.8]], np.float32))
    patched = copy.patched("b", frozenset({5, 3}), [(3, float(new_scale[0]), new_q[0].tobytes())])
    assert sorted(patched.rowids.tolist()) == [3, 7, 9]  # 5 is gone, 3 re-read
    best = patched.nearest(np.array([0.6, 0.8], np.float32), 1, np.ones(3, bool))
    assert best[0][0] == 3 and best[0][1] == pytest.approx(0.0, abs=1e-3)
    assert copy.nearest(np.array([1, 0], np.float32), 1, everything)[0][0] == 5  # the original is left as it was


def test_centred_cosines_remove_each_languages_mean() -> None:
    rng = np.random.default_rng(3)
    unit = rng.normal(size=(24, 8)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    zh = np.arange(24) % 3 == 0  # 8 of each language at least: each is centred by its own mean
    q, scale = quantize(unit)
    copy = StrongVectors("t", "m", np.arange(24, dtype=np.int64), q, scale, zh=zh)
    plain = dequantize(q, scale)
    plain /= np.linalg.norm(plain, axis=1, keepdims=True)
    means = {True: plain[zh].mean(axis=0), False: plain[~zh].mean(axis=0)}
    query = unit[5]
    for query_zh in (False, True):
        rows = plain - np.where(zh[:, None], means[True], means[False])
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        centred_q = query - means[query_zh]
        expected = rows @ (centred_q / np.linalg.norm(centred_q))
        assert np.allclose(copy.centred_cosines(query, query_zh), expected, atol=1e-4)


def test_a_language_of_few_memories_is_not_centred_by_its_own_rows() -> None:
    # the one Chinese memory of an English bank: its language's mean was itself, so its centred cosine
    # was 0 for every query (never past Layer 4's floor), and a Chinese query was centred by that memory
    rng = np.random.default_rng(5)
    unit = rng.normal(size=(11, 16)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    zh = np.arange(11) == 10
    q, scale = quantize(unit)
    copy = StrongVectors("t", "m", np.arange(11, dtype=np.int64), q, scale, zh=zh)
    for query_zh in (False, True):
        centred = copy.centred_cosines(unit[10], query_zh)
        assert not np.isnan(centred).any()
        assert centred[10] > 0.5 and int(np.argmax(centred)) == 10
    tiny = StrongVectors("t", "m", np.arange(2, dtype=np.int64), q[:2], scale[:2])  # a bank of 2 memories
    assert tiny.centred_cosines(unit[0], False)[0] > 0.9


def test_status_says_why_the_tier_is_off(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "off")
    bank = membank.open(sample)
    try:
        strong = bank.status()["strong"]
        assert strong["state"] == "unavailable" and "off in this process" in strong["problem"]
        assert strong["done"] == 0 and strong["total"] > 0
        preview = bank.preview(query_text="who keeps the lighthouse")
        assert not preview["diagnostics"]["reasons"]  # said in status, never per query
        bank.update_embedding_settings(patch={"strong": "off"})
        strong = bank.status()["strong"]
        assert strong["setting"] == "off" and strong["state"] == "off" and "embedding.strong" in strong["problem"]
    finally:
        bank.close()


def test_a_bare_off_in_settings_yaml_turns_the_tier_off(sample: Path) -> None:
    settings = sample / ".writenow" / "settings.yaml"
    settings.write_text(settings.read_text("utf-8") + "embedding:\n  strong: off\n", "utf-8")
    bank = membank.open(sample)
    try:
        strong = bank.status()["strong"]
        assert strong["setting"] == "off" and strong["state"] == "off" and strong["done"] == 0
        assert bank.status()["diagnostics"]["errors"] == 0  # YAML's `off` (false) is the setting's `off`
    finally:
        bank.close()


def test_cli_status_shows_progress_and_the_off_reason(sample: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["status", str(sample)])
    assert shown.exit_code == 0, shown.output
    assert "strong tier: 0 of" in shown.output and "wait for the background" in shown.output  # a one-shot command
    # embeds nothing itself
    assert runner.invoke(app, ["settings", "set", "embedding.strong=off", "-C", str(sample)]).exit_code == 0
    shown = runner.invoke(app, ["status", str(sample)])
    assert "strong tier off: turned off in settings" in shown.output


def test_close_during_background_embedding_is_clean(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(40):  # more than one batch
        write_memory(sample, f"many/m{n:02d}.md", f"Memory number {n} about the harbour", id=f"m-many-{n:02d}",
                     type="note")
    from membank.domains.indexing import strongfill

    # the first batch is written (its chunks let through), the second is held while being embedded
    strongfake.HOLD_AFTER[0] = strongfill.BATCH // strongfill.CHUNK
    strongfake.GATE.clear()
    bank, progress = _open(sample)
    assert progress.until(lambda p: p["done"] > 0)["done"] == 32
    assert strongfake.ENTERED.wait(30)
    closer = threading.Thread(target=bank.close)
    closer.start()
    strongfake.GATE.set()  # the batch in flight ends: dropped, or written whole if the close came after it
    closer.join(30)
    assert not closer.is_alive()
    assert not [t for t in threading.enumerate() if t.name.startswith("membank-strong-")]
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "off")
    again = membank.open(sample)
    try:
        strong = again.status()["strong"]
        assert strong["done"] in (32, strong["total"]) and strong["total"] > 32  # whole batches only
    finally:
        again.close()


def test_a_rebuild_by_another_process_gets_the_strong_vectors(sample: Path, home: Path) -> None:
    import os
    import sqlite3
    import subprocess
    import sys

    bank, progress = _open(sample)
    try:
        progress.complete()
        env = {**os.environ, "MEMBANK_STRONG_ENCODER": "off", "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "membank.shells.cli", "index", "--rebuild", str(sample)],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        seen = len(progress.seen)
        bank.create_memory(type_="fact", scope="project", content="The brass key opens the cellar")
        progress.until(lambda p: p["done"] == p["total"] and any(q is p for q in progress.seen[seen:]))
    finally:
        bank.close()
    # the file on disk (the rebuilt one), not the one the open bank had before: every entry has its vector
    with sqlite3.connect(sample / ".writenow" / ".index" / "index.db") as db:
        live = "kind != 'skill' AND removed_at IS NULL AND tokens > 0"
        total = db.execute(f"SELECT count(*) FROM entries WHERE {live}").fetchone()[0]
        stored = db.execute(f"SELECT count(*) FROM strong_vec WHERE rowid IN (SELECT rowid FROM entries WHERE {live})"
                            ).fetchone()[0]
        made = db.execute("SELECT count(*) FROM entries WHERE record LIKE '%cellar%'").fetchone()[0]
    assert made == 1 and stored == total


def test_nan_vectors_never_reach_a_score(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_nan")
    bank, progress = _open(sample)
    try:
        progress.complete()
        preview = bank.preview(query_text="brass key lighthouse")
        assert preview["items"] and {i["reason"]["score"]["tier"] for i in preview["items"]} == {"static"}
        for item in preview["items"]:
            score = item["reason"]["score"]
            assert all(v == v for v in score.values() if isinstance(v, float))  # no NaN
    finally:
        bank.close()


def test_a_model_failing_on_queries_leaves_recall_to_the_static_tier(sample: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_broken_queries")
    bank, progress = _open(sample)
    try:
        progress.complete()
        preview = bank.preview(query_text="brass key lighthouse")
        assert preview["items"] and {i["reason"]["score"]["tier"] for i in preview["items"]} == {"static"}
        envelope = bank.call("context:assemble", {"skillId": "continue", "queryText": "brass key lighthouse"})
        assert envelope["ok"], envelope
    finally:
        bank.close()


def test_one_text_the_model_cannot_take_does_not_hold_back_the_rest(sample: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_poisoned")
    write_memory(sample, "odd.md", "A POISON text the model fails on", id="m-odd", type="note")
    bank, progress = _open(sample)
    try:
        done = progress.complete()  # before: its batch failed at every kick, and the tier was never used
        assert done["problem"] is None
        preview = bank.preview(query_text="lighthouse keeper")
        assert preview["items"][0]["reason"]["score"]["tier"] == "strong"
    finally:
        bank.close()


def test_a_huge_memory_costs_the_fill_what_the_model_reads_of_it(sample: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.indexing import strongfill
    from membank.kernel.text import script_language

    read: list[int] = []

    def counted(text: str) -> str:
        read.append(len(text))
        return script_language(text)

    monkeypatch.setattr(strongfill, "script_language", counted)
    huge = "灯塔的钥匙藏在台阶下。" * 100_000  # 1.1 M code points
    write_memory(sample, "huge.md", huge, id="m-huge", type="note")
    bank, progress = _open(sample)
    try:
        progress.complete()
        # its script was read whole (~0.2 s a MB, 20 MB: 3 s) inside the write lock: every writer waited
        assert read and max(read) <= strongfill.SCRIPT_CHARS
        strong = bank.status()["strong"]
        assert strong["done"] == strong["total"]
    finally:
        bank.close()


def test_a_loader_that_cannot_be_imported_is_a_reason_not_a_failure(sample: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.no_such_module:load")
    bank = membank.open(sample)
    try:
        strong = bank.status()["strong"]
        assert strong["state"] == "unavailable" and "tests.no_such_module:load" in strong["problem"]
        assert bank.preview(query_text="lighthouse")["mode"] == "semantic"
    finally:
        bank.close()


def test_a_failing_batch_is_said_in_status_and_logged_once(sample: Path, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load_broken")
    bank, progress = _open(sample)
    try:
        failed = progress.until(lambda p: p["problem"] is not None)
        assert "the model broke" in failed["problem"] and failed["done"] == 0
        strong = bank.status()["strong"]
        assert strong["state"] == "filling" and "the model broke" in strong["problem"]
        for n in range(2):  # each save tries again
            bank.create_memory(type_="fact", scope="project", content=f"Another fact {n}")
            progress.until(lambda p: p["problem"] is not None and p["total"] == failed["total"] + n + 1)
        assert sum("background embedding failed" in r.getMessage() for r in caplog.records) == 1
    finally:
        bank.close()


def test_sidecar_fills_the_tier_and_ranks_with_it(sample: Path, home: Path) -> None:
    server = Sidecar("--project", str(sample), home=home, env={"MEMBANK_STRONG_ENCODER": FAKE,
                                                              "PYTHONPATH": str(REPO)})
    try:
        server.wait_for(lambda: [n for n in server.notifications("index:strong")
                                 if n["params"]["done"] == n["params"]["total"]], "the strong tier filled")
        status = server.ok("index:status", {})
        assert status["strong"]["state"] == "ready" and status["strong"]["model"] == "fake-strong:1:32"
        total = status["strong"]["total"]
        preview = server.ok("memory:injection:preview", {"queryText": "lighthouse"})
        assert not preview["diagnostics"]["reasons"]
        assert {i["reason"]["score"]["tier"] for i in preview["items"]} <= {"strong"}
        # a memory saved by an editor: the watcher indexes it, the background gives it its strong vector
        write_memory(sample, "seen/by-watcher.md", "The ferry leaves at noon", id="m-by-watcher", type="fact")
        server.wait_for(lambda: [n for n in server.notifications("index:strong")
                                 if n["params"]["done"] == n["params"]["total"] == total + 1], "the new vector")
        found = server.ok("memory:injection:preview", {"queryText": "ferry noon"})
        assert found["items"][0]["id"] == "m-by-watcher" and found["items"][0]["reason"]["score"]["tier"] == "strong"
    finally:
        server.close()


def test_layer4_ranks_with_the_strong_tier_above_its_floor(sample: Path) -> None:
    """Layer 4 ranks with the strong tier once it is complete, keeps only hits above the strong tier's
    floor, and says which tier ranked each memory; an unrelated question gets no memory by relevance."""
    from membank.domains.context.memories import STRONG_RELEVANCE_FLOOR

    bank, progress = _open(sample)
    try:
        progress.complete()
        made = bank.create_memory(type_="fact", scope="project", content="Zebra quilts hang in the north tower")
        progress.until(lambda p: p["done"] == p["total"] and p["total"] > 21)

        def layer4(query: str) -> list[dict[str, Any]]:
            envelope = bank.call("context:assemble", {"skillId": "continue", "queryText": query})
            assert envelope["ok"], envelope
            return [i for i in envelope["data"]["items"] if i["layer"] == 4 and i["reason"].get("mode") == "semantic"]

        found = layer4("zebra quilts")
        assert found[0]["id"] == made["id"]
        assert {i["reason"]["tier"] for i in found} == {"strong"}
        assert all(i["reason"]["centred"] >= STRONG_RELEVANCE_FLOOR for i in found)  # the floor's measure
        # a question about nothing in the bank: the hits whose centred cosine is under the floor are left out
        from membank.domains.context import memories
        from membank.domains.recall import tiers

        query = "sourdough recipe oven"
        vector = bank.embedder().encode([query])[0]
        strong = tiers.strong_query(bank, query)
        with bank.index.lock:
            hits, centred = memories.ranked_with_tier(bank, vector, query, 10, set(), strong)
            records = bank.index.records([h.rowid for h, _ in hits])
        assert centred is not None and hits
        above = {records[h.rowid]["id"] for h, _ in hits if centred.get(h.rowid, -1.0) >= STRONG_RELEVANCE_FLOOR}
        assert len(above) < len(hits)
        assert {i["id"] for i in layer4(query)} == above
    finally:
        bank.close()


def test_status_describes_the_bundled_model_without_loading_it(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.index import strongload
    from membank.index.strong import describe_strong

    def never(*_: Any) -> Any:
        raise AssertionError("index:status loaded the strong model")

    monkeypatch.delenv("MEMBANK_STRONG_ENCODER")
    monkeypatch.setattr(strongload, "load_strong", never)
    handle = strongload.StrongHandle()
    assert handle.describe() == (describe_strong().name, 384) and handle.loaded() is None
    shown = CliRunner().invoke(app, ["status", str(sample)])  # one-shot: no background fill either
    assert shown.exit_code == 0, shown.output
    assert "strong tier: 0 of" in shown.output and "(e5-small-int8)" in shown.output


def test_a_file_where_the_index_folder_was_stops_the_filler_without_a_traceback(
        sample: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`.index/` replaced by a file while the background embedding runs: its write is refused (DB_ERROR, said
    as its problem), one warning and no traceback on stderr; once the file goes, the next call makes the
    index again and the tier fills it."""
    import logging
    import shutil

    caplog.set_level(logging.WARNING, logger="membank")
    bank, progress = _open(sample)
    index = sample / ".writenow" / ".index"
    try:
        progress.complete()
        strongfake.GATE.clear()
        strongfake.ENTERED.clear()
        bank.create_memory(type_="fact", scope="project", content="The keeper hides a brass key under the third step")
        assert strongfake.ENTERED.wait(30)
        shutil.rmtree(index)
        index.write_text("not a folder\n", "utf-8")
        strongfake.GATE.set()
        stopped = progress.until(lambda p: p["problem"] is not None)
        assert ".index/" in stopped["problem"]
        assert [r for r in caplog.records if r.exc_info] == []
        index.unlink()
        total = bank.status()["strong"]["total"]  # a call: the index made again from the files
        progress.until(lambda p: p["problem"] is None and p["done"] == p["total"] == total)
    finally:
        strongfake.GATE.set()
        if index.is_file():
            index.unlink()
        bank.close()
