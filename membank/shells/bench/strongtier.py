"""The bench's rows for the strong tier (issue 35, docs/recall.md, Tiers) with the real strong model:
its load, the background embedding throughput, the semantic preview and `context:assemble` with the
tier on at the main corpus's size, the sidecar's resident memory with the tier loaded, and the
installed size the tier adds.

The rest of a run measures the static tier alone: `static_only()` keeps the strong model out of the
process (and out of the sidecar it starts) until `strong_rows` runs, last on the open project.

Filling: embedding every entry with the real model takes minutes at 10,000 memories (the
`strong_embed_rate` row says how many), so the run embeds a sample of the corpus for real (the
throughput row: read, embed, write, as the background does, one batch after another) and fills the
remaining entries with those real vectors in turn, recorded under the real model's name. The
preview then pays for exactly what it pays for on a filled bank: the query embedded by the real
model, the scan over every memory's strong vector, the fusion. Only which memories come first is
not what a real fill would give."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import random
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

from ...files.intake import embed_text
from ...index import strongload
from ...index.store import reading
from ...index.strong import STRONG_BUNDLED
from ...kernel import heap
from ...kernel.text import script_language
from .corpus import Corpus
from .measure import assemble_payloads, caller, previews
from .rows import Row, say, timed

TARGET_MS = 35.0
TARGET_RSS_MB = 400.0
TARGET_INSTALL_MB = 120.0
BATCH = 32  # as the background fills (indexing/strongfill.py)
REAL = 320  # entries embedded for real at full size (10 batches); the quick run embeds one batch


def _choose(value: str | None) -> None:
    if value is None:
        os.environ.pop(strongload.ENV, None)
    else:
        os.environ[strongload.ENV] = value


@contextlib.contextmanager
def static_only() -> Iterator[str | None]:
    """The strong model kept out of this process and of the processes it starts (`MEMBANK_STRONG_ENCODER`
    set to `off`), as the static rows measure the static tier alone; yields the caller's own choice
    (unset: the bundled model), which `strong_rows` and the strong sidecar row use."""
    chosen = os.environ.get(strongload.ENV)
    _choose("off")
    try:
        yield chosen
    finally:
        _choose(chosen)


def strong_env(chosen: str | None) -> dict[str, str]:
    """This process's environment with the strong encoder the caller chose (unset: the bundled model)."""
    env = {k: v for k, v in os.environ.items() if k != strongload.ENV}
    if chosen is not None:
        env[strongload.ENV] = chosen
    return env


def _rows_unmeasured(size: int, why: str) -> list[Row]:
    rows = [_preview_row(size), _assemble_row(size), Row("strong_embed_rate", "strong tier: background embedding",
                                                         "entries/s", size, higher_is_better=True)]
    for row in rows:
        row.note = f"not measured: {why}"
    return rows


def _preview_row(size: int) -> Row:
    return Row("preview_semantic_strong", "injection preview, semantic, strong tier on (query embedding included)",
               "ms", size, target=TARGET_MS, target_text=f"p95 ≤ {TARGET_MS:g} ms")


def _assemble_row(size: int) -> Row:
    return Row("context_assemble_strong", "context:assemble as above, strong tier on", "ms", size, target=TARGET_MS,
               target_text=f"p95 ≤ {TARGET_MS:g} ms")


def strong_rows(bank: Any, corpus: Corpus, reps: int, quick: bool, chosen: str | None, rng: random.Random,
                quiet: bool) -> list[Row]:
    """Every in-process strong row, on the open project after the static rows (its cards and chapter
    included). The background filler is stopped first: the run fills the tier itself (module doc)."""
    from ...domains.indexing import strongfill

    strongfill.stop(bank)  # nothing competes with the measurements; the run fills the tier below
    bank.memo[strongload.MEMO] = handle = strongload.StrongHandle()  # the static rows' handle said `off`
    previous = os.environ.get(strongload.ENV)
    _choose(chosen)  # read once, at the load; the rest of the run stays static
    try:
        load_ms = timed(handle.get)
    finally:
        _choose(previous)
    encoder = handle.get()
    if encoder is None:
        return _rows_unmeasured(corpus.files, handle.why() or "the strong model cannot run here")
    load = Row("strong_model_load", f"strong model load ({encoder.name.split(':')[0]}, once per process)", "ms", None,
               [load_ms], note=f"runtime: {getattr(encoder.model, 'runtime', '?')}")
    say(quiet, f"strong tier: embedding {BATCH if quick else REAL} entries with {encoder.name}")
    rate, vectors = _embed_for_real(bank, encoder, BATCH if quick else REAL)
    say(quiet, "strong tier: filling the rest with those vectors")
    filled = _fill_rest(bank, encoder, vectors)
    with reading():
        done, total = bank.index.strong_counts()
    rate.note = (f"read, embed (the real model, batches of {BATCH}, one thread) and write, as the background does; "
                 f"{rate.n * BATCH} entries; a full fill of this corpus ({total:,} entries) would take "
                 f"~{total / max(rate.median or 1, 1e-9) / 60:.0f} min")
    if done != total:
        return [load, rate, *_rows_unmeasured(corpus.files, f"the tier is not complete ({done} of {total})")[:2]]
    fill_note = (f"{rate.n * BATCH} entries embedded by the real model, the other {filled:,} given those vectors "
                 f"in turn (same scan, same query cost; not a real fill's ranking)")
    say(quiet, "strong tier: previews and context:assemble, the static tier right after each")
    remembered, encoder.cache.size = encoder.cache.size, 0  # every query embedded: the rows' previews repeat texts
    encoder.cache.clear()
    preview_rng = random.Random(rng.random())  # drawn in the order the rows always drew them: the same requests
    payloads = assemble_payloads(len((corpus.root / "chapters" / "ch20.md").read_text("utf-8")), "bench-all",
                                 reps, random.Random(rng.random()))
    tier = _preview_tier(bank)  # warm-up: the strong copy and its languages' means made before the rows
    caller(bank)("context:assemble", payloads[0])
    heap.settle()  # as the sidecar does once idle after a change (kernel/heap.py), and prompt.py's rows
    try:
        preview = previews(bank, corpus.files, reps, True, preview_rng, "preview_semantic_strong", TARGET_MS)
        preview.what = _preview_row(corpus.files).what
        preview.note = (f"{fill_note}; every query embedded (the query cache off); the answer's items ranked by "
                        f"the {tier} tier; the heap settled after the fill, as the sidecar settles it")
        assemble = _assemble_row(corpus.files)
        _time_assemble(bank, payloads, assemble)
        static = _static_now(bank, corpus, reps, payloads, rng)
    finally:
        encoder.cache.size = remembered
        gc.unfreeze()  # what runs after these rows measures the process as it was
    preview.note += f"; the static tier in the same minute: p95 {static[0]:.1f} ms"
    assemble.note = (f"{fill_note}; the static tier in the same minute: p95 {static[1]:.1f} ms "
                     f"(Layer 4 uses the strong tier only where context/memories.py passes it a strong query)")
    return [load, rate, preview, assemble]


def _embed_for_real(bank: Any, encoder: Any, n: int) -> tuple[Row, list[Any]]:
    """`n` entries read, embedded and written as the background does, one batch at a time; the batches'
    rates (entries/s) and the vectors made."""
    row = Row("strong_embed_rate", "strong tier: background embedding (read, embed, write)", "entries/s", None,
              higher_is_better=True, target_text="no target; said in docs/recall.md")
    vectors: list[Any] = []
    for _ in range(n // BATCH):
        started = time.perf_counter()
        with reading():
            rows = bank.index.strong_pending(BATCH)
        if not rows:
            break
        texts = [embed_text(kind, json.loads(record)) for _, kind, record, _ in rows]
        batch = encoder.passages(texts)
        _write(bank, encoder, [(r[0], r[3]) for r in rows], batch, texts)
        row.samples.append(len(rows) / (time.perf_counter() - started))
        vectors.extend(batch)
    row.size = bank.index.strong_counts()[1]
    return row, vectors


def _fill_rest(bank: Any, encoder: Any, vectors: list[Any]) -> int:
    """Every entry still without a strong vector given one of `vectors` in turn; how many."""
    import numpy as np

    filled = 0
    while True:
        with reading():
            rows = bank.index.strong_pending(2000)
        if not rows or not vectors:
            return filled
        batch = np.stack([vectors[(filled + i) % len(vectors)] for i in range(len(rows))])
        _write(bank, encoder, [(r[0], r[3]) for r in rows], batch,
               [embed_text(kind, json.loads(record)) for _, kind, record, _ in rows])
        filled += len(rows)


def _write(bank: Any, encoder: Any, keys: list[tuple[int, str]], vectors: Any, texts: list[str]) -> None:
    """As the background writes: each row with its text's script (its language's pool, recall/calibrate.py),
    so the Chinese memories are calibrated as a Chinese pool, as after a real fill."""
    from ...domains.indexing.strongfill import SCRIPT_CHARS

    zh = [script_language(t[:SCRIPT_CHARS]) == "zh" for t in texts]
    bank.write_lock.acquire()
    try:
        with bank.index.transaction():
            bank.index.start_strong(encoder.name, encoder.dim)
            bank.index.put_strong(keys, vectors, zh)
    finally:
        bank.write_lock.release()


def _preview_tier(bank: Any) -> str:
    """Which tier ranked a semantic preview's first item (its score says: recall/rank.py)."""
    items = caller(bank)("memory:injection:preview", {"queryText": "the storm over the harbour"})["items"]
    return _find(items[0], "tier") if items else "(no item)"


def _find(found: Any, key: str) -> str:
    if isinstance(found, dict):
        if key in found:
            return str(found[key])
        found = list(found.values())
    if isinstance(found, list):
        for value in found:
            hit = _find(value, key)
            if hit != "?":
                return hit
    return "?"


def _time_assemble(bank: Any, payloads: list[dict[str, Any]], row: Row) -> None:
    call = caller(bank)
    for p in payloads[:5]:
        call("context:assemble", p)
    for p in payloads:
        row.samples.append(timed(lambda: call("context:assemble", p)))


def _static_now(bank: Any, corpus: Corpus, reps: int, payloads: list[dict[str, Any]],
                rng: random.Random) -> tuple[float, float]:
    """The preview's and context:assemble's p95 with the tier off, measured right after the strong ones."""
    call = caller(bank)
    call("embedding:settings:update", {"patch": {"strong": "off"}})
    try:
        preview = previews(bank, corpus.files, reps, True, random.Random(rng.random()), "static_now", None)
        assemble = Row("static_now", "", "ms", None)
        _time_assemble(bank, payloads, assemble)
    finally:
        call("embedding:settings:update", {"patch": {"strong": "auto"}})
    return preview.p95 or 0.0, assemble.p95 or 0.0


def sidecar_strong_row(corpus: Corpus, samples: int, chosen: str | None) -> Row:
    """The sidecar's resident memory with the strong tier loaded: a real `membank serve` on the filled
    project, whose first semantic preview embeds the query with the strong model."""
    from .sidecar import measure

    row = Row("sidecar_rss_strong", "sidecar resident memory, strong tier loaded (both models, serving)", "MB",
              corpus.files, target=TARGET_RSS_MB, target_text=f"≤ {TARGET_RSS_MB:g} MB")
    if chosen == "off":
        row.note = f"not measured: the strong tier is off ({strongload.ENV}=off)"
        return row
    try:
        got = measure(corpus.root, samples=samples, env=strong_env(chosen))
    except Exception as e:
        row.note = f"the sidecar measurement failed: {e.__class__.__name__}: {e}"
        return row
    if got["rssMb"] is None:
        row.note = "not measured: /proc is not there"
        return row
    row.samples = [float(got["rssMb"])]
    row.note = (f"VmRSS after {samples} index:status round trips (p95 {got['p95Ms']:.2f} ms) and a strong semantic "
                f"preview; peak (VmHWM) {got['peakRssMb']:.0f} MB; {got['anonRssMb']:.0f} MB its own, "
                f"{got['fileRssMb']:.0f} MB mapped files")
    return row


def installed_row() -> Row:
    """What the strong tier adds to an installation: its model folder, and onnxruntime with the packages
    only it needs (those membank needs anyway, numpy among them, are not counted)."""
    row = Row("strong_install_mb", "installed size the strong tier adds (model folder + onnxruntime and its "
              "own dependencies)", "MB", None, target=TARGET_INSTALL_MB, target_text=f"≤ {TARGET_INSTALL_MB:g} MB")
    model = sum(p.stat().st_size for p in STRONG_BUNDLED.rglob("*") if p.is_file())
    try:
        added = _only_for("onnxruntime")
        packages = sum(_dist_bytes(name) for name in added)
    except metadata.PackageNotFoundError as e:
        row.note = f"not measured: {e} is not installed"
        return row
    row.samples = [(model + packages) / 1e6]
    row.note = (f"model folder {model / 1e6:.0f} MB; {', '.join(sorted(added))}: {packages / 1e6:.0f} MB in "
                f"site-packages (Python {sys.version_info.major}.{sys.version_info.minor}, {sys.platform})")
    return row


def _requires(name: str) -> list[str]:
    import re

    out = []
    for req in metadata.requires(name) or []:
        if "extra ==" in req:
            continue
        found = re.match(r"[A-Za-z0-9._-]+", req)
        if found:
            out.append(found.group(0).lower().replace("_", "-"))
    return out


def _closure(roots: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(_requires(name))
        except metadata.PackageNotFoundError:
            continue
    return seen


def _only_for(package: str) -> set[str]:
    """`package` and the installed distributions it pulls in that nothing else membank needs pulls in."""
    others = [n for n in _requires("membank") if n != package]
    return {n for n in _closure([package]) - _closure(others) if _installed(n)}


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def _dist_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            total += path.stat().st_size
    return total
