"""The bench's row for `context:assemble` with the manuscript's parts on (quality.md): the main corpus as
the `context_assemble` row leaves it (10,000 files, 2,000 cards, the 50,000-character chapter, threads and
scene files) plus an earlier manuscript (19 chapters before it, ~1,000,000 code points in all, a third in
Chinese, cut into scenes) with its summaries, and a skill with every rule on plus `recall: 5` and
`recap: 2000`. The manuscript is removed again afterwards, so the rows after this one measure the project
as they did before."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any

from ...kernel import heap
from .corpus import Corpus
from .manuscript import EN, ZH
from .measure import assemble_payloads, caller
from .rows import Row

STORY_RULES = """---
id: bench-story
name: Every rule on, and the story so far
context_rules: {surrounding: 20000, characters: true, project-settings: true, preferences: true, memories: 50,
                episodes: 5, history: true, threads: true, scene: true, recall: 5, recap: 2000, max_tokens: 12000}
---
Continue the story.
"""
CHAPTERS = 19  # before the bench's ch20
PER_CHAPTER = 50_000  # code points: with ch20, ~1,000,000 in all (a tenth of that on a corpus under 10,000 files)
SCENE_SUMMARIES = range(12, 20)  # chapters whose scenes are summarised too (the recent ones, in detail)
ARCS = (("chapters/ch01.md", "chapters/ch06.md"), ("chapters/ch07.md", "chapters/ch12.md"))


def _chapter_text(rng: random.Random, chinese: bool, names: list[str], chars: int) -> str:
    paras, size, scene = [], 0, 1
    while size < chars:
        if chinese:
            p = "".join(rng.choice(ZH) for _ in range(rng.randint(60, 300))) + "。"
        else:
            p = " ".join(rng.choice(EN) for _ in range(rng.randint(15, 70))) + f" {rng.choice(names)}."
        if size >= scene * chars // 5:  # five scenes a chapter
            scene += 1
            p = f"## Scene {scene}\n\n{p}"
        paras.append(p)
        size += len(p) + 2
    return "## Scene 1\n\n" + "\n\n".join(paras) + "\n"


def _summary(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(EN) for _ in range(words)).capitalize() + "."


def setup(bank: Any, root: Path, names: list[str], rng: random.Random, chars: int = PER_CHAPTER) -> int:
    """The earlier chapters (`chars` code points each), their summaries and the skill; the manuscript's size
    in code points."""
    call = caller(bank)
    (root / ".writenow" / "skills" / "bench-story.md").write_text(STORY_RULES, "utf-8")
    total = len((root / "chapters" / "ch20.md").read_text("utf-8"))
    for c in range(1, CHAPTERS + 1):
        text = _chapter_text(rng, c % 3 == 0, names, chars)
        (root / "chapters" / f"ch{c:02d}.md").write_text(text, "utf-8")
        total += len(text)
    bank.sync()
    for c in range(1, CHAPTERS + 1):  # ~130 tokens each: 19 are more than a 2,000-token recap holds
        call("summary:put", {"of": f"chapters/ch{c:02d}.md", "level": "chapter", "text": _summary(rng, 90)})
        if c in SCENE_SUMMARIES:
            for s in range(1, 6):
                call("summary:put", {"of": f"chapters/ch{c:02d}.md#{s}", "level": "scene", "text": _summary(rng, 40)})
    for first, last in ARCS:
        call("summary:put", {"of": f"{first}..{last}", "level": "arc", "text": _summary(rng, 120)})
    return total


def teardown(bank: Any, root: Path) -> None:
    for c in range(1, CHAPTERS + 1):
        (root / "chapters" / f"ch{c:02d}.md").unlink(missing_ok=True)
    shutil.rmtree(root / ".writenow" / "summaries", ignore_errors=True)
    (root / ".writenow" / "skills" / "bench-story.md").unlink(missing_ok=True)
    bank.sync()


def measure(bank: Any, row: Row, asks: list[dict[str, Any]]) -> Row:
    call = caller(bank)
    for p in asks[:5]:
        call("context:assemble", p)
    heap.settle()  # as the sidecar does once idle after a change (kernel/heap.py)
    for p in asks:
        started = time.perf_counter()
        call("context:assemble", p)
        row.samples.append((time.perf_counter() - started) * 1000)
    return row


def story_rows(bank: Any, corpus: Corpus, names: list[str], reps: int, rng: random.Random) -> list[Row]:
    """`context:assemble` with recall and recap on the main corpus, after `assemble_rows` (its chapter, cards,
    threads and scenes)."""
    import gc

    root = corpus.root
    try:
        size = setup(bank, root, names, rng, PER_CHAPTER if corpus.files >= 10_000 else PER_CHAPTER // 10)
        row = Row("context_assemble_story", "context:assemble as above plus `recall: 5`, `recap: 2000`, threads and "
                  "scene", "ms", corpus.files, target=15, target_text="p95 ≤ 15 ms",
                  note=f"an earlier manuscript of {CHAPTERS} chapters ({size:,} code points with the 50,000-character "
                  "one, a third Chinese, five scenes each) with a summary of each chapter, of the scenes of the last "
                  "eight and two arcs; the heap settled after warm-up")
        text = (root / "chapters" / "ch20.md").read_text("utf-8")
        return [measure(bank, row, assemble_payloads(len(text), "bench-story", reps, rng))]
    finally:
        gc.unfreeze()
        teardown(bank, root)
