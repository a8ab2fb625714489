"""The measurements on an open project: indexing, syncs, previews, writes.

Each reaches the project only the way the app and the Python API do: `open_project`, `bank.call`
(the channel table, envelopes and all), `bank.sync()`, its `index`, `project` and `info`, and
`sync_paths` for a named file, as the watcher and the write channels sync one.
"""

from __future__ import annotations

import gc
import random
import shutil
import time
from typing import Any, Callable

from ...domains.indexing.sync import sync_paths
from ...files.lock import LOCK_FILE, WriteLock
from ...index.embed import BUNDLED, Embedder, load
from ...runtime.api import open_project
from .corpus import QUERIES, TAGS, TOPICS, Corpus, chinese, english
from .rows import Row, say, timed

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def assemble_payloads(length: int, skill: str, reps: int, rng: random.Random) -> list[dict[str, Any]]:
    """`reps` context:assemble requests on chapters/ch20.md (`length` characters): a selection of 20 to 300
    characters somewhere in it, "Continue the scene.", with the bench skill `skill`."""
    out = []
    for _ in range(reps):
        start = rng.randrange(0, max(1, length - 400))
        out.append({"skillId": skill, "documentId": "chapters/ch20.md",
                    "selection": {"start": start, "end": start + rng.randint(20, 300)},
                    "instruction": "Continue the scene."})
    return out


def caller(bank: Any) -> Call:
    """`bank.call` that returns the data, or raises when the channel answered with an error."""
    def call(channel: str, payload: dict[str, Any]) -> dict[str, Any]:
        envelope = bank.call(channel, payload)
        if not envelope["ok"]:
            raise RuntimeError(f"{channel} failed: {envelope['error']}")
        return envelope["data"]  # type: ignore[no-any-return]
    return call


def model_load() -> Row:
    return Row("model_load", "embedding model load (once per process)", "ms", None, [timed(lambda: load(BUNDLED))],
               note="not in the cold-index figure")


def _rel_files(corpus: Corpus) -> list[str]:
    base = corpus.root / ".writenow"
    return sorted(p.relative_to(base).as_posix() for p in (base / "memories").rglob("*.md"))


def _sync_named(bank: Any, rel: str) -> Any:
    """One file of the project's bank synced by name under the write lock, as a write channel and the
    watcher do. The corpus's settings name no model, so the bundled one (loaded once per process) is
    the project's model too; the lock is the one every writer of that bank takes (files/lock.py)."""
    model: Embedder = load(BUNDLED)
    with WriteLock.at(bank.project.path / ".index" / LOCK_FILE):
        return sync_paths(bank.index, bank.project, [rel], lambda: model)


def cold_index(corpus: Corpus, runs: int, quiet: bool) -> tuple[Row, Any, dict[str, Any]]:
    """Delete the index and sync from nothing: reading, parsing, embedding, writing. The model is already loaded."""
    row = Row("cold_index", "cold index (read, parse, embed, write)", "files/s", corpus.files, target=2000,
              higher_is_better=True, target_text="≥ 2,000 files/s")
    bank = None
    report: dict[str, Any] = {}
    for i in range(runs):
        if bank is not None:
            bank.close()
        shutil.rmtree(corpus.root / ".writenow" / ".index", ignore_errors=True)
        gc.collect()
        bank = open_project(corpus.root, sync=False)
        started = time.perf_counter()
        report = bank.sync()
        took = time.perf_counter() - started
        row.samples.append(corpus.files / took)
        say(quiet, f"cold index {i + 1}/{runs}: {corpus.files} files in {took:.2f} s ({corpus.files / took:,.0f} files/s)")
    return row, bank, report


def noop_sync(bank: Any, size: int, reps: int) -> Row:
    row = Row("noop_sync", "no-op sync (stat only)", "ms", size, target=250, target_text="≤ 250 ms")
    bank.sync()
    gc.collect()
    for _ in range(reps):
        row.samples.append(timed(bank.sync))
    return row


def one_file(bank: Any, corpus: Corpus, reps: int, rng: random.Random) -> tuple[Row, Row]:
    """A memory file edited on disk, then the index brought level: the named file (as the watcher and the
    channels do), and a full sync that has to find it (stat scan + one re-read)."""
    named = Row("one_file_sync", "one file changed, then sync (the named file)", "ms", corpus.files, target=20,
                target_text="≤ 20 ms")
    full = Row("one_file_full_sync", "one file changed, then full sync (scan finds it)", "ms", corpus.files,
               note="no target: the watcher and writes sync the named file")
    rels = _rel_files(corpus)
    base = corpus.root / ".writenow"

    def edit(rel: str) -> None:
        path = base / rel
        text = path.read_text("utf-8")
        path.write_text(text.rstrip("\n") + f" {rng.choice(TOPICS['night'])}.\n", encoding="utf-8")

    gc.collect()
    for i in range(reps):
        rel = rng.choice(rels)
        edit(rel)

        def run() -> None:
            report = _sync_named(bank, rel)
            assert report.updated == 1, report
        named.samples.append(timed(run))
        if i < max(5, reps // 5):
            edit(rng.choice(rels))
            full.samples.append(timed(bank.sync))
    return named, full


def previews(bank: Any, size: int, reps: int, semantic: bool, rng: random.Random, key: str,
             target: float | None) -> Row:
    """`memory:injection:preview` through the channel table; half with a document, half without."""
    call = caller(bank)
    mode = "semantic" if semantic else "deterministic"
    what = f"injection preview, {mode}" + (" (query embedding included)" if semantic else "")
    row = Row(key, what, "ms", size, target=target, target_text=f"p95 ≤ {target:g} ms" if target else "")
    payloads = []
    for i in range(reps):
        p: dict[str, Any] = {}
        if semantic:
            p["queryText"] = QUERIES[i % len(QUERIES)]
        if i % 2:
            p["documentId"] = f"chapters/ch{rng.randint(1, 40):02d}.md"
        payloads.append(p)
    for p in payloads[:5]:  # warm: the model's first call, the reader's first statements
        call("memory:injection:preview", p)
    gc.collect()
    for p in payloads:
        started = time.perf_counter()
        data = call("memory:injection:preview", p)
        row.samples.append((time.perf_counter() - started) * 1000)
        if data["mode"] != mode:
            raise RuntimeError(f"the preview ran in {data['mode']} mode, not {mode}: {data['diagnostics']['reasons']}")
    return row


def semantic_after_write(bank: Any, corpus: Corpus, reps: int, rng: random.Random) -> Row:
    """The first semantic preview after a memory file changed: it pays for bringing the in-memory vectors
    level (patched from this process's own write, not reloaded: docs/performance.md)."""
    call = caller(bank)
    row = Row("preview_semantic_after_write", "injection preview, semantic, first one after a file changed", "ms",
              corpus.files,
              note="no target of its own: the in-memory vectors are patched after each change (docs/performance.md)")
    rels = _rel_files(corpus)
    base = bank.project.path
    gc.collect()
    for i in range(reps):
        rel = rng.choice(rels)
        path = base / rel
        path.write_text(path.read_text("utf-8").rstrip("\n") + " lantern.\n", encoding="utf-8")
        _sync_named(bank, rel)
        started = time.perf_counter()
        data = call("memory:injection:preview", {"queryText": QUERIES[i % len(QUERIES)]})
        row.samples.append((time.perf_counter() - started) * 1000)
        if data["mode"] != "semantic":
            raise RuntimeError("the preview did not run in semantic mode")
    return row


def creates(bank: Any, size: int, reps: int, rng: random.Random) -> Row:
    call = caller(bank)
    row = Row("memory_create", "memory:create (file fsynced, index updated)", "ms", size, target=15,
              target_text="p95 ≤ 15 ms")
    gc.collect()
    for i in range(reps):
        zh = i % 10 == 9
        topic = rng.choice(list(TOPICS))
        content = chinese(rng, topic, 100) if zh else english(rng, topic, 300)
        payload = {"type": ("preference", "fact", "note")[i % 3], "scope": "project", "content": content,
                   "tags": rng.sample(TAGS, 2)}
        row.samples.append(timed(lambda: call("memory:create", payload)))
    return row


def large_cold_index(corpus: Corpus, quiet: bool) -> tuple[Row, Any, dict[str, Any]]:
    """One cold index of the large corpus: for reference, its target is set at 10,000 files."""
    row, bank, report = cold_index(corpus, 1, quiet)
    row.key, row.target, row.target_text = "cold_index_large", None, ""
    row.note = "for reference: the target is set at 10,000 files"
    return row, bank, report
