"""The capture rows (docs/capture.md, quality targets): `capture:prepare` of a 10,000-code-point chapter
in a project of 2,000 cards; `capture:propose` of 50 ops (each checked, the proposal file written);
`capture:review` accepting 50 ops, each a progression written into its own card through the round-trip
writer (files fsynced, the index updated), on a fresh project each run so every run writes the same."""

from __future__ import annotations

import time
from pathlib import Path

from ...domains.capture.evidence import chapter_hash
from ...runtime.api import init, open_project
from .rows import Row, say

OPS = 50
CARDS = 2_000
CHAPTER_CHARS = 10_000


def _project(root: Path) -> tuple[str, list[dict[str, str]]]:
    init(root)
    before = "第一回\n\n" + "".join(f"人物{i:02d}在家。\n" for i in range(OPS))
    text = "第二回\n\n" + "".join(f"人物{i:02d}出门去了第{i}里。\n" for i in range(OPS))
    (root / "chapters").mkdir(parents=True, exist_ok=True)
    (root / "chapters" / "ch01.md").write_text(before, "utf-8")
    (root / "chapters" / "ch02.md").write_text(text, "utf-8")
    for i in range(OPS):
        (root / ".writenow" / "characters" / f"p{i:02d}.md").write_text(
            f"---\nname: 人物{i:02d}\nkind: character\n# the writer's comment\nprogressions:\n"
            f"  - {{at: chapters/ch01.md, state: 在家}}\n---\n", "utf-8")
    ops = [{"op": "progress", "entity": f"人物{i:02d}", "state": "出门", "evidence": f"人物{i:02d}出门去了第{i}里"}
           for i in range(OPS)]
    return chapter_hash(text), ops


def _big(root: Path, cards: int = CARDS) -> str:
    """`cards` cards (names in the Chinese way, an alias each), a chapter before, and a chapter of 10,000
    code points naming 50 of them: its text."""
    init(root)
    folder = root / ".writenow" / "characters"
    for i in range(cards):
        (folder / f"c{i:04d}.md").write_text(
            f"---\nname: 角色{i:04d}\nkind: character\naliases: [阿{i:04d}]\nprogressions:\n"
            f"  - {{at: chapters/ch01.md, state: 第{i}号在城中, set: {{location: 城{i % 7}}}}}\n---\n角色{i:04d}的小传。\n",
            "utf-8")
    (root / "chapters").mkdir(parents=True, exist_ok=True)
    (root / "chapters" / "ch01.md").write_text("第一回\n\n开篇。\n", "utf-8")
    lines, n = ["第二回", ""], 0
    while sum(len(x) + 1 for x in lines) < CHAPTER_CHARS:
        lines.append(f"角色{(n % OPS * 37) % cards:04d}走进院子，看见天色将晚，风吹过廊下的灯笼，便停下脚步想了一会儿。")
        n += 1
    text = "\n".join(lines)[:CHAPTER_CHARS] + "\n"
    (root / "chapters" / "ch02.md").write_text(text, "utf-8")
    return text


def prepare_rows(tmp: Path, quick: bool, quiet: bool) -> list[Row]:
    cards = 500 if quick else CARDS  # --quick: a quarter of the cards the target is set for
    prepare = Row("capture_prepare", f"capture:prepare, {CHAPTER_CHARS:,}-code-point chapter, {cards:,} cards", "ms",
                  cards, target=30.0, target_text="p95 ≤ 30 ms")
    propose = Row("capture_propose", f"capture:propose of {OPS} ops (checked, the proposal file written)", "ms",
                  cards, target=50.0, target_text="p95 ≤ 50 ms")
    say(quiet, f"capture: prepare and propose with {cards:,} cards")
    root = tmp / "capture-big"
    text = _big(root, cards)
    bank = open_project(root)
    try:
        ops = [{"op": "progress", "entity": f"角色{(n * 37) % cards:04d}", "state": "走进院子",
                "evidence": f"角色{(n * 37) % cards:04d}走进院子"} for n in range(OPS)]
        proposal = root / ".writenow" / "proposals" / "chapters" / "ch02.md"
        for run in range(6 if quick else 21):
            started = time.perf_counter()
            done = bank.call("capture:prepare", {"documentId": "chapters/ch02.md"})
            took = (time.perf_counter() - started) * 1000
            if not done["ok"]:
                prepare.note = f"prepare failed: {done['error']['message']}"
                break
            if run:  # the first one warms the catalog and the matcher, as a session's first command does
                prepare.samples.append(took)
            proposal.unlink(missing_ok=True)
            started = time.perf_counter()
            done = bank.call("capture:propose", {"documentId": "chapters/ch02.md", "chapterHash": chapter_hash(text),
                                                 "ops": ops})
            took = (time.perf_counter() - started) * 1000
            if not done["ok"] or done["data"]["counts"]["pending"] != OPS:
                propose.note = f"propose failed: {done.get('error') or done['data']['counts']}"
                break
            if run:
                propose.samples.append(took)
    finally:
        bank.close()
    return [prepare, propose]


def capture_rows(tmp: Path, quick: bool, quiet: bool) -> list[Row]:
    row = Row("capture_review", f"capture:review accepting {OPS} ops (cards rewritten, fsynced, re-indexed)", "ms",
              OPS, target=300.0, target_text="p95 ≤ 300 ms")
    say(quiet, f"capture: review of {OPS} ops")
    for run in range(5 if quick else 20):
        root = tmp / f"capture{run}"
        digest, ops = _project(root)
        bank = open_project(root)
        try:
            proposed = bank.call("capture:propose", {"documentId": "chapters/ch02.md", "chapterHash": digest,
                                                     "ops": ops})
            ids = [o["id"] for o in proposed["data"]["ops"] if o["status"] == "pending"]
            decisions = [{"id": i, "decision": "accept"} for i in ids]
            started = time.perf_counter()
            done = bank.call("capture:review", {"documentId": "chapters/ch02.md", "decisions": decisions})
            row.samples.append((time.perf_counter() - started) * 1000)
            if not done["ok"] or done["data"]["counts"]["applied"] != OPS:
                row.note = f"review failed: {done.get('error') or done['data']['counts']}"
                break
        finally:
            bank.close()
    return [*prepare_rows(tmp, quick, quiet), row]
