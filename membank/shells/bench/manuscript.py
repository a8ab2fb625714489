"""The manuscript's rows (docs/manuscript.md): a generated manuscript (100 chapters, a third in Chinese)
cold-indexed with embeddings, one chapter saved, and spoiler-safe searches."""

from __future__ import annotations

import random
import time
from pathlib import Path

from ...runtime.api import init, open_project
from .rows import Row, say
from .strongsearch import manuscript_strong_row

EN = ("The keeper climbed the stairs of the lighthouse and looked out over the grey sea where the ships "
      "had gone down in the storm").split()
ZH = "守灯人爬上灯塔的楼梯望着灰色的大海那些船就是在那里沉没的雨夜里林默在码头等船风暴把窗子吹破了"
QUERIES = ("lighthouse storm", "灯塔 雨夜", "the grey sea ships", "林默 码头", "keeper stairs")


def write_manuscript(root: Path, code_points: int, seed: int) -> int:
    rng = random.Random(f"{seed}:manuscript")
    per = code_points // 100
    total = 0
    (root / "chapters").mkdir(parents=True, exist_ok=True)
    for c in range(1, 101):
        paras, size = [], 0
        while size < per:
            if c % 3 == 0:
                p = "".join(rng.choice(ZH) for _ in range(rng.randint(60, 300))) + "。"
            else:
                p = " ".join(rng.choice(EN) for _ in range(rng.randint(15, 70))) + "."
            if rng.random() < 0.05:
                p = f"## Scene {rng.randint(1, 99)}\n\n{p}"
            paras.append(p)
            size += len(p)
        text = "\n\n".join(paras) + "\n"
        total += len(text)
        (root / "chapters" / f"ch{c:03d}.md").write_text(text, "utf-8")
    return total


def manuscript_rows(tmp: Path, quick: bool, seed: int, quiet: bool, strong: str | None = "off") -> list[Row]:
    """The static rows, then `manuscript:search` with the strong tier (`strong`: the encoder the run was
    started with, strongtier.py `static_only`; "off" skips it)."""
    from ...domains.manuscript.sync import sync as sync_manuscript

    root = tmp / "manuscript"
    init(root)
    size = write_manuscript(root, 100_000 if quick else 1_000_000, seed)
    say(quiet, f"manuscript: {size:,} code points in 100 chapters")
    bank = open_project(root)
    try:
        from ...domains.indexing import strongfill

        strongfill.stop(bank)  # no strong filling (memories', passages' windows) competes with the rows
        bank.embedder()
        cold = Row("manuscript_cold", "manuscript cold index with embeddings (index --rebuild)", "s", size,
                   target=3.0, target_text="1,000,000 code points ≤ 3 s")
        for _ in range(1 if quick else 3):
            t = time.perf_counter()
            bank.sync(rebuild=True)
            cold.samples.append(time.perf_counter() - t)
        saved = Row("manuscript_chapter_saved", "one chapter saved → its passages updated", "ms", size, target=150.0,
                    target_text="p95 ≤ 150 ms")
        rng = random.Random(f"{seed}:chapters")
        for i in range(10 if quick else 40):
            path = root / "chapters" / f"ch{rng.randint(1, 100):03d}.md"
            text = path.read_text("utf-8")
            at = rng.randint(0, len(text) - 1)
            path.write_text(text[:at] + ("又" if i % 2 else " again") + text[at:], "utf-8")
            t = time.perf_counter()
            sync_manuscript(bank)
            saved.samples.append((time.perf_counter() - t) * 1000)
        search = Row("manuscript_search", "manuscript:search with `before`", "ms", size, target=15.0,
                     target_text="p95 ≤ 15 ms")
        for i in range(20 if quick else 200):
            t = time.perf_counter()
            before = f"chapters/ch{rng.randint(1, 100):03d}.md"
            bank.search_manuscript(query_text=QUERIES[i % len(QUERIES)], before=before)
            search.samples.append((time.perf_counter() - t) * 1000)
        search.note = "the static tier (the strong tier's row: manuscript_search_strong)"
        if strong == "off":
            return [cold, saved, search]
        return [cold, saved, search, manuscript_strong_row(bank, size, QUERIES, 20 if quick else 200, strong, rng, quiet)]
    finally:
        bank.close()
