"""The bench's rows for context assembly and the story (quality.md): `context:assemble` at 10,000 files
+ 2,000 cards on a 50,000-character chapter with every rule on, the activation scan, the consistency
check, and the prefix reuse of a scripted writing session."""

from __future__ import annotations

import gc
import random
import shutil
import time
from pathlib import Path
from typing import Any

from ...domains.story.cards import catalog
from ...kernel import heap
from ...runtime.api import open_project
from .corpus import Corpus, _card_file, english
from .measure import assemble_payloads, caller
from .rows import Row
from .storyprompt import story_rows

ALL_RULES = """---
id: bench-all
name: Every rule on
context_rules: {surrounding: 20000, characters: true, project-settings: true, preferences: true, memories: 50,
                episodes: 5, history: true, threads: true, scene: true, max_tokens: 12000}
---
Continue the story.
"""


def _cards_to(bank: Any, corpus: Corpus, total: int, rng: random.Random) -> list[str]:
    """Cards added until the project holds `total`, each with a name, an alias and four keys of its own
    (five trigger words); the added cards' names, to sprinkle in the chapter."""
    have = corpus.characters + corpus.world
    folder = corpus.root / ".writenow" / "characters" / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(max(0, total - have)):
        rel, text = _card_file(rng, 900_000 + i, "characters", rng.random() < 0.1)
        name = f"Wanderer{i}"
        lines = [f"name: {name}" if line.startswith("name: ") else f"aliases: [Rover{i}]"
                 if line.startswith("aliases: ") else line for line in text.split("\n")]
        text = "\n".join(lines).replace("keys: []", "keys: [" + ", ".join(f"k{i}w{j}" for j in range(3)) + "]", 1)
        (folder / Path(rel).name).write_text(text, "utf-8")
        names.append(name)
    bank.sync()
    return names or [c["name"] for c in catalog(bank.index).cards.values()]


def _narrative(root: Path, names: list[str]) -> None:
    """What the story's narrative flags and rules read (story.md): 50 threads, a scene file for each of the
    20 chapters (a POV and three present characters), and 200 secrets with `revealed`, `keys` and
    `subject`/`facet`/`value` (so every flag of the check has something to look at)."""
    wn = root / ".writenow"
    (wn / "threads").mkdir(parents=True, exist_ok=True)
    for i in range(50):
        (wn / "threads" / f"bench-{i}.md").write_text(
            f"---\ntitle: Riddle {i}\nopened: chapters/ch{1 + i % 19:02d}.md\nkeys: [riddle{i}]\n"
            f"entities: [{names[i % len(names)]}]\n---\nWho left the riddle.\n", "utf-8")
    for c in range(1, 21):
        scene = wn / "scenes" / "chapters" / f"ch{c:02d}.md.md"
        scene.parent.mkdir(parents=True, exist_ok=True)
        present = ", ".join(names[(c + k) % len(names)] for k in range(3))
        scene.write_text(f"---\npov: {names[c % len(names)]}\nlocation: harbour {c % 4}\npresent: [{present}]\n---\n",
                         "utf-8")
    (wn / "memories" / "facts" / "bench-secrets").mkdir(parents=True, exist_ok=True)
    for i in range(200):
        (wn / "memories" / "facts" / "bench-secrets" / f"s{i}.md").write_text(
            f"---\ntype: fact\nrevealed: chapters/ch{1 + i % 30:02d}.md\nkeys: [secret{i}, {names[i % len(names)]}'s "
            f"debt]\nsubject: {names[i % len(names)]}\nfacet: home\nvalue: harbour {i % 3}\n---\n"
            f"{names[i % len(names)]} hides secret {i}.\n", "utf-8")


def _chapter(rng: random.Random, names: list[str], chars: int) -> str:
    parts, size = [], 0
    while size < chars:
        para = english(rng, "sea", rng.randint(300, 700)) + " " + rng.choice(names) + "."
        parts.append(para)
        size += len(para) + 2
    return "\n\n".join(parts)[:chars]


def assemble_rows(bank: Any, corpus: Corpus, reps: int, rng: random.Random) -> list[Row]:
    """context:assemble p95 and the activation scan, on the main corpus grown to 2,000 cards."""
    call = caller(bank)
    names = _cards_to(bank, corpus, 2000, rng)
    (corpus.root / ".writenow" / "skills" / "bench-all.md").write_text(ALL_RULES, "utf-8")
    chapter = corpus.root / "chapters" / "ch20.md"
    chapter.parent.mkdir(parents=True, exist_ok=True)
    text = _chapter(rng, names, 50_000)
    chapter.write_text(text, "utf-8")
    _narrative(corpus.root, names)
    bank.sync()
    cards = len(catalog(bank.index).cards)
    row = Row("context_assemble", f"context:assemble, {cards:,} cards, 50,000-character chapter, every rule on", "ms",
              corpus.files, target=10, target_text="p95 ≤ 10 ms", note="semantic recall and activation, threads and "
              "the scene included; the matcher keeps the key words of each chapter line it scanned, as over a "
              "writing session; the heap settled after warm-up, as the sidecar settles it")
    payloads = assemble_payloads(len(text), "bench-all", reps, rng)
    for p in payloads[:5]:
        call("context:assemble", p)
    for _ in range(3):  # the facts are read and scanned once per generation of the cards
        call("kg:consistency:check", {"documentId": "chapters/ch20.md", "text": _chapter(rng, names, 20_000)})
    heap.settle()  # as the sidecar does once idle after a change (kernel/heap.py)
    for p in payloads:
        started = time.perf_counter()
        call("context:assemble", p)
        row.samples.append((time.perf_counter() - started) * 1000)
    scan = Row("activation_scan", f"card activation scan, {cards:,} cards over 20,000 characters", "ms", corpus.files,
               target=2, target_text="p95 ≤ 2 ms", note="the matcher built once per generation of the cards; "
               "each scan over text it has not seen (no line it keeps), its lines walked together")
    matcher = catalog(bank.index).matcher
    for _ in range(reps):
        window = _chapter(rng, names, 20_000)  # fresh text, not the prompts' above
        started = time.perf_counter()
        matcher.activated(window, keep="first")
        scan.samples.append((time.perf_counter() - started) * 1000)
    check = Row("consistency_check", f"kg:consistency:check, {cards:,} cards over 20,000 characters", "ms",
                corpus.files, target=20, target_text="p95 ≤ 20 ms", note="each over a passage it has not seen: "
                "every entity named, its state, facets and relations there, the facts naming them, every flag (scenes, "
                "secrets, reveals, facts that disagree, 50 threads); the heap "
                "settled as above")
    for _ in range(reps):
        passage = _chapter(rng, names, 20_000)
        started = time.perf_counter()
        call("kg:consistency:check", {"documentId": "chapters/ch20.md", "text": passage})
        check.samples.append((time.perf_counter() - started) * 1000)
    story = story_rows(bank, corpus, names, reps, rng)  # the manuscript's parts on: quality.md's 15 ms row
    gc.unfreeze()  # the rows after these measure the process as it was
    return [row, scan, check, *story]


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return len(a[:i].encode("utf-8"))


def prefix_reuse(sample: Path, tmp: Path, runs: int = 100) -> Row:
    """quality.md's scripted session on the sample project: one skill, three chapters, 3 preferences
    added and 1 card edited on the way; bytes of each systemPrompt shared with the one before."""
    project = tmp / "prefix-session"
    shutil.copytree(sample, project, ignore=shutil.ignore_patterns(".index"))
    (project / "chapters" / "ch03.md").write_text("# Chapter Three\n\nThe lamp, the oil, Maren and Lin Mo.\n", "utf-8")
    bank = open_project(project)
    row = Row("prefix_reuse", "prefix reuse over a scripted session (100 runs, 3 chapters, 3 preferences added, "
              "1 card edited)", "ratio", 100, target=0.97, higher_is_better=True, target_text="≥ 0.97")
    try:
        chapters = ["chapters/ch01.md", "chapters/ch03.md", "chapters/ch05.md"]
        shared = total = 0
        before = None
        for i in range(runs):
            if i in (20, 45, 80):
                bank.create_memory(type_="preference", scope="project", content=f"Bench preference number {i}.")
            if i == 60:
                card = project / ".writenow" / "characters" / "maren-voss.md"
                card.write_text(card.read_text("utf-8").replace("stubborn", "stubborn and proud"), "utf-8")
                bank.sync()
            data = bank.call("context:assemble", {"skillId": "continue", "documentId": chapters[i % 3],
                                                  "selection": {"start": 0, "end": 10 + i % 20}})["data"]
            prompt = data["systemPrompt"]
            if before is not None:
                shared += _common(before, prompt)
                total += len(prompt.encode("utf-8"))
            before = prompt
        row.samples.append(shared / total)
    finally:
        bank.close()
        shutil.rmtree(project, ignore_errors=True)
    return row
